"""The turn's side of a run of writes as one activity (activities/write_stage.py).

Consecutive unsafe stages whose calls are write_file or edit_file (none of
them answered early or already started by streaming dispatch) are sent as
one ``write_stage`` activity per chunk of at most ``STAGE_CHUNK`` calls. The
activity runs them in order and stops at the first error; the turn records
each result as it would have, and its loop then skips what follows, as
after any failed unsafe call. Turns recorded before the baseline
(workflows.versions) run one activity per write, as their histories say.

A chunk that fails as a whole (a lost worker, a timeout) is reported on its
first call not yet answered, like a single call's infrastructure failure;
the calls it had answered keep their results.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Callable, Protocol

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from activities.write_stage import CALL_FAILED, STAGE_TOOLS, WriteStageRequest, WriteStageResult
    from core.contracts import PlannedCall, Snapshot, ToolRequest, ToolResult, TurnInput
    from core.names import WRITE_STAGE_ACTIVITY
    from core.turn.planning import snapshot_key
    from workflows.activity_options import options_for
    from workflows.stages.activity import call_request, run_stage_activity, stage_failure_details

STAGE_CHUNK = 32


class WritingTurn(Protocol):
    """What the write stage reads and records of the turn (the turn workflow has these)."""

    _turn: TurnInput
    _running: set[int]
    _dispatch: Any

    def _arguments(self, call: PlannedCall) -> dict[str, Any]: ...
    def _held_snapshot(self, call: PlannedCall) -> Snapshot | None: ...
    def _runs_locally(self) -> bool: ...
    def _record(self, call: PlannedCall, result: ToolResult) -> None: ...


def qualifies(call: PlannedCall, dispatch: Any) -> bool:
    return (
        call.name in STAGE_TOOLS
        and call.early_result is None
        and (dispatch is None or not dispatch.started(call.index))
    )


def write_run(plan: Any, start: int, dispatch: Any) -> list[PlannedCall]:
    """The calls of the unsafe stages from ``start`` on that can run as one
    write stage (stops at the first stage that cannot)."""
    run: list[PlannedCall] = []
    for stage in plan.stages[start:]:
        call = plan.calls[stage.indices[0]]
        if stage.parallel or not qualifies(call, dispatch):
            break
        run.append(call)
    return run


class WriteStage:
    def __init__(self, turn: WritingTurn, describe_failure: Callable[[PlannedCall, BaseException], ToolResult]) -> None:
        self._turn = turn
        self._describe_failure = describe_failure

    async def run(self, calls: list[PlannedCall]) -> PlannedCall | None:
        """Run ``calls`` in order; the first whose result is an error (the
        ones after it are not run), or None."""
        for start in range(0, len(calls), STAGE_CHUNK):
            failed = await self._chunk(calls[start : start + STAGE_CHUNK])
            if failed is not None:
                return failed
        return None

    def _request(self, call: PlannedCall) -> ToolRequest:
        t = self._turn
        return call_request(t._turn, call, t._arguments(call), t._held_snapshot(call))

    async def _execute(self, stage: WriteStageRequest) -> WriteStageResult:
        t = self._turn
        options = [options_for(r.tool) for r in stage.requests]
        return await run_stage_activity(WRITE_STAGE_ACTIVITY, stage, WriteStageResult, t._turn, t._runs_locally(),
                                        options, sum((o.start_to_close for o in options), timedelta()))

    async def _chunk(self, chunk: list[PlannedCall]) -> PlannedCall | None:
        t = self._turn
        root = t._turn.workspace.root
        stage = WriteStageRequest(
            requests=[self._request(c) for c in chunk],
            keys=[snapshot_key(root, c.path or "") for c in chunk],
        )
        t._running.update(c.index for c in chunk)
        try:
            result = await self._execute(stage)
        except ActivityError as err:
            return self._record_failure(chunk, err)
        finally:
            t._running.difference_update(c.index for c in chunk)
        for call, one in zip(chunk, result.results):
            t._record(call, one)
            if one.is_error:
                return call
        return None

    def _record_failure(self, chunk: list[PlannedCall], err: ActivityError) -> PlannedCall:
        t = self._turn
        details = stage_failure_details(err, CALL_FAILED)
        done = [ToolResult.model_validate(r) for r in details.get("done", [])]
        for call, one in zip(chunk, done):
            t._record(call, one)
        failed = chunk[len(done)] if len(done) < len(chunk) else chunk[-1]
        t._record(failed, self._describe_failure(failed, err))
        return failed
