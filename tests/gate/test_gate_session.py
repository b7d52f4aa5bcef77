"""A pause at a call inside a session: the session's view shows it (the
turn's pending call and digest); approving through the session API and
rejecting by a signal to the session both reach the turn."""

from __future__ import annotations

from pathlib import Path

from temporalio.client import Client

from core.contracts import ApprovalDecision
from runtime import session_api as sessions
from runtime.worker import build_worker
from tests.model_server import Reply, ScriptedModelServer, tool
from tests.session.test_session_support import model_server, session_paused  # noqa: F401  (fixture)
from tests.txn.support.helpers import needs_overlay
from workflows.session import AgentSessionWorkflow

pytestmark = needs_overlay


async def test_pause_at_a_call_in_a_session(
    client: Client, workspace: Path, task_queue: str, model_server: ScriptedModelServer
) -> None:
    (workspace / "one.py").write_text("open('one.txt', 'w').write('1\\n')\n")
    (workspace / "two.py").write_text("open('two.txt', 'w').write('2\\n')\n")
    model_server.add(
        Reply(tool_calls=[tool("bash", command="python3 one.py")]),
        Reply(tool_calls=[tool("bash", command="python3 two.py")]),
        Reply(text="one written, two refused"),
    )
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        sid = await sessions.start_session(client, workspace=workspace, task_queue=task_queue, provider="openai",
                                           model="scripted", prompt="go", policy="ask-writes")
        view = await session_paused(client, sid)
        assert "one.txt" in view.pending[0].reason and "+1" in view.pending[0].preview
        assert not (workspace / "one.txt").exists()
        await sessions.approve(client, sid, approver="alice")
        view = await session_paused(client, sid)
        assert "two.txt" in view.pending[0].reason
        await client.get_workflow_handle(sid).signal(  # forwarded with the call's own digest
            AgentSessionWorkflow.reject, ApprovalDecision(batch_digest=view.current_batch_digest or "", approver="bob")
        )
        done = await sessions.wait_for_answer(client, sid, timeout=120)
        await sessions.close(client, sid)
    assert done.last_answer == "one written, two refused"
    assert (workspace / "one.txt").read_text() == "1\n" and not (workspace / "two.txt").exists()
