"""A parallel stage of reads (read_file, grep, glob) run as ONE activity.

A stage of N reads as N activities costs N schedules, N starts and N
completions, each recorded one by one (3 history events per regular call,
a marker per local one), and a workflow task per batch of completions. As
one activity the stage costs one of each, whatever N: the turn ends sooner
and a long session's history grows by a few events per stage instead of a
few per call.

Each call still runs through its own tool activity function (the same
callable the worker registers under the tool's name, so a replacement
registered for a tool is what runs here too), concurrently, with its own
validation, timing, heartbeats and error result. A call that *raises* (an
infrastructure failure, not a business error) cancels its siblings, as a
failed call does in a parallel stage of separate activities; the stage then
fails with the failed call's index and the results that had completed, so
the workflow reports each call as before. Reads change nothing, so a retry
of the stage re-runs only reads.

A stage whose results would not fit one payload fails with
``ReadStageTooLarge`` (not retried) and the workflow runs those calls one
activity each.
"""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable, Mapping

from pydantic import BaseModel
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.base import stage_tools
from core.contracts import ToolRequest, ToolResult
from core.names import READ_STAGE_ACTIVITY
from core.tools.specs import GLOB, GREP, READ_FILE

STAGE_TOOLS = frozenset({READ_FILE, GREP, GLOB})
CALL_FAILED = "ReadStageCallFailed"
TOO_LARGE = "ReadStageTooLarge"
# Temporal refuses payloads over 2 MiB; the stage's results stay well below.
STAGE_RESULT_BUDGET_BYTES = 1536 * 1024
# Error types a tool activity is never retried for (workflows.activity_options).
NEVER_RETRIED = frozenset({"PayloadsTooLarge", "ValidationError", "WorkspaceError"})

ToolFunction = Callable[[ToolRequest], Awaitable[ToolResult]]


class ReadStageRequest(BaseModel):
    requests: list[ToolRequest]


class ReadStageResult(BaseModel):
    results: list[ToolResult]


def _never_retried(exc: BaseException) -> bool:
    if isinstance(exc, ApplicationError):
        return exc.non_retryable or (exc.type or "") in NEVER_RETRIED
    return type(exc).__name__ in NEVER_RETRIED


async def run_stage(tools: Mapping[str, ToolFunction], stage: ReadStageRequest) -> ReadStageResult:
    unknown = sorted({r.tool for r in stage.requests} - set(tools))
    if unknown:
        raise ApplicationError(
            f"read_stage cannot run {', '.join(unknown)}: it runs only {', '.join(sorted(STAGE_TOOLS))}",
            type="ValidationError",
            non_retryable=True,
        )
    tasks = [asyncio.create_task(tools[r.tool](r)) for r in stage.requests]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    except asyncio.CancelledError:  # the stage itself is cancelled: so is every call
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    failed = next((i for i, t in enumerate(tasks) if t.done() and not t.cancelled() and t.exception()), None)
    if failed is not None:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        exc = tasks[failed].exception()
        assert exc is not None
        done = [
            [i, t.result().model_dump(mode="json")]
            for i, t in enumerate(tasks)
            if i != failed and not t.cancelled() and t.exception() is None
        ]
        raise ApplicationError(
            f"{stage.requests[failed].tool} (call {stage.requests[failed].call_id}) failed: {exc}",
            {"failed": failed, "done": done},
            type=CALL_FAILED,
            non_retryable=_never_retried(exc),
        ) from exc
    result = ReadStageResult(results=[t.result() for t in tasks])
    size = len(result.model_dump_json().encode("utf-8", "surrogatepass"))
    if size > STAGE_RESULT_BUDGET_BYTES:
        raise ApplicationError(
            f"the stage's {len(tasks)} results take {size:,} bytes, over one payload's budget "
            f"({STAGE_RESULT_BUDGET_BYTES:,}): run them one activity each",
            type=TOO_LARGE,
            non_retryable=True,
        )
    return result


def build_read_stage_activity(activities: list[Callable[..., Any]]) -> Callable[..., Any]:
    """The stage activity over the read tools among ``activities`` (by
    activity name), so it runs whatever the worker registered for them."""
    tools = stage_tools(activities, STAGE_TOOLS)

    @activity.defn(name=READ_STAGE_ACTIVITY)
    async def read_stage(stage: ReadStageRequest) -> ReadStageResult:
        return await run_stage(tools, stage)

    return read_stage
