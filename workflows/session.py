"""AgentSessionWorkflow: the whole agent loop, durable.

    call_model (activity, workspace queue) ──▶ tool calls? ──▶ child AgentTurnWorkflow
         ▲                                      │ no                 (<session>/turn-<n>)
         └──── results in the provider's shape ◀┴── final answer: wait for `send` / `close`

Thin by design: the conversation lives in the transcript store next to the
workspace (the history holds its head reference and each response, bounded),
what to send the model and how results look are pure functions in ``core``,
and each batch of tool calls is an ordinary turn, approvals included. The
session continues as new when the server suggests it or every N model
calls, carrying references, snapshots, usage and queued messages.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, ChildWorkflowError
from temporalio.workflow import ChildWorkflowHandle, ParentClosePolicy

with workflow.unsafe.imports_passed_through():
    from core.names import APPEND_TRANSCRIPT_ACTIVITY, APPROVE_SIGNAL, CALL_MODEL_ACTIVITY, CLOSE_SIGNAL, DESCRIBE_TURN_ACTIVITY, FORWARD_CALL_DIGEST_PATCH, REJECT_SIGNAL, SESSION_NAMED_DIGEST_PATCH, SEND_SIGNAL, SESSION_WORKFLOW, STATUS_QUERY, TURN_WORKFLOW
    from core.session import provider_errors as providers_errors
    from core.contracts import ApprovalDecision, ToolCall, ToolResult, TurnInput, TurnProgress, TurnResult
    from core.turn.planning import batch_digest
    from core.session.providers import tool_results_entry, turn_result_entry
    from core.session.contracts import (
        ModelCallRequest,
        ModelResponse,
        SessionCarry,
        SessionInput,
        SessionResult,
        SessionState,
        SessionStatus,
        TranscriptAppend,
        TranscriptEntry,
        TurnRecord,
    )
    from core.session.prompt import default_system_prompt
    from workflows.session_dispatch import OpenBatch, open_batch
    from workflows.turn_console import child_turn_attributes


MODEL_CALL_TIMEOUT = timedelta(minutes=10)
# The activity heartbeats every 2 s while it streams (and while it waits for
# the first token), so a dead worker is noticed within this.
MODEL_HEARTBEAT_TIMEOUT = timedelta(seconds=10)
SMALL_ACTIVITY_TIMEOUT = timedelta(seconds=60)


class _Stop(Exception):
    """The loop ends: the session was cancelled while it waited on something."""


@workflow.defn(name=SESSION_WORKFLOW)
class AgentSessionWorkflow:
    @workflow.init
    def __init__(self, session: SessionInput) -> None:
        carry = session.carry or SessionCarry()
        self._input = session
        self._head = carry.transcript_head
        self._to_append = list(carry.to_append)
        self._queued = list(carry.queued_messages)
        self._snapshots = list(carry.snapshots)
        self._usage = carry.usage
        self._model_calls = carry.model_calls
        self._turns = carry.turns
        self._answers = carry.answers
        self._runs = carry.runs
        self._waiting_for_user = carry.waiting_for_user
        self._last_answer = carry.last_answer
        self._close_reason = carry.close_requested
        self._calls_this_run = 0
        self._state = SessionState.STARTING
        self._message = ""
        self._current_turn: str | None = None
        self._current_calls: list[ToolCall] = []
        self._child: ChildWorkflowHandle | None = None
        self._last_turn: TurnRecord | None = None
        self._cancelling = False
        self._open: OpenBatch | None = None
        if session.carry is None:
            system = session.system_prompt or default_system_prompt()
            self._to_append = [TranscriptEntry(kind="system", text=system), TranscriptEntry(kind="user", text=session.prompt)]

    # ------------------------------------------------------------------ run
    @workflow.run
    async def run(self, session: SessionInput) -> SessionResult:
        loop = asyncio.create_task(self._loop())
        try:
            # workflow.wait does not pass a cancellation on to the loop task:
            # we want to decide what a cancelled session records.
            await workflow.wait([loop])
        except asyncio.CancelledError:
            self._cancelling = True
            loop.cancel()
            await workflow.wait([loop])
        if not self._cancelling:
            return loop.result()
        return await self._cancelled()

    async def _loop(self) -> SessionResult:
        try:
            while True:
                if self._close_reason is not None:
                    return await self._end(SessionState.CLOSED, f"closed: {self._close_reason or 'by the user'}")
                if self._waiting_for_user:
                    if not await self._wait_for_user():
                        idle = self._input.limits.idle_timeout_seconds
                        return await self._end(
                            SessionState.IDLE_TIMEOUT, f"no message for {idle:g} s after the last answer; session ended"
                        )
                    continue  # a close may have come instead of a message
                if self._queued:
                    self._to_append.extend(TranscriptEntry(kind="user", text=m) for m in self._queued)
                    self._queued = []
                if self._should_continue_as_new():
                    await self._continue_as_new()
                limits = self._input.limits
                if self._model_calls >= limits.max_model_calls:
                    return await self._end(
                        SessionState.MAX_MODEL_CALLS,
                        f"stopped: the limit of {limits.max_model_calls} model calls was reached "
                        "(raise it with --max-turns / limits.max_model_calls and start a new session to go on)",
                    )
                response = await self._call_model()
                if isinstance(response, SessionResult):
                    return response
                if limits.max_tokens is not None and self._usage.total >= limits.max_tokens:
                    unrun = f"; its {len(response.tool_calls)} tool call(s) were not run" if response.tool_calls else ""
                    if self._open is not None:  # what had started is recorded
                        unrun = await self._finish_open_batch(response.tool_calls, response.dropped_calls)
                    return await self._end(
                        SessionState.MAX_TOKENS,
                        f"stopped: {self._usage.total} tokens used, the limit is {limits.max_tokens}{unrun}",
                    )
                if response.tool_calls:
                    await self._run_turn(response.tool_calls)
                else:
                    if self._open is not None:  # the empty batch ends
                        await self._open.drop()
                        self._open = None
                    self._last_answer = response.text
                    self._answers += 1
                    self._waiting_for_user = True
        except _Stop:
            return self._result(SessionState.CANCELLED, "cancelled")

    def _check_cancelled(self) -> None:
        if self._cancelling:
            raise _Stop()

    async def _wait_for_user(self) -> bool:
        self._set_state(SessionState.WAITING_FOR_USER)
        idle = self._input.limits.idle_timeout_seconds
        try:
            await workflow.wait_condition(
                lambda: bool(self._queued) or self._close_reason is not None,
                timeout=timedelta(seconds=idle) if idle else None,
            )
        except asyncio.TimeoutError:
            return False
        except asyncio.CancelledError:
            self._check_cancelled()
            raise
        self._waiting_for_user = False
        return True

    # ---------------------------------------------------------- model call
    async def _call_model(self) -> ModelResponse | SessionResult:
        self._set_state(SessionState.CALLING_MODEL)
        # the next turn opens before the model call.
        self._open = await open_batch(self._input, f"{workflow.info().workflow_id}/turn-{self._turns + 1}", self._snapshots)
        request = ModelCallRequest(
            session_id=workflow.info().workflow_id,
            call_number=self._model_calls + 1,
            workspace=self._input.workspace,
            model=self._input.model,
            transcript_head=self._head,
            append=self._to_append,
            dispatch_to=self._open.turn_id if self._open is not None else None,
            tokens_left=None if self._input.limits.max_tokens is None else self._input.limits.max_tokens - self._usage.total,
        )
        try:
            response = await workflow.execute_activity(
                CALL_MODEL_ACTIVITY,
                request,
                result_type=ModelResponse,
                task_queue=self._input.workspace.task_queue,
                start_to_close_timeout=MODEL_CALL_TIMEOUT,
                heartbeat_timeout=MODEL_HEARTBEAT_TIMEOUT,
                retry_policy=RetryPolicy(
                    initial_interval=timedelta(seconds=1),
                    backoff_coefficient=2.0,
                    maximum_interval=timedelta(seconds=60),
                    maximum_attempts=self._input.limits.model_attempts,
                    non_retryable_error_types=list(providers_errors.NON_RETRYABLE),
                ),
            )
        except (ActivityError, asyncio.CancelledError) as err:
            self._check_cancelled()
            if isinstance(err, asyncio.CancelledError):
                raise
            return await self._model_failed(err)
        self._check_cancelled()
        self._model_calls += 1
        self._calls_this_run += 1
        self._head = response.transcript_head
        self._to_append = []
        self._usage = self._usage.plus(response.usage)
        return response

    async def _model_failed(self, err: ActivityError) -> SessionResult:
        if self._open is not None:  # what started early is kept and recorded
            await self._abandon_open_batch(str(err.cause or err))
        cause = err.cause
        model = self._input.model
        if isinstance(cause, ApplicationError) and cause.type:
            kind = cause.type
            if kind in providers_errors.RETRYABLE:
                advice = (
                    f"The model API kept failing ({kind}) through {self._input.limits.model_attempts} attempts: "
                    "check the server and try again later in a new session."
                )
            else:
                advice = providers_errors.what_to_do(kind, model.provider, model.model)
            detail = cause.message
        else:
            kind = type(cause).__name__ if cause else "ActivityError"
            advice = "The model call did not complete (timed out or the worker was lost repeatedly)."
            detail = str(cause or err)
        return await self._end(SessionState.MODEL_ERROR, f"{advice}\n(detail: {detail})", error_type=kind)

    # ----------------------------------------------------------------- turn
    async def _run_turn(self, calls: list[ToolCall]) -> None:
        self._turns += 1
        turn_id = f"{workflow.info().workflow_id}/turn-{self._turns}"
        turn = TurnInput(
            turn_id=turn_id,
            workspace=self._input.workspace,
            tool_calls=calls,
            snapshots=self._snapshots,
            policy=self._input.policy,
            options=self._input.turn_options,
        )
        self._current_turn, self._current_calls = turn_id, calls
        self._set_state(SessionState.RUNNING_TURN)
        provider = self._input.model.provider
        try:
            # the open batch is this turn.
            self._child = self._open.handle if self._open is not None else await workflow.start_child_workflow(
                TURN_WORKFLOW,
                turn,
                id=turn_id,
                task_queue=self._input.workspace.task_queue,
                result_type=TurnResult,
                # A session that is terminated still stops its running turn
                # (and so a running bash): the turn gets a cancel request.
                parent_close_policy=ParentClosePolicy.REQUEST_CANCEL,
                search_attributes=child_turn_attributes(),
            )
            result: TurnResult = await self._child
        except (ChildWorkflowError, asyncio.CancelledError) as err:
            self._check_cancelled()
            if isinstance(err, asyncio.CancelledError):
                raise
            # The turn itself failed (terminated, timed out, a bug): the model
            # hears that its calls may or may not have run.
            results = [
                ToolResult.error(
                    c.id,
                    c.name,
                    f"The turn {turn_id} running this call ended abnormally ({err.cause or err}); the call may "
                    "or may not have run. Check the workspace before repeating it.",
                    metadata={"failure": "turn_failed"},
                )
                for c in calls
            ]
            self._to_append.append(tool_results_entry(provider, turn_id, results))
            self._last_turn = TurnRecord(turn_id=turn_id, calls=len(calls), status="failed", errors=len(calls))
            return
        finally:
            self._child = None
            self._open = None
        self._check_cancelled_with(result)
        self._current_turn, self._current_calls = None, []
        self._snapshots = list(result.snapshots)
        self._to_append.append(turn_result_entry(provider, result))
        self._last_turn = _record(result)

    async def _finish_open_batch(self, started: list[ToolCall], dropped: int) -> str:
        """streaming dispatch: the token limit ends the session;
        the activity closed the batch with only the calls that had started,
        which finish and are recorded."""
        assert self._open is not None
        if not started:
            await self._open.drop()
            self._open = None
        else:
            await self._run_turn(started)
        unrun = f"; its {dropped} tool call(s) were not run" if dropped else ""
        return unrun + (f"; {len(started)} had started while the model streamed and ran" if started else "")

    async def _abandon_open_batch(self, reason: str) -> None:
        """streaming dispatch: the model call failed after calls
        may have started; the transcript gets them and their results."""
        assert self._open is not None
        calls, result = await self._open.abandon(reason, self._input.workspace.task_queue)
        self._open = None
        if calls:
            self._turns += 1
            self._snapshots = list(result.snapshots)
            self._to_append.append(TranscriptEntry(kind="assistant", tool_calls=calls))
            self._to_append.append(turn_result_entry(self._input.model.provider, result))
            self._last_turn = _record(result)

    def _check_cancelled_with(self, result: TurnResult) -> None:
        """A turn may finish with a result even though we asked it to stop."""
        if self._cancelling:
            self._last_turn = _record(result)
            self._to_append.append(turn_result_entry(self._input.model.provider, result))
            self._current_turn = None
            raise _Stop()

    # ----------------------------------------------------- ending the session
    def _result(self, state: SessionState, message: str, error_type: str | None = None) -> SessionResult:
        self._set_state(state, message)
        return SessionResult(
            session_id=workflow.info().workflow_id,
            state=state,
            message=message,
            final_answer=self._last_answer,
            model_calls=self._model_calls,
            turns=self._turns,
            runs=self._runs,
            usage=self._usage,
            transcript_head=self._head,
            snapshots=self._snapshots,
            last_turn=self._last_turn,
            error_type=error_type,
        )

    async def _flush_transcript(self, note: str | None = None) -> None:
        """Put what the model has not yet seen (the last turn's results) and
        a note into the transcript, so it shows how the session ended."""
        entries = list(self._to_append)
        if note:
            entries.append(TranscriptEntry(kind="note", text=note))
        if not entries:
            return
        try:
            self._head = await workflow.execute_activity(
                APPEND_TRANSCRIPT_ACTIVITY,
                TranscriptAppend(
                    session_id=workflow.info().workflow_id,
                    workspace=self._input.workspace,
                    transcript_head=self._head,
                    append=entries,
                ),
                result_type=str,
                task_queue=self._input.workspace.task_queue,
                start_to_close_timeout=SMALL_ACTIVITY_TIMEOUT,
                retry_policy=RetryPolicy(maximum_attempts=3),
            )
            self._to_append = []
        except ActivityError as err:
            workflow.logger.warning("could not record the end of the session in its transcript: %s", err)

    async def _end(self, state: SessionState, message: str, error_type: str | None = None) -> SessionResult:
        await self._flush_transcript(f"session ended: {state.value}: {message}")
        return self._result(state, message, error_type)

    async def _cancelled(self) -> SessionResult:
        ran = ""
        if self._open is not None and self._current_turn is None:  # cancelled mid-stream
            self._current_turn, self._current_calls = self._open.turn_id, []
        if self._current_turn is not None:
            try:
                progress: TurnProgress | None = await workflow.execute_activity(
                    DESCRIBE_TURN_ACTIVITY,
                    self._current_turn,
                    result_type=TurnProgress,
                    task_queue=self._input.workspace.task_queue,
                    start_to_close_timeout=SMALL_ACTIVITY_TIMEOUT,
                    retry_policy=RetryPolicy(maximum_attempts=2),
                )
            except ActivityError as err:  # the record is best effort; the session still ends
                workflow.logger.warning("could not read what turn %s ran: %s", self._current_turn, err)
                progress = None
            self._last_turn = _record_progress(self._current_turn, self._current_calls, progress)
            self._current_turn = None
        if self._last_turn is not None:
            ran = f"; last turn {self._last_turn.turn_id}: " + (", ".join(self._last_turn.ran) or "nothing ran")
        message = f"cancelled{ran}"
        await self._flush_transcript(f"session ended: cancelled{ran}")
        return self._result(SessionState.CANCELLED, message)

    # ------------------------------------------------------ continue-as-new
    def _should_continue_as_new(self) -> bool:
        if self._calls_this_run == 0:
            return False
        return (
            self._calls_this_run >= self._input.limits.continue_as_new_every
            or workflow.info().is_continue_as_new_suggested()
        )

    async def _continue_as_new(self) -> None:
        # Let signal handlers that are mid-way finish (a forwarded approval).
        await workflow.wait_condition(workflow.all_handlers_finished)
        carry = SessionCarry(
            transcript_head=self._head,
            to_append=self._to_append + [TranscriptEntry(kind="user", text=m) for m in self._queued],
            snapshots=self._snapshots,
            usage=self._usage,
            model_calls=self._model_calls,
            turns=self._turns,
            answers=self._answers,
            runs=self._runs + 1,
            waiting_for_user=self._waiting_for_user,
            last_answer=self._last_answer,
            close_requested=self._close_reason,
        )
        workflow.continue_as_new(self._input.model_copy(update={"carry": carry}))

    # -------------------------------------------------------------- signals
    @workflow.signal(name=SEND_SIGNAL)
    def send(self, text: str) -> None:
        """The user's next message. While the agent is still working it is
        queued and goes to the model with the next call."""
        if text.strip():
            self._queued.append(text)

    @workflow.signal(name=CLOSE_SIGNAL)
    def close(self, reason: str = "") -> None:
        self._close_reason = reason

    @workflow.signal(name=APPROVE_SIGNAL)
    async def approve(self, decision: ApprovalDecision) -> None:
        await self._forward(decision, approve=True)

    @workflow.signal(name=REJECT_SIGNAL)
    async def reject(self, decision: ApprovalDecision) -> None:
        await self._forward(decision, approve=False)

    async def _forward(self, decision: ApprovalDecision, approve: bool) -> None:
        """Decide the running turn's batch from the session (e.g. from the
        Web UI on the session's page). The turn checks the decision as it
        would its own signal; this only refuses what is certainly wrong."""
        child = self._child
        if child is None or not self._current_calls:
            workflow.logger.warning("ignored %s: no turn is running", "approve" if approve else "reject")
            return
        digest = batch_digest(self._current_calls)
        if not decision.batch_digest and workflow.patched(SESSION_NAMED_DIGEST_PATCH):
            # An empty digest names no batch: forwarded as the running one's, it
            # approved whatever batch ran when the signal arrived.
            workflow.logger.warning("ignored %s: it names no batch digest", "approve" if approve else "reject")
            return
        if decision.batch_digest not in ("", digest):
            if workflow.patched(FORWARD_CALL_DIGEST_PATCH):
                # Perhaps the digest of a pause at one call of the turn (the
                # effect gate): the turn checks it and ignores a wrong one.
                await child.signal(APPROVE_SIGNAL if approve else REJECT_SIGNAL, decision)
                return
            workflow.logger.warning("ignored decision for batch %s: the running batch is %s", decision.batch_digest, digest)
            return
        await child.signal(APPROVE_SIGNAL if approve else REJECT_SIGNAL, decision.model_copy(update={"batch_digest": digest}))

    # --------------------------------------------------------------- status
    @workflow.query(name=STATUS_QUERY)
    def status(self) -> SessionStatus:
        return SessionStatus(
            session_id=workflow.info().workflow_id,
            state=self._state,
            message=self._message,
            model_calls=self._model_calls,
            turns=self._turns,
            answers=self._answers,
            runs=self._runs,
            usage=self._usage,
            last_answer=self._last_answer,
            current_turn_id=self._current_turn,
            current_batch_digest=batch_digest(self._current_calls) if self._current_calls else None,
            current_calls=self._current_calls,
            queued_messages=len(self._queued),
            transcript_head=self._head,
            workspace=self._input.workspace,
            provider=self._input.model.provider,
            model=self._input.model.model,
            last_turn=self._last_turn,
        )

    def _set_state(self, state: SessionState, message: str | None = None) -> None:
        self._state = state
        if message is None:
            message = self._describe(state)
        self._message = message
        workflow.set_current_details(f"**Session {state.value}.** {message}")

    def _describe(self, state: SessionState) -> str:
        if state == SessionState.CALLING_MODEL:
            return f"Model call {self._model_calls + 1} ({self._input.model.provider} {self._input.model.model})."
        if state == SessionState.RUNNING_TURN and self._current_turn:
            digest = batch_digest(self._current_calls)
            return (
                f"Running turn `{self._current_turn}` ({len(self._current_calls)} tool call(s)). If it waits for "
                f"approval: open that turn and send the signal `approve`, or send `approve` here with data "
                f'`{{"batch_digest": "{digest}", "approver": "your-name"}}`.'
            )
        if state == SessionState.WAITING_FOR_USER:
            return "Answered; waiting for the next message (signal `send`) or `close`."
        return ""


def _record(result: TurnResult) -> TurnRecord:
    return TurnRecord(
        turn_id=result.turn_id,
        calls=len(result.results),
        status=result.status.value,
        errors=sum(1 for r in result.results if r.is_error),
        ran=[f"{r.name}: {r.status.value}" for r in result.results],
    )


def _record_progress(turn_id: str, calls: list[ToolCall], progress: TurnProgress | None) -> TurnRecord:
    if progress is None:
        return TurnRecord(turn_id=turn_id, calls=len(calls), status="cancelled", ran=["(unknown: the turn's state could not be read)"])
    ran = [
        f"{c.name}: {c.status.value if c.status else c.state}" + ("" if c.status else " (stopped)")
        for c in progress.calls
    ]
    errors = sum(1 for c in progress.calls if c.status is not None and c.status.value != "ok")
    return TurnRecord(turn_id=turn_id, calls=len(calls), status="cancelled", errors=errors, ran=ran)
