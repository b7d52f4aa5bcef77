"""A run of consecutive write_file / edit_file calls as ONE activity.

Unsafe calls run one at a time, and once one fails the later ones are
skipped. Run as one activity per call, a sequence of N writes costs N
schedules, starts and completions, each its own round trip through the
server and its own workflow task: several milliseconds per write that the
write itself (under one millisecond) never needed. As one activity the run
keeps every rule: the calls run in order, each through the tool activity
function the worker registers under its name (its own validation, snapshot
check, pre-image, heartbeat and error result), and the run stops at the
first call whose result is an error; the workflow reports the rest as
skipped, as it would have.

A call's snapshot is the one the turn held when the run started, or, for a
path an earlier call of the run wrote, that call's result snapshot (the same
book the workflow keeps between calls). A retry of the run (a lost worker)
runs the calls again in order: each write finds its own applied record in
the turn's log and returns it instead of writing twice.

A call that *raises* (an infrastructure failure, not a business error) fails
the run with the results completed before it, so the workflow records those
and reports the failed call as before.
"""

from __future__ import annotations

import threading
from typing import Any, Awaitable, Callable, Iterator, Mapping

from pydantic import BaseModel
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.base import in_thread_heartbeating, stage_tools
from core.contracts import Snapshot, ToolRequest, ToolResult
from core.names import WRITE_STAGE_ACTIVITY
from core.tools.specs import EDIT_FILE, WRITE_FILE

STAGE_TOOLS = frozenset({WRITE_FILE, EDIT_FILE})
CALL_FAILED = "WriteStageCallFailed"

ToolFunction = Callable[[ToolRequest], Awaitable[ToolResult]]
HereFunction = Callable[[ToolRequest], ToolResult]


class WriteStageRequest(BaseModel):
    requests: list[ToolRequest]
    keys: list[str]  # per request: the key the turn files its path's snapshot under


class WriteStageResult(BaseModel):
    results: list[ToolResult]  # in order, up to and including the first error


def _check(tools: Mapping[str, Any], stage: WriteStageRequest) -> None:
    unknown = sorted({r.tool for r in stage.requests} - set(tools))
    if unknown or len(stage.keys) != len(stage.requests):
        raise ApplicationError(
            f"write_stage runs only {', '.join(sorted(STAGE_TOOLS))}, one key per call; got "
            f"{', '.join(unknown) or f'{len(stage.keys)} keys for {len(stage.requests)} calls'}",
            type="ValidationError",
            non_retryable=True,
        )


class _Run:
    """One run's progress: the snapshots it made (by the keys the turn files
    them under) and its results so far."""

    def __init__(self, stage: WriteStageRequest) -> None:
        self.stage = stage
        self.held: dict[str, Snapshot] = {}  # snapshot path -> the latest this run made
        self.alias: dict[str, str] = {}  # key -> snapshot path
        self.results: list[ToolResult] = []

    def calls(self) -> Iterator[tuple[int, ToolRequest, str]]:
        for number, (request, key) in enumerate(zip(self.stage.requests, self.stage.keys)):
            mine = self.held.get(self.alias.get(key, key))
            yield number, request if mine is None else request.model_copy(update={"snapshot": mine}), key

    def done(self, key: str, result: ToolResult) -> bool:
        """Keep ``result``; True when the run stops here (an error)."""
        self.results.append(result)
        if result.snapshot is not None:
            self.held[result.snapshot.path] = result.snapshot
            self.alias[key] = result.snapshot.path
        return result.is_error

    def failed(self, number: int, request: ToolRequest, exc: Exception) -> ApplicationError:
        return ApplicationError(
            f"{request.tool} (call {request.call_id}) failed: {exc}",
            {"failed": number, "done": [r.model_dump(mode="json") for r in self.results]},
            type=CALL_FAILED,
        )


async def run_stage(tools: Mapping[str, ToolFunction], stage: WriteStageRequest) -> WriteStageResult:
    """Each call through its activity function, one after another."""
    _check(tools, stage)
    run = _Run(stage)
    for number, request, key in run.calls():
        try:
            result = await tools[request.tool](request)
        except Exception as exc:
            raise run.failed(number, request, exc) from exc
        if run.done(key, result):
            break
    return WriteStageResult(results=run.results)


def run_stage_here(tools: Mapping[str, HereFunction], stage: WriteStageRequest,
                   stop: threading.Event | None = None) -> WriteStageResult:
    """The same, in the calling thread: one hop off the event loop for the
    whole run instead of one per call. ``stop`` (the activity was cancelled:
    the turn is being cancelled) ends the run before its next call; a thread
    cannot be interrupted, but no write starts after the cancellation."""
    _check(tools, stage)
    run = _Run(stage)
    for number, request, key in run.calls():
        if stop is not None and stop.is_set():
            break
        try:
            result = tools[request.tool](request)
        except Exception as exc:
            raise run.failed(number, request, exc) from exc
        if run.done(key, result):
            break
    return WriteStageResult(results=run.results)


def build_write_stage_activity(activities: list[Callable[..., Any]]) -> Callable[..., Any]:
    """The stage activity over the write tools among ``activities`` (by
    activity name), so it runs whatever the worker registered for them."""
    tools = stage_tools(activities, STAGE_TOOLS)
    here: dict[str, HereFunction] = {
        name: tool.run_here for name, tool in tools.items() if getattr(tool, "run_here", None) is not None  # type: ignore[attr-defined]
    }

    @activity.defn(name=WRITE_STAGE_ACTIVITY)
    async def write_stage(stage: WriteStageRequest) -> WriteStageResult:
        if set(here) >= {r.tool for r in stage.requests}:
            stop = threading.Event()
            try:
                return await in_thread_heartbeating(lambda: run_stage_here(here, stage, stop))
            except BaseException:  # cancelled (or the worker shuts down): no further write starts
                stop.set()
                raise
        return await run_stage(tools, stage)  # a tool replaced by one that runs on the loop

    return write_stage
