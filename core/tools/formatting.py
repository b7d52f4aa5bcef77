"""Results -> messages a model reads. Pure.

The hint that follows a failed call is fixed text chosen by status; the
tool's own output (untrusted: file contents, command output) is never spliced
into it. In the OpenAI shape the two are separated by a fixed marker line; in
the Anthropic shape they are separate content blocks.
"""

from __future__ import annotations

import unicodedata
from typing import Any

from core.contracts import ToolResult, ToolStatus

HINTS: dict[ToolStatus, str] = {
    ToolStatus.ERROR: (
        "The tool call failed. Read the error above, then fix the arguments or change "
        "approach; do not repeat the identical call."
    ),
    ToolStatus.SKIPPED: (
        "This call was not run because an earlier call in the same batch failed. "
        "Fix that failure first, then send this call again if it is still needed."
    ),
    ToolStatus.DENIED: (
        "This call was not run: it was denied. Do not retry it unchanged; explain what you "
        "need or choose a different approach."
    ),
    ToolStatus.CANCELLED: (
        "This call was cancelled because another call in the same parallel group hit an "
        "infrastructure failure. It is safe to send it again."
    ),
}

HINT_MARKER = "--- tool pipeline note ---"


def _footer(result: ToolResult) -> str:
    return f"[{result.name or 'tool'}: {result.status.value}, {result.elapsed_ms:.0f} ms]"


def hint_text(result: ToolResult) -> str:
    lines = []
    hint = HINTS.get(result.status) if result.is_error or result.status != ToolStatus.OK else None
    if hint:
        lines.append(hint)
    lines.append(_footer(result))
    return "\n".join(lines)


def openai_message(result: ToolResult) -> dict[str, Any]:
    body = result.output if result.output else "(no output)"
    return {
        "role": "tool",
        "tool_call_id": result.tool_call_id,
        "content": f"{body}\n\n{HINT_MARKER}\n{hint_text(result)}",
    }


def anthropic_block(result: ToolResult) -> dict[str, Any]:
    return {
        "type": "tool_result",
        "tool_use_id": result.tool_call_id,
        "is_error": result.is_error,
        "content": [
            {"type": "text", "text": result.output if result.output else "(no output)"},
            {"type": "text", "text": hint_text(result)},
        ],
    }


def skipped_result(call_id: str, name: str, failed_index: int, failed_name: str) -> ToolResult:
    return ToolResult.error(
        call_id,
        name,
        f"Skipped: tool call #{failed_index + 1} ({failed_name}) failed earlier in this batch.",
        status=ToolStatus.SKIPPED,
    )


def cancelled_result(call_id: str, name: str, failed_index: int, failed_name: str) -> ToolResult:
    return ToolResult.error(
        call_id,
        name,
        f"Cancelled: tool call #{failed_index + 1} ({failed_name}) in the same parallel group "
        "failed for an infrastructure reason.",
        status=ToolStatus.CANCELLED,
    )


def with_applied_changes(command: ToolResult, applied: ToolResult) -> ToolResult:
    """A journal-only bash result (what the command printed, as the history
    recorded it) joined with what applying its journal did: the apply's
    metadata wins (capture=applied, changed_files ...), its notes follow the
    output, and a failed apply makes the call an error."""
    output = command.output
    if applied.output:
        output = applied.output if output in ("", "(no output)") else f"{output}\n\n{applied.output}"
    is_error = command.is_error or applied.is_error
    return command.model_copy(update={
        "output": output,
        "is_error": is_error,
        "status": ToolStatus.ERROR if is_error else command.status,
        "metadata": {**command.metadata, **applied.metadata},
    })


def denied_result(call_id: str, name: str, approver: str, reason: str) -> ToolResult:
    why = f": {reason}" if reason else ""
    return ToolResult.error(
        call_id,
        name,
        f"Denied by {approver}{why}. This call was not run.",
        status=ToolStatus.DENIED,
        metadata={"approver": approver, "reason": reason},
    )


# Letters and symbols that render as an empty cell: Hangul fillers and the
# blank Braille pattern (categories Lo and So, so the category test misses them).
_BLANK_LOOKING = frozenset("\u115f\u1160\u3164\uffa0\u2800")


def shown(text: object, keep: str = "") -> str:
    """Text as it may reach a person's terminal or browser: control and
    invisible format characters (ESC sequences, carriage returns, backspaces,
    bidi overrides, zero-width characters, lone surrogates) are written as
    visible escapes, so content a model wrote cannot repaint or hide what an
    approver reads. So is every blank that is not the ASCII space (no-break
    and wide spaces, fillers): bash does not split words at them, so
    `a\u00a0&&\u00a0rm` would read as two commands and be one word.
    Characters in ``keep`` (e.g. newline) pass through."""
    out = []
    for ch in str(text):
        if ch in keep or ch == " ":
            out.append(ch)
            continue
        category = unicodedata.category(ch)
        if category in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Zs") or ch in _BLANK_LOOKING:
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
        else:
            out.append(ch)
    return "".join(out)


def shown_lines(text: object) -> list[str]:
    """Lines of text for display, each escaped with ``shown`` (tabs kept)."""
    return [shown(line, keep="\t") for line in str(text).split("\n")]


def render_text(result: ToolResult, index: int) -> str:
    """Human-readable block for the CLI (escaped: see ``shown``)."""
    head = f"#{index + 1} {shown(result.name)} [{result.status.value}] {result.elapsed_ms:.0f} ms"
    meta = ", ".join(f"{shown(k)}={shown(v)}" for k, v in sorted(result.metadata.items()))
    lines = [head + (f"  ({meta})" if meta else "")]
    output = result.output or "(no output)"
    lines.extend("    " + line for line in shown_lines(output.rstrip("\n")))
    return "\n".join(lines)
