"""Consecutive writes and edits run as one activity: the same per-call
results in order, an edit that follows a write of its file works from that
write's snapshot, the first error stops the run and skips the rest, and a
retry after a call raised finishes without writing anything twice."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio import activity
from temporalio.client import Client

from activities.base import run_tool
from activities.files.write import write_file
from activities.txn.applied import recorded_result
from activities.write_stage import WRITE_STAGE_ACTIVITY
from core.contracts import ToolRequest, ToolResult, ToolStatus, TurnOptions
from runtime.worker import build_worker
from tests.support import call
from tests.turn.test_read_stage import _activity_types
from tests.turn.test_turn_workflow import run_turn, turn_input


@pytest.mark.parametrize("execution", ["remote", "local"])
async def test_writes_and_edits_in_a_row_are_one_activity(
    client: Client, workspace: Path, task_queue: str, execution: str
) -> None:
    calls = [
        call(0, "write_file", path="a.txt", content="one\ntwo\n"),
        call(1, "edit_file", path="a.txt", old_string="two", new_string="TWO"),  # the write's snapshot
        call(2, "edit_file", path="./a.txt", old_string="one", new_string="ONE"),  # the edit's, by another spelling
        call(3, "write_file", path="sub/b.txt", content="b\n"),
    ]
    turn = turn_input(workspace, task_queue, calls, options=TurnOptions(execution=execution))
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        result = await run_turn(client, turn)
    assert [r.status for r in result.results] == [ToolStatus.OK] * 4, [r.output for r in result.results]
    assert (workspace / "a.txt").read_text() == "ONE\nTWO\n" and (workspace / "sub/b.txt").read_text() == "b\n"
    assert {s.path for s in result.snapshots} >= {"a.txt", "sub/b.txt"}
    if execution == "remote":
        assert await _activity_types(client, turn.turn_id) == [WRITE_STAGE_ACTIVITY]


async def test_the_first_error_stops_the_run_and_the_rest_are_skipped(
    client: Client, workspace: Path, task_queue: str
) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    calls = [
        call(0, "read_file", path="a.txt"),
        call(1, "write_file", path="new.txt", content="x\n"),
        call(2, "edit_file", path="a.txt", old_string="not there", new_string="y"),
        call(3, "write_file", path="never.txt", content="z\n"),
        call(4, "edit_file", path="a.txt", old_string="alpha", new_string="beta"),
    ]
    turn = turn_input(workspace, task_queue, calls)
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        result = await run_turn(client, turn)
    statuses = [r.status for r in result.results]
    assert statuses == [ToolStatus.OK, ToolStatus.OK, ToolStatus.ERROR, ToolStatus.SKIPPED, ToolStatus.SKIPPED]
    assert "tool call #3 (edit_file) failed" in result.results[3].output
    assert (workspace / "new.txt").exists() and not (workspace / "never.txt").exists()
    assert (workspace / "a.txt").read_text() == "alpha\n"
    assert await _activity_types(client, turn.turn_id) == ["read_file", WRITE_STAGE_ACTIVITY]


async def test_a_retried_run_writes_nothing_twice(client: Client, workspace: Path, task_queue: str) -> None:
    raised: list[str] = []

    @activity.defn(name="write_file")
    async def flaky_write(request: ToolRequest) -> ToolResult:
        if request.call_id == "call_1" and not raised:
            raised.append(request.call_id)
            # Someone edits call_0's file before the retry: writing it again would undo that.
            (workspace / "f0.txt").write_text("changed since\n")
            raise RuntimeError("transient: the disk was busy")
        return await run_tool(request, write_file, in_thread=True)

    calls = [call(i, "write_file", path=f"f{i}.txt", content=f"{i}\n") for i in range(3)]
    turn = turn_input(workspace, task_queue, calls, options=TurnOptions(execution="remote"))
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace), extra_activities=[flaky_write]):
        result = await run_turn(client, turn)
    assert [r.status for r in result.results] == [ToolStatus.OK] * 3, [r.output for r in result.results]
    assert raised == ["call_1"] and (workspace / "f0.txt").read_text() == "changed since\n"
    assert all((workspace / f"f{i}.txt").read_text() == f"{i}\n" for i in (1, 2))
    # The second attempt found call_0 done: its recorded result, not a second write.
    first = ToolRequest(call_id="call_0", tool="write_file", workspace_root=str(workspace), arguments={},
                        turn_id=turn.turn_id)
    kept = recorded_result(first)
    assert kept is not None and kept.output == result.results[0].output
    history = await client.get_workflow_handle(turn.turn_id).fetch_history()
    attempts = [e.activity_task_started_event_attributes.attempt for e in history.events
                if e.HasField("activity_task_started_event_attributes")]
    assert attempts == [2]  # one stage activity, which succeeded on its second attempt


def test_a_cancelled_run_starts_no_further_write() -> None:
    """The run's thread cannot be interrupted, but once the activity is
    cancelled (the turn is being cancelled) no write after the current one
    starts."""
    import threading

    from activities.write_stage import WriteStageRequest, run_stage_here

    stop = threading.Event()
    ran: list[str] = []

    def tool(request: ToolRequest) -> ToolResult:
        ran.append(request.call_id)
        stop.set()  # the cancellation arrives while the first write runs
        return ToolResult.ok(request.call_id, request.tool, "wrote")

    requests = [ToolRequest(call_id=f"c{i}", tool="write_file", workspace_root="/ws", arguments={}) for i in range(3)]
    result = run_stage_here({"write_file": tool}, WriteStageRequest(requests=requests, keys=["a", "b", "c"]), stop)
    assert ran == ["c0"] and [r.tool_call_id for r in result.results] == ["c0"]


async def test_a_stage_naming_another_tool_is_refused_whole() -> None:
    from temporalio.exceptions import ApplicationError

    from activities.write_stage import WriteStageRequest, run_stage

    async def tool(request: ToolRequest) -> ToolResult:
        raise AssertionError("nothing may run")

    stage = WriteStageRequest(
        requests=[ToolRequest(call_id="c0", tool="bash", workspace_root="/ws", arguments={})], keys=["a"]
    )
    with pytest.raises(ApplicationError) as refused:
        await run_stage({"write_file": tool}, stage)
    assert refused.value.non_retryable and refused.value.type == "ValidationError"
    assert refused.value.message == "write_stage runs only edit_file, write_file, one key per call; got bash"
