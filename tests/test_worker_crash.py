"""SIGKILL the worker in the middle of a batch; a new worker finishes the turn."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

from temporalio.client import Client

from core.contracts import Policy, ToolStatus, TurnInput, TurnResult, TurnStatus, Workspace
from tests.processes import WorkerProcess, server_address
from workflows.turn import AgentTurnWorkflow
from tests.support import call


async def test_worker_killed_mid_batch(client: Client, workspace: Path, task_queue: str, tmp_path: Path) -> None:
    (workspace / "slow.py").write_text(
        "import time, pathlib\n"
        "with open('ran.txt', 'a') as f:\n"
        "    f.write('ran\\n')\n"
        "time.sleep(60)\n"
    )
    calls = [
        call(0, "write_file", path="log.txt", content="start\n"),
        call(1, "edit_file", path="log.txt", old_string="start\n", new_string="start\nedited\n"),
        call(2, "read_file", path="log.txt"),
        call(3, "bash", command="python3 slow.py", timeout_seconds=120),
        call(4, "write_file", path="after.txt", content="must not exist\n"),
    ]
    turn = TurnInput(
        turn_id=f"crash-{uuid.uuid4().hex[:8]}",
        workspace=Workspace(root=str(workspace), task_queue=task_queue),
        tool_calls=calls,
        policy=Policy(mode="auto"),
    )
    address = server_address(client)
    first = WorkerProcess(address, workspace, task_queue, tmp_path / "worker1.log").start()
    try:
        handle = await client.start_workflow(
            AgentTurnWorkflow.run, turn, id=turn.turn_id, task_queue=task_queue, result_type=TurnResult
        )
        deadline = time.monotonic() + 30
        while not (workspace / "ran.txt").exists():
            assert time.monotonic() < deadline, (tmp_path / "worker1.log").read_text()
            await asyncio.sleep(0.05)
        first.kill()  # the command is running right now
    finally:
        first.stop()
    killed_at = time.monotonic()

    second = WorkerProcess(address, workspace, task_queue, tmp_path / "worker2.log").start()
    try:
        result = await asyncio.wait_for(handle.result(), timeout=90)
    finally:
        assert second.stop() == 0
    noticed_after = time.monotonic() - killed_at

    assert result.status == TurnStatus.COMPLETED
    statuses = [r.status for r in result.results]
    assert statuses == [ToolStatus.OK, ToolStatus.OK, ToolStatus.OK, ToolStatus.ERROR, ToolStatus.SKIPPED]
    assert "may or may not have run" in result.results[3].output
    assert result.results[3].metadata["failure"] == "lost_worker"
    # Effects happened exactly once: the write and edit were not replayed, the
    # command was not retried, and nothing after the failure ran.
    assert (workspace / "log.txt").read_text() == "start\nedited\n"
    assert (workspace / "ran.txt").read_text() == "ran\n"
    assert not (workspace / "after.txt").exists()
    # The heartbeat timeout (10 s), not start_to_close (150 s), noticed the loss.
    assert noticed_after < 45, noticed_after
