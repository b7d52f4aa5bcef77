"""No command waits silently; Ctrl-C and a closed pipe say the work goes on;
approving right after the worker holding a paused turn was killed works."""

from __future__ import annotations

import asyncio
import json
import select
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

from temporalio.client import Client

from core.contracts import Policy, TurnResult, TurnStatus
from runtime.api import TurnClient, build_turn_input
from tests.processes import REPO, WorkerProcess, run_client, server_address
from tests.support import call


def _read_until(proc: subprocess.Popen[str], needle: str, timeout: float) -> str:
    """stderr of ``proc`` until ``needle`` shows up (or the timeout)."""
    assert proc.stderr is not None
    seen = ""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and needle not in seen:
        ready, _, _ = select.select([proc.stderr], [], [], 0.1)
        if ready:
            chunk = proc.stderr.readline()
            if not chunk:
                break
            seen += chunk
    return seen


async def test_run_without_worker_says_so_at_once_and_ctrl_c_says_the_turn_goes_on(
    client: Client, workspace: Path, tmp_path: Path
) -> None:
    calls = tmp_path / "calls.json"
    calls.write_text(json.dumps([{"id": "c1", "type": "function",
                                  "function": {"name": "glob", "arguments": '{"pattern": "*"}'}}]))
    turn_id = f"silent-{uuid.uuid4().hex[:8]}"
    proc = subprocess.Popen(
        [sys.executable, str(REPO / "client.py"), "--address", server_address(client), "run",
         "--workspace", str(workspace), "--calls", str(calls), "--wait-for-worker", "--turn-id", turn_id],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        started = time.monotonic()
        said = await asyncio.to_thread(_read_until, proc, "no worker polls", 20)
        assert f"turn {turn_id} started" in said, said
        assert "no worker polls the task queue" in said and "agent-worker --workspace" in said, said
        # Measured from the process start, which includes Python's imports
        # and the connection; the turn itself was started well within 3 s.
        assert time.monotonic() - started < 15
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert "the work goes on" in last and f"agent-turn status {turn_id}" in last
    await client.get_workflow_handle(turn_id).terminate("test over")


def test_closed_pipe_ends_with_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        f"yes 'ls -la' | head -20000 | {sys.executable} {REPO / 'client.py'} check-command | head -1",
        shell=True, cwd=REPO, capture_output=True, text=True, timeout=120,
    )
    assert json.loads(done.stdout)["verdict"] == "allow"
    assert "Traceback" not in done.stderr and "output closed" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


async def test_approve_right_after_the_worker_holding_the_turn_was_killed(
    client: Client, workspace: Path, tmp_path: Path
) -> None:
    address = server_address(client)
    first = WorkerProcess(address, workspace, None, tmp_path / "first.log").start()
    turn = build_turn_input(
        workspace_root=str(workspace), task_queue=__import__("runtime.queues").queues.queue_for_workspace(str(workspace)),
        tool_calls=[call(0, "write_file", path="after-crash.txt", content="approved\n")],
        policy=Policy(mode="ask-writes"),
    )
    turns = TurnClient(client)
    await turns.start_turn(turn)
    deadline = time.monotonic() + 60
    while (await turns.pending_digest(turn.turn_id))[0] != TurnStatus.PAUSED.value:
        assert time.monotonic() < deadline, "the turn never paused"
        await asyncio.sleep(0.1)
    first.kill()
    second = WorkerProcess(address, workspace, None, tmp_path / "second.log").start()
    try:
        done = await asyncio.to_thread(run_client, "--address", address, "approve", turn.turn_id, "--reason", "ok")
        assert done.returncode == 0, done.stderr
        assert turn.turn_id in done.stdout
        result: TurnResult = await asyncio.wait_for(
            client.get_workflow_handle(turn.turn_id, result_type=TurnResult).result(), 90
        )
        assert result.status == TurnStatus.COMPLETED
        assert (workspace / "after-crash.txt").read_text() == "approved\n"
    finally:
        second.stop()
