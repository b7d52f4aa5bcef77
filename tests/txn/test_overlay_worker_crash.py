"""Exactly-once workspace effects across a lost worker, on the real dev
server with real bubblewrap: SIGKILL the worker while the command runs (the
retry runs it again: nothing had been applied) and between journal and apply
(the retry finishes the apply and does not run it again). Either way, a
script that appends one line leaves exactly one line."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from temporalio.client import Client

from activities.txn.store import call_dir
from tests.processes import REPO, server_address
from tests.txn.support.helpers import needs_overlay

pytestmark = needs_overlay

SCRIPT = 'echo appended >> log.txt && if [ "$ATTEMPT" = 1 ]; then sleep 60; fi'


class TxnWorker:
    def __init__(self, address: str, task_queue: str, log: Path, **env: str) -> None:
        self.log = log
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.txn.support.worker", address, task_queue], cwd=REPO,
            stdout=open(log, "ab"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env={**os.environ, **env}, start_new_session=True,
        )
        deadline = time.monotonic() + 30
        while "worker ready" not in log.read_text(errors="replace"):
            assert self.proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(20)


async def wait_for(path: Path, log: Path) -> None:
    deadline = time.monotonic() + 30
    while not path.exists():
        assert time.monotonic() < deadline, log.read_text()
        await asyncio.sleep(0.05)


@pytest.mark.parametrize("kill_point", ["during-command", "between-journal-and-apply"])
async def test_sigkill_of_the_worker_lands_the_effect_exactly_once(
    client: Client, workspace: Path, task_queue: str, tmp_path: Path, kill_point: str
) -> None:
    (workspace / "log.txt").write_text("start\n")
    turn_id, call_id = f"t-{uuid.uuid4().hex[:8]}", "bash-1"
    address = server_address(client)
    pause = tmp_path / "journaled"
    env = {"TXN_PAUSE_FILE": str(pause)} if kill_point == "between-journal-and-apply" else {}
    script = SCRIPT if kill_point == "during-command" else "echo appended >> log.txt"
    first = TxnWorker(address, task_queue, tmp_path / "w1.log", **env)
    try:
        handle = await client.start_workflow(
            "TxnBashWorkflow", [str(workspace), turn_id, call_id, script], id=turn_id, task_queue=task_queue
        )
        if kill_point == "during-command":
            # The command has appended its line, in its copy-on-write view only.
            await wait_for(Path(call_dir(str(workspace), turn_id, call_id)) / "upper" / "log.txt", first.log)
        else:
            await wait_for(pause, first.log)
        first.kill()
    finally:
        first.stop()
    assert (workspace / "log.txt").read_text() == "start\n"  # nothing applied yet, either way

    second = TxnWorker(address, task_queue, tmp_path / "w2.log")
    try:
        result = await asyncio.wait_for(handle.result(), timeout=60)
    finally:
        second.stop()
    assert (workspace / "log.txt").read_text() == "start\nappended\n"
    assert result["capture"] == "applied" and result["attempt"] == 2
    assert result["mode"] == ("capture" if kill_point == "during-command" else "resume")
    assert result["stored"]["exit_code"] == 0
