"""Anthropic Messages through the official ``anthropic`` SDK, streamed as raw
events (message_start, content_block_*, message_delta, message_stop)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, AsyncIterator

if TYPE_CHECKING:
    import anthropic

from core.session.providers import anthropic_request, tools_for
from core.session import unstreamed
from core.session.contracts import ModelConfig, TranscriptEntry


def sdk() -> Any:
    """The ``anthropic`` SDK, imported on first use: a worker that never calls
    the model does not pay for the import (a few hundred milliseconds)."""
    return importlib.import_module("anthropic")


def connection_errors() -> tuple[type[BaseException], ...]:
    return (sdk().APIConnectionError,)


def make_client(api_key: str, base_url: str | None) -> anthropic.AsyncAnthropic:
    sdk_ = sdk()
    return sdk_.AsyncAnthropic(api_key=api_key, base_url=base_url, max_retries=0,
                               timeout=sdk_.Timeout(300.0, connect=15.0))


def request_arguments(config: ModelConfig, entries: list[TranscriptEntry]) -> dict[str, Any]:
    system, messages = anthropic_request(entries)
    kwargs: dict[str, Any] = {
        "model": config.model,
        "max_tokens": config.output_token_cap(),
        "messages": messages,
        "tools": tools_for("anthropic"),
        "stream": True,
    }
    if system:
        kwargs["system"] = system
    if config.temperature is not None:
        kwargs["temperature"] = config.temperature
    return kwargs


async def stream_items(
    client: anthropic.AsyncAnthropic, config: ModelConfig, entries: list[TranscriptEntry]
) -> AsyncIterator[dict[str, Any]]:
    """The raw stream events as plain dicts (what core.session.stream_assembly reads).
    An ``error`` event inside the stream raises unstreamed.ErrorBody (an SDK
    without raw_events: APIStatusError, status 200)."""
    stream = await client.messages.create(**request_arguments(config, entries))
    async with stream:
        if not unstreamed.is_event_stream(stream.response.headers.get("content-type")):
            for item in unstreamed.anthropic_items(await stream.response.aread()):
                yield item
            return
        raw_events = getattr(type(stream), "raw_events", None)
        if raw_events is None:
            async for event in stream:
                yield event.to_dict()
            return
        # Read by the type in each event's data, not by its ``event:`` line:
        # some gateways leave those lines out, and the SDK drops every
        # event without one (the answer read as no stream at all).
        async for sse in raw_events(stream.response):
            item = unstreamed.event_item(sse.event, sse.data)
            if item is not None:
                yield item


def error_details(exc: BaseException) -> tuple[int, str, str | None, dict[str, str]] | None:
    if isinstance(exc, sdk().APIStatusError):
        body = exc.body if isinstance(exc.body, dict) else {}
        err = body.get("error", {})
        message = (err.get("message") if isinstance(err, dict) else None) or str(exc)
        code = err.get("type") if isinstance(err, dict) else None
        return exc.status_code, message, code, dict(exc.response.headers)
    return None
