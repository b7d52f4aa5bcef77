"""A parallel stage of reads runs as one activity: the same per-call results,
fewer history events, a retry that re-runs only the reads, and one activity
per call again when the stage's results would not fit one payload."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from temporalio import activity
from temporalio.client import Client

from activities.read_stage import READ_STAGE_ACTIVITY
from core.contracts import ToolRequest, ToolResult, ToolStatus, TurnOptions
from runtime.api import OffloadedResultChanged, load_offloaded
from runtime.worker import build_worker
from tests.support import call
from tests.turn.test_turn_workflow import run_turn, turn_input


async def _activity_types(client: Client, turn_id: str) -> list[str]:
    history = await client.get_workflow_handle(turn_id).fetch_history()
    return [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
    ]


@pytest.mark.parametrize("execution", ["remote", "local"])
async def test_eight_reads_are_one_activity_with_every_result_and_fewer_events(
    client: Client, workspace: Path, task_queue: str, execution: str
) -> None:
    for i in range(4):
        (workspace / f"f{i}.txt").write_text(f"file {i}\n")
    calls = [call(i, "read_file", path=f"f{i}.txt") for i in range(4)]
    calls += [call(4, "grep", pattern="file"), call(5, "glob", pattern="*.txt")]
    calls += [call(6, "read_file", path="missing.txt"), call(7, "grep", pattern="[")]
    turn = turn_input(workspace, task_queue, calls, options=TurnOptions(execution=execution))
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        result = await run_turn(client, turn)
    statuses = [r.status for r in result.results]
    assert statuses == [ToolStatus.OK] * 6 + [ToolStatus.ERROR] * 2, result.results
    assert [r.tool_call_id for r in result.results] == [f"call_{i}" for i in range(8)]
    assert "file 2" in result.results[2].output
    assert all(f"f{i}.txt" in result.results[5].output for i in range(4))
    assert {s.path for s in result.snapshots} >= {f"f{i}.txt" for i in range(4)}
    history = await client.get_workflow_handle(turn.turn_id).fetch_history()
    if execution == "remote":
        assert await _activity_types(client, turn.turn_id) == [READ_STAGE_ACTIVITY]
    else:  # the one patch marker (workflows.versions), the plan, the stage: no marker per call
        markers = [e for e in history.events if e.HasField("marker_recorded_event_attributes")]
        assert len(markers) == 3
    assert len(history.events) < 8 * 3


async def test_a_failing_attempt_retries_the_stage_and_every_read_reports_once(
    client: Client, workspace: Path, task_queue: str
) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    attempts: list[int] = []

    @activity.defn(name="grep")
    async def flaky_grep(request: ToolRequest) -> ToolResult:
        attempts.append(activity.info().attempt)
        if len(attempts) == 1:
            raise RuntimeError("transient: the index was busy")
        return ToolResult.ok(request.call_id, "grep", "a.txt:1:alpha")

    calls = [call(0, "read_file", path="a.txt"), call(1, "grep", pattern="alpha")]
    turn = turn_input(workspace, task_queue, calls, options=TurnOptions(execution="remote"))
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace), extra_activities=[flaky_grep]):
        result = await run_turn(client, turn)
    assert [r.status for r in result.results] == [ToolStatus.OK, ToolStatus.OK], result.results
    assert "alpha" in result.results[0].output and result.results[1].output == "a.txt:1:alpha"
    assert attempts == [1, 2]  # the stage ran again (its reads only), once
    assert await _activity_types(client, turn.turn_id) == [READ_STAGE_ACTIVITY]


async def test_results_too_large_for_one_payload_run_one_activity_per_call(
    client: Client, workspace: Path, task_queue: str
) -> None:
    big = "x" * 250_000  # each fits a payload; eight together do not

    @activity.defn(name="grep")
    async def wide_grep(request: ToolRequest) -> ToolResult:
        return ToolResult.ok(request.call_id, "grep", big + request.call_id)

    calls = [call(i, "grep", pattern=f"p{i}") for i in range(8)]
    turn = turn_input(workspace, task_queue, calls, options=TurnOptions(execution="remote"))
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace), extra_activities=[wide_grep]):
        result = await run_turn(client, turn)
    # The turn's own result is too large as well: it is written to the artifacts.
    assert result.result_counts == {"ok": 8} and result.results_artifact
    parts = sorted((workspace / result.results_artifact).iterdir())
    text = "".join(p.read_text() for p in parts)
    assert all(big + f"call_{i}" in text for i in range(8))
    tools = [t for t in await _activity_types(client, turn.turn_id) if t != "save_turn_result_part"]
    assert tools == [READ_STAGE_ACTIVITY] + ["grep"] * 8
    # Read back only as the turn wrote them: the history holds their digest.
    assert result.results_digest == hashlib.sha256(text.encode()).hexdigest()
    loaded = load_offloaded(result, str(workspace))
    assert [r.output for r in loaded.results] == [big + f"call_{i}" for i in range(8)]
    parts[0].write_text(parts[0].read_text().replace("call_0", "call_X"))  # rewritten afterwards
    with pytest.raises(OffloadedResultChanged, match="are not the ones the turn wrote"):
        load_offloaded(result, str(workspace))



def test_a_recorded_history_holds_the_stage_so_replay_covers_it() -> None:
    from tests.durability.test_replay import load

    scheduled = [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in load("plan_read_stage").events
        if e.HasField("activity_task_scheduled_event_attributes")
    ]
    assert scheduled == [READ_STAGE_ACTIVITY, "write_file", READ_STAGE_ACTIVITY]
    recorded = b"".join(
        payload.data
        for e in load("plan_read_stage_local").events
        if e.HasField("marker_recorded_event_attributes")
        for details in e.marker_recorded_event_attributes.details.values()
        for payload in details.payloads
    )
    assert b"read-stage-activity" in recorded and READ_STAGE_ACTIVITY.encode() in recorded
