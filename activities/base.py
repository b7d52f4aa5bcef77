"""What every tool activity shares: argument re-validation, timing, turning
expected failures into error results, and bounding output.

A tool is written as a plain function ``(request, args) -> ToolResult`` so it
can be tested without Temporal; ``tool_activity`` wraps it as an activity
whose type is the tool's name.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import time
from typing import Any, Awaitable, Callable, TypeVar

from pydantic import ValidationError
from temporalio import activity

from activities.txn.applied import record_result, recorded_result
from activities.workspace.artifacts import save_artifact
from activities.workspace.paths import WorkspaceError
from activities.workspace.root import serves
from core.tools.arguments import describe_validation_error
from core.contracts import ToolRequest, ToolResult, id_problem
from core.tools.specs import BASH, TOOLS, ToolArgs

# No result may come near Temporal's 2 MiB payload limit; tens of kB is what a
# model can use anyway. What is cut goes to the artifacts folder.
MAX_OUTPUT_CHARS = 40_000
HARD_OUTPUT_CHARS = 256_000

A = TypeVar("A", bound=ToolArgs)
T = TypeVar("T")
SyncTool = Callable[[ToolRequest, A], ToolResult]
AsyncTool = Callable[[ToolRequest, A], Awaitable[ToolResult]]
AsyncToolFunction = Callable[[ToolRequest], Awaitable[ToolResult]]  # a tool activity function


def parse_request_args(request: ToolRequest) -> ToolArgs | ToolResult:
    spec = TOOLS[request.tool]
    try:
        return spec.params.model_validate(request.arguments)
    except ValidationError as exc:
        return ToolResult.error(
            request.call_id, request.tool, describe_validation_error(request.tool, exc)
        )


HEARTBEAT_EVERY_S = 2.0


async def in_thread_heartbeating(work: Callable[[], T], every_s: float = 1.0) -> T:
    """``work()`` in a thread while the activity heartbeats every ``every_s``:
    with a heartbeat timeout a lost worker is noticed in seconds, and the
    (idempotent) retry finishes the job. Local activities do not heartbeat."""
    task = asyncio.ensure_future(asyncio.to_thread(work))
    while True:
        done, _ = await asyncio.wait({task}, timeout=every_s)
        if done:
            return task.result()
        if activity.in_activity() and not activity.info().is_local:
            activity.heartbeat()


async def _heartbeat_forever() -> None:
    # First beat after one interval, not at once: a tool that finishes in
    # under 2 s then costs the server no heartbeat write at all, and a dead
    # worker is still noticed within the heartbeat timeout.
    while True:
        await asyncio.sleep(HEARTBEAT_EVERY_S)
        activity.heartbeat()


def _check_root(request: ToolRequest, allowed_root: str | None) -> ToolResult | None:
    """A worker serves the workspace it was started for and nothing else; the
    ids that key its state folders are bounded (a model may emit any id)."""
    problem = id_problem(request.call_id, "tool call id") or id_problem(request.turn_id, "turn id")
    if problem:
        return ToolResult.error(request.call_id, request.tool, problem, metadata={"failure": "bad_id"})
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
    if isinstance(args, ToolResult):
        return _finished(request, args, started)
    heartbeat: asyncio.Task[None] | None = None
    if activity.in_activity() and not activity.info().is_local:
        # Lets the server notice a dead worker within the heartbeat timeout.
        heartbeat = asyncio.create_task(_heartbeat_forever())
    try:
        if in_thread:
            # One hop off the event loop (which a worker's local activities
            # share with its workflows) for the journal look-up, the tool
            # and the journal append together.
            result = await asyncio.to_thread(_call, request, impl, args)  # type: ignore[arg-type]
        else:
            try:
                result = await impl(request, args)  # type: ignore[misc]
            except Exception as exc:  # noqa: BLE001 - a tool that raises is this call's error result
                result = _raised(request, exc)
    finally:
        if heartbeat is not None:
            heartbeat.cancel()
    return _finished(request, result, started)


def run_tool_here(request: ToolRequest, impl: SyncTool, *, allowed_root: str | None = None) -> ToolResult:
    """``run_tool`` for a synchronous tool, in the calling thread (a write
    stage runs its calls one after another in one thread; it heartbeats)."""
    started = time.monotonic()
    args = _check_root(request, allowed_root) or parse_request_args(request)
    result = args if isinstance(args, ToolResult) else _call(request, impl, args)
    return _finished(request, result, started)


def _call(request: ToolRequest, impl: SyncTool, args: ToolArgs) -> ToolResult:
    # Writes and edits of a turn journal their results (bash is never retried):
    # a call that already ran says what happened then.
    journaled = _journaled(request)
    if journaled and (prior := recorded_result(request)) is not None:
        return prior
    try:
        result = impl(request, args)
    except Exception as exc:  # noqa: BLE001 - a tool that raises is this call's error result
        result = _raised(request, exc)
    if journaled:
        record_result(request, result)
    return result


def _raised(request: ToolRequest, exc: Exception) -> ToolResult:
    if isinstance(exc, WorkspaceError):
        return ToolResult.error(request.call_id, request.tool, str(exc))
    return ToolResult.error(
        request.call_id,
        request.tool,
        f"{request.tool} failed: {type(exc).__name__}: {exc}",
        metadata={"failure": "tool_exception"},
    )


def _finished(request: ToolRequest, result: ToolResult, started: float) -> ToolResult:
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
    if in_thread:  # what a stage runs in its own thread, call after call
        _activity.run_here = lambda request: run_tool_here(request, impl, allowed_root=allowed_root)  # type: ignore[attr-defined]
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


def stage_tools(activities: list[Callable[..., Any]], names: frozenset[str]) -> dict[str, AsyncToolFunction]:
    """The activity functions registered under ``names`` among ``activities``,
    each as a coroutine function of the request (a stage runs whatever the
    worker registered, replacements included)."""
    tools: dict[str, AsyncToolFunction] = {}
    for a in activities:
        definition = getattr(a, "__temporal_activity_definition", None)
        if definition is not None and definition.name in names:
            tools[definition.name] = a if inspect.iscoroutinefunction(a) else _in_thread(a)
    return tools


def _in_thread(function: Callable[[ToolRequest], ToolResult]) -> AsyncToolFunction:
    async def run(request: ToolRequest) -> ToolResult:
        return await asyncio.to_thread(function, request)

    return run
