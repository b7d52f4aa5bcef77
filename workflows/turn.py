"""AgentTurnWorkflow: one model response's tool calls as one durable workflow.

The workflow is deliberately thin. Everything a turn decides from code that
may change between builds (argument repair and validation, bash verdicts,
risk, concurrency, stages) is made once by the ``plan_turn`` local activity
and recorded in the history as a ``TurnPlan``; this class follows the plan,
waits for a human when it asks, runs the stages as activities and keeps the
per-turn state (results, snapshots, decision) that queries report. A worker
with different rules therefore replays an in-flight turn unchanged.

Turns started before plans were recorded (no "recorded-plan" patch marker in
their history) still plan inside the workflow, exactly as they did then.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from core.names import APPROVE_SIGNAL, BASH_RETRY_PATCH, CLOSE_BATCH_UPDATE, CLOSED_BATCH_QUERY, DECIDE_UPDATE, DEFAULT_POLICY_ACTIVITY, DISPATCH_CALLS_SIGNAL, DISPATCH_SIGNAL, EARLY_READ_STAGE_PATCH, EFFECT_GATE_PATCH, PLAN_TURN_ACTIVITY, RECORDED_PLAN_PATCH, REJECT_SIGNAL, DECISION_INTEGRITY_PATCH, STATUS_QUERY, TURN_BASELINE_PATCH, TURN_WORKFLOW
    from activities.plan import PlanRequest
    from core.contracts import (
        ApprovalDecision,
        DecisionRecord,
        PendingCall,
        PlannedCall,
        Policy,
        Snapshot,
        ToolRequest,
        ToolResult,
        TurnInput,
        TurnPlan,
        TurnProgress,
        TurnResult,
        TurnStatus,
    )
    from core.tools.formatting import (
        anthropic_block,
        cancelled_result,
        denied_result,
        openai_message,
        skipped_result,
    )
    from core.turn.planning import (
        batch_digest,
        plan_from_prepared,
        planned_arguments,
        planned_pending,
        prepare_batch,
        snapshot_key,
    )
    from core.tools.specs import BASH, TOOLS
    # The bash tool's safety check (core.tools.specs) imports the shell
    # validator at its first call. Imported here, it is passed through, so
    # that first call finds it loaded instead of building bashlex's parser
    # inside the sandbox (which refuses bashlex's own use of os.path).
    import core.shell  # noqa: F401
    from core.turn.limits import MAX_CALLS_PER_TURN
    from workflows.turn_preview import TurnPreviews
    from workflows.activity_options import LOCAL_START_TO_CLOSE, ToolActivityOptions, options_for
    from core.turn.early_dispatch import BatchClose, ClosedBatch, DispatchedCall, DispatchedCalls
    from workflows.turn_dispatch import TurnDispatch
    from workflows.turn_console import details, progress, publish
    from workflows.stages import ReadStage, WriteStage, write_run
    from workflows.turn_gate import TurnGate, deferred
    from workflows.versions import Versions
    from workflows.turn_decisions import decision_problem, holds_batch_decision, strict_decisions_wanted
    from workflows.turn_fitting import fitted
    from workflows.bash_apply import applied, journal_only
    from workflows.turn_failures import (  # noqa: F401 - REFUSED_BY_CURRENT_RULES re-exported
        REFUSED_BY_CURRENT_RULES,
        _describe_infrastructure_failure,
        refused_by_current_rules,
    )

PLAN_START_TO_CLOSE = timedelta(seconds=60)
PLAN_RETRY = RetryPolicy(maximum_attempts=3)
# In local mode, a wave of at least this many calls is followed by a 1 ms
# timer, which ends the workflow task and commits the wave's results: the
# markers of thousands of local activities must not share one completion.
COMMIT_AFTER_CALLS = 50
# Temporal terminates a workflow whose history passes 50 MB. Once the results
# recorded by this turn pass this budget, the calls not yet started are not
# run (each says so), and the turn ends with what it has.
HISTORY_BUDGET_BYTES = 32 * 1024 * 1024
RESULT_OVERHEAD_BYTES = 512  # event framing, metadata, snapshot


@workflow.defn(name=TURN_WORKFLOW)
class AgentTurnWorkflow:
    @workflow.init
    def __init__(self, turn: TurnInput) -> None:
        self._turn = turn
        self._digest = batch_digest(turn.tool_calls)
        self._plan: TurnPlan | None = None
        self._pending: list[PendingCall] = []
        self._status = TurnStatus.RUNNING
        self._decision: DecisionRecord | None = None
        self._results: dict[int, ToolResult] = {}
        self._txn_digests: dict[str, str] = {}  # call id -> digest of the changeset its preview showed
        self._running: set[int] = set()
        self._snapshots: dict[str, Snapshot] = {s.path: s for s in turn.snapshots}
        self._snapshot_alias: dict[str, str] = {}
        self._policy = Policy()
        self._recorded_bytes = 0
        self._ignored = ""  # the last decision ignored, and why (shown in details and status)
        self._gate: TurnGate | None = None  # the pause at a call (effects decide)
        self._call_decisions: list[DecisionRecord] = []
        self._batch_approved = False
        self._versions = Versions(TURN_BASELINE_PATCH)  # every patch decided before the first await
        self._recorded = self._versions.has(RECORDED_PLAN_PATCH)  # old histories planned in the workflow
        # the batch arrives by dispatch/close_batch.
        # Asked here, with the baseline, for runs recorded after it (workflows.versions).
        self._early_reads = turn.open_batch and workflow.patched(EARLY_READ_STAGE_PATCH)
        # A decision counts only for what the turn waits on (workflows.turn_decisions);
        # asked only where it matters, so turns of reads and edits keep one marker.
        self._strict_decisions = strict_decisions_wanted(turn) and workflow.patched(DECISION_INTEGRITY_PATCH)
        self._batch_open = turn.open_batch and self._strict_decisions
        self._dispatch = TurnDispatch(
            self._invoke, self._record, _describe_infrastructure_failure,
            self._stage_reads if self._early_reads else None,
        ) if turn.open_batch else None
        if not self._recorded and turn.policy is not None:
            # Prepared here, not in run(), so a decision that arrives with
            # the very first workflow task already finds the turn paused.
            self._prepare_in_workflow(turn.policy)

    def _prepare_in_workflow(self, policy: Policy) -> None:
        """The pre-recording path (replay of old histories only)."""
        prepared = prepare_batch(self._turn.tool_calls, policy)
        self._adopt(plan_from_prepared(self._turn.tool_calls, prepared, policy, recorded=False))

    def _adopt(self, plan: TurnPlan) -> None:
        self._plan = plan
        self._policy = plan.policy
        self._pending = planned_pending(plan, self._arguments)
        self._status = TurnStatus.PAUSED if self._pending else TurnStatus.RUNNING

    def _arguments(self, call: PlannedCall) -> dict:
        if call.arguments is not None:  # an early call carries its own
            return call.arguments
        return planned_arguments(call, self._turn.tool_calls[call.index])

    @property
    def _calls(self) -> list[PlannedCall]:
        return self._plan.calls if self._plan is not None else []

    # ------------------------------------------------------------------ run
    @workflow.run
    async def run(self, turn: TurnInput) -> TurnResult:
        try:
            return await self._run(turn)
        except ApplicationError:
            if self._versions.baseline:  # shown as failed in the Web UI list and `pending`
                self._status = TurnStatus.FAILED
                self._publish_status()
            raise

    async def _run(self, turn: TurnInput) -> TurnResult:
        if self._dispatch is not None:
            turn = self._turn = await self._dispatch.collect(turn)
            self._digest = batch_digest(turn.tool_calls)
            self._batch_open = False
        if self._dispatch is not None and (streamed := self._dispatch.ready_plan()) is not None:
            self._adopt(streamed)  # the whole batch was planned (recorded) as it streamed
        elif self._recorded:
            await self._record_plan(turn)
        elif turn.policy is None:
            # The worker's default policy, fetched through a (recorded) local
            # activity so that replay on a worker configured differently
            # still makes the same decisions.
            policy = await workflow.execute_local_activity(
                DEFAULT_POLICY_ACTIVITY,
                result_type=Policy,
                start_to_close_timeout=timedelta(seconds=10),
            )
            self._prepare_in_workflow(policy)
        if self._recorded and self._policy.effect_gate and TurnGate.wanted(self._calls) and self._versions.has(
            EFFECT_GATE_PATCH
        ):
            self._gate = TurnGate(self, self._policy, self._digest, self._turn.workspace.task_queue,
                                  bind_digest=self._versions.baseline)
            if not holds_batch_decision(self):
                self._pending = deferred(self._pending, self._calls)
            self._status = TurnStatus.PAUSED if self._pending else TurnStatus.RUNNING
        previews = TurnPreviews(self)  # bash previews before approval
        if self._pending:
            if previews.wanted():
                await previews.run_previews()
            approved = await self._wait_for_decision()
            if not approved:
                if previews.previewed:
                    await previews.discard()
                if self._dispatch is not None:  # what ran early is reported
                    await self._dispatch.settle(self._calls)
                return await self._fitted(self._finish(TurnStatus.REJECTED))
            self._batch_approved = True
            self._status = TurnStatus.RUNNING
            self._publish_status()
        await self._execute()
        if previews.previewed:  # a previewed call that was skipped
            await previews.discard(keep_applied=True)
        return await self._fitted(self._finish(TurnStatus.COMPLETED))

    async def _fitted(self, result: TurnResult) -> TurnResult:
        if not self._recorded:
            return result
        return await fitted(result, self._turn, self._runs_locally())

    async def _record_plan(self, turn: TurnInput) -> None:
        if len(turn.tool_calls) > MAX_CALLS_PER_TURN:
            # Refused whole: the plan and results of such a batch cannot be
            # kept within Temporal's payload limits (the client checks first).
            raise ApplicationError(
                f"turn {turn.turn_id} has {len(turn.tool_calls):,} tool calls; one turn takes at most "
                f"{MAX_CALLS_PER_TURN:,}. Nothing was run: split the batch into several turns.",
                type="BatchTooLarge",
                non_retryable=True,
            )
        try:
            plan = await workflow.execute_local_activity(
                PLAN_TURN_ACTIVITY,
                PlanRequest(
                    workspace_root=turn.workspace.root,
                    tool_calls=turn.tool_calls,
                    policy=turn.policy,
                    task_queue=turn.workspace.task_queue,
                    snapshot_paths=[s.path for s in turn.snapshots],
                    approval_timeout_seconds=turn.approval_timeout_seconds,
                ),
                result_type=TurnPlan,
                start_to_close_timeout=PLAN_START_TO_CLOSE,
                retry_policy=PLAN_RETRY,
            )
        except ActivityError as err:
            cause = err.cause or err
            raise ApplicationError(
                f"planning turn {turn.turn_id} failed on this worker: {cause}. Nothing was run.",
                type="PlanningFailed",
                non_retryable=True,
            ) from err
        decided_early = self._decision
        self._adopt(plan)
        if decided_early is not None and not self._pending:
            workflow.logger.warning(
                "a %s decision arrived while turn %s was being planned, but no call needs approval; ignored",
                "approve" if decided_early.approve else "reject",
                turn.turn_id,
            )
            self._decision = None

    async def _wait_for_decision(self) -> bool:
        self._publish_status()
        timeout = self._policy.approval_timeout_seconds
        try:
            await workflow.wait_condition(
                lambda: self._decision is not None,
                timeout=timedelta(seconds=timeout) if timeout else None,
            )
        except asyncio.TimeoutError:
            self._decision = DecisionRecord(
                batch_digest=self._digest,
                approve=False,
                approver="timeout",
                reason=f"no decision within {timeout:g} s",
                decided_at=workflow.now().isoformat(),
                via="timeout",
            )
        assert self._decision is not None
        return self._decision.approve

    def _finish(self, status: TurnStatus) -> TurnResult:
        self._status = status
        results: list[ToolResult] = []
        for c in self._calls:
            result = self._results.get(c.index)
            if result is None:
                if c.early_result is not None:
                    result = c.early_result
                else:
                    decision = self._decision
                    result = denied_result(
                        c.call_id,
                        c.name,
                        decision.approver if decision else "policy",
                        decision.reason if decision else "",
                    )
                self._results[c.index] = result  # status then shows it as done (denied), not pending
            results.append(result)
        self._publish_status()
        return TurnResult(
            turn_id=self._turn.turn_id,
            status=status,
            batch_digest=self._digest,
            results=results,
            messages=[openai_message(r) for r in results],
            anthropic_blocks=[anthropic_block(r) for r in results],
            snapshots=sorted(self._snapshots.values(), key=lambda s: s.path),
            decision=self._decision,
            ignored_decision=self._ignored,
            call_decisions=self._call_decisions,
        )

    # ------------------------------------------------------------ execution
    async def _execute(self) -> None:
        assert self._plan is not None
        calls, stages = self._plan.calls, self._plan.stages
        failed: PlannedCall | None = None  # the first unsafe call that failed
        number = 0
        while number < len(stages):
            stage = stages[number]
            number += 1
            if stage.parallel:
                group = [calls[i] for i in stage.indices]
                await self._run_parallel(group)
                if self._recorded:
                    refused = [c for c in group if self._results[c.index].metadata.get(REFUSED_BY_CURRENT_RULES)]
                    if refused and failed is None:
                        failed = refused[0]
                    if (
                        self._runs_locally()
                        and len(group) >= COMMIT_AFTER_CALLS
                        and number < len(stages)
                    ):
                        await workflow.sleep(timedelta(milliseconds=1))
                continue
            call = calls[stage.indices[0]]
            if failed is not None and call.early_result is None:
                self._results[call.index] = skipped_result(call.call_id, call.name, failed.index, failed.name)
                continue
            run = write_run(self._plan, number - 1, self._dispatch) if self._versions.baseline else []
            if len(run) >= 2 and self._recorded_bytes <= HISTORY_BUDGET_BYTES:
                number += len(run) - 1
                failed = await WriteStage(self, _describe_infrastructure_failure).run(run)
                for c in run if failed is not None else ():  # not run: after the failed call
                    if c.index not in self._results:
                        self._results[c.index] = skipped_result(c.call_id, c.name, failed.index, failed.name)
                continue
            result = await self._run_call(call)
            if result.is_error and failed is None:
                failed = call

    async def _run_call(self, call: PlannedCall) -> ToolResult:
        try:
            result = await self._invoke(call)
        except ActivityError as err:
            result = _describe_infrastructure_failure(call, err)
        self._record(call, result)
        return result

    async def _stage_reads(self, calls: list[PlannedCall]) -> list[ToolResult] | None:
        return await ReadStage(self, _describe_infrastructure_failure, HISTORY_BUDGET_BYTES).early_results(calls)

    async def _run_parallel(self, group: list[PlannedCall], as_stage: bool = True) -> None:
        if as_stage and await ReadStage(self, _describe_infrastructure_failure, HISTORY_BUDGET_BYTES).run(group):
            return  # reads only: one activity for the stage (patched)
        tasks = [asyncio.create_task(self._invoke(c)) for c in group]
        await workflow.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        failed = next(
            (c for c, t in zip(group, tasks) if t.done() and not t.cancelled() and t.exception()),
            None,
        )
        cancelled_by_us: set[int] = set()
        if failed is not None:
            # One call hit an infrastructure failure: stop its siblings rather
            # than let them run on while the batch is already compromised.
            for c, task in zip(group, tasks):
                if not task.done():
                    task.cancel()
                    cancelled_by_us.add(c.index)
            await asyncio.gather(*tasks, return_exceptions=True)
        for c, task in zip(group, tasks):
            if not task.cancelled() and task.exception() is None:
                self._record(c, task.result())
            elif c.index in cancelled_by_us and failed is not None:
                self._record(c, cancelled_result(c.call_id, c.name, failed.index, failed.name))
            elif task.cancelled():
                raise asyncio.CancelledError()  # the whole turn is being cancelled
            else:
                exc = task.exception()
                if not isinstance(exc, ActivityError):
                    raise exc  # a bug in the workflow itself: fail the task loudly
                self._record(c, _describe_infrastructure_failure(c, exc))

    async def _invoke(self, call: PlannedCall) -> ToolResult:
        if call.early_result is not None:
            return call.early_result
        if self._dispatch is not None and self._dispatch.started(call.index):
            return await self._dispatch.result_of(call.index)
        name = call.name
        if self._recorded and self._recorded_bytes > HISTORY_BUDGET_BYTES:
            return ToolResult.error(
                call.call_id,
                name,
                f"Not run: this turn's results already fill {self._recorded_bytes:,} bytes of its history "
                f"(budget {HISTORY_BUDGET_BYTES:,}; Temporal's limit is 50 MB). Send this call again in "
                "a new turn, and ask for less output per call (smaller limit, narrower pattern).",
                metadata={"failure": "history_budget"},
            )
        request = ToolRequest(
            call_id=call.call_id,
            tool=name,
            workspace_root=self._turn.workspace.root,
            arguments=self._arguments(call),
            snapshot=self._held_snapshot(call) if TOOLS[name].needs_snapshot else None,
            turn_id=self._turn.turn_id if self._recorded else "",
            txn_digest=self._txn_digests.get(call.call_id, ""),
        )
        if self._gate is not None:
            request.gate = self._gate.gate_for(call, self._batch_approved)
        request.network = call.network and self._batch_approved  # asked "needs network", approved
        request.journal_only = self._versions.baseline and journal_only(request)  # workflows.bash_apply
        # bash is retried after a lost worker in turns with the patch.
        bash_retry = TOOLS[name].activity.retry == "after-capture" and self._versions.has(BASH_RETRY_PATCH)
        options = options_for(name, bash_timeout=call.bash_timeout_seconds, bash_retry=bash_retry)
        self._running.add(call.index)
        try:
            result = await self._activity(request, options)
        finally:
            self._running.discard(call.index)
        if self._gate is not None and request.gate is not None:
            result = await self._gate.settle(call, request, result, lambda r: self._activity(r, options))
        if request.journal_only:
            result = await applied(request, result, self._activity)
        if self._recorded and name == BASH and result.is_error and result.metadata.get("verdict") == "reject":
            result = refused_by_current_rules(result)
        return result

    async def _activity(self, request: ToolRequest, options: ToolActivityOptions) -> ToolResult:
        if options.may_run_locally and self._runs_locally():
            return await workflow.execute_local_activity(
                request.tool,
                request,
                result_type=ToolResult,
                start_to_close_timeout=LOCAL_START_TO_CLOSE,
                retry_policy=options.retry,
            )
        return await workflow.execute_activity(
            request.tool,
            request,
            result_type=ToolResult,
            task_queue=self._turn.workspace.task_queue,
            start_to_close_timeout=options.start_to_close,
            heartbeat_timeout=options.heartbeat,
            retry_policy=options.retry,
        )

    def _runs_locally(self) -> bool:
        return self._turn.options.execution == "local"

    # ------------------------------------------------------------ snapshots
    def _held_snapshot(self, call: PlannedCall) -> Snapshot | None:
        if call.path is None:
            return None
        key = snapshot_key(self._turn.workspace.root, call.path)
        return self._snapshots.get(self._snapshot_alias.get(key, key))

    def _record(self, call: PlannedCall, result: ToolResult) -> None:
        self._results[call.index] = result
        self._recorded_bytes += len(result.output) + RESULT_OVERHEAD_BYTES
        if result.snapshot is not None:
            self._snapshots[result.snapshot.path] = result.snapshot
            if call.path is not None:
                self._snapshot_alias[snapshot_key(self._turn.workspace.root, call.path)] = result.snapshot.path

    # ------------------------------------------------------------- approval
    async def pause_at_call(self, pending: PendingCall, digest: str) -> DecisionRecord:
        """Pause at one call (the effect gate): the same signals, update,
        status query, memo and details as the whole-batch pause, bound to
        ``digest``; the batch's own decision is kept aside meanwhile."""
        batch_digest, batch_decision = self._digest, self._decision
        self._digest, self._decision = digest, None
        self._pending, self._status = [pending], TurnStatus.PAUSED
        try:
            await self._wait_for_decision()
            assert self._decision is not None
            record = self._decision
        finally:
            self._digest, self._decision = batch_digest, batch_decision
            self._pending, self._status = [], TurnStatus.RUNNING
        self._call_decisions.append(record)
        self._publish_status()
        return record

    def _decision_problem(self, decision: ApprovalDecision, short_ok: bool = False) -> str | None:
        return decision_problem(self, decision, short_ok)

    def _accept(self, decision: ApprovalDecision, approve: bool, via: str) -> DecisionRecord:
        self._decision = DecisionRecord(
            batch_digest=decision.batch_digest,
            approve=approve,
            approver=decision.approver,
            reason=decision.reason,
            decided_at=workflow.now().isoformat(),
            via=via,  # type: ignore[arg-type]
        )
        return self._decision

    @workflow.signal(name=APPROVE_SIGNAL)
    def approve(self, decision: ApprovalDecision) -> None:
        self._on_signal(decision, approve=True)

    @workflow.signal(name=REJECT_SIGNAL)
    def reject(self, decision: ApprovalDecision) -> None:
        self._on_signal(decision, approve=False)

    def _on_signal(self, decision: ApprovalDecision, approve: bool) -> None:
        problem = self._decision_problem(decision, short_ok=True)
        if problem:
            # A signal cannot answer its sender; the update `decide` can.
            workflow.logger.warning("ignored %s signal: %s", "approve" if approve else "reject", problem)
            self._ignored = f"{'approve' if approve else 'reject'} from {decision.approver}: {problem}"
            workflow.set_current_details(details(self))
            return
        self._accept(decision.model_copy(update={"batch_digest": self._digest}), approve, "signal")

    @workflow.update(name=DECIDE_UPDATE)
    def decide(self, decision: ApprovalDecision) -> DecisionRecord:
        return self._accept(decision, decision.approve, "update")

    @decide.validator
    def _validate_decide(self, decision: ApprovalDecision) -> None:
        problem = self._decision_problem(decision)
        if problem:
            raise ValueError(problem)

    # ------------------------------------- streaming dispatch hooks
    @workflow.signal(name=DISPATCH_SIGNAL)
    def dispatch(self, call: DispatchedCall) -> None:
        if self._dispatch is None:
            workflow.logger.warning("ignored dispatch: turn %s is not an open batch", self._turn.turn_id)
            return
        self._dispatch.on_dispatch(call)

    @workflow.signal(name=DISPATCH_CALLS_SIGNAL)
    def dispatch_calls(self, batch: DispatchedCalls) -> None:
        for call in batch.calls:
            self.dispatch(call)

    @workflow.update(name=CLOSE_BATCH_UPDATE)
    def close_batch(self, close: BatchClose) -> ClosedBatch:
        assert self._dispatch is not None
        return self._dispatch.on_close(close)

    @close_batch.validator
    def _validate_close_batch(self, close: BatchClose) -> None:
        if self._dispatch is None:
            raise ValueError(f"turn {self._turn.turn_id} is not an open batch")

    @workflow.query(name=CLOSED_BATCH_QUERY)
    def closed_batch(self) -> ClosedBatch | None:
        """The batch this turn closed with: a model call retried after the
        turn finished (signals and updates no longer reach it) reads it here."""
        return self._dispatch.closed if self._dispatch is not None else None

    # --------------------------------------------------------------- status
    @workflow.query(name=STATUS_QUERY)
    def status(self) -> TurnProgress:
        return progress(self)

    def _publish_status(self) -> None:
        """Make the state visible without a query (workflows.turn_console)."""
        publish(self)
