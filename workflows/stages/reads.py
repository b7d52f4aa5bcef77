"""The turn's side of a stage of reads run as one activity (activities/read_stage.py).

A parallel stage whose calls are all reads (read_file, grep, glob), none of
them already started or answered by streaming dispatch, is sent as one
``read_stage`` activity per chunk of at most ``STAGE_CHUNK`` calls instead
of one activity per call: fewer commands, completions and history events,
the same per-call results. Turns that predate patch ``READ_STAGE_PATCH``
replay their one-activity-per-call history unchanged, since the patch is
asked only when a stage qualifies.

Failures keep their per-call meaning: a call that failed for an
infrastructure reason gets that result, its siblings in the chunk that had
finished keep theirs and the others say they were cancelled because of it,
as in a stage of separate activities. Chunks are independent: a failure in
one does not cancel another. A chunk whose results would not fit one payload
runs again one activity per call.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable, Protocol

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from activities.read_stage import (
        CALL_FAILED,
        STAGE_TOOLS,
        TOO_LARGE,
        ReadStageRequest,
        ReadStageResult,
    )
    from core.contracts import PlannedCall, ToolRequest, ToolResult, TurnInput
    from core.names import READ_STAGE_ACTIVITY, READ_STAGE_PATCH
    from workflows.versions import Versions
    from core.tools.formatting import cancelled_result
    from workflows.activity_options import options_for
    from workflows.stages.activity import call_request, run_stage_activity, stage_failure_details

STAGE_CHUNK = 32


class StagedTurn(Protocol):
    """What the read stage reads and records of the turn (the turn workflow has these)."""

    _turn: TurnInput
    _recorded: bool
    _early_reads: bool
    _versions: Versions
    _recorded_bytes: int
    _running: set[int]
    _dispatch: Any

    def _arguments(self, call: PlannedCall) -> dict[str, Any]: ...
    def _runs_locally(self) -> bool: ...
    def _record(self, call: PlannedCall, result: ToolResult) -> None: ...
    async def _run_parallel(self, group: list[PlannedCall], as_stage: bool = True) -> None: ...


class ReadStage:
    def __init__(self, turn: StagedTurn, describe_failure: Callable[[PlannedCall, BaseException], ToolResult],
                 history_budget: int) -> None:
        self._turn = turn
        self._describe_failure = describe_failure
        self._history_budget = history_budget

    def _qualifies(self, group: list[PlannedCall]) -> bool:
        t = self._turn
        dispatch = t._dispatch
        return (
            t._recorded
            and len(group) >= 2
            and t._recorded_bytes <= self._history_budget
            and all(
                c.name in STAGE_TOOLS
                and c.early_result is None
                and (dispatch is None or not dispatch.started(c.index))
                for c in group
            )
        )

    async def run(self, group: list[PlannedCall]) -> bool:
        """Run ``group`` as stage activities; False (nothing done) when it
        does not qualify or the turn predates the patch."""
        t = self._turn
        if t._early_reads:
            # Streamed calls that already started (or were answered at
            # planning) take their results; the rest of the stage is one.
            done = [c for c in group if c.early_result is not None or t._dispatch.started(c.index)]
            done_at = {c.index for c in done}
            rest = [c for c in group if c.index not in done_at]
            if done and self._qualifies(rest) and t._versions.has(READ_STAGE_PATCH):
                await asyncio.gather(t._run_parallel(done, as_stage=False), self._chunks(rest))
                return True
        if not self._qualifies(group) or not t._versions.has(READ_STAGE_PATCH):
            return False
        await self._chunks(group)
        return True

    async def _chunks(self, group: list[PlannedCall]) -> None:
        chunks = [group[i : i + STAGE_CHUNK] for i in range(0, len(group), STAGE_CHUNK)]
        await asyncio.gather(*[self._chunk(chunk) for chunk in chunks])

    def _request(self, call: PlannedCall) -> ToolRequest:
        return call_request(self._turn._turn, call, self._turn._arguments(call))

    async def _execute(self, stage: ReadStageRequest) -> ReadStageResult:
        t = self._turn
        options = [options_for(r.tool) for r in stage.requests]
        return await run_stage_activity(READ_STAGE_ACTIVITY, stage, ReadStageResult, t._turn, t._runs_locally(),
                                        options, max(o.start_to_close for o in options))

    async def early_results(self, calls: list[PlannedCall]) -> list[ToolResult] | None:
        """The results of streamed reads that were planned together, run as
        one stage; None when they do not qualify or the stage did not give
        every call its result (too large, or any failure), so that the caller
        runs them one activity each, independently, as before. Reads change
        nothing, so running one again after a failed stage is safe."""
        t = self._turn
        if len(calls) < 2 or t._recorded_bytes > self._history_budget or any(c.name not in STAGE_TOOLS for c in calls):
            return None
        stage = ReadStageRequest(requests=[self._request(c) for c in calls])
        try:
            return (await self._execute(stage)).results
        except ActivityError as err:
            workflow.logger.info("streamed reads run one activity each after their stage failed: %s", err)
            return None

    async def _chunk(self, chunk: list[PlannedCall]) -> None:
        t = self._turn
        stage = ReadStageRequest(requests=[self._request(c) for c in chunk])
        t._running.update(c.index for c in chunk)
        try:
            result = await self._execute(stage)
        except ActivityError as err:
            cause = err.cause
            if isinstance(cause, ApplicationError) and cause.type == TOO_LARGE:
                t._running.difference_update(c.index for c in chunk)
                await t._run_parallel(chunk, as_stage=False)
                return
            self._record_failure(chunk, err)
            return
        finally:
            t._running.difference_update(c.index for c in chunk)
        for call, one in zip(chunk, result.results):
            t._record(call, one)

    def _record_failure(self, chunk: list[PlannedCall], err: ActivityError) -> None:
        t = self._turn
        details = stage_failure_details(err, CALL_FAILED)
        if "failed" not in details:  # the stage as a whole failed (timeout, lost worker)
            for call in chunk:
                t._record(call, self._describe_failure(call, err))
            return
        failed = chunk[int(details["failed"])]
        done = {int(i): ToolResult.model_validate(r) for i, r in details.get("done", [])}
        for i, call in enumerate(chunk):
            if call is failed:
                t._record(call, self._describe_failure(call, err))
            elif i in done:
                t._record(call, done[i])
            else:
                t._record(call, cancelled_result(call.call_id, call.name, failed.index, failed.name))
