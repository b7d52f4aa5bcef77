"""The library API for agent sessions: start one, watch it, talk to it,
approve what it wants to run, read its transcript, end it.

    from runtime.connection import connect
    from runtime import session_api as sessions

    client = await connect()
    sid = await sessions.start_session(client, workspace="./proj", task_queue="agent-tools",
                                       provider="anthropic", model="claude-sonnet-4-5", prompt="Fix the failing test")
    view = await sessions.wait_for_answer(client, sid)
    print(view.last_answer)

This module is the only place that builds a ``SessionInput``; client.py's
``session`` commands, the demo and the tests use it. A worker runs sessions
through ``runtime.plugin.AgentToolsPlugin``.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any, Awaitable, Callable

from temporalio.client import Client, WorkflowExecutionStatus, WorkflowUpdateFailedError
from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from core.contracts import ApprovalDecision, DecisionRecord, PendingCall, Policy, TurnOptions, TurnProgress, TurnStatus, Workspace
from core.session.contracts import (
    ModelConfig,
    SessionInput,
    SessionLimits,
    SessionResult,
    SessionState,
    SessionStatus,
    SessionView,
    TranscriptEntry,
)
from core.names import CLOSE_SIGNAL, SEND_SIGNAL, SESSION_WORKFLOW, STATUS_QUERY
from runtime.queues import fresh_pollers, other_workspace_problem, queue_for_workspace
from runtime.visibility import session_attributes

__all__ = [
    "SessionError", "SessionLimits", "SessionResult", "SessionState", "SessionView", "TranscriptEntry",
    "session_input", "start_session", "run_session", "session_status", "pending", "wait_for_answer", "send",
    "approve", "reject", "transcript", "result", "close", "cancel", "running_sessions",
]


QUERY_TIMEOUT_S = 5.0


class SessionError(Exception):
    """The session is not in a state that allows the request; the message says why and what to do."""


def session_input(
    *,
    workspace: str | Path,
    task_queue: str | None = None,
    provider: str,
    model: str,
    prompt: str,
    base_url: str | None = None,
    system_prompt: str | None = None,
    policy: Policy | str | None = None,
    limits: SessionLimits | None = None,
    max_model_calls: int | None = None,
    max_output_tokens: int | None = None,
    workflow_task_queue: str | None = None,
    check_workspace: bool = True,
    streaming_dispatch: bool = True,  # start safe calls while the model streams
) -> SessionInput:
    root = Path(workspace).resolve() if check_workspace else Path(workspace)
    if check_workspace and not root.is_dir():
        raise SessionError(f"workspace {root} is not a folder")
    if not prompt.strip():
        raise SessionError("the prompt is empty: say what the agent should do")
    if not task_queue:  # the same name the worker derives from the folder
        task_queue = queue_for_workspace(str(root))
    limits = limits or SessionLimits()
    if max_model_calls is not None:
        limits = limits.model_copy(update={"max_model_calls": max_model_calls})
    colocated = workflow_task_queue in (None, task_queue)
    return SessionInput(
        workspace=Workspace(root=str(root), task_queue=task_queue),
        model=ModelConfig(provider=provider, model=model, base_url=base_url, max_output_tokens=max_output_tokens),  # type: ignore[arg-type]
        prompt=prompt,
        system_prompt=system_prompt,
        policy=Policy(mode=policy) if isinstance(policy, str) else policy,  # type: ignore[arg-type]
        limits=limits,
        # Fast tools run as local activities when the turns run where the files are.
        turn_options=TurnOptions(execution="local" if colocated else "remote"),
        streaming_dispatch=streaming_dispatch,
    )


async def start_session(
    client: Client,
    *,
    session_id: str | None = None,
    workflow_task_queue: str | None = None,
    **kwargs: Any,
) -> str:
    """Start a session; returns its id (the workflow id). Keyword arguments
    are those of ``session_input``."""
    session = session_input(workflow_task_queue=workflow_task_queue, **kwargs)
    session_id = session_id or f"session-{uuid.uuid4().hex[:12]}"
    problem = await other_workspace_problem(client, session.workspace.task_queue, session.workspace.root)
    if problem:
        raise SessionError(f"session {session_id} was not started: {problem}")
    attributes = await session_attributes(client, session.workspace.root)
    try:
        await client.start_workflow(
            SESSION_WORKFLOW,
            session,
            id=session_id,
            task_queue=workflow_task_queue or session.workspace.task_queue,
            result_type=SessionResult,
            # Its turns are `<session id>/turn-N`, and the worker keys a turn's
            # records by its id: a second session under a finished one's id
            # would have its calls answered from the first one's records.
            id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
            **({"search_attributes": attributes} if attributes is not None else {}),
        )
    except WorkflowAlreadyStartedError:
        raise SessionError(
            f"session {session_id} already exists (running or finished): nothing was started; "
            "a new session needs a new id"
        ) from None
    return session_id


async def _turn_progress(client: Client, turn_id: str) -> TurnProgress | None:
    try:
        return await client.get_workflow_handle(turn_id).query(STATUS_QUERY, result_type=TurnProgress)
    except Exception:  # not started yet, or gone: nothing to show
        return None


class SessionNotAnswering(SessionError):
    """No worker answered the session's query in time; the message says why."""


async def session_status(client: Client, session_id: str) -> SessionView:
    """The session's status; while its turn waits for approval, also what the
    turn asks (pending calls with reasons, the batch digest, the turn's id)."""
    handle = client.get_workflow_handle(session_id)
    try:
        status = await handle.query(
            STATUS_QUERY, result_type=SessionStatus, rpc_timeout=timedelta(seconds=QUERY_TIMEOUT_S)
        )
    except RPCError as exc:
        if exc.status not in (RPCStatusCode.DEADLINE_EXCEEDED, RPCStatusCode.CANCELLED):
            raise
        desc = await handle.describe()
        workers = len(await fresh_pollers(client, desc.task_queue or ""))
        why = (
            f"no worker polls its task queue {desc.task_queue!r}: start one (agent-worker --workspace DIR)"
            if workers == 0
            else f"{workers} worker(s) poll its task queue {desc.task_queue!r} but none answered yet"
        )
        raise SessionNotAnswering(f"session {session_id} did not answer within {QUERY_TIMEOUT_S:g} s: {why}") from None
    view = SessionView(**status.model_dump())
    if status.current_turn_id:
        progress = await _turn_progress(client, status.current_turn_id)
        if progress is not None and progress.status == TurnStatus.PAUSED:
            view.waiting_for_approval = True
            view.pending = progress.pending
            view.current_batch_digest = progress.batch_digest
            view.message = (
                f"Turn {status.current_turn_id} waits for approval of {len(progress.pending)} call(s): "
                f"`client.py session approve {session_id}` / `reject`, or signal `approve` on the turn."
            )
    return view


async def pending(client: Client, session_id: str) -> list[PendingCall]:
    return (await session_status(client, session_id)).pending


async def wait_for_answer(
    client: Client,
    session_id: str,
    *,
    after_answers: int = 0,
    poll_seconds: float = 0.2,
    timeout: float | None = None,
    on_approval_needed: Callable[[SessionView], Awaitable[None] | None] | None = None,
    on_progress: Callable[[str], None] | None = None,
) -> SessionView:
    """Wait until the session has answered more than ``after_answers`` times,
    or has ended. ``on_approval_needed`` is called once per paused turn;
    ``on_progress`` with a one-line state on every look (what it waits for)."""
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    told: set[str] = set()
    while True:
        try:
            view = await session_status(client, session_id)
        except SessionNotAnswering as exc:
            view = None
            if on_progress is not None:
                on_progress(str(exc))
        except RPCError:
            view = None  # a query right at continue-as-new can miss; ask again
        if view is not None:
            if on_progress is not None:
                on_progress(_progress_text(view))
            if view.answers > after_answers or view.state.ended:
                return view
            if view.waiting_for_approval and view.current_turn_id not in told and on_approval_needed:
                told.add(view.current_turn_id or "")
                outcome = on_approval_needed(view)
                if outcome is not None:
                    await outcome
        if deadline is not None and loop.time() > deadline:
            raise TimeoutError(f"session {session_id} did not answer within {timeout} s")
        await asyncio.sleep(poll_seconds)


def _progress_text(view: SessionView) -> str:
    if view.waiting_for_approval:
        doing = f"turn {view.current_turn_id} waits for approval (agent-turn session approve {view.session_id})"
    elif view.current_turn_id:
        doing = f"running turn {view.current_turn_id}"
    else:
        doing = f"{view.state.value}, waiting for the model"
    return f"session {view.session_id}: {doing}; model calls {view.model_calls}, turns {view.turns}"


async def run_session(client: Client, **kwargs: Any) -> SessionView:
    """Start a session and wait for its first answer (the session stays open
    for ``send``)."""
    on_approval = kwargs.pop("on_approval_needed", None)
    session_id = await start_session(client, **kwargs)
    return await wait_for_answer(client, session_id, on_approval_needed=on_approval)


async def send(
    client: Client,
    session_id: str,
    text: str,
    *,
    wait: bool = False,
    on_approval_needed: Callable[[SessionView], Awaitable[None] | None] | None = None,
    on_progress: Callable[[str], None] | None = None,
) -> SessionView | None:
    """Send the user's next message; with ``wait``, return after the answer."""
    before = await session_status(client, session_id)
    if before.state.ended:
        raise SessionError(f"session {session_id} has ended ({before.state.value}): start a new one")
    await client.get_workflow_handle(session_id).signal(SEND_SIGNAL, text)
    if not wait:
        return None
    return await wait_for_answer(
        client, session_id, after_answers=before.answers, on_approval_needed=on_approval_needed,
        on_progress=on_progress,
    )


async def _decide(
    client: Client, session_id: str, approve: bool, approver: str, reason: str, digest: str | None
) -> DecisionRecord:
    status = await client.get_workflow_handle(session_id).query(STATUS_QUERY, result_type=SessionStatus)
    turn_id = status.current_turn_id
    if not turn_id:
        raise SessionError(f"session {session_id} is {status.state.value}: no turn is waiting for approval")
    progress = await _turn_progress(client, turn_id)
    if progress is None or progress.status != TurnStatus.PAUSED:
        state = progress.status.value if progress else "starting"
        raise SessionError(f"turn {turn_id} of session {session_id} is {state}, not waiting for approval")
    decision = ApprovalDecision(
        batch_digest=digest or progress.batch_digest, approve=approve, approver=approver, reason=reason
    )
    try:
        # The turn's own update: its validator refuses a stale digest at once.
        return await client.get_workflow_handle(turn_id).execute_update(
            "decide", decision, result_type=DecisionRecord
        )
    except WorkflowUpdateFailedError as exc:
        raise SessionError(f"turn {turn_id} refused the decision: {exc.cause.message if exc.cause else exc}") from None


async def approve(
    client: Client, session_id: str, *, approver: str = "api", reason: str = "", digest: str | None = None
) -> DecisionRecord:
    """Approve the batch the session's running turn waits on."""
    return await _decide(client, session_id, True, approver, reason, digest)


async def reject(
    client: Client, session_id: str, *, approver: str = "api", reason: str = "", digest: str | None = None
) -> DecisionRecord:
    return await _decide(client, session_id, False, approver, reason, digest)


async def transcript(client: Client, session_id: str) -> list[TranscriptEntry]:
    """The whole conversation, read from the transcript store. The store is
    in the state folder of the worker that serves the workspace (outside the
    workspace), so this runs on that machine."""
    from activities.model.transcript_store import TranscriptStore  # I/O lives activity-side

    status = await client.get_workflow_handle(session_id).query(STATUS_QUERY, result_type=SessionStatus)
    root = Path(status.workspace.root)
    if not root.is_dir():
        raise SessionError(
            f"the workspace {root} of session {session_id} is not on this machine; "
            "read the transcript where the workspace's worker runs"
        )
    return await asyncio.to_thread(TranscriptStore(str(root), session_id).read, status.transcript_head)


async def result(client: Client, session_id: str) -> SessionResult:
    return await client.get_workflow_handle(session_id, result_type=SessionResult).result()


async def close(client: Client, session_id: str, reason: str = "") -> SessionResult:
    handle = client.get_workflow_handle(session_id, result_type=SessionResult)
    desc = await handle.describe()
    if desc.status == WorkflowExecutionStatus.RUNNING:
        await handle.signal(CLOSE_SIGNAL, reason)
    return await handle.result()


async def cancel(client: Client, session_id: str) -> SessionResult:
    """Cancel the session: its running turn is cancelled too (a running bash
    is killed); the result records what had run."""
    handle = client.get_workflow_handle(session_id, result_type=SessionResult)
    await handle.cancel()
    return await handle.result()


async def running_sessions(client: Client) -> list[str]:
    query = f'WorkflowType="{SESSION_WORKFLOW}" AND ExecutionStatus="Running"'
    return [e.id async for e in client.list_workflows(query)]
