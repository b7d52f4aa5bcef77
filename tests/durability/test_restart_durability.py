"""A paused turn survives SIGKILL of both the worker and the dev server."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

from core.contracts import ApprovalDecision, Policy, ToolStatus, TurnInput, TurnProgress, TurnResult, TurnStatus, Workspace
from runtime.connection import connect
from runtime.devserver import DevServer, free_port
from tests.processes import WorkerProcess
from workflows.turn import AgentTurnWorkflow
from tests.support import call


async def test_pause_survives_killing_worker_and_server(workspace: Path, tmp_path: Path) -> None:
    (workspace / "counter.py").write_text(
        "with open('effects.log', 'a') as f:\n    f.write('bash ran\\n')\nprint('counted')\n"
    )
    (workspace / "config.txt").write_text("mode = old\n")
    calls = [
        call(0, "read_file", path="config.txt"),
        call(1, "edit_file", path="config.txt", old_string="mode = old", new_string="mode = new"),
        call(2, "bash", command="python3 counter.py"),
        call(3, "write_file", path="created.txt", content="made once\n"),
    ]
    queue = f"durable-{uuid.uuid4().hex[:8]}"
    turn = TurnInput(
        turn_id=f"durable-{uuid.uuid4().hex[:8]}",
        workspace=Workspace(root=str(workspace), task_queue=queue),
        tool_calls=calls,
        policy=Policy(mode="ask-writes"),
    )
    server = DevServer(db_file=tmp_path / "state.sqlite", port=free_port(), ui_port=None, log_file=tmp_path / "server.log")
    server.start()
    worker = WorkerProcess(server.address, workspace, queue, tmp_path / "worker1.log").start()
    try:
        client = await connect(server.address)
        handle = await client.start_workflow(
            AgentTurnWorkflow.run, turn, id=turn.turn_id, task_queue=queue, result_type=TurnResult
        )
        for _ in range(100):
            progress = await handle.query(AgentTurnWorkflow.status, result_type=TurnProgress)
            if progress.status == TurnStatus.PAUSED:
                break
            await asyncio.sleep(0.1)
        assert progress.status == TurnStatus.PAUSED

        # Crash everything.
        worker.kill()
        server.kill()

        # Same SQLite file, new processes.
        server.start()
        worker = WorkerProcess(server.address, workspace, queue, tmp_path / "worker2.log").start()
        client = await connect(server.address)
        handle = client.get_workflow_handle(turn.turn_id, result_type=TurnResult)
        after = await handle.query(AgentTurnWorkflow.status, result_type=TurnProgress)
        assert after.status == TurnStatus.PAUSED
        assert after.batch_digest == progress.batch_digest
        assert not (workspace / "effects.log").exists()

        await handle.execute_update(
            AgentTurnWorkflow.decide,
            ApprovalDecision(batch_digest=after.batch_digest, approver="on-call", reason="after restart"),
        )
        result = await asyncio.wait_for(handle.result(), timeout=60)
    finally:
        worker.stop()
        server.stop()

    assert result.status == TurnStatus.COMPLETED
    assert [r.status for r in result.results] == [ToolStatus.OK] * 4, [r.output for r in result.results]
    assert result.decision is not None and result.decision.approver == "on-call"
    # Every effect exactly once.
    assert (workspace / "config.txt").read_text() == "mode = new\n"
    assert (workspace / "effects.log").read_text() == "bash ran\n"
    assert (workspace / "created.txt").read_text() == "made once\n"
