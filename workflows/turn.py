"""AgentTurnWorkflow: one model response's tool calls as one durable workflow.

The workflow is deliberately thin. Preparation, policy, stage planning and
formatting are pure functions in ``core``; this class sequences them, waits
for a human when the policy asks, runs the stages as activities and keeps
the per-turn state (results, snapshots, decision) that queries report.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError, TimeoutError as TemporalTimeoutError

with workflow.unsafe.imports_passed_through():
    from core.contracts import (
        ApprovalDecision,
        CallProgress,
        DecisionRecord,
        PendingCall,
        Policy,
        Snapshot,
        ToolRequest,
        ToolResult,
        TurnInput,
        TurnProgress,
        TurnResult,
        TurnStatus,
    )
    from core.formatting import (
        anthropic_block,
        cancelled_result,
        denied_result,
        openai_message,
        skipped_result,
    )
    from core.planning import (
        PreparedCall,
        Stage,
        batch_digest,
        call_path,
        pending_calls,
        plan_stages,
        prepare_batch,
        snapshot_key,
    )
    from core.policy import DEFAULT_POLICY_ACTIVITY
    from core.tool_specs import BASH, EDIT_FILE, WRITE_FILE
    from workflows.activity_options import LOCAL_START_TO_CLOSE, options_for

WORKFLOW_NAME = "AgentTurnWorkflow"


def _describe_infrastructure_failure(prepared: PreparedCall, err: BaseException) -> ToolResult:
    """An activity that failed for infrastructure reasons, as a result the
    model can read. bash gets the honest 'may or may not have run'."""
    cause = err.cause if isinstance(err, ActivityError) else err
    name = prepared.call.name
    if isinstance(cause, ApplicationError) and cause.type == "PayloadsTooLarge":
        text = (
            f"The {name} result was too large to pass back through Temporal (limit 2 MiB). "
            "Ask for less: a smaller limit/offset window, a narrower pattern or path."
        )
        kind = "payload_too_large"
    elif name == BASH:
        text = (
            "The worker running this command was lost or the activity timed out before it "
            "reported back, so the command may or may not have run (fully or partly). Check "
            "the workspace (for example with read_file or git status) before running it again."
        )
        kind = "lost_worker" if isinstance(cause, TemporalTimeoutError) else "infrastructure"
    else:
        text = f"The {name} call failed for an infrastructure reason: {cause}. It may be retried."
        kind = "infrastructure"
    return ToolResult.error(
        prepared.call.id, name, text, metadata={"failure": kind, "detail": str(cause)[:300]}
    )


@workflow.defn(name=WORKFLOW_NAME)
class AgentTurnWorkflow:
    @workflow.init
    def __init__(self, turn: TurnInput) -> None:
        self._turn = turn
        self._digest = batch_digest(turn.tool_calls)
        self._prepared: list[PreparedCall] = []
        self._pending: list[PendingCall] = []
        self._status = TurnStatus.RUNNING
        self._decision: DecisionRecord | None = None
        self._results: dict[int, ToolResult] = {}
        self._running: set[int] = set()
        self._snapshots: dict[str, Snapshot] = {s.path: s for s in turn.snapshots}
        self._snapshot_alias: dict[str, str] = {}
        self._policy = Policy()
        if turn.policy is not None:
            # Prepared here, not in run(), so a decision that arrives with
            # the very first workflow task already finds the turn paused.
            self._prepare(turn.policy)

    def _prepare(self, policy: Policy) -> None:
        self._policy = policy
        self._prepared = prepare_batch(self._turn.tool_calls, policy)
        self._pending = pending_calls(self._prepared)
        self._status = TurnStatus.PAUSED if self._pending else TurnStatus.RUNNING

    # ------------------------------------------------------------------ run
    @workflow.run
    async def run(self, turn: TurnInput) -> TurnResult:
        if turn.policy is None:
            # The worker's default policy, fetched through a (recorded) local
            # activity so that replay on a worker configured differently
            # still makes the same decisions.
            policy = await workflow.execute_local_activity(
                DEFAULT_POLICY_ACTIVITY,
                result_type=Policy,
                start_to_close_timeout=timedelta(seconds=10),
            )
            self._prepare(policy)
        if self._pending:
            approved = await self._wait_for_decision()
            if not approved:
                return self._finish(TurnStatus.REJECTED)
            self._status = TurnStatus.RUNNING
            self._publish_status()
        await self._execute(plan_stages(self._prepared))
        return self._finish(TurnStatus.COMPLETED)

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
        for p in self._prepared:
            result = self._results.get(p.index)
            if result is None:
                if p.early_result is not None:
                    result = p.early_result
                else:
                    decision = self._decision
                    result = denied_result(
                        p.call.id,
                        p.call.name,
                        decision.approver if decision else "policy",
                        decision.reason if decision else "",
                    )
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
        )

    # ------------------------------------------------------------ execution
    async def _execute(self, stages: list[Stage]) -> None:
        failed: PreparedCall | None = None  # the first unsafe call that failed
        for stage in stages:
            if stage.parallel:
                await self._run_parallel([self._prepared[i] for i in stage.indices])
                continue
            prepared = self._prepared[stage.indices[0]]
            if failed is not None and prepared.early_result is None:
                self._results[prepared.index] = skipped_result(
                    prepared.call.id, prepared.call.name, failed.index, failed.call.name
                )
                continue
            result = await self._run_call(prepared)
            if result.is_error and failed is None:
                failed = prepared

    async def _run_call(self, prepared: PreparedCall) -> ToolResult:
        try:
            result = await self._invoke(prepared)
        except ActivityError as err:
            result = _describe_infrastructure_failure(prepared, err)
        self._record(prepared, result)
        return result

    async def _run_parallel(self, group: list[PreparedCall]) -> None:
        tasks = [asyncio.create_task(self._invoke(p)) for p in group]
        await workflow.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        failed = next(
            (p for p, t in zip(group, tasks) if t.done() and not t.cancelled() and t.exception()),
            None,
        )
        cancelled_by_us: set[int] = set()
        if failed is not None:
            # One call hit an infrastructure failure: stop its siblings rather
            # than let them run on while the batch is already compromised.
            for p, task in zip(group, tasks):
                if not task.done():
                    task.cancel()
                    cancelled_by_us.add(p.index)
            await asyncio.gather(*tasks, return_exceptions=True)
        for p, task in zip(group, tasks):
            if not task.cancelled() and task.exception() is None:
                self._record(p, task.result())
            elif p.index in cancelled_by_us and failed is not None:
                self._record(p, cancelled_result(p.call.id, p.call.name, failed.index, failed.call.name))
            elif task.cancelled():
                raise asyncio.CancelledError()  # the whole turn is being cancelled
            else:
                exc = task.exception()
                if not isinstance(exc, ActivityError):
                    raise exc  # a bug in the workflow itself: fail the task loudly
                self._record(p, _describe_infrastructure_failure(p, exc))

    async def _invoke(self, prepared: PreparedCall) -> ToolResult:
        if prepared.early_result is not None:
            return prepared.early_result
        name = prepared.call.name
        request = ToolRequest(
            call_id=prepared.call.id,
            tool=name,
            workspace_root=self._turn.workspace.root,
            arguments=prepared.arguments_dict(),
            snapshot=self._held_snapshot(prepared) if name in (WRITE_FILE, EDIT_FILE) else None,
        )
        options = options_for(name, prepared.args)
        self._running.add(prepared.index)
        try:
            if options.may_run_locally and self._runs_locally():
                return await workflow.execute_local_activity(
                    name,
                    request,
                    result_type=ToolResult,
                    start_to_close_timeout=LOCAL_START_TO_CLOSE,
                    retry_policy=options.retry,
                )
            return await workflow.execute_activity(
                name,
                request,
                result_type=ToolResult,
                task_queue=self._turn.workspace.task_queue,
                start_to_close_timeout=options.start_to_close,
                heartbeat_timeout=options.heartbeat,
                retry_policy=options.retry,
            )
        finally:
            self._running.discard(prepared.index)

    def _runs_locally(self) -> bool:
        return self._turn.options.execution == "local"

    # ------------------------------------------------------------ snapshots
    def _held_snapshot(self, prepared: PreparedCall) -> Snapshot | None:
        path = call_path(prepared)
        if path is None:
            return None
        key = snapshot_key(self._turn.workspace.root, path)
        return self._snapshots.get(self._snapshot_alias.get(key, key))

    def _record(self, prepared: PreparedCall, result: ToolResult) -> None:
        self._results[prepared.index] = result
        if result.snapshot is not None:
            self._snapshots[result.snapshot.path] = result.snapshot
            path = call_path(prepared)
            if path is not None:
                self._snapshot_alias[snapshot_key(self._turn.workspace.root, path)] = result.snapshot.path

    # ------------------------------------------------------------- approval
    def _decision_problem(self, decision: ApprovalDecision) -> str | None:
        if self._status != TurnStatus.PAUSED:
            return f"turn {self._turn.turn_id} is not waiting for approval (status {self._status.value})"
        if self._decision is not None:
            return f"turn {self._turn.turn_id} was already decided by {self._decision.approver}"
        if decision.batch_digest != self._digest:
            return (
                f"batch digest {decision.batch_digest!r} does not match the pending batch "
                f"({self._digest}); fetch the current digest with the status query"
            )
        return None

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

    @workflow.signal
    def approve(self, decision: ApprovalDecision) -> None:
        self._on_signal(decision, approve=True)

    @workflow.signal
    def reject(self, decision: ApprovalDecision) -> None:
        self._on_signal(decision, approve=False)

    def _on_signal(self, decision: ApprovalDecision, approve: bool) -> None:
        problem = self._decision_problem(decision)
        if problem:
            # A signal cannot answer its sender; the update `decide` can.
            workflow.logger.warning("ignored %s signal: %s", "approve" if approve else "reject", problem)
            return
        self._accept(decision, approve, "signal")

    @workflow.update
    def decide(self, decision: ApprovalDecision) -> DecisionRecord:
        return self._accept(decision, decision.approve, "update")

    @decide.validator
    def _validate_decide(self, decision: ApprovalDecision) -> None:
        problem = self._decision_problem(decision)
        if problem:
            raise ValueError(problem)

    # --------------------------------------------------------------- status
    @workflow.query
    def status(self) -> TurnProgress:
        calls = []
        for p in self._prepared:
            result = self._results.get(p.index)
            state = "done" if result else ("running" if p.index in self._running else "pending")
            calls.append(
                CallProgress(
                    index=p.index,
                    tool_call_id=p.call.id,
                    name=p.call.name,
                    state=state,
                    status=result.status if result else None,
                )
            )
        return TurnProgress(
            turn_id=self._turn.turn_id,
            status=self._status,
            batch_digest=self._digest,
            pending=self._pending if self._status == TurnStatus.PAUSED else [],
            calls=calls,
            decision=self._decision,
        )

    def _publish_status(self) -> None:
        """Make the state visible without a query: a memo for `client pending`
        (visibility), and the details text the Web UI shows."""
        workflow.upsert_memo({"turn_status": self._status.value, "batch_digest": self._digest})
        if self._status == TurnStatus.PAUSED:
            lines = [
                f"**Waiting for approval** of {len(self._pending)} call(s).",
                "",
                *[f"- #{c.index + 1} `{c.name}`: {c.reason}" for c in self._pending],
                "",
                "Approve: More Actions → Send a Signal → `approve` with data:",
                f'`{{"batch_digest": "{self._digest}", "approver": "your-name", "reason": "ok"}}`',
            ]
            workflow.set_current_details("\n".join(lines))
        else:
            workflow.set_current_details(f"Turn {self._status.value}.")
