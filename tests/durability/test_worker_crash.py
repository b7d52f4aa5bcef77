"""SIGKILL the worker in the middle of a batch; a new worker finishes the turn."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

import pytest
from temporalio.client import Client

from core.contracts import Policy, ToolStatus, TurnInput, TurnOptions, TurnResult, TurnStatus, Workspace
from tests.processes import WorkerProcess, server_address
from workflows.turn import AgentTurnWorkflow
from tests.support import call


async def test_worker_killed_mid_batch(
    client: Client, workspace: Path, task_queue: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # without copy-on-write capture (with it the retry runs the command
    # again safely: tests/txn/test_txn_worker_crash.py), a lost command is not run again.
    monkeypatch.setenv("AGENT_TOOLS_TXN", "off")
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


async def finish_on_a_new_worker(address: str, workspace: Path, task_queue: str, tmp_path: Path, handle) -> TurnResult:  # type: ignore[no-untyped-def]
    second = WorkerProcess(address, workspace, task_queue, tmp_path / "worker2.log").start()
    try:
        return await asyncio.wait_for(handle.result(), timeout=90)
    finally:
        second.stop()


@pytest.mark.parametrize("execution", ["local", "remote"])
async def test_killed_after_writes_landed_the_replay_reports_them_applied(
    client: Client, workspace: Path, task_queue: str, tmp_path: Path, execution: str
) -> None:
    """The targeted crash: several writes and edits land on disk
    within one workflow task (local activities), then the worker dies during
    a slow read. The replayed turn must report every effect as applied (from
    the applied-calls journal), never a conflict, and apply nothing twice."""
    (workspace / "w1.txt").write_text("w1 old\n")
    (workspace / "e1.txt").write_text("alpha\nbeta\n")
    with open(workspace / "big.txt", "wb") as f:  # 1 GiB, sparse: slow to scan, cheap to make
        f.write(b"line\n" * 50_000)
        f.truncate(1 << 30)
    mode = TurnOptions(execution=execution)  # type: ignore[arg-type]
    address = server_address(client)
    first = WorkerProcess(address, workspace, task_queue, tmp_path / "worker1.log").start()
    try:
        reads = await client.execute_workflow(
            AgentTurnWorkflow.run,
            TurnInput(
                turn_id=f"reads-{uuid.uuid4().hex[:8]}",
                workspace=Workspace(root=str(workspace), task_queue=task_queue),
                tool_calls=[call(0, "read_file", path="w1.txt"), call(1, "read_file", path="e1.txt")],
                policy=Policy(mode="auto"),
                options=mode,
            ),
            id=f"reads-{uuid.uuid4().hex[:8]}",
            task_queue=task_queue,
            result_type=TurnResult,
        )
        turn = TurnInput(
            turn_id=f"targeted-{uuid.uuid4().hex[:8]}",
            workspace=Workspace(root=str(workspace), task_queue=task_queue),
            tool_calls=[
                call(0, "write_file", path="w1.txt", content="w1 new\n"),
                call(1, "edit_file", path="w1.txt", old_string="new", new_string="newer"),
                call(2, "edit_file", path="e1.txt", old_string="alpha", new_string="ALPHA"),
                call(3, "edit_file", path="e1.txt", old_string="beta", new_string="BETA"),
                call(4, "read_file", path="big.txt", offset=60_000, limit=5),
                call(5, "bash", command="cat w1.txt"),
            ],
            snapshots=reads.snapshots,
            policy=Policy(mode="auto"),
            options=mode,
        )
        handle = await client.start_workflow(
            AgentTurnWorkflow.run, turn, id=turn.turn_id, task_queue=task_queue, result_type=TurnResult
        )
        deadline = time.monotonic() + 30
        while (workspace / "e1.txt").read_text() != "ALPHA\nBETA\n":
            assert time.monotonic() < deadline, (tmp_path / "worker1.log").read_text()
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.3)  # the slow read is running; nothing of this task is recorded yet
        first.kill()
    finally:
        first.stop()
    result = await finish_on_a_new_worker(address, workspace, task_queue, tmp_path, handle)
    statuses = [r.status for r in result.results]
    assert statuses[:4] == [ToolStatus.OK] * 4, [r.output for r in result.results]
    assert statuses[5] == ToolStatus.OK and "w1 newer" in result.results[5].output
    assert (workspace / "w1.txt").read_text() == "w1 newer\n"
    assert (workspace / "e1.txt").read_text() == "ALPHA\nBETA\n"
    assert all("conflict" not in r.output for r in result.results[:4])


@pytest.mark.parametrize("execution, seed", [("local", 11), ("remote", 12)])
async def test_a_kill_at_a_random_moment_applies_and_reports_each_edit_once(
    client: Client, workspace: Path, task_queue: str, tmp_path: Path, execution: str, seed: int
) -> None:
    import random

    files = [f"f{i}.txt" for i in range(4)]
    for name in files:
        (workspace / name).write_text("v0\n")
    with open(workspace / "big.txt", "wb") as f:
        f.write(b"line\n" * 1000)
        f.truncate(1 << 29)
    mode = TurnOptions(execution=execution)  # type: ignore[arg-type]
    edits = [call(i, "edit_file", path=name, old_string="v0", new_string="v1") for i, name in enumerate(files)]
    tool_calls = [edits[0], edits[1], call(9, "read_file", path="big.txt", offset=2000, limit=1), edits[2], edits[3]]
    tool_calls += [call(10 + i, "edit_file", path=name, old_string="v1", new_string="v2") for i, name in enumerate(files)]
    address = server_address(client)
    first = WorkerProcess(address, workspace, task_queue, tmp_path / "worker1.log").start()
    try:
        reads = await client.execute_workflow(
            AgentTurnWorkflow.run,
            TurnInput(turn_id=f"r-{uuid.uuid4().hex[:8]}", workspace=Workspace(root=str(workspace), task_queue=task_queue),
                      tool_calls=[call(i, "read_file", path=n) for i, n in enumerate(files)],
                      policy=Policy(mode="auto"), options=mode),
            id=f"r-{uuid.uuid4().hex[:8]}", task_queue=task_queue, result_type=TurnResult,
        )
        turn = TurnInput(turn_id=f"random-{uuid.uuid4().hex[:8]}",
                         workspace=Workspace(root=str(workspace), task_queue=task_queue),
                         tool_calls=tool_calls, snapshots=reads.snapshots, policy=Policy(mode="auto"), options=mode)
        handle = await client.start_workflow(
            AgentTurnWorkflow.run, turn, id=turn.turn_id, task_queue=task_queue, result_type=TurnResult
        )
        await asyncio.sleep(random.Random(seed).uniform(0.1, 1.5))
        first.kill()
    finally:
        first.stop()
    result = await finish_on_a_new_worker(address, workspace, task_queue, tmp_path, handle)
    edit_results = [r for r in result.results if r.name == "edit_file"]
    assert [r.status for r in edit_results] == [ToolStatus.OK] * 8, [r.output for r in edit_results]
    assert all((workspace / name).read_text() == "v2\n" for name in files)
