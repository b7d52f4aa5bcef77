"""A turn paused at a call (the effect gate) survives SIGKILL of the worker
and the dev server: after the restart it still waits, at the same call with
the same digest, nothing applied; approval then applies the kept changeset
once, without running the command again."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path


from core.contracts import ApprovalDecision, Policy, ToolStatus, TurnInput, TurnProgress, TurnResult, TurnStatus, Workspace
from runtime.connection import connect
from runtime.devserver import DevServer, free_port
from tests.processes import WorkerProcess
from tests.support import call
from tests.txn.support.helpers import needs_overlay
from workflows.turn import AgentTurnWorkflow

pytestmark = needs_overlay


async def _paused(handle) -> TurnProgress:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + 120  # a loaded machine starts workers slowly
    while time.monotonic() < deadline:
        progress = await handle.query(AgentTurnWorkflow.status, result_type=TurnProgress)
        if progress.status == TurnStatus.PAUSED:
            return progress
        await asyncio.sleep(0.1)
    raise AssertionError("turn never paused")


async def _recorded_paused(handle) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        memo = await (await handle.describe()).memo()
        if memo.get("turn_status") == TurnStatus.PAUSED.value:
            return
        await asyncio.sleep(0.1)
    raise AssertionError("the pause never reached the server")


async def test_pause_at_a_call_survives_killing_worker_and_server(workspace: Path, tmp_path: Path) -> None:
    (workspace / "counter.py").write_text(
        "with open('runs.log', 'a') as f:\n    f.write('ran\\n')\nprint('counted')\n"
    )
    queue = f"gate-{uuid.uuid4().hex[:8]}"
    turn = TurnInput(
        turn_id=f"gate-durable-{uuid.uuid4().hex[:8]}",
        workspace=Workspace(root=str(workspace), task_queue=queue),
        tool_calls=[call(0, "bash", command="python3 counter.py"), call(1, "read_file", path="runs.log")],
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
        progress = await _paused(handle)
        # Kill only once the server holds the pause (the memo comes with the
        # completion of the workflow task that paused), not just the worker's memory.
        await _recorded_paused(handle)
        assert [p.index for p in progress.pending] == [0]
        assert "runs.log" in progress.pending[0].reason and "+ran" in progress.pending[0].preview

        worker.kill()
        server.kill()
        server.start()
        worker = WorkerProcess(server.address, workspace, queue, tmp_path / "worker2.log").start()
        client = await connect(server.address)
        handle = client.get_workflow_handle(turn.turn_id, result_type=TurnResult)
        after = await _paused(handle)
        assert after.batch_digest == progress.batch_digest and [p.index for p in after.pending] == [0]
        assert not (workspace / "runs.log").exists()

        await handle.execute_update(
            AgentTurnWorkflow.decide,
            ApprovalDecision(batch_digest=after.batch_digest, approver="on-call", reason="after restart"),
        )
        result = await asyncio.wait_for(handle.result(), timeout=60)
    finally:
        worker.stop()
        server.stop()

    assert result.status == TurnStatus.COMPLETED
    assert [r.status for r in result.results] == [ToolStatus.OK] * 2, [r.output for r in result.results]
    assert (workspace / "runs.log").read_text() == "ran\n"  # run once (captured), applied once
    assert "counted" in result.results[0].output
    assert [d.approver for d in result.call_decisions] == ["on-call"] and result.decision is None
