"""Reading tool calls from what model APIs return. Pure.

Accepted shapes:
- OpenAI: a list of ``{"id", "type": "function", "function": {"name", "arguments"}}``,
  or a whole assistant message ``{"role": "assistant", "tool_calls": [...]}``
  (also a chat-completion response: ``{"choices": [{"message": {...}}]}``).
- Anthropic: a list of content blocks where ``{"type": "tool_use", "id", "name",
  "input"}`` blocks are the calls (text blocks are ignored), or a message whose
  ``content`` holds them.
- Plain: a list of ``{"id", "name", "arguments"}``.
"""

from __future__ import annotations

import json
from typing import Any

from core.contracts import ToolCall


class CallDocumentError(ValueError):
    pass


def _arguments(value: Any, where: str) -> Any:
    """A model's arguments: an object, a JSON string holding one, or nothing."""
    if value is None or isinstance(value, (str, dict)):
        return value
    raise CallDocumentError(
        f"{where}: arguments must be a JSON object (or a string holding one), got {type(value).__name__} "
        f"{json.dumps(value)[:60] if isinstance(value, (int, float, bool, list)) else ''}".rstrip()
    )


def _from_item(item: Any, position: int) -> ToolCall | None:
    where = f"item #{position + 1}"
    if not isinstance(item, dict):
        raise CallDocumentError(f"{where} is a {type(item).__name__}, expected an object describing a tool call")
    kind = item.get("type")
    if kind == "tool_use":
        missing = [k for k in ("id", "name") if not item.get(k)]
        if missing:
            raise CallDocumentError(f"{where} (Anthropic tool_use) lacks {', '.join(missing)}")
        return ToolCall(id=str(item["id"]), name=str(item["name"]), arguments=_arguments(item.get("input") or {}, where))
    if kind in ("text", "thinking", "redacted_thinking"):
        return None  # prose around the calls
    if "function" in item:
        fn = item["function"]
        if not isinstance(fn, dict) or not fn.get("name"):
            raise CallDocumentError(f"{where} (OpenAI tool call) has no function.name")
        if not item.get("id"):
            raise CallDocumentError(f"{where} (OpenAI tool call) has no id")
        return ToolCall(id=str(item["id"]), name=str(fn["name"]), arguments=_arguments(fn.get("arguments"), where))
    if "name" in item and "id" in item:
        return ToolCall(
            id=str(item["id"]), name=str(item["name"]), arguments=_arguments(item.get("arguments", item.get("input")), where)
        )
    raise CallDocumentError(
        f"{where} is not a tool call: expected OpenAI {{id, type: function, function: {{name, arguments}}}} "
        "or Anthropic {type: tool_use, id, name, input}"
    )


def calls_from_document(doc: Any) -> list[ToolCall]:
    if isinstance(doc, dict):
        if "choices" in doc and isinstance(doc["choices"], list) and doc["choices"]:
            doc = doc["choices"][0].get("message", {})
        if "tool_calls" in doc:
            doc = doc["tool_calls"] or []
        elif isinstance(doc.get("content"), list):
            doc = doc["content"]
        else:
            raise CallDocumentError(
                "the document is an object without 'tool_calls' (OpenAI) or a 'content' list (Anthropic)"
            )
    if not isinstance(doc, list):
        raise CallDocumentError(f"expected a list of tool calls, got a {type(doc).__name__}")
    calls = [c for i, item in enumerate(doc) if (c := _from_item(item, i)) is not None]
    if not calls:
        raise CallDocumentError("the document holds no tool calls")
    ids = [c.id for c in calls]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise CallDocumentError(f"tool call ids must be unique; repeated: {', '.join(duplicates)}")
    return calls
