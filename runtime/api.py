"""The library API for agent turns: what client.py, demo.py and an agent's own
code call.

    turns = TurnClient(await connect())
    turn = build_turn_input(workspace_root="/srv/ws", task_queue="agent-tools", tool_calls=calls)
    result = await turns.run_turn(turn)

``build_turn_input`` is the one place that builds a ``TurnInput`` (and checks
it against Temporal's limits). ``TurnClient`` answers in words when a turn
cannot: a turn whose workflow task keeps failing is reported as
``TurnStuck`` (which turn, since when, the first line of the failure, what to
do), a query nobody answers times out as ``TurnNotAnswering``, and a start
with no worker polling the queue is ``NoWorker``. ``add_to_worker`` puts our
plugin (every workflow and activity) into an existing worker's options.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from datetime import datetime, timedelta
from typing import Any, Callable, Iterable, Sequence

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import EventType, TaskQueueType, WorkflowTaskFailedCause
from temporalio.api.history.v1 import HistoryEvent
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import (
    DescribeTaskQueueRequest,
    GetWorkflowExecutionHistoryReverseRequest,
)
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError, WorkflowHandle
from temporalio.common import WorkflowIDReusePolicy
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.service import RPCError, RPCStatusCode

from core.tools.arguments import input_problem
from core.contracts import (
    ApprovalDecision,
    DecisionRecord,
    Policy,
    Snapshot,
    ToolCall,
    TurnInput,
    TurnOptions,
    TurnProgress,
    TurnResult,
    TurnStatus,
    Workspace,
)
from core.turn.limits import LimitExceeded, check_batch
# Workflow, query, signal and update by name (their values are pinned in
# core.names): the client side never imports the workflow code, and with it
# the shell validator (~0.1 s of CPU in every command-line process).
from core.names import APPROVE_SIGNAL, DECIDE_UPDATE, REJECT_SIGNAL, STATUS_QUERY, TURN_WORKFLOW
from core.txn_contracts import RollbackResult
from runtime.txn_api import rollback  # noqa: F401 - rollback(client, turn_id)
from runtime.visibility import start_attributes
from workflows.turn_console import TURN_STATUS_KEY, WORKSPACE_KEY
from core.turn.details import static_details, static_summary
from runtime.queues import other_workspace_problem, queue_for_workspace  # noqa: F401 - re-exported

QUERY_TIMEOUT_S = 5.0
# A poller is listed for a while after its last poll (a long poll lasts ~60 s).
POLLER_FRESH_S = 75.0
WORKER_GRACE_S = 3.0


class TurnInputError(ValueError):
    """The turn cannot be started as given; the message says why and what to do."""


class TurnProblem(RuntimeError):
    """A turn that cannot answer; ``str()`` is the explanation for a person."""


class TurnStuck(TurnProblem):
    def __init__(self, stuck: "StuckTask") -> None:
        super().__init__(stuck.explain())
        self.stuck = stuck


class TurnNotAnswering(TurnProblem):
    pass


class NoWorker(TurnProblem):
    pass


class WrongWorkspace(TurnProblem):
    """The turn's queue is served by a worker for another folder: refused
    before anything was started."""


# ------------------------------------------------------------------ input
def build_turn_input(
    *,
    workspace_root: str,
    task_queue: str,
    tool_calls: Sequence[ToolCall],
    turn_id: str | None = None,
    snapshots: Iterable[Snapshot] = (),
    policy: Policy | None = None,
    execution: str = "remote",
    approval_timeout_seconds: float | None = None,
) -> TurnInput:
    """A TurnInput that Temporal will accept, or TurnInputError naming the
    calls at fault (invalid Unicode, nesting, sizes, count)."""
    calls = list(tool_calls)
    for i, call in enumerate(calls):
        problem = input_problem(call.id) or input_problem(call.name)
        if problem is None and not isinstance(call.arguments, str):
            # A string is the model's own text: planning reports its problems
            # as the call's result. An object must be sent as is, so it must
            # be sendable.
            problem = input_problem(call.arguments)
        if problem:
            raise TurnInputError(f"tool call #{i + 1} ({ascii(call.id)}): {problem}")
    try:
        check_batch(calls)
    except LimitExceeded as exc:
        raise TurnInputError(str(exc)) from None
    turn = TurnInput(
        turn_id=turn_id or f"turn-{uuid.uuid4().hex[:12]}",
        workspace=Workspace(root=workspace_root, task_queue=task_queue),
        tool_calls=calls,
        snapshots=list(snapshots),
        policy=policy,
        options=TurnOptions(execution=execution),  # type: ignore[arg-type]
        approval_timeout_seconds=approval_timeout_seconds,
    )
    try:
        pydantic_data_converter.payload_converter.to_payloads([turn])
    except Exception as exc:  # noqa: BLE001 - whatever the encoder refuses, say so
        raise TurnInputError(f"the turn cannot be encoded for Temporal: {str(exc)[:300]}") from None
    return turn


# --------------------------------------------------------------- diagnosis
@dataclass(frozen=True)
class StuckTask:
    turn_id: str
    since: datetime
    cause: str
    first_line: str
    attempts: int

    def advice(self) -> str:
        text = f"{self.cause} {self.first_line}".lower()
        if "nondetermin" in text or "tmprl1100" in text:
            return (
                "The worker now running it has workflow code that differs from the build that started "
                "the turn. Run the build that started it (worker versioning: see README 'Upgrading "
                f"workers'), or reset the turn (`temporal workflow reset --workflow-id {self.turn_id} "
                f"--type FirstWorkflowTask`) or end it (`temporal workflow terminate --workflow-id {self.turn_id}`)."
            )
        if "not registered" in text or "unknown workflow" in text:
            return (
                f"The worker polling its task queue does not know the workflow type {TURN_WORKFLOW}: "
                "start a worker of this project (python worker.py ...) on that queue."
            )
        return (
            "The worker's log has the full error. Fix the cause (or run the build that started the "
            f"turn) and the turn continues by itself; or end it with `temporal workflow terminate "
            f"--workflow-id {self.turn_id}`."
        )

    def explain(self) -> str:
        return (
            f"turn {self.turn_id} is stuck: its workflow task has been failing since "
            f"{self.since.isoformat(timespec='seconds')} ({self.attempts} attempt(s)); {self.cause}: "
            f"{self.first_line}\n  what to do: {self.advice()}"
        )


# Workflow task failures the server makes routinely, not the worker: a task
# that tried to finish while new events (a signal, an update) arrived is
# failed so that the next task sees them; a worker's sticky queue reset. The
# next task follows at once: nothing is stuck.
_ROUTINE_TASK_FAILURES = frozenset({
    WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND,
    WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_UPDATE,
    WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_RESET_STICKY_TASK_QUEUE,
})


def stuck_task(turn_id: str, newest_first: Iterable[HistoryEvent], attempts: int) -> StuckTask | None:
    """A running turn whose latest workflow task failed for a reason of the
    worker (and none completed since), from its history, newest event first."""
    for event in newest_first:
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
            return None
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED:
            attrs = event.workflow_task_failed_event_attributes
            if attrs.cause in _ROUTINE_TASK_FAILURES:
                continue
            return StuckTask(
                turn_id=turn_id,
                since=event.event_time.ToDatetime(),
                cause=_cause_name(attrs.cause),
                first_line=_first_line(attrs.failure.message),
                attempts=attempts,
            )
    return None


def _first_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[0][:300] if lines else "(no message)"


class TurnClient:
    def __init__(self, client: Client, *, query_timeout_s: float = QUERY_TIMEOUT_S) -> None:
        self.client = client
        self.query_timeout_s = query_timeout_s
        self.last_via = ""  # how the last decision was sent: "update" or "signal"

    # -------------------------------------------------------------- workers
    async def workers_polling(self, task_queue: str, kind: str = "workflow") -> int:
        """How many workers polled ``task_queue`` recently."""
        queue_type = (
            TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW if kind == "workflow" else TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY
        )
        response = await self.client.workflow_service.describe_task_queue(
            DescribeTaskQueueRequest(
                namespace=self.client.namespace,
                task_queue=TaskQueue(name=task_queue),
                task_queue_type=queue_type,
            )
        )
        now = datetime.now().timestamp()
        fresh = 0
        for poller in response.pollers:
            seen = poller.last_access_time.seconds if poller.HasField("last_access_time") else now
            if now - seen <= POLLER_FRESH_S:
                fresh += 1
        return fresh

    async def require_worker(self, task_queue: str, grace_s: float = WORKER_GRACE_S) -> None:
        """NoWorker unless a worker polls ``task_queue`` within ``grace_s``
        (a worker that has just started registers with its first poll)."""
        deadline = time.monotonic() + grace_s
        while await self.workers_polling(task_queue) == 0:
            if time.monotonic() >= deadline:
                raise NoWorker(
                    f"no worker polls the task queue {task_queue!r}: start one with "
                    f"`python worker.py --workspace DIR --task-queue {task_queue}` (or wait with --wait-for-worker)"
                )
            await asyncio.sleep(0.25)

    # ---------------------------------------------------------------- turns
    async def start_turn(
        self,
        turn: TurnInput,
        *,
        workflow_task_queue: str | None = None,
        require_worker: bool = True,
    ) -> WorkflowHandle[Any, TurnResult]:
        queue = workflow_task_queue or turn.workspace.task_queue
        problem = await other_workspace_problem(self.client, turn.workspace.task_queue, turn.workspace.root)
        if problem:
            raise WrongWorkspace(f"turn {turn.turn_id} was not started: {problem}")
        if require_worker:
            await self.require_worker(queue)
        attributes = await start_attributes(self.client, turn)
        return await self.client.start_workflow(
            TURN_WORKFLOW,
            turn,
            id=turn.turn_id,
            task_queue=queue,
            result_type=TurnResult,
            static_summary=static_summary(turn.tool_calls, turn.workspace.root),
            static_details=static_details(turn.tool_calls, turn.workspace.root),
            # A worker of this process on that queue (the MCP front-end's, a
            # test's, an embedding app's) gets the first workflow task in the
            # start call's answer instead of through matching: ~4 ms sooner.
            # With no such worker the start is an ordinary one.
            request_eager_start=True,
            # A turn id names one batch: the worker keys the turn's records
            # (applied calls, pre-images for rollback) by it, so a second
            # batch under a finished turn's id would be answered from the
            # first one's records without running. Refused instead.
            id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
            **({"search_attributes": attributes} if attributes is not None else {}),
        )

    async def run_turn(self, turn: TurnInput, **kw: Any) -> TurnResult:
        """Start the turn and wait for its result (loaded back from the
        workspace when it was offloaded)."""
        handle = await self.start_turn(turn, **kw)
        return load_offloaded(await handle.result(), turn.workspace.root)

    async def rollback(self, turn_id: str, **kw: Any) -> "RollbackResult":
        """Restore every file the turn changed; see runtime.txn_api.rollback."""
        return await rollback(self.client, turn_id, **kw)

    async def result(self, turn_id: str) -> TurnResult:
        return await self.client.get_workflow_handle(turn_id, result_type=TurnResult).result()

    async def is_running(self, turn_id: str) -> bool:
        desc = await self.client.get_workflow_handle(turn_id).describe()
        return desc.status == WorkflowExecutionStatus.RUNNING

    async def stuck(self, turn_id: str) -> StuckTask | None:
        """A running turn whose latest workflow task failed (and none
        completed since) is stuck; None otherwise."""
        handle = self.client.get_workflow_handle(turn_id)
        desc = await handle.describe()
        if desc.status != WorkflowExecutionStatus.RUNNING:
            return None
        response = await self.client.workflow_service.get_workflow_execution_history_reverse(
            GetWorkflowExecutionHistoryReverseRequest(
                namespace=self.client.namespace,
                execution=WorkflowExecution(workflow_id=turn_id),
                maximum_page_size=200,
            )
        )
        pending = desc.raw_description.pending_workflow_task
        return stuck_task(turn_id, response.history.events, max(pending.attempt, 1) if pending else 1)

    async def status(self, turn_id: str) -> TurnProgress:
        """The turn's progress, or TurnStuck / TurnNotAnswering in words."""
        stuck = await self.stuck(turn_id)
        if stuck is not None:
            raise TurnStuck(stuck)
        handle = self.client.get_workflow_handle(turn_id)
        try:
            return await handle.query(
                STATUS_QUERY,
                result_type=TurnProgress,
                rpc_timeout=timedelta(seconds=self.query_timeout_s),
            )
        except RPCError as exc:
            stuck = await self.stuck(turn_id)
            if stuck is not None:
                raise TurnStuck(stuck) from None
            if exc.status in (RPCStatusCode.DEADLINE_EXCEEDED, RPCStatusCode.CANCELLED):
                desc = await handle.describe()
                workers = await self.workers_polling(desc.task_queue)
                why = (
                    f"no worker polls its task queue {desc.task_queue!r}; start one"
                    if workers == 0
                    else f"{workers} worker(s) poll its task queue {desc.task_queue!r} but none answered"
                )
                raise TurnNotAnswering(
                    f"turn {turn_id} did not answer the status query within {self.query_timeout_s:g} s: {why}. "
                    "A paused turn still holds its state; decisions sent with --signal wait in its history."
                ) from None
            raise

    # ------------------------------------------------------------- approval
    async def pending_digest(self, turn_id: str) -> tuple[str | None, str | None]:
        """(turn status, batch digest) from the memo the turn publishes: read
        from the server, so it works while no worker runs."""
        desc = await self.client.get_workflow_handle(turn_id).describe()
        memo = await desc.memo()
        if desc.status != WorkflowExecutionStatus.RUNNING:
            return (desc.status.name.lower() if desc.status else None), memo.get("batch_digest")
        return memo.get("turn_status"), memo.get("batch_digest")

    async def decide(
        self,
        turn_id: str,
        *,
        approve: bool,
        approver: str,
        reason: str = "",
        digest: str | None = None,
        signal: bool = False,
        wait_for_worker_s: float = 30.0,
        fallback_to_signal: bool = True,
        on_wait: Callable[[str], None] | None = None,
    ) -> ApprovalDecision:
        """Approve or reject a paused turn. ``signal=True`` needs no worker
        (no query first; the decision waits in the history). The update form
        answers with the turn's verdict and so needs a worker: when none
        answers within ``wait_for_worker_s`` the decision is sent as a signal
        (``last_via`` says which way it went) unless ``fallback_to_signal``
        is off (then NoWorker). A digest prefix of at least 12 characters
        (the short digest people read) stands for the pending digest."""
        state, memo_digest = await self.pending_digest(turn_id)
        if state not in (TurnStatus.PAUSED.value, TurnStatus.RUNNING.value, None):
            raise TurnProblem(f"turn {turn_id} is {state}, not waiting for approval")
        if digest and memo_digest and len(digest) >= 12 and memo_digest.startswith(digest):
            digest = memo_digest  # the short form the details and the console show
        decision = ApprovalDecision(
            batch_digest=digest or memo_digest or "",
            approve=approve,
            approver=approver,
            reason=reason,
        )
        if not decision.batch_digest:
            raise TurnProblem(f"turn {turn_id} has not published its batch digest yet; pass --digest")
        try:
            return await self._send_decision(turn_id, decision, signal, wait_for_worker_s, fallback_to_signal, on_wait)
        except RPCError as exc:
            # Paused when looked at, decided by someone else when this one
            # arrived: the server then aborts the update (or finds the turn
            # closed) instead of letting the turn refuse it.
            if exc.status not in (RPCStatusCode.NOT_FOUND, RPCStatusCode.FAILED_PRECONDITION):
                raise
            raise TurnProblem(await self._too_late(turn_id, exc)) from None

    async def _too_late(self, turn_id: str, exc: RPCError) -> str:
        """What a decision that lost the race is told: who decided before
        it. ``exc`` is raised again when the turn was not decided."""
        handle = self.client.get_workflow_handle(turn_id, result_type=TurnResult)
        try:
            desc = await handle.describe()
            if desc.status == WorkflowExecutionStatus.RUNNING:
                earlier = (await self.status(turn_id)).decision
            else:
                earlier = (await handle.result()).decision
        except (RPCError, TurnProblem, WorkflowFailureError, ValueError):
            earlier = None  # no such turn, no answer, or a failed turn
        if earlier is None:
            raise exc from None
        verb = "approved" if earlier.approve else "rejected"
        status = desc.status.name.lower() if desc.status else "closed"
        return (f"turn {turn_id} was already {verb} by {earlier.approver} via {earlier.via} (now {status}): "
                "this decision came too late and was not applied")

    async def _send_decision(
        self,
        turn_id: str,
        decision: ApprovalDecision,
        signal: bool,
        wait_for_worker_s: float,
        fallback_to_signal: bool,
        on_wait: Callable[[str], None] | None,
    ) -> ApprovalDecision:
        approve = decision.approve
        handle = self.client.get_workflow_handle(turn_id)
        self.last_via = "signal"
        if signal:
            await handle.signal(APPROVE_SIGNAL if approve else REJECT_SIGNAL, decision)
            return decision
        # An update needs a worker to answer. Ask a (read-only) query first,
        # with a short timeout, so that a missing worker is reported in
        # seconds and leaves nothing pending behind. Right after a worker
        # crash the turn's tasks still go to the dead worker's sticky queue
        # until the server gives up on it (the sticky schedule-to-start
        # timeout), so keep asking for a while; then send the decision as a
        # signal, which waits in the history until a worker runs the turn.
        deadline = time.monotonic() + wait_for_worker_s
        while True:
            try:
                await self.status(turn_id)
                break
            except TurnNotAnswering as exc:
                if time.monotonic() >= deadline:
                    if not fallback_to_signal:
                        raise NoWorker(
                            f"{exc} An update needs a running worker to answer; send the decision as a signal "
                            "(--signal): it waits in the turn's history until a worker runs it."
                        ) from None
                    await handle.signal(APPROVE_SIGNAL if approve else REJECT_SIGNAL, decision)
                    return decision
                if on_wait is not None:
                    on_wait(f"waiting for a worker to answer turn {turn_id} (a worker that has just been "
                            f"restarted takes over within ~10-15 s; then the decision goes as a signal): {exc}")
        await handle.execute_update(DECIDE_UPDATE, decision, result_type=DecisionRecord)
        self.last_via = "update"
        return decision

    async def approve(self, turn_id: str, **kw: Any) -> ApprovalDecision:
        return await self.decide(turn_id, approve=True, **kw)

    async def reject(self, turn_id: str, **kw: Any) -> ApprovalDecision:
        return await self.decide(turn_id, approve=False, **kw)

    async def pending(self) -> list[dict[str, Any]]:
        """Running turns that wait for approval, and running turns that are
        stuck (with ``stuck`` set to the explanation)."""
        query = f'WorkflowType="{TURN_WORKFLOW}" AND ExecutionStatus="Running"'
        found = []
        async for execution in self.client.list_workflows(query):
            memo = await execution.memo()
            stuck = await self.stuck(execution.id)
            paused = TurnStatus.PAUSED.value in (
                memo.get("turn_status"), execution.typed_search_attributes.get(TURN_STATUS_KEY)
            )
            if not paused and stuck is None:
                continue
            found.append(
                {
                    "turn_id": execution.id,
                    "batch_digest": memo.get("batch_digest"),
                    "started": execution.start_time.isoformat() if execution.start_time else None,
                    "task_queue": execution.task_queue,
                    "workspace": execution.typed_search_attributes.get(WORKSPACE_KEY),
                    "stuck": stuck.explain() if stuck else None,
                }
            )
        return found


class OffloadedResultChanged(TurnProblem):
    """The parts of an offloaded result are not what the turn wrote."""


def load_offloaded(result: TurnResult, workspace_root: str) -> TurnResult:
    """The full TurnResult of an offloaded turn, when the workspace is
    readable here; otherwise the result as returned (it names the folder).
    The parts are checked against the digest the turn's history recorded:
    anything else raises OffloadedResultChanged, never a result."""
    if not result.results_artifact:
        return result
    folder = Path(workspace_root) / result.results_artifact
    try:
        parts = sorted(folder.glob("*.part"))
        text = "".join(p.read_text(encoding="utf-8") for p in parts)
    except (OSError, ValueError):
        return result
    found = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    if result.results_digest and found != result.results_digest:
        raise OffloadedResultChanged(
            f"turn {result.turn_id}: the results kept in {folder} are not the ones the turn wrote "
            f"(sha256 {found[:12]}, recorded {result.results_digest[:12]}); they were changed afterwards. "
            "The turn's status and counts stand; read its calls' results again from the history "
            f"(temporal workflow show --workflow-id {result.turn_id})"
        )
    try:
        return TurnResult.model_validate_json(text)
    except ValueError:
        return result


def _cause_name(cause: int) -> str:
    try:
        name = WorkflowTaskFailedCause.Name(cause)
    except ValueError:
        return f"cause {cause}"
    return name.removeprefix("WORKFLOW_TASK_FAILED_CAUSE_").replace("_", " ").lower()


# ----------------------------------------------------------------- workers
def add_to_worker(
    worker_options: dict[str, Any],
    *,
    workspace_root: str | None,
    default_policy: Policy | None = None,
) -> dict[str, Any]:
    """Add this project's plugin (turns, sessions, rollbacks and their
    activities) to the keyword arguments of an existing
    ``temporalio.worker.Worker``:

        Worker(client, **add_to_worker({"task_queue": "q", "workflows": [Mine]}, workspace_root="/ws"))
    """
    from runtime.plugin import AgentToolsPlugin

    options = dict(worker_options)
    plugin = AgentToolsPlugin(workspace=workspace_root, default_policy=default_policy)
    options["plugins"] = [*options.get("plugins", ()), plugin]
    return options


# Sessions live in their own module; re-exported here so that agent builders
# import one module: ``from runtime.api import TurnClient, sessions``.
from runtime import session_api as sessions  # noqa: E402, F401
