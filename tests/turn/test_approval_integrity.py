"""Approval integrity, against the real dev server: a decision counts only
for exactly the batch (or call) the turn is waiting on, as shown."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.client import Client, WorkflowUpdateFailedError

from core.contracts import ApprovalDecision, Policy, ToolCall, TurnInput, TurnResult, TurnStatus, Workspace
from core.tools.specs import command_verdict, describe_pending_call
from core.turn.early_dispatch import BatchClose
from core.turn.planning import batch_digest
from runtime import session_api as sessions
from runtime.worker import build_worker
from tests.model_server import Reply, ScriptedModelServer, tool
from tests.session.test_session_support import model_server, session_paused  # noqa: F401  (fixture)
from workflows.session import AgentSessionWorkflow
from tests.durability.test_query_during_plan import slow_plan
from tests.gate.test_gate_turn import paused_or_done
from tests.support import call
from tests.txn.support.helpers import needs_overlay
from tests.turn.test_approval import make_turn, risky_batch, start, wait_paused, write_app
from workflows.turn import AgentTurnWorkflow


async def test_a_decision_sent_while_the_batch_is_open_approves_nothing(
    client: Client, workspace: Path, task_queue: str
) -> None:
    """The open batch's digest is the empty batch's, known to anyone: a
    decision naming it must not approve the calls that arrive later."""
    write = ToolCall(id="w0", name="write_file", arguments='{"path": "b.txt", "content": "x\\n"}')
    turn = TurnInput(
        turn_id=f"open-early-{task_queue}", workspace=Workspace(root=str(workspace), task_queue=task_queue),
        tool_calls=[], open_batch=True, policy=Policy(mode="ask-writes"),
    )
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        handle = await client.start_workflow(AgentTurnWorkflow.run, turn, id=turn.turn_id, task_queue=task_queue)
        early = ApprovalDecision(batch_digest=batch_digest([]), approver="nobody")
        with pytest.raises(WorkflowUpdateFailedError):
            await handle.execute_update(AgentTurnWorkflow.decide, early)
        await handle.signal(AgentTurnWorkflow.approve, early)
        await handle.execute_update(AgentTurnWorkflow.close_batch, BatchClose(attempt=1, calls=[write]))
        progress = await paused_or_done(handle)
        assert progress is not None
        assert progress.batch_digest == batch_digest([write]) and not (workspace / "b.txt").exists()
        await handle.execute_update(
            AgentTurnWorkflow.decide, ApprovalDecision(batch_digest=progress.batch_digest, approver="alice")
        )
        result = TurnResult.model_validate(await handle.result())
    assert result.status == TurnStatus.COMPLETED and result.decision is not None
    assert result.decision.approver == "alice" and result.decision.batch_digest == result.batch_digest


@needs_overlay
async def test_a_reject_sent_while_the_plan_is_recorded_holds_when_the_effect_gate_takes_the_batch(
    client: Client, workspace: Path, task_queue: str
) -> None:
    """Under ask-writes a batch of bash calls judged by their effects asks
    for no batch decision; a reject that named the batch while it was being
    planned must still stop it: nothing runs, the result says who rejected."""
    (workspace / "writer.py").write_text("open('out.txt', 'w').write('written\\n')\n")
    calls = [call(0, "bash", command="python3 writer.py")]
    turn = TurnInput(
        turn_id=f"early-reject-{task_queue}", workspace=Workspace(root=str(workspace), task_queue=task_queue),
        tool_calls=calls, policy=Policy(mode="ask-writes"),
    )
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace), extra_activities=[slow_plan(3.0)]):
        handle = await client.start_workflow(AgentTurnWorkflow.run, turn, id=turn.turn_id, task_queue=task_queue)
        no = ApprovalDecision(batch_digest=batch_digest(calls), approve=False, approver="bob", reason="not now")
        await handle.execute_update(AgentTurnWorkflow.decide, no)
        assert await paused_or_done(handle) is None  # no pause at the call: it never ran
        result = TurnResult.model_validate(await handle.result())
    assert result.status == TurnStatus.REJECTED and not (workspace / "out.txt").exists()
    assert result.decision is not None and (result.decision.approver, result.decision.approve) == ("bob", False)
    assert [r.status.value for r in result.results] == ["denied"]


async def test_an_empty_digest_sent_to_the_session_approves_nothing(
    client: Client, workspace: Path, task_queue: str, model_server: ScriptedModelServer
) -> None:
    """The session forwarded an empty digest as the digest of whatever batch
    ran at that moment: a decision that named nothing approved it."""
    model_server.add(Reply(tool_calls=[tool("write_file", path="one.txt", content="1\n")]), Reply(text="ok"))
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        sid = await sessions.start_session(
            client, workspace=workspace, task_queue=task_queue, provider="openai", model="scripted", prompt="go",
            policy="ask-writes",
        )
        view = await session_paused(client, sid)
        session = client.get_workflow_handle(sid)
        await session.signal(AgentSessionWorkflow.approve, ApprovalDecision(batch_digest="", approver="nobody"))
        await session.signal(
            AgentSessionWorkflow.reject, ApprovalDecision(batch_digest=view.current_batch_digest or "", approver="bob")
        )
        await sessions.wait_for_answer(client, sid, timeout=60)
        result = TurnResult.model_validate(await client.get_workflow_handle(f"{sid}/turn-1").result())
        await sessions.close(client, sid)
    assert result.decision is not None and (result.decision.approver, result.decision.approve) == ("bob", False)
    assert not (workspace / "one.txt").exists()


HIDDEN_TAIL = "&& rm -rf src"
EVIL = "; __import__('os').system('rm -rf ~')"
PAD = " " * 3000


async def test_the_dangerous_end_of_a_padded_command_stays_in_view(
    client: Client, workspace: Path, task_queue: str
) -> None:
    """A command padded with blanks put its dangerous end far to the right of
    a short harmless start: off-screen in the Web UI's code block and the
    MCP form. Every reviewed line is short enough to be seen whole, and the
    padding is said by its length."""
    command = "touch a" + PAD + HIDDEN_TAIL
    turn = TurnInput(
        turn_id=f"padded-{task_queue}", workspace=Workspace(root=str(workspace), task_queue=task_queue),
        tool_calls=[call(0, "bash", command=command), call(1, "write_file", path="run.py", content=f"x = 1{PAD}{EVIL}\n")],
        policy=Policy(mode="ask-writes", effect_gate=False),
    )
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        handle = await client.start_workflow(AgentTurnWorkflow.run, turn, id=turn.turn_id, task_queue=task_queue)
        progress = await paused_or_done(handle)
        assert progress is not None
        shown_to_cli = "\n".join(describe_pending_call(p, command_verdict) for p in progress.pending)
        details = (await handle.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)).current_details
        await handle.execute_update(AgentTurnWorkflow.decide, ApprovalDecision(batch_digest=progress.batch_digest,
                                                                               approve=False))
    for text in (shown_to_cli, details):
        # Markdown headings of the details are prose and wrap; code blocks do not.
        long = [line for line in text.split("\n") if len(line) > 200 and not line.startswith("### ")]
        assert not long, long
        assert HIDDEN_TAIL in text and EVIL in text and text.count("[3000 blanks]") == 2


async def test_a_decision_the_turn_accepted_is_not_overwritten_by_the_timeout_beside_it(
    client: Client, workspace: Path, task_queue: str
) -> None:
    """The approval timer fired and a decision arrived while no worker ran:
    the next activation holds both. The decision the turn accepts is the one
    it records and acts on, never replaced by the timeout beside it."""
    write_app(workspace)
    turn = make_turn(workspace, task_queue, risky_batch(), approval_timeout_seconds=2)
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        handle = await start(client, turn)
        progress = await wait_paused(handle)
    await asyncio.sleep(3)  # the timer fires with no worker to see it
    await handle.signal(AgentTurnWorkflow.approve, ApprovalDecision(batch_digest=progress.batch_digest, approver="ann"))
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        result = TurnResult.model_validate(await handle.result())
    decision = result.decision
    assert decision is not None and (decision.approver, decision.approve) == ("ann", True), decision
    assert result.status == TurnStatus.COMPLETED
