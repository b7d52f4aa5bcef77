"""What every tool activity shares: argument re-validation, timing, turning
expected failures into error results, and bounding output.

A tool is written as a plain function ``(request, args) -> ToolResult`` so it
can be tested without Temporal; ``tool_activity`` wraps it as an activity
whose type is the tool's name.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Awaitable, Callable, TypeVar

from pydantic import ValidationError
from temporalio import activity

from activities.txn.applied import record_result, recorded_result
from activities.workspace.artifacts import save_artifact
from activities.workspace.paths import WorkspaceError
from activities.workspace.root import serves
from core.tools.arguments import describe_validation_error
from core.contracts import ToolRequest, ToolResult
from core.tools.specs import BASH, TOOLS, ToolArgs

# No result may come near Temporal's 2 MiB payload limit; tens of kB is what a
# model can use anyway. What is cut goes to the artifacts folder.
MAX_OUTPUT_CHARS = 40_000
HARD_OUTPUT_CHARS = 256_000

A = TypeVar("A", bound=ToolArgs)
SyncTool = Callable[[ToolRequest, A], ToolResult]
AsyncTool = Callable[[ToolRequest, A], Awaitable[ToolResult]]


def parse_request_args(request: ToolRequest) -> ToolArgs | ToolResult:
    spec = TOOLS[request.tool]
    try:
        return spec.params.model_validate(request.arguments)
    except ValidationError as exc:
        return ToolResult.error(
            request.call_id, request.tool, describe_validation_error(request.tool, exc)
        )


HEARTBEAT_EVERY_S = 2.0


async def _heartbeat_forever() -> None:
    # First beat after one interval, not at once: a tool that finishes in
    # under 2 s then costs the server no heartbeat write at all, and a dead
    # worker is still noticed within the heartbeat timeout.
    while True:
        await asyncio.sleep(HEARTBEAT_EVERY_S)
        activity.heartbeat()


def _check_root(request: ToolRequest, allowed_root: str | None) -> ToolResult | None:
    """A worker serves the workspace it was started for and nothing else."""
    if allowed_root is None:
        return None
    if serves(allowed_root, request.workspace_root):
        return None
    allowed = os.path.realpath(allowed_root)
    return ToolResult.error(
        request.call_id,
        request.tool,
        f"this worker serves the workspace {allowed}, not {request.workspace_root}; "
        "start the turn with the task queue of the worker that holds that workspace",
        metadata={"failure": "wrong_workspace"},
    )


async def run_tool(
    request: ToolRequest,
    impl: SyncTool | AsyncTool,
    *,
    in_thread: bool,
    allowed_root: str | None = None,
) -> ToolResult:
    """Validate, run, time. Business failures come back as error results;
    anything unexpected propagates (an infrastructure fault for Temporal to retry)."""
    started = time.monotonic()
    args = _check_root(request, allowed_root) or parse_request_args(request)
    heartbeat: asyncio.Task[None] | None = None
    if activity.in_activity() and not activity.info().is_local:
        # Lets the server notice a dead worker within the heartbeat timeout.
        heartbeat = asyncio.create_task(_heartbeat_forever())
    # Writes and edits of a turn journal their results (bash is never retried).
    # The journal is file I/O: read and appended off the event loop, which a
    # worker's local activities share with its workflows.
    journaled = not isinstance(args, ToolResult) and _journaled(request)
    try:
        if isinstance(args, ToolResult):
            result = args
        elif journaled and (prior := await asyncio.to_thread(recorded_result, request)) is not None:
            result = prior  # this call already ran: say what happened then
        else:
            try:
                if in_thread:
                    result = await asyncio.to_thread(impl, request, args)  # type: ignore[arg-type]
                else:
                    result = await impl(request, args)  # type: ignore[misc]
            except WorkspaceError as exc:
                result = ToolResult.error(request.call_id, request.tool, str(exc))
            except Exception as exc:  # noqa: BLE001 - a tool that raises is this call's error result
                result = ToolResult.error(
                    request.call_id,
                    request.tool,
                    f"{request.tool} failed: {type(exc).__name__}: {exc}",
                    metadata={"failure": "tool_exception"},
                )
            if journaled:
                await asyncio.to_thread(record_result, request, result)
    finally:
        if heartbeat is not None:
            heartbeat.cancel()
    if len(result.output) > HARD_OUTPUT_CHARS:
        # Tools bound their own output; this is the backstop that keeps any
        # result (local activities included, whose oversized result would wedge
        # the workflow task) far below Temporal's 2 MiB payload limit.
        result.output, extra = bound_output(result.output, request, "output", HARD_OUTPUT_CHARS)
        result.metadata.update(extra)
    result.tool_call_id = request.call_id
    result.name = request.tool
    result.elapsed_ms = round((time.monotonic() - started) * 1000, 3)
    return result


def _journaled(request: ToolRequest) -> bool:
    spec = TOOLS.get(request.tool)
    return bool(request.turn_id) and spec is not None and spec.writes and request.tool != BASH


def tool_activity(
    name: str, impl: SyncTool | AsyncTool, *, in_thread: bool = True, allowed_root: str | None = None
):
    """Wrap a tool function as an activity named after the tool."""

    @activity.defn(name=name)
    async def _activity(request: ToolRequest) -> ToolResult:
        return await run_tool(request, impl, in_thread=in_thread, allowed_root=allowed_root)

    _activity.__name__ = _activity.__qualname__ = f"{name}_activity"
    return _activity


def bound_output(
    text: str, request: ToolRequest, label: str, limit: int = MAX_OUTPUT_CHARS
) -> tuple[str, dict[str, str]]:
    """Cut text to ``limit`` characters at a line boundary; save the whole text
    as an artifact and say where, so nothing is lost silently."""
    if len(text) <= limit:
        return text, {}
    cut = text.rfind("\n", 0, limit)
    head = text[: cut + 1] if cut > limit // 2 else text[:limit]
    rel = save_artifact(request.workspace_root, request.call_id, label, text)
    dropped = len(text) - len(head)
    notice = (
        f"\n[output truncated: {dropped} of {len(text)} characters not shown; "
        f"full output saved to {rel} (read it with read_file and offset/limit)]"
    )
    return head + notice, {"truncated": "true", "full_output": rel}
