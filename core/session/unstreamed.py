"""A whole (unstreamed) model answer as the stream items it stands for. Pure.

Some OpenAI-compatible servers and proxies answer ``stream: true`` with one
JSON body (a ``chat.completion`` or a Messages ``message``). The SDKs then
find no server-sent events and yield nothing, which would read as an empty
answer. The activity sees the content type instead and feeds these items to
the same assembler: the calls run, only without starting early. A body
labelled JSON that is in fact server-sent events is read as the stream it is.
"""

from __future__ import annotations

import json
from typing import Any

# What a whole message carries as a stream's deltas would (the reasoning
# fields of DeepSeek, vLLM and OpenRouter included).
_DELTA_FIELDS = ("content", "refusal", "reasoning_content", "reasoning", "reasoning_details")


class NotAnAnswer(ValueError):
    """The body is neither a streamed answer nor a whole one."""


class ErrorBody(Exception):
    """The body (or an item of events labelled JSON) is the provider's error
    object, answered with 200 as some gateways do: classified like an error
    inside a stream, by its code or type and its words. ``status`` is the
    HTTP status the error names as its code (OpenRouter, vLLM), else 200."""

    def __init__(self, status: int, message: str, code: str | None) -> None:
        super().__init__(message)
        self.status, self.message, self.code = status, message, code


def _error_in(item: Any) -> ErrorBody | None:
    """The error an item is: OpenAI's {"error": {...} or "text"}, Anthropic's
    {"type": "error", "error": {...}}; None for anything else."""
    if not isinstance(item, dict):
        return None
    # (as the SDKs read a stream: any OpenAI item with an error, even one
    # that also has choices, as OpenRouter's last chunk; an Anthropic error event)
    if not (item.get("type") == "error" or (item.get("error") and "type" not in item)):
        return None
    error = item.get("error")
    if not isinstance(error, dict):
        return ErrorBody(200, str(error or json.dumps(item))[:2000], None)
    message = error.get("message")
    message = message if isinstance(message, str) and message else json.dumps(error)[:2000]
    code, kind = error.get("code"), error.get("type")
    if isinstance(code, int) and not isinstance(code, bool) and 400 <= code < 600:
        return ErrorBody(code, message, None)
    label = code if isinstance(code, str) else kind if isinstance(kind, str) else None
    return ErrorBody(200, message, label)


def event_item(event: str | None, data: str) -> dict[str, Any] | None:
    """One Anthropic server-sent event as the item its data is, by the type
    the data names (a missing ``event:`` line does not matter); None for a
    ping, an empty event or data that is not a JSON object. An error event
    raises the ErrorBody it stands for."""
    try:
        item = json.loads(data) if data.strip() else None
    except (ValueError, RecursionError):  # not JSON, or nested past the parser: no item
        item = None
    body = item if isinstance(item, dict) else {}
    if event == "error" or body.get("type") == "error":
        if body.get("error"):
            raise _error_in({**body, "type": "error"}) or ErrorBody(200, data[:2000], None)
        raise ErrorBody(200, data[:2000] or "the server sent an error event without a message", None)
    if not isinstance(item, dict) or item.get("type") == "ping":
        return None
    return item


def _raise_errors(items: list[Any]) -> list[Any]:
    for item in items:
        error = _error_in(item)
        if error is not None:
            raise error
    return items


def openai_chunks(body: Any) -> list[dict[str, Any]]:
    """A ``chat.completion`` as one ``chat.completion.chunk``."""
    _raise_errors([body])
    if not isinstance(body, dict) or not isinstance(body.get("choices"), list):
        raise NotAnAnswer(_describe(body, "a chat.completion with choices"))
    choices = []
    for choice in body["choices"]:
        message = choice.get("message") or {}
        delta: dict[str, Any] = {}
        delta.update((k, v) for k, v in message.items() if k in _DELTA_FIELDS and v)
        calls = []
        for i, call in enumerate(message.get("tool_calls") or []):
            function = call.get("function") or {}
            arguments = function.get("arguments")
            if not isinstance(arguments, str):  # some servers send an object
                arguments = json.dumps(arguments if arguments is not None else {})
            calls.append({**call, "index": i, "function": {"name": function.get("name", ""), "arguments": arguments}})
        if calls:
            delta["tool_calls"] = calls
        choices.append({"index": choice.get("index", 0), "delta": delta, "finish_reason": choice.get("finish_reason")})
    chunk: dict[str, Any] = {"id": body.get("id", ""), "choices": choices}
    if body.get("usage"):
        chunk["usage"] = body["usage"]
    return [chunk]


def anthropic_events(body: Any) -> list[dict[str, Any]]:
    """A Messages ``message`` as the events that would have streamed it."""
    _raise_errors([body])
    if not isinstance(body, dict) or not isinstance(body.get("content"), list):
        raise NotAnAnswer(_describe(body, "a message with content"))
    usage = body.get("usage") or {}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": {"id": body.get("id", ""), "usage": usage}}]
    for index, block in enumerate(body["content"]):
        if not isinstance(block, dict):
            continue
        if block.get("type") == "tool_use":
            # The whole input arrives with the block start, as some servers stream it.
            start = {"type": "tool_use", "id": block.get("id", ""), "name": block.get("name", ""),
                     "input": block.get("input") or {}}
            events.append({"type": "content_block_start", "index": index, "content_block": start})
        elif block.get("type") == "text":
            events.append({"type": "content_block_start", "index": index,
                           "content_block": {"type": "text", "text": block.get("text", "")}})
        elif block.get("type") in ("thinking", "redacted_thinking"):
            events.append({"type": "content_block_start", "index": index, "content_block": block})
        else:
            continue
        events.append({"type": "content_block_stop", "index": index})
    events.append({"type": "message_delta", "delta": {"stop_reason": body.get("stop_reason")},
                   "usage": {"output_tokens": usage.get("output_tokens", 0)}})
    events.append({"type": "message_stop"})
    return events


def openai_items(data: bytes) -> list[dict[str, Any]]:
    """The stream items a body labelled JSON stands for (OpenAI shapes)."""
    body = _decode(data)
    return _raise_errors(body) if isinstance(body, list) else openai_chunks(body)


def anthropic_items(data: bytes) -> list[dict[str, Any]]:
    """The stream items a body labelled JSON stands for (Anthropic shapes)."""
    body = _decode(data)
    return _raise_errors(body) if isinstance(body, list) else anthropic_events(body)


def _decode(data: bytes) -> Any:
    """The body as JSON; else, when it is server-sent events under the wrong
    label (the SDKs read those whatever the label says), their data as a
    list of items; else its start as text, for the message."""
    try:
        return json.loads(data)
    except ValueError:
        pass
    items = sse_items(data)
    return items if items else data[:500].decode("utf-8", "replace")


def sse_items(data: bytes) -> list[dict[str, Any]]:
    """The JSON objects of a server-sent-events body's ``data:`` lines."""
    items: list[dict[str, Any]] = []
    for line in data.decode("utf-8", "replace").splitlines():
        if not line.startswith("data:"):
            continue
        payload = line[5:].strip()
        if payload == "[DONE]":
            continue
        try:
            item = json.loads(payload)
        except ValueError:
            continue
        if isinstance(item, dict):
            items.append(item)
    return items


def _describe(body: Any, expected: str) -> str:
    text = json.dumps(body)[:500] if not isinstance(body, (str, bytes)) else str(body)[:500]
    return (f"the model server answered without a stream, and not with {expected} either: {text}. "
            "Point the session at a server that speaks the API (streaming or not).")


def is_event_stream(content_type: str | None) -> bool:
    """Whether a response's Content-Type says server-sent events. A missing
    one is taken as a stream: the SDK parses what comes either way."""
    return not content_type or "json" not in content_type.lower()
