"""Streaming dispatch against the real dev server, the scripted
model server and the official SDKs: what starts while the model is still
writing, what waits, dedup, and a model call retried after some calls ran.
Order is asserted on the turn's recorded history, never on wall-clock time."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from temporalio.client import Client

from core.contracts import ToolCall, TurnInput, TurnProgress, TurnResult, TurnStatus, Workspace
from core.turn.early_dispatch import BatchClose, ClosedBatch, DispatchedCall
from core.session.contracts import SessionLimits, SessionState, SessionView
from runtime import session_api as sessions
from tests.model_server import Reply, ScriptedModelServer, ToolUse, tool, unauthorized
from tests.processes import run_client, server_address
from tests.session.test_session_support import model_server  # noqa: F401  (fixture)
from tests.turn.test_streaming_support import dispatch_reads_together, first, tool_runs, turn_events
from runtime.worker import build_worker
from workflows.turn import AgentTurnWorkflow

CONTENT = "written while the model streamed\n" * 10


async def _start(client: Client, workspace: Path, task_queue: str, provider: str, policy: str = "auto", **kw: object) -> str:
    return await sessions.start_session(
        client, workspace=workspace, task_queue=task_queue, provider=provider, model="scripted",
        prompt="go", policy=policy, **kw,
    )


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_a_read_starts_while_streaming_and_the_rest_waits_for_the_whole_batch(
    provider: str, client: Client, workspace: Path, task_queue: str, model_server: ScriptedModelServer
) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    model_server.add(
        Reply(
            text="Reading, then writing.",
            tool_calls=[
                tool("read_file", path="a.txt"),
                tool("write_file", path="b.txt", content=CONTENT),  # asks under ask-writes
                tool("read_file", path="b.txt"),  # after a write: must see it
            ],
            tokens_per_second=100,
        ),
        Reply(text="All done."),
    )
    seen_at_approval: dict[str, object] = {}

    async def approve_after_looking(view: SessionView) -> None:
        assert view.current_turn_id is not None
        events = await turn_events(client, view.current_turn_id)
        seen_at_approval["reads"] = len(tool_runs(events, "read_file"))
        seen_at_approval["writes"] = len(tool_runs(events, "write_file"))
        seen_at_approval["pending"] = [p.name for p in view.pending]
        await sessions.approve(client, view.session_id, approver="test")

    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        sid = await _start(client, workspace, task_queue, provider, policy="ask-writes")
        view = await sessions.wait_for_answer(client, sid, timeout=60, on_approval_needed=approve_after_looking)
        turn_id = f"{sid}/turn-1"
        events = await turn_events(client, turn_id)
        result = TurnResult.model_validate(await client.get_workflow_handle(turn_id).result())

    assert view.state == SessionState.WAITING_FOR_USER and view.last_answer == "All done."
    # The whole batch waited for one approval of the write; only the first read had run.
    assert seen_at_approval == {"reads": 1, "writes": 0, "pending": ["write_file"]}
    close = first(events, "update", "close_batch")
    dispatches = [e for e in events if e.kind == "signal" and e.name in ("dispatch", "dispatch_calls")]
    reads = tool_runs(events, "read_file")
    (write,) = tool_runs(events, "write_file")
    # The last call closes with the end of the stream: its dispatch may be
    # left to the close, which carries the whole batch anyway.
    assert len(dispatches) in (2, 3) and all(d.event_id < close.event_id for d in dispatches)
    assert reads[0].event_id < dispatches[1].event_id  # started before the write had even closed
    assert write.event_id > close.event_id and reads[1].event_id > write.event_id
    assert result.status == TurnStatus.COMPLETED and result.decision is not None
    assert [r.status.value for r in result.results] == ["ok", "ok", "ok"]
    assert "alpha" in result.results[0].output and "written while" in result.results[2].output


async def test_repeated_dispatches_run_a_call_once(client: Client, workspace: Path, task_queue: str) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    read = ToolCall(id="c0", name="read_file", arguments='{"path": "a.txt"}')
    turn = TurnInput(
        turn_id=f"turn-{task_queue}", workspace=Workspace(root=str(workspace), task_queue=task_queue),
        tool_calls=[], open_batch=True,
    )
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        handle = await client.start_workflow(AgentTurnWorkflow.run, turn, id=turn.turn_id, task_queue=task_queue)
        for _ in range(3):  # a sender that retried its signal
            await handle.signal(AgentTurnWorkflow.dispatch, DispatchedCall(attempt=1, position=0, call=read))
        # A conflicting call at the same place is refused, not run.
        await handle.signal(
            AgentTurnWorkflow.dispatch,
            DispatchedCall(attempt=1, position=0, call=ToolCall(id="x", name="read_file", arguments='{"path": "zz"}')),
        )
        for _ in range(400):  # the read started (and ended) while the batch is still open
            progress = await handle.query(AgentTurnWorkflow.status, result_type=TurnProgress)
            if progress.calls and progress.calls[0].state == "done":
                break
            await asyncio.sleep(0.05)
        # The same call streamed again by a retried model call (new id): still once.
        again = read.model_copy(update={"id": "c0-retry"})
        await handle.signal(AgentTurnWorkflow.dispatch, DispatchedCall(attempt=2, position=0, call=again))
        closed = await handle.execute_update(AgentTurnWorkflow.close_batch, BatchClose(attempt=2, calls=[again]))
        result = await handle.result()
        events = await turn_events(client, turn.turn_id)
    assert isinstance(closed, ClosedBatch) and [c.id for c in closed.calls] == ["c0"] and closed.started_early == [0]
    assert len(tool_runs(events, "read_file")) == 1
    assert [(r.tool_call_id, r.status.value) for r in result.results] == [("c0", "ok")]


async def test_a_model_call_retried_after_calls_ran_keeps_them_and_records_them(
    client: Client, workspace: Path, task_queue: str, model_server: ScriptedModelServer
) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    (workspace / "b.txt").write_text("beta\n")
    model_server.add(
        # Attempt 1: both reads close and start, then the connection drops
        # in the middle of the write's arguments.
        Reply(
            tool_calls=[tool("read_file", path="a.txt"), tool("read_file", path="b.txt"),
                        tool("write_file", path="c.txt", content=CONTENT)],
            tokens_per_second=150, drop_after_pieces=40,
        ),
        # Attempt 2 differs: the first read again, then a glob instead of read b.
        Reply(tool_calls=[tool("read_file", path="a.txt"), tool("glob", pattern="*.txt")]),
        Reply(text="Seen."),
    )
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        sid = await _start(client, workspace, task_queue, "openai")
        view = await sessions.wait_for_answer(client, sid, timeout=60)
        entries = await sessions.transcript(client, sid)
        events = await turn_events(client, f"{sid}/turn-1")
    assert view.state == SessionState.WAITING_FOR_USER and view.last_answer == "Seen."
    assert len(model_server.requests) == 3
    # Each read ran once; nothing of the lost write ran.
    assert len(tool_runs(events, "read_file")) == 2 and not tool_runs(events, "write_file")
    assert not (workspace / "c.txt").exists()
    # The assistant message holds what ran: read b (absent from the retry)
    # first, then the retry's calls, read a under the id it ran with.
    assistant = next(e for e in entries if e.kind == "assistant")
    assert [(c.id, c.name) for c in assistant.tool_calls] == [
        ("call_0_1", "read_file"), ("call_0_0", "read_file"), ("call_1_1", "glob")]
    results = next(e for e in entries if e.kind == "tool_results").items
    assert [m["tool_call_id"] for m in results] == ["call_0_1", "call_0_0", "call_1_1"]
    assert "beta" in results[0]["content"] and "alpha" in results[1]["content"]
    # The SDK accepted that conversation for the next call (the server got it as sent).
    sent = model_server.requests[2].body["messages"]
    assert [m["tool_call_id"] for m in sent if m["role"] == "tool"] == ["call_0_1", "call_0_0", "call_1_1"]


async def test_a_model_call_that_fails_for_good_after_a_dispatch_records_what_ran(
    client: Client, workspace: Path, task_queue: str, model_server: ScriptedModelServer
) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    model_server.add(
        Reply(tool_calls=[tool("read_file", path="a.txt"), tool("write_file", path="c.txt", content=CONTENT)],
              tokens_per_second=150, drop_after_pieces=30),
        unauthorized(),
    )
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        sid = await _start(client, workspace, task_queue, "anthropic")
        result = await sessions.result(client, sid)
        entries = await sessions.transcript(client, sid)
    assert result.state == SessionState.MODEL_ERROR and result.turns == 1
    assert not (workspace / "c.txt").exists()
    kinds = [e.kind for e in entries]
    assert kinds[:4] == ["system", "user", "assistant", "tool_results"] and kinds[-1] == "note"
    assert [(c.id, c.name) for c in entries[2].tool_calls] == [("toolu_0_0", "read_file")]
    block = entries[3].items[0]
    assert block["tool_use_id"] == "toolu_0_0" and block["is_error"] is False


async def test_the_cli_turns_streaming_dispatch_off(
    client: Client, workspace: Path, task_queue: str, model_server: ScriptedModelServer
) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    model_server.add(Reply(tool_calls=[tool("read_file", path="a.txt")]), Reply(text="It says alpha."))
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        done = await asyncio.to_thread(
            run_client, "--address", server_address(client), "session", "run", "--workspace", str(workspace),
            "--task-queue", task_queue, "--provider", "openai", "--model", "scripted", "--prompt", "read a",
            "--policy", "auto", "--session-id", f"cli-{task_queue}", "--no-streaming-dispatch",
        )
        assert (done.returncode, done.stdout.strip()) == (0, "It says alpha."), done.stderr
        events = await turn_events(client, f"cli-{task_queue}/turn-1")
        await sessions.close(client, f"cli-{task_queue}")
    assert not [e for e in events if e.kind in ("signal", "update")]  # the whole batch came in the input
    assert len(tool_runs(events, "read_file")) == 1


async def test_the_token_limit_keeps_what_started_and_runs_nothing_else(
    client: Client, workspace: Path, task_queue: str, model_server: ScriptedModelServer
) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    model_server.add(Reply(input_tokens=50, output_tokens=10, tokens_per_second=60, tool_calls=[
        tool("read_file", path="a.txt"), tool("write_file", path="never.txt", content=CONTENT)]))
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        sid = await _start(client, workspace, task_queue, "openai", limits=SessionLimits(max_tokens=40))
        result = await sessions.result(client, sid)
        entries = await sessions.transcript(client, sid)
    assert result.state == SessionState.MAX_TOKENS and not (workspace / "never.txt").exists()
    assert "its 1 tool call(s) were not run; 1 had started" in result.message
    assert [e.kind for e in entries] == ["system", "user", "assistant", "tool_results", "note"]
    assert [c.name for c in entries[2].tool_calls] == ["read_file"]
    assert "alpha" in entries[3].items[0]["content"]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_malformed_and_truncated_arguments_go_through_repair_and_validation(
    provider: str, client: Client, workspace: Path, task_queue: str, model_server: ScriptedModelServer
) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    (workspace / "b.txt").write_text("beta\n")
    model_server.add(
        Reply(tool_calls=[
            tool("read_file", path="a.txt"),
            ToolUse("read_file", '{"path": "b.txt",}'),  # closes but does not parse: repaired at the end
            ToolUse("write_file", '{"path": "c.txt", "content": "half of the fi'),  # cut off by max tokens
        ], stop_reason="length" if provider == "openai" else "max_tokens", tokens_per_second=150),
        Reply(text="Read both; the write was cut off."),
    )
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        sid = await _start(client, workspace, task_queue, provider)
        view = await sessions.wait_for_answer(client, sid, timeout=60)
        turn_id = f"{sid}/turn-1"
        events = await turn_events(client, turn_id)
        result = TurnResult.model_validate(await client.get_workflow_handle(turn_id).result())
    assert view.state == SessionState.WAITING_FOR_USER
    # Only the well-formed call was handed over while streaming (the other
    # two never closed as valid JSON); each read ran once.
    dispatches = [e for e in events if e.kind == "signal" and e.name in ("dispatch", "dispatch_calls")]
    assert len(dispatches) <= 1 and len(tool_runs(events, "read_file")) == 2
    assert [r.status.value for r in result.results] == ["ok", "ok", "error"]
    assert "beta" in result.results[1].output
    assert "content" in result.results[2].output and not (workspace / "c.txt").exists()


async def test_a_rejected_batch_still_reports_the_read_that_ran_early(
    client: Client, workspace: Path, task_queue: str, model_server: ScriptedModelServer
) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    model_server.add(
        Reply(tool_calls=[tool("read_file", path="a.txt"), tool("write_file", path="b.txt", content=CONTENT)],
              tokens_per_second=60),
        Reply(text="Understood, not writing."),
    )

    async def reject(view: SessionView) -> None:
        await sessions.reject(client, view.session_id, approver="test", reason="no writes today")

    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        sid = await _start(client, workspace, task_queue, "anthropic", policy="ask-writes")
        view = await sessions.wait_for_answer(client, sid, timeout=60, on_approval_needed=reject)
        result = TurnResult.model_validate(await client.get_workflow_handle(f"{sid}/turn-1").result())
    assert view.last_answer == "Understood, not writing."
    assert result.status == TurnStatus.REJECTED and not (workspace / "b.txt").exists()
    assert [r.status.value for r in result.results] == ["ok", "denied"]
    assert "alpha" in result.results[0].output


async def test_cancelling_mid_stream_records_the_call_that_ran(
    client: Client, workspace: Path, task_queue: str, model_server: ScriptedModelServer
) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    model_server.add(Reply(tool_calls=[tool("read_file", path="a.txt"), tool("write_file", path="b.txt", content=CONTENT)],
                           tokens_per_second=20))
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        sid = await _start(client, workspace, task_queue, "openai")
        for _ in range(600):
            try:
                progress = await client.get_workflow_handle(f"{sid}/turn-1").query(
                    AgentTurnWorkflow.status, result_type=TurnProgress)
                if progress.calls and progress.calls[0].state == "done":
                    break
            except Exception:  # not started yet
                pass
            await asyncio.sleep(0.05)
        assert [(c.name, c.state) for c in progress.calls] == [("read_file", "done")]  # shown while streaming
        result = await sessions.cancel(client, sid)
    assert result.state == SessionState.CANCELLED and "read_file: ok" in result.message
    assert not (workspace / "b.txt").exists()


async def test_calls_that_close_together_go_in_one_signal_and_each_runs_once(
    client: Client, workspace: Path, task_queue: str
) -> None:
    """The model activity's sender: what closed while a signal was on its
    way goes in the next one (one history event for the lot)."""
    from activities.model.dispatch import StreamDispatcher
    from core.session.stream_assembly import AssembledCall

    for i in range(8):
        (workspace / f"f{i}.txt").write_text(f"file {i}\n")
    turn = TurnInput(
        turn_id=f"turn-{task_queue}", workspace=Workspace(root=str(workspace), task_queue=task_queue),
        tool_calls=[], open_batch=True,
    )
    calls = [AssembledCall(position=i, id=f"c{i}", name="read_file", raw_arguments=f'{{"path": "f{i}.txt"}}')
             for i in range(8)]
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        handle = await client.start_workflow(
            AgentTurnWorkflow.run, turn, id=turn.turn_id, task_queue=task_queue, result_type=TurnResult
        )
        sender = StreamDispatcher(client, turn.turn_id, "openai", attempt=1)
        for c in calls:  # all close at once, as when a fast stream ends a burst of calls
            sender.closed(c)
        await asyncio.sleep(0)  # the sender takes the first and signals it; the rest queue up
        while sender.sent < len(calls):
            await asyncio.sleep(0.01)
        closed = await sender.close([ToolCall(id=c.id, name=c.name, arguments=c.raw_arguments) for c in calls])
        result = await handle.result()
        events = await turn_events(client, turn.turn_id)
    signals = [e for e in events if e.kind == "signal"]
    assert sender.sent == 8 and sender.signals == len(signals) < 8, [e.name for e in signals]
    assert {e.name for e in signals} <= {"dispatch", "dispatch_calls"} and "dispatch_calls" in {e.name for e in signals}
    assert [c.id for c in closed.calls] == [f"c{i}" for i in range(8)]
    assert [r.status.value for r in result.results] == ["ok"] * 8
    assert all(f"file {i}" in result.results[i].output for i in range(8))
    assert len(tool_runs(events, "read_file")) <= 8  # none twice (early ones may share a stage)


async def test_streamed_reads_planned_together_start_as_one_stage(
    client: Client, workspace: Path, task_queue: str
) -> None:
    """One marker for the lot instead of one per read: a session's history
    grows by less than one event per streamed read."""
    result, events = await dispatch_reads_together(client, workspace, task_queue, 6)
    assert [r.status.value for r in result.results] == ["ok"] * 6
    assert all(f"file {i}" in result.results[i].output for i in range(6))
    assert [r.tool_call_id for r in result.results] == [f"c{i}" for i in range(6)]
    assert len(tool_runs(events, "read_stage")) == 1 and tool_runs(events, "read_file") == []


async def test_streamed_reads_whose_stage_fails_run_one_by_one_each_with_its_result(
    client: Client, workspace: Path, task_queue: str
) -> None:
    from temporalio import activity
    from temporalio.exceptions import ApplicationError

    from core.names import READ_STAGE_ACTIVITY

    @activity.defn(name=READ_STAGE_ACTIVITY)
    async def broken_stage(stage: object) -> object:
        raise ApplicationError("the stage's worker lost its disk", non_retryable=True)

    result, events = await dispatch_reads_together(client, workspace, task_queue, 3, extra_activities=[broken_stage])
    assert [r.status.value for r in result.results] == ["ok"] * 3
    assert all(f"file {i}" in result.results[i].output for i in range(3))
    assert len(tool_runs(events, "read_stage")) == 1 and len(tool_runs(events, "read_file")) == 3


async def test_the_reads_that_did_not_start_early_run_as_one_stage_after_the_close(
    client: Client, workspace: Path, task_queue: str
) -> None:
    """Three reads start early; the batch closes with five more: those five
    are one read_stage, the three keep the results they already have."""
    result, events = await dispatch_reads_together(client, workspace, task_queue, 3, total=8)
    assert [r.status.value for r in result.results] == ["ok"] * 8
    assert all(f"file {i}" in result.results[i].output for i in range(8))
    assert len(tool_runs(events, "read_stage")) == 2 and tool_runs(events, "read_file") == []


async def test_a_model_call_that_fails_after_its_turn_finished_is_retried_against_the_finished_turn(
    client: Client, workspace: Path, task_queue: str, model_server: ScriptedModelServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The batch was closed and its turn ran to the end; then the model call
    failed before it returned (here its last transcript write; a worker that
    dies there is the same to the server). The retry must take the batch the
    finished turn ran, not signal a workflow that is gone, and neither must
    a session that gives up on the model."""
    from activities.model import transcript_store

    (workspace / "a.txt").write_text("alpha\n")
    real_append, failures = transcript_store.TranscriptStore.append, []

    def append_failing_after_the_close(self: object, head: object, entries: list) -> object:
        if entries and entries[0].kind == "assistant" and entries[0].tool_calls and len(failures) < fail_times:
            failures.append(True)
            raise RuntimeError("the disk went away for a moment")
        return real_append(self, head, entries)  # type: ignore[arg-type]

    monkeypatch.setattr(transcript_store.TranscriptStore, "append", append_failing_after_the_close)
    read = [tool("read_file", path="a.txt")]
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        # Once: the retry takes the finished turn's batch and the session goes on.
        fail_times = 1
        model_server.add(Reply(text="Reading.", tool_calls=read),
                         Reply(text="Reading, again.", tool_calls=read),  # the retry's stream
                         Reply(text="It says alpha."))
        sid = await _start(client, workspace, task_queue, "openai")
        view = await sessions.wait_for_answer(client, sid, timeout=60)
        entries = await sessions.transcript(client, sid)
        events = await turn_events(client, f"{sid}/turn-1")
        assert failures and view.state == SessionState.WAITING_FOR_USER and view.last_answer == "It says alpha.", view
        assert len(tool_runs(events, "read_file")) == 1  # the read ran once
        assistant = [e for e in entries if e.kind == "assistant"]
        results = [e for e in entries if e.kind == "tool_results"]
        assert [c.id for c in assistant[0].tool_calls] == [r["tool_call_id"] for r in results[0].items]  # paired
        assert "alpha" in results[0].items[0]["content"]
        # For good: the session gives up on the model and still records what the finished turn ran.
        failures.clear()
        fail_times = 2
        model_server.add(Reply(text="Reading.", tool_calls=read), Reply(text="Reading, again.", tool_calls=read))
        sid = await _start(client, workspace, task_queue, "openai", limits=SessionLimits(model_attempts=2))
        result = await asyncio.wait_for(sessions.result(client, sid), timeout=60)
        entries = await sessions.transcript(client, sid)
    assert result.state == SessionState.MODEL_ERROR and len(failures) == 2
    kinds = [e.kind for e in entries]
    assert kinds[:4] == ["system", "user", "assistant", "tool_results"] and kinds[-1] == "note", kinds
    assert "alpha" in entries[3].items[0]["content"]
