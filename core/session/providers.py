"""The transcript in each provider's request shape, and tool results in each
provider's reply shape. Pure.

OpenAI Chat Completions (and every OpenAI-compatible server): a system
message, user messages, assistant messages with ``tool_calls`` (arguments as
a JSON string) and one ``role: tool`` message per result. Anthropic
Messages: a top-level ``system``, assistant content blocks (``text``,
``tool_use`` with an object ``input``) and the results as ``tool_result``
blocks (with ``is_error``) at the head of the next user message.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from core.contracts import ToolCall, ToolResult, TurnResult
from core.tools.arguments import input_problem
from core.tools.formatting import anthropic_block, openai_message
from core.session.contracts import Provider, TranscriptEntry
from core.tools.specs import tool_definitions


@lru_cache(maxsize=None)
def _tools(provider: Provider) -> str:
    # Generating the JSON schemas costs ~14 ms; the registry does not change
    # while a worker runs.
    return json.dumps(tool_definitions(provider))


def tools_for(provider: Provider) -> list[dict[str, Any]]:
    return json.loads(_tools(provider))


def tool_results_entry(provider: Provider, turn_id: str, results: list[ToolResult]) -> TranscriptEntry:
    shape = openai_message if provider == "openai" else anthropic_block
    return TranscriptEntry(kind="tool_results", turn_id=turn_id, items=[shape(r) for r in results])


def turn_result_entry(provider: Provider, result: TurnResult) -> TranscriptEntry:
    """The turn already formatted its results in both shapes: take ours."""
    items = result.messages if provider == "openai" else result.anthropic_blocks
    return TranscriptEntry(kind="tool_results", turn_id=result.turn_id, items=list(items))


def _arguments_text(call: ToolCall) -> str:
    if isinstance(call.arguments, str):
        return call.arguments
    return json.dumps(call.arguments if call.arguments is not None else {})


def _arguments_object(call: ToolCall) -> dict[str, Any]:
    if isinstance(call.arguments, dict):
        return call.arguments
    try:
        value = json.loads(call.arguments or "{}")
    except ValueError:
        return {}  # the turn told the model its JSON did not parse
    if input_problem(value) is not None:
        return {}  # a lone surrogate could not be sent; the turn told the model
    return value if isinstance(value, dict) else {}


def transcript_call_ids(entries: list[TranscriptEntry]) -> set[str]:
    """Every tool call id the conversation already holds."""
    return {c.id for e in entries if e.kind == "assistant" for c in e.tool_calls}


def openai_messages(entries: list[TranscriptEntry]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for entry in entries:
        if entry.kind == "system":
            messages.append({"role": "system", "content": entry.text})
        elif entry.kind == "user":
            messages.append({"role": "user", "content": entry.text})
        elif entry.kind == "assistant":
            message: dict[str, Any] = {**entry.reasoning, "role": "assistant", "content": entry.text or None}
            if entry.reasoning_details:
                message["reasoning_details"] = entry.reasoning_details
            if entry.tool_calls:
                message["tool_calls"] = [
                    {**entry.call_extras.get(c.id, {}),
                     "id": c.id, "type": "function", "function": {"name": c.name, "arguments": _arguments_text(c)}}
                    for c in entry.tool_calls
                ]
            elif not entry.text:
                message["content"] = ""
            messages.append(message)
        elif entry.kind == "tool_results":
            messages.extend(entry.items)
    return messages


def anthropic_request(entries: list[TranscriptEntry]) -> tuple[str, list[dict[str, Any]]]:
    """(system, messages), with consecutive user content merged into one
    message: tool_result blocks first, then any text the user sent meanwhile."""
    system_parts: list[str] = []
    messages: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": role, "content": list(blocks)})

    for entry in entries:
        if entry.kind == "system":
            system_parts.append(entry.text)
        elif entry.kind == "user":
            add("user", [{"type": "text", "text": entry.text}])
        elif entry.kind == "assistant":
            blocks: list[dict[str, Any]] = list(entry.thinking)
            # Anthropic refuses a text block of only whitespace (models often
            # stream "\n\n" before their tool calls); the transcript keeps it.
            if entry.text.strip():
                blocks.append({"type": "text", "text": entry.text})
            for c in entry.tool_calls:
                blocks.append({"type": "tool_use", "id": c.id, "name": c.name, "input": _arguments_object(c)})
            if len(blocks) == len(entry.thinking):  # nothing but thinking: an answer may not end there
                blocks.append({"type": "text", "text": "(no answer)"})
            add("assistant", blocks)
        elif entry.kind == "tool_results":
            add("user", entry.items)
    return "\n\n".join(system_parts), messages


def entry_text(entry: TranscriptEntry) -> str:
    """A readable rendering of one entry (for `session transcript`)."""
    if entry.kind == "assistant":
        lines = [entry.text] if entry.text else []
        for c in entry.tool_calls:
            lines.append(f"→ {c.name}({_arguments_text(c)[:500]})  [{c.id}]")
        return "\n".join(lines)
    if entry.kind == "tool_results":
        lines = []
        for item in entry.items:
            if item.get("role") == "tool":
                lines.append(f"← [{item.get('tool_call_id')}] {str(item.get('content', ''))[:1500]}")
            else:
                texts = [b.get("text", "") for b in item.get("content", []) if isinstance(b, dict)]
                flag = " (error)" if item.get("is_error") else ""
                lines.append(f"← [{item.get('tool_use_id')}]{flag} " + "\n".join(texts)[:1500])
        return "\n".join(lines)
    return entry.text
