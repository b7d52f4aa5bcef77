"""Streaming dispatch, the turn's side: an *open batch*.

A session starts its child turn with ``TurnInput.open_batch`` before the
model call; the ``call_model`` activity then signals ``dispatch`` for each
tool call whose JSON closed and finally sends the update ``close_batch``
with the whole response (the session signals ``abandon_batch`` instead when
the model call failed for good). Signals and updates are history events, so
every dispatch is recorded; ``core.turn.early_dispatch`` deduplicates them and
holds the rules.

Each new dispatch is planned by the same ``plan_turn`` local activity that
plans a whole batch (so the decision is a recorded marker and replays the
same on a later build), and started at once when the rules allow. The rest
waits for ``close_batch``; the turn then plans the merged batch as usual
(whole-batch approval included) and, for a call that started early, takes
the result of the run already under way instead of running it again.
"""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any, Awaitable, Callable

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from core.names import PLAN_TURN_ACTIVITY
    from activities.plan import PlanRequest
    from core.contracts import CallProgress, PlannedCall, ToolCall, ToolResult, TurnInput, TurnPlan
    from core.turn.early_dispatch import BatchBook, BatchClose, CallFacts, ClosedBatch, DispatchedCall, Key, same_call

PLAN_START_TO_CLOSE = timedelta(seconds=60)
# Early runs use indices of their own (status bookkeeping of the turn) until
# the batch closes and they get their merged positions.
_EARLY_INDEX_BASE = 1_000_000


class TurnDispatch:
    """The turn hands over what an open batch needs of it: how to run one
    planned call (``invoke``) and how to record a call's result (``record``)."""

    def __init__(
        self,
        invoke: Callable[[PlannedCall], Awaitable[ToolResult]],
        record: Callable[[PlannedCall, ToolResult], None],
        describe_failure: Callable[[PlannedCall, BaseException], ToolResult],
        run_together: Callable[[list[PlannedCall]], Awaitable[list[ToolResult] | None]] | None = None,
    ) -> None:
        self._invoke = invoke
        # Calls that may start at the same moment, run as one activity when
        # it can (a read stage: one marker instead of one per call); None
        # from it, or no such runner (older turns), runs them one by one.
        self._run_together = run_together
        self._record = record
        self._describe_failure = describe_failure
        self.book = BatchBook()
        self._inbox: list[Key] = []
        self._tasks: dict[Key, asyncio.Task[ToolResult]] = {}
        self._closed: ClosedBatch | None = None
        self._origin: dict[int, Key] = {}  # merged position -> started call
        self._prefix_plans: dict[int, tuple[list[ToolCall], TurnPlan]] = {}  # attempt -> last planned prefix
        self._close_attempt = 0

    @property
    def closed(self) -> ClosedBatch | None:
        return self._closed

    # ------------------------------------------------------------ handlers
    def on_dispatch(self, dispatched: DispatchedCall) -> None:
        outcome = self.book.accept(dispatched)
        if outcome == "refused":
            workflow.logger.warning(
                "dispatch refused: attempt %d position %d id %s conflicts with an earlier dispatch",
                dispatched.attempt, dispatched.position, dispatched.call.id,
            )
        elif outcome == "new" and self._closed is None:
            self._inbox.append((dispatched.attempt, dispatched.position))

    def on_close(self, close: BatchClose) -> ClosedBatch:
        """Merge once; a repeated close (a retried activity) gets the batch
        already closed, so the transcript records what actually runs."""
        if self._closed is None:
            self._close_attempt = close.attempt
            self._closed, self._origin = self.book.merge(close)
            if close.abandon:
                workflow.logger.info("open batch abandoned (%s); %d started call(s) kept", close.reason, len(self._origin))
        return self._closed

    # ----------------------------------------------------------- the loop
    async def collect(self, turn: TurnInput) -> TurnInput:
        """Plan and start what arrives until the batch closes; the turn's
        input with the merged batch."""
        while True:
            await workflow.wait_condition(lambda: bool(self._inbox) or self._closed is not None)
            if self._closed is not None:
                break
            keys, self._inbox = self._inbox, []
            await self._consider(turn, keys)
        assert self._closed is not None
        return turn.model_copy(update={"tool_calls": self._closed.calls, "open_batch": True})

    async def _consider(self, turn: TurnInput, keys: list[Key]) -> None:
        """Plan each touched attempt's stream so far (positions 0..n-1, all
        known) in one recorded plan_turn call and start what may start. The
        prefix's plan is the whole batch's plan when nothing more arrives, so
        the usual full-batch planning is then not repeated at close."""
        for key in keys:
            match = self.book.started_match(key)
            if match is not None:
                self.book.aliases[key] = match  # already running: never twice
        for attempt in sorted({a for a, _ in keys}):
            stream = self.book.streams[attempt]
            known = 0
            while known in stream:
                known += 1
            if known == 0:
                continue  # the first position has not arrived: nothing can start yet
            prefix = [stream[q] for q in range(known)]
            try:
                plan = await workflow.execute_local_activity(
                    PLAN_TURN_ACTIVITY,
                    PlanRequest(workspace_root=turn.workspace.root, tool_calls=prefix, policy=turn.policy,
                                approval_timeout_seconds=turn.approval_timeout_seconds),
                    result_type=TurnPlan,
                    start_to_close_timeout=PLAN_START_TO_CLOSE,
                )
            except ActivityError as err:
                # Nothing starts early; the whole batch is planned at close as usual.
                workflow.logger.warning("could not plan dispatched calls early: %s", err)
                return
            self._prefix_plans[attempt] = (prefix, plan)
            for q, call in enumerate(plan.calls):
                self.book.facts[(attempt, q)] = CallFacts(
                    concurrency_safe=call.concurrency_safe,
                    runs_without_approval=call.action == "allow" and call.early_result is None,
                )
            if self._closed is not None:
                return  # closed while planning: the full plan decides
            self._start([((attempt, q), call) for q, call in enumerate(plan.calls) if self.book.may_start((attempt, q))])

    def ready_plan(self) -> TurnPlan | None:
        """The recorded plan of exactly the closed batch, when the last
        prefix planned is it (same calls, same ids); else None: plan anew."""
        if self._closed is None or self._closed.prepended:
            return None
        prefix, plan = self._prefix_plans.get(self._close_attempt, ([], None))
        calls = self._closed.calls
        if plan is None or len(prefix) != len(calls):
            return None
        if any(a.id != b.id or not same_call(a, b) for a, b in zip(prefix, calls)):
            return None
        return plan

    def _start(self, ready: list[tuple[Key, PlannedCall]]) -> None:
        early: list[PlannedCall] = []
        for key, call in ready:
            source = self.book.streams[key[0]][key[1]]
            early.append(call.model_copy(
                update={"index": _EARLY_INDEX_BASE + len(self.book.started), "arguments": call.arguments or _decoded(source.arguments)}
            ))
            self.book.started.append(key)
        if len(early) >= 2 and self._run_together is not None:
            together = asyncio.create_task(self._together(early))
            for i, (key, _) in enumerate(ready):
                self._tasks[key] = asyncio.create_task(_nth(together, i))
            return
        for (key, _), call in zip(ready, early):
            self._tasks[key] = asyncio.create_task(self._invoke(call))

    async def _together(self, calls: list[PlannedCall]) -> list[asyncio.Task[ToolResult]]:
        assert self._run_together is not None
        results = await self._run_together(calls)
        if results is None:
            return [asyncio.create_task(self._invoke(c)) for c in calls]
        return [asyncio.create_task(_ready(r)) for r in results]

    def progress(self) -> list[CallProgress]:
        """The calls started while the batch is open, for the status query
        (by stream position; the merged positions exist only after close)."""
        out = []
        for attempt, position in self.book.started:
            call = self.book.streams[attempt][position]
            task = self._tasks[(attempt, position)]
            ok = task.done() and not task.cancelled() and task.exception() is None
            out.append(CallProgress(
                index=position, tool_call_id=call.id, name=call.name,
                state="done" if task.done() else "running", status=task.result().status if ok else None,
            ))
        return out

    # ------------------------------------------------------- after closing
    def started(self, index: int) -> bool:
        """Whether the merged call at ``index`` is already running (or ran)."""
        return index in self._origin

    async def result_of(self, index: int) -> ToolResult:
        result = await self._tasks[self._origin[index]]
        return result.model_copy(update={"tool_call_id": self._closed.calls[index].id}) if self._closed else result

    async def settle(self, calls: list[PlannedCall]) -> None:
        """Record the results of every early run (the batch was rejected or
        the model call abandoned: what ran is reported all the same)."""
        by_index = {c.index: c for c in calls}
        for index in sorted(self._origin):
            call = by_index.get(index)
            if call is None:
                continue
            try:
                result = await self.result_of(index)
            except ActivityError as err:
                result = self._describe_failure(call, err)
            self._record(call, result)


async def _nth(together: asyncio.Task[list[asyncio.Task[ToolResult]]], i: int) -> ToolResult:
    return await (await together)[i]


async def _ready(result: ToolResult) -> ToolResult:
    return result


def _decoded(arguments: str | dict[str, Any] | None) -> dict[str, Any]:
    if isinstance(arguments, dict):
        return arguments
    value = json.loads(arguments) if arguments else {}
    return value if isinstance(value, dict) else {}

