"""Shared by the tests/test_txn_*.py files: run turns through the real worker
process (worker.py), the real dev server and real bubblewrap."""

from __future__ import annotations

import asyncio
import json
import os
import time
import uuid
from pathlib import Path

from temporalio.client import Client, WorkflowHandle

from core.contracts import Policy, ToolCall, TurnProgress, TurnResult, TurnStatus
from runtime.api import TurnClient, build_turn_input
from tests.processes import WorkerProcess, server_address


def bash_call(command: str, i: int = 1, timeout: int = 60) -> ToolCall:
    return ToolCall(id=f"call_{i}", name="bash", arguments=json.dumps({"command": command, "timeout_seconds": timeout}))


class PipelineWorker(WorkerProcess):
    """worker.py as a process, with extra environment variables."""

    env: dict[str, str] = {}

    def start(self, timeout: float = 30) -> "PipelineWorker":
        saved = dict(os.environ)
        os.environ.update(self.env)
        try:
            super().start(timeout)
        finally:
            os.environ.clear()
            os.environ.update(saved)
        return self


def worker(client: Client, workspace: Path, task_queue: str, log: Path, *, pause: Path | None = None,
           env: dict[str, str] | None = None) -> PipelineWorker:
    """The real worker, sandbox required (bubblewrap); ``pause``: the
    tests.txn.support.pause_worker hook (hang between journal and apply)."""
    w = PipelineWorker(server_address(client), workspace, task_queue, log, "--sandbox", "required")
    if pause is not None:
        w.args[1:2] = ["-m", "tests.txn.support.pause_worker"]
        env = {**(env or {}), "TXN_PAUSE_FILE": str(pause)}
    w.env = env or {}
    return w


async def start(client: Client, workspace: Path, task_queue: str, calls: list[ToolCall], *,
                policy: Policy | None = None, turn_id: str | None = None) -> WorkflowHandle:
    turn = build_turn_input(workspace_root=str(workspace), task_queue=task_queue, tool_calls=calls,
                            policy=policy or Policy(mode="auto"), turn_id=turn_id or f"t-{uuid.uuid4().hex[:10]}")
    return await TurnClient(client).start_turn(turn, require_worker=False)


async def wait_for(predicate, log: Path | None = None, timeout: float = 60) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, log.read_text() if log else "timed out"
        await asyncio.sleep(0.05)


async def wait_paused(client: Client, turn_id: str, ready=lambda p: True, timeout: float = 60) -> TurnProgress:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while True:
        try:
            progress = await TurnClient(client).status(turn_id)
            if progress.status == TurnStatus.PAUSED and ready(progress):
                return progress
        except Exception:  # noqa: BLE001 - not started yet
            pass
        assert time.monotonic() < deadline, "the turn did not pause"
        await asyncio.sleep(0.1)


async def result(handle: WorkflowHandle, timeout: float = 90) -> TurnResult:
    return await asyncio.wait_for(handle.result(), timeout)
