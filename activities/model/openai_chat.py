"""OpenAI Chat Completions through the official ``openai`` SDK, streamed.

Any OpenAI-compatible server works (vLLM, Ollama, llama.cpp's server): point
OPENAI_BASE_URL (or the session's base URL) at it."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, AsyncIterator

if TYPE_CHECKING:
    import openai

from core.session.providers import openai_messages, tools_for
from core.session import unstreamed
from core.session.contracts import ModelConfig, TranscriptEntry


def sdk() -> Any:
    """The ``openai`` SDK, imported on first use: a worker that never calls
    the model does not pay for the import (a few hundred milliseconds)."""
    return importlib.import_module("openai")


def connection_errors() -> tuple[type[BaseException], ...]:
    return (sdk().APIConnectionError,)


def make_client(api_key: str, base_url: str | None) -> openai.AsyncOpenAI:
    # The SDK's own retries are off: Temporal retries, visibly and durably.
    sdk_ = sdk()
    return sdk_.AsyncOpenAI(api_key=api_key, base_url=base_url, max_retries=0,
                            timeout=sdk_.Timeout(300.0, connect=15.0))


# OpenAI's own API: its newer models refuse max_tokens and take
# max_completion_tokens; compatible servers know max_tokens.
OPENAI_API_HOST = "api.openai.com"


def request_arguments(config: ModelConfig, entries: list[TranscriptEntry], openai_api: bool = False) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        "model": config.model,
        "messages": openai_messages(entries),
        "tools": tools_for("openai"),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    cap = config.output_token_cap()
    if cap is not None:
        kwargs["max_completion_tokens" if openai_api else "max_tokens"] = cap
    if config.temperature is not None:
        kwargs["temperature"] = config.temperature
    return kwargs


async def stream_items(
    client: openai.AsyncOpenAI, config: ModelConfig, entries: list[TranscriptEntry]
) -> AsyncIterator[dict[str, Any]]:
    """The response's chunks as plain dicts (what core.session.stream_assembly reads)."""
    openai_api = client.base_url.host == OPENAI_API_HOST
    body = request_arguments(config, entries, openai_api)
    # The body goes as ``extra_body``, which the SDK sends as given. Passed
    # as arguments, every message and tool schema would be walked against
    # the SDK's typed dicts on every call: ~56 ms of CPU on the worker's
    # event loop for a transcript of 300 messages, growing with the
    # conversation. Our body is already in wire form (plain JSON from the
    # transcript), which that walk returns unchanged
    # (tests/session/test_openai_wire.py keeps it so).
    stream = await client.chat.completions.create(model=body["model"], messages=[], stream=True, extra_body=body)
    async with stream:
        if not unstreamed.is_event_stream(stream.response.headers.get("content-type")):
            for item in unstreamed.openai_items(await stream.response.aread()):
                yield item
            return
        async for chunk in stream:
            # What servers send beyond the SDK's types (content as a list of
            # parts, an object for arguments) is read as it came: no warning per chunk.
            yield chunk.model_dump(exclude_none=True, warnings=False)


def error_details(exc: BaseException) -> tuple[int, str, str | None, dict[str, str]] | None:
    """(status, message, code, headers) of an API error; None for others.
    An error chunk inside a 200 stream has status 200, unless the server
    put the HTTP status it stands for in the error's code (vLLM does)."""
    if isinstance(exc, sdk().APIStatusError):
        body = exc.body if isinstance(exc.body, dict) else {}
        err = body.get("error", body)
        message = (err.get("message") if isinstance(err, dict) else None) or str(exc)
        code = err.get("code") if isinstance(err, dict) else None
        return exc.status_code, message, code, dict(exc.response.headers)
    if isinstance(exc, sdk().APIError) and isinstance(exc.body, dict):
        message = str(exc.body.get("message") or exc)
        code, kind = exc.body.get("code"), exc.body.get("type")
        if isinstance(code, int) and 400 <= code < 600:
            return code, message, None, {}
        return 200, message, code if isinstance(code, str) else (kind if isinstance(kind, str) else None), {}
    if isinstance(exc, sdk().APIError) and isinstance(exc.body, str) and exc.body:
        return 200, exc.body, None, {}  # {"error": "text"}: the SDK keeps only the text as the body
    return None
