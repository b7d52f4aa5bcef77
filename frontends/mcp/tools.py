"""The six tools as MCP tools, and a turn's result as an MCP tool result.

The input schemas are the ones `agent-turn tools` prints (core/tools/specs.py),
so an MCP client's model sees exactly what our own session loop's model sees.
The text content is the same formatted message the model gets in a turn
(output, then the fixed pipeline note); structuredContent carries the status
and metadata for programs.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types

from core.contracts import ToolResult, TurnResult
from core.tools.formatting import openai_message
from core.tools.specs import BASH, GLOB, GREP, READ_FILE, TOOLS, ToolArgs

READ_ONLY = frozenset({READ_FILE, GREP, GLOB})
# bash can delete work for good (rm, git reset --hard: the validator asks for
# those); write_file replaces a whole file. edit_file changes only the text it
# names, and a stale snapshot refuses it, so it is not flagged destructive.
DESTRUCTIVE = frozenset({BASH, "write_file"})
TITLES = {
    "read_file": "Read a file",
    "write_file": "Write a file",
    "edit_file": "Edit a file",
    "grep": "Search file contents",
    "glob": "Find files by name",
    "bash": "Run a command",
}

OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "status": {"type": "string", "enum": ["ok", "error", "skipped", "denied", "cancelled"]},
        "turn_id": {"type": "string"},
        "turn_status": {"type": "string"},
        "metadata": {"type": "object", "additionalProperties": {"type": "string"}},
    },
    "required": ["status", "turn_id", "turn_status", "metadata"],
}


def mcp_tools(*, tasks: bool = False) -> list[types.Tool]:
    """tools/list: one entry per tool spec, in the registry's order."""
    tools = []
    for spec in TOOLS.values():
        read_only = spec.name in READ_ONLY
        tools.append(
            types.Tool(
                name=spec.name,
                title=TITLES.get(spec.name),
                description=spec.description,
                input_schema=spec.json_schema(),
                output_schema=OUTPUT_SCHEMA,
                annotations=types.ToolAnnotations(
                    title=TITLES.get(spec.name),
                    read_only_hint=read_only,
                    destructive_hint=None if read_only else spec.name in DESTRUCTIVE,
                    idempotent_hint=True if read_only else None,
                    open_world_hint=False,
                ),
                execution=types.ToolExecution(task_support="optional") if tasks else None,
            )
        )
    return tools


def is_concurrency_safe(name: str, arguments: dict[str, Any] | None) -> bool:
    """Whether a call may run beside other safe calls (the spec's own rule;
    a call whose arguments do not validate runs alone, its turn reports why)."""
    spec = TOOLS.get(name)
    if spec is None:
        return False
    try:
        args: ToolArgs = spec.params.model_validate(arguments or {})
    except ValueError:
        return False
    return bool(spec.concurrency_safe(args))


def call_result(turn: TurnResult) -> types.CallToolResult:
    """The one call of an MCP turn as a tool result."""
    result: ToolResult = turn.results[0] if turn.results else ToolResult.error(
        "", "", f"turn {turn.turn_id} returned no result ({turn.result_counts or 'empty'})"
    )
    text = openai_message(result)["content"]
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content={
            "status": result.status.value,
            "turn_id": turn.turn_id,
            "turn_status": turn.status.value,
            "metadata": dict(result.metadata),
        },
        is_error=result.is_error,
    )


def failed_result(turn_id: str, why: str) -> types.CallToolResult:
    """A turn that ended without a TurnResult (failed, cancelled, terminated)."""
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=why)],
        structured_content={"status": "error", "turn_id": turn_id, "turn_status": "failed", "metadata": {}},
        is_error=True,
    )
