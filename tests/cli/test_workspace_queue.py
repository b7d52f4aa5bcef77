"""One task queue per workspace: two workers for two folders never take each
other's turns, and a queue shared by mistake is refused before anything runs."""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowFailureError

from core.contracts import TurnResult, TurnStatus
from runtime.api import TurnClient, WrongWorkspace, build_turn_input
from runtime.queues import foreign_pollers, parse_identity, queue_for_workspace, worker_identity
from runtime.worker import build_worker
from tests.processes import WorkerProcess, run_client, server_address
from tests.support import call


def test_queue_is_derived_from_the_real_path(tmp_path: Path) -> None:
    real = tmp_path / "project"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    assert queue_for_workspace(str(real)) == queue_for_workspace(str(tmp_path / "link"))
    assert queue_for_workspace(str(real)) == queue_for_workspace(str(real) + "/")
    other = tmp_path / "other"
    other.mkdir()
    assert queue_for_workspace(str(real)) != queue_for_workspace(str(other))
    assert queue_for_workspace(str(real)).startswith("agent-tools-") and len(queue_for_workspace(str(real))) == 24


def test_identity_names_the_workspace_and_is_parsed_back(tmp_path: Path) -> None:
    identity = worker_identity(str(tmp_path))
    assert identity is not None and identity.startswith(f"{os.getpid()}@")
    poller = parse_identity(identity)
    assert poller.workspace == os.path.realpath(tmp_path)
    assert foreign_pollers([poller], str(tmp_path)) == []
    sub = tmp_path / "sub"
    sub.mkdir()
    assert foreign_pollers([poller], str(sub)) == []  # beneath the worker's root: its tools reach it
    other = tmp_path.parent / f"elsewhere-{uuid.uuid4().hex[:6]}"
    other.mkdir()
    assert foreign_pollers([poller], str(other)) == [poller]
    assert foreign_pollers([parse_identity("123@host")], str(other)) == []  # says nothing: not judged


async def test_two_workers_two_folders_each_takes_only_its_own_turns(client: Client, tmp_path: Path) -> None:
    address = server_address(client)
    folders = []
    for name in ("alpha", "beta"):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "who.txt").write_text(f"{name}\n")
        folders.append(folder)
    workers = [WorkerProcess(address, f, None, tmp_path / f"{f.name}.log").start() for f in folders]
    try:
        calls = tmp_path / "calls.json"
        calls.write_text(json.dumps([{"id": "c1", "type": "function",
                                      "function": {"name": "read_file", "arguments": '{"path": "who.txt"}'}}]))
        runs = [
            asyncio.to_thread(run_client, "--address", address, "run", "--workspace", str(folders[i % 2]),
                              "--calls", str(calls), "--policy", "auto", "--json")
            for i in range(6)
        ]
        for i, done in enumerate(await asyncio.gather(*runs)):
            assert done.returncode == 0, done.stderr
            result = TurnResult.model_validate_json(done.stdout)
            assert result.results[0].status.value == "ok", result.results[0].output
            assert ("alpha" if i % 2 == 0 else "beta") in result.results[0].output
    finally:
        for w in workers:
            w.stop()


async def test_worker_refuses_a_queue_polled_for_another_folder(client: Client, tmp_path: Path) -> None:
    address = server_address(client)
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    queue = f"shared-{uuid.uuid4().hex[:8]}"
    holder = WorkerProcess(address, first, queue, tmp_path / "first.log").start()
    try:
        intruder = WorkerProcess(address, second, queue, tmp_path / "second.log")
        with pytest.raises(RuntimeError, match="worker exited early"):
            intruder.start()
        assert intruder.proc is not None and intruder.proc.returncode == 2
        log = (tmp_path / "second.log").read_text()
        assert "refusing to start" in log and str(first) in log and str(second) in log
        # The same folder may have several workers on its queue.
        again = WorkerProcess(address, first, queue, tmp_path / "again.log").start()
        again.stop()
    finally:
        holder.stop()


async def test_client_refuses_a_turn_for_another_folder_before_anything_runs(
    client: Client, tmp_path: Path, task_queue: str
) -> None:
    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    mine.mkdir()
    theirs.mkdir()
    calls = tmp_path / "calls.json"
    calls.write_text(json.dumps([{"id": "w1", "type": "function", "function": {
        "name": "write_file", "arguments": json.dumps({"path": "new.txt", "content": "x\n"})}}]))
    turn_id = f"wrong-{uuid.uuid4().hex[:8]}"
    async with build_worker(client, task_queue=task_queue, workspace=str(mine)):
        done = await asyncio.to_thread(
            run_client, "--address", server_address(client), "run", "--workspace", str(theirs),
            "--task-queue", task_queue, "--calls", str(calls), "--policy", "auto", "--turn-id", turn_id,
        )
        assert done.returncode == 1, done.stdout
        assert "was not started" in done.stderr and str(mine) in done.stderr and str(theirs) in done.stderr
        with pytest.raises(Exception):
            await client.get_workflow_handle(turn_id).describe()  # nothing was started
        # Through the library the same refusal is an exception.
        turn = build_turn_input(workspace_root=str(theirs), task_queue=task_queue,
                                tool_calls=[call(0, "write_file", path="new.txt", content="x\n")])
        with pytest.raises(WrongWorkspace):
            await TurnClient(client).start_turn(turn)
    assert not (theirs / "new.txt").exists() and not (mine / "new.txt").exists()


async def test_a_turn_that_reaches_the_wrong_worker_fails_whole_before_running(
    client: Client, tmp_path: Path, task_queue: str
) -> None:
    """Started around the client's check (an older client, a raw start): the
    plan refuses the turn, so no call runs and the turn fails, naming both."""
    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    mine.mkdir()
    theirs.mkdir()
    turn = build_turn_input(
        workspace_root=str(theirs), task_queue=task_queue,
        tool_calls=[call(0, "glob", pattern="*"), call(1, "write_file", path="new.txt", content="x\n")],
        policy=None,
    )
    async with build_worker(client, task_queue=task_queue, workspace=str(mine)):
        handle = await client.start_workflow("AgentTurnWorkflow", turn, id=turn.turn_id, task_queue=task_queue,
                                             result_type=TurnResult)
        with pytest.raises(WorkflowFailureError) as failure:
            await handle.result()
    chain, err = [], failure.value.cause
    while err is not None:
        chain.append(str(err))
        err = err.__cause__ or getattr(err, "cause", None)
    text = " | ".join(chain)
    assert "othing was run" in text and str(mine) in text and str(theirs) in text
    assert not (theirs / "new.txt").exists()
