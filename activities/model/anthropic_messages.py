"""Anthropic Messages through the official ``anthropic`` SDK, streamed as raw
events (message_start, content_block_*, message_delta, message_stop)."""

from __future__ import annotations

from typing import Any, AsyncIterator

import anthropic

from core.session.providers import anthropic_request, tools_for
from core.session.contracts import ModelConfig, TranscriptEntry

CONNECTION_ERRORS: tuple[type[BaseException], ...] = (anthropic.APIConnectionError,)


def make_client(api_key: str, base_url: str | None) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(api_key=api_key, base_url=base_url, max_retries=0,
                                    timeout=anthropic.Timeout(300.0, connect=15.0))


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
    An ``error`` event inside the stream raises APIStatusError (status 200)."""
    stream = await client.messages.create(**request_arguments(config, entries))
    async with stream:
        async for event in stream:
            yield event.to_dict()


def error_details(exc: BaseException) -> tuple[int, str, str | None, dict[str, str]] | None:
    if isinstance(exc, anthropic.APIStatusError):
        body = exc.body if isinstance(exc.body, dict) else {}
        err = body.get("error", {})
        message = (err.get("message") if isinstance(err, dict) else None) or str(exc)
        code = err.get("type") if isinstance(err, dict) else None
        return exc.status_code, message, code, dict(exc.response.headers)
    return None
