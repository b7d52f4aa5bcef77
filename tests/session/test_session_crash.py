"""SIGKILL the worker during a model call and again during a turn, and the
worker and the dev server while a session waits for approval: the session
finishes, and nothing ran twice or got lost."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

import pytest

from temporalio.client import Client

from core.session.contracts import SessionState
from runtime import session_api as sessions
from runtime.connection import connect
from runtime.devserver import DevServer, free_port
from tests.model_server import Reply, ScriptedModelServer, tool
from tests.processes import WorkerProcess, server_address
from tests.session.test_session_support import model_server  # noqa: F401  (fixture)


async def _until(predicate, what: str, log: Path, timeout: float = 30) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}:\n{log.read_text()[-3000:]}"
        await asyncio.sleep(0.05)


async def test_worker_killed_during_a_model_call_and_during_a_turn(
    client: Client, workspace: Path, task_queue: str, tmp_path: Path, model_server: ScriptedModelServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the lost-command path is the one without copy-on-write capture (with it
    # the retry re-runs the command safely: tests/txn/test_txn_worker_crash.py).
    monkeypatch.setenv("AGENT_TOOLS_TXN", "off")
    (workspace / "once.py").write_text("open('once.txt', 'a').write('ran\\n')\n")
    (workspace / "slow.py").write_text(
        "import time\nopen('slow.txt', 'a').write('ran\\n')\ntime.sleep(60)\n"
    )
    calls = [tool("bash", command="python3 once.py"), tool("bash", command="python3 slow.py", timeout_seconds=120)]
    model_server.add(
        # 1st attempt of call 1: streams slowly; the worker dies in the middle.
        Reply(text="Running both scripts." * 4, tool_calls=calls, tokens_per_second=10),
        # The retry on the next worker gets the whole response.
        Reply(text="Running both scripts.", tool_calls=calls),
        Reply(text="once.py ran; slow.py may or may not have finished."),
    )
    address = server_address(client)
    logs = [tmp_path / f"worker{i}.log" for i in (1, 2, 3)]
    first = WorkerProcess(address, workspace, task_queue, logs[0]).start()
    try:
        sid = await sessions.start_session(
            client, workspace=workspace, task_queue=task_queue, provider="anthropic", model="scripted",
            prompt="run the scripts", policy="auto",
        )
        await _until(lambda: model_server.streams_in_progress == 1, "the first stream", logs[0])
        await asyncio.sleep(0.5)  # a few pieces are out
        first.kill()
    finally:
        first.stop()

    second = WorkerProcess(address, workspace, task_queue, logs[1]).start()
    try:
        await _until(lambda: (workspace / "slow.txt").exists(), "slow.py to start", logs[1], timeout=60)
        second.kill()  # slow.py is running right now, inside the turn
    finally:
        second.stop()

    third = WorkerProcess(address, workspace, task_queue, logs[2]).start()
    try:
        view = await sessions.wait_for_answer(client, sid, timeout=90)
        entries = await sessions.transcript(client, sid)
        await sessions.close(client, sid)
    finally:
        assert third.stop() == 0

    assert view.state == SessionState.WAITING_FOR_USER, view
    assert view.last_answer.startswith("once.py ran")
    assert view.model_calls == 2 and view.turns == 1  # the killed attempt is not a second call
    # Each command ran exactly once: the model call's retry did not start a
    # second turn, and bash was not re-run after the worker loss.
    assert (workspace / "once.txt").read_text() == "ran\n"
    assert (workspace / "slow.txt").read_text() == "ran\n"
    assert len(model_server.requests) == 3
    # The transcript holds one assistant message per completed call, no
    # trace of the killed attempt, and the honest result of the lost command.
    assert [e.kind for e in entries] == ["system", "user", "assistant", "tool_results", "assistant"]
    results = entries[3].items
    assert results[0]["is_error"] is False
    assert results[1]["is_error"] is True and "may or may not have run" in results[1]["content"][0]["text"]


async def test_a_session_waiting_for_approval_survives_killing_worker_and_server(
    workspace: Path, tmp_path: Path, model_server: ScriptedModelServer
) -> None:
    (workspace / "count.py").write_text("open('effects.log', 'a').write('ran\\n')\n")
    model_server.add(
        Reply(tool_calls=[tool("bash", command="python3 count.py")]),
        Reply(text="counted once"),
    )
    queue = f"durable-{uuid.uuid4().hex[:8]}"
    server = DevServer(db_file=tmp_path / "state.sqlite", port=free_port(), ui_port=None, log_file=tmp_path / "server.log")
    server.start()
    worker = WorkerProcess(server.address, workspace, queue, tmp_path / "worker1.log").start()
    try:
        client = await connect(server.address)
        sid = await sessions.start_session(
            client, workspace=workspace, task_queue=queue, provider="openai", model="scripted",
            prompt="count", policy="ask-writes",
        )
        for _ in range(200):
            before = await sessions.session_status(client, sid)
            if before.waiting_for_approval:
                break
            await asyncio.sleep(0.05)
        assert before.waiting_for_approval

        worker.kill()
        server.kill()
        server.start()
        worker = WorkerProcess(server.address, workspace, queue, tmp_path / "worker2.log").start()
        client = await connect(server.address)

        after = await sessions.session_status(client, sid)
        assert after.waiting_for_approval and after.current_batch_digest == before.current_batch_digest
        assert not (workspace / "effects.log").exists()
        await sessions.approve(client, sid, approver="on-call", reason="after restart")
        view = await sessions.wait_for_answer(client, sid, timeout=60)
        await sessions.close(client, sid)
    finally:
        worker.stop()
        server.stop()
    assert view.last_answer == "counted once" and view.model_calls == 2
    assert (workspace / "effects.log").read_text() == "ran\n"
    assert len(model_server.requests) == 2
