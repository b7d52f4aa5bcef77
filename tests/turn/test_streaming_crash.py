"""SIGKILL of the worker in the middle of a stream after a call was
dispatched and ran: the retried model call on a new worker loses no call
and runs none twice; the transcript pairs each call with its one result."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from temporalio.client import Client

from core.session.contracts import SessionState
from runtime import session_api as sessions
from tests.model_server import Reply, ScriptedModelServer, tool
from tests.processes import WorkerProcess, server_address
from tests.session.test_session_support import model_server  # noqa: F401  (fixture)
from tests.turn.test_streaming_support import close_and_finish, start_with_early_reads, tool_runs, turn_events

CONTENT = "line of a file the model is still writing\n" * 12


async def test_worker_killed_mid_stream_after_a_dispatched_call_ran(
    client: Client, workspace: Path, task_queue: str, tmp_path: Path, model_server: ScriptedModelServer
) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    calls = [tool("read_file", path="a.txt"), tool("write_file", path="c.txt", content=CONTENT)]
    model_server.add(
        Reply(text="Reading, then writing.", tool_calls=calls, tokens_per_second=20),  # dies in the write
        Reply(text="Reading, then writing.", tool_calls=calls),  # the retry on the next worker (new ids)
        Reply(text="Wrote c.txt."),
    )
    address = server_address(client)
    first = WorkerProcess(address, workspace, task_queue, tmp_path / "worker1.log").start()
    try:
        sid = await sessions.start_session(
            client, workspace=workspace, task_queue=task_queue, provider="anthropic", model="scripted",
            prompt="read then write", policy="auto",
        )
        turn_id = f"{sid}/turn-1"
        deadline = time.monotonic() + 30
        while True:  # the read has run and is in the turn's history; the stream goes on
            try:
                if tool_runs(await turn_events(client, turn_id), "read_file"):
                    break
            except Exception:  # the turn is not started yet
                pass
            assert time.monotonic() < deadline, (tmp_path / "worker1.log").read_text()[-3000:]
            await asyncio.sleep(0.05)
        assert model_server.streams_in_progress == 1
        first.kill()
    finally:
        first.stop()

    second = WorkerProcess(address, workspace, task_queue, tmp_path / "worker2.log").start()
    try:
        view = await sessions.wait_for_answer(client, sid, timeout=90)
        entries = await sessions.transcript(client, sid)
        events = await turn_events(client, turn_id)
        await sessions.close(client, sid)
    finally:
        assert second.stop() == 0

    assert view.state == SessionState.WAITING_FOR_USER and view.last_answer == "Wrote c.txt."
    assert view.model_calls == 2 and view.turns == 1
    assert len(model_server.requests) == 3
    # Nothing lost, nothing twice: one read (from the killed worker's stream), one write.
    assert len(tool_runs(events, "read_file")) == 1 and len(tool_runs(events, "write_file")) == 1
    assert (workspace / "c.txt").read_text() == CONTENT
    assert [e.kind for e in entries] == ["system", "user", "assistant", "tool_results", "assistant"]
    # The read keeps the id it ran under in the killed attempt; the write is the retry's.
    assert [(c.id, c.name) for c in entries[2].tool_calls] == [("toolu_0_0", "read_file"), ("toolu_1_1", "write_file")]
    assert [b["tool_use_id"] for b in entries[3].items] == ["toolu_0_0", "toolu_1_1"]
    assert all(b["is_error"] is False for b in entries[3].items)


async def test_worker_killed_after_an_early_read_stage_the_next_worker_runs_only_the_rest(
    client: Client, workspace: Path, task_queue: str, tmp_path: Path
) -> None:
    """SIGKILL after three streamed reads ran as one stage (its result in the
    history) and before the batch closed: the next worker takes those three
    results from the history and runs only the five others, as one stage."""
    address = server_address(client)
    first = WorkerProcess(address, workspace, task_queue, tmp_path / "worker1.log").start()
    try:
        handle, calls = await start_with_early_reads(client, workspace, task_queue, 3, total=8)
        first.kill()
    finally:
        first.stop()
    second = WorkerProcess(address, workspace, task_queue, tmp_path / "worker2.log").start()
    try:
        result, events = await close_and_finish(client, handle, calls)
    finally:
        assert second.stop() == 0
    assert [r.status.value for r in result.results] == ["ok"] * 8
    assert all(f"file {i}" in result.results[i].output for i in range(8))
    assert len(tool_runs(events, "read_stage")) == 2 and tool_runs(events, "read_file") == []
