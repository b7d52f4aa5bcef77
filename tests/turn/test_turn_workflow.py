"""The agent turn on a real dev server: stages, order, skipping, cancelling,
snapshots, routing and status."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest
from temporalio import activity
from temporalio.client import Client, WorkflowFailureError
from temporalio.exceptions import ApplicationError
from temporalio.worker import Worker

from core.contracts import (
    Policy,
    ToolCall,
    ToolRequest,
    ToolResult,
    ToolStatus,
    TurnInput,
    TurnOptions,
    TurnProgress,
    TurnResult,
    TurnStatus,
)
from runtime.worker import build_worker
from workflows.turn import AgentTurnWorkflow
from tests.support import call, turn


def turn_input(workspace: Path, task_queue: str, calls: list[ToolCall], **kw: object) -> TurnInput:
    return turn(workspace, task_queue, calls, policy=kw.pop("policy", Policy(mode="auto")), **kw)  # type: ignore[arg-type]


async def run_turn(client: Client, turn: TurnInput, workflow_queue: str | None = None) -> TurnResult:
    return await client.execute_workflow(
        AgentTurnWorkflow.run,
        turn,
        id=turn.turn_id,
        task_queue=workflow_queue or turn.workspace.task_queue,
        result_type=TurnResult,
    )


async def test_read_after_write_sees_the_write_and_order_is_kept(
    client: Client, workspace: Path, task_queue: str
) -> None:
    calls = [
        call(0, "write_file", path="notes/a.txt", content="alpha\nbeta\n"),
        call(1, "read_file", path="notes/a.txt"),
        call(2, "grep", pattern="beta"),
        call(3, "edit_file", path="notes/a.txt", old_string="beta", new_string="gamma"),
        call(4, "read_file", path="notes/a.txt"),
    ]
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        result = await run_turn(client, turn_input(workspace, task_queue, calls))
    assert result.status == TurnStatus.COMPLETED
    assert [r.tool_call_id for r in result.results] == [c.id for c in calls]
    assert [r.status for r in result.results] == [ToolStatus.OK] * 5, [r.output for r in result.results]
    assert "     2|beta" in result.results[1].output
    assert "notes/a.txt:2:beta" in result.results[2].output
    assert "     2|gamma" in result.results[4].output
    assert (workspace / "notes/a.txt").read_text() == "alpha\ngamma\n"
    # Snapshots travel out of the turn: the one for a.txt describes the final file.
    [snap] = [s for s in result.snapshots if s.path == "notes/a.txt"]
    assert snap.size == len("alpha\ngamma\n")
    # Messages in both shapes, in call order.
    assert [m["tool_call_id"] for m in result.messages] == [c.id for c in calls]
    assert [b["tool_use_id"] for b in result.anthropic_blocks] == [c.id for c in calls]


async def test_failed_unsafe_call_skips_later_unsafe_calls_but_not_safe_ones(
    client: Client, workspace: Path, task_queue: str
) -> None:
    (workspace / "a.txt").write_text("one\n")
    (workspace / "fail.py").write_text("import sys\nprint('boom')\nsys.exit(3)\n")
    calls = [
        call(0, "read_file", path="a.txt"),
        call(1, "bash", command="python3 fail.py"),
        call(2, "write_file", path="b.txt", content="never\n"),
        call(3, "read_file", path="a.txt"),
        call(4, "edit_file", path="a.txt", old_string="one", new_string="two"),
        call(5, "glob", pattern="*.txt"),
    ]
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        result = await run_turn(client, turn_input(workspace, task_queue, calls))
    statuses = [r.status for r in result.results]
    assert statuses == [
        ToolStatus.OK,
        ToolStatus.ERROR,
        ToolStatus.SKIPPED,
        ToolStatus.OK,
        ToolStatus.SKIPPED,
        ToolStatus.OK,
    ]
    assert result.results[1].metadata["exit_code"] == "3"
    assert result.results[2].output == "Skipped: tool call #2 (bash) failed earlier in this batch."
    assert not (workspace / "b.txt").exists()
    assert (workspace / "a.txt").read_text() == "one\n"
    assert "Fix that failure first" in result.messages[2]["content"]


async def test_unknown_tool_and_bad_arguments_are_results_not_crashes(
    client: Client, workspace: Path, task_queue: str
) -> None:
    calls = [
        call(0, "delete_repo", repo="x"),
        ToolCall(id="call_1", name="read_file", arguments='{"path": "a.txt",'),
        call(2, "glob", pattern="*"),
    ]
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        result = await run_turn(client, turn_input(workspace, task_queue, calls))
    assert result.status == TurnStatus.COMPLETED
    assert result.results[0].is_error and "Available tools: bash, edit_file, glob" in result.results[0].output
    assert result.results[1].is_error and "not valid JSON" in result.results[1].output
    assert result.results[2].status == ToolStatus.OK


async def test_parallel_stage_is_really_concurrent(client: Client, workspace: Path, task_queue: str) -> None:
    """Four safe calls that each wait until all four have started: they can
    only finish if the workflow runs them together."""
    arrived: list[str] = []
    everyone = asyncio.Event()

    @activity.defn(name="grep")
    async def barrier_grep(request: ToolRequest) -> ToolResult:
        arrived.append(request.call_id)
        if len(arrived) == 4:
            everyone.set()
        try:
            await asyncio.wait_for(everyone.wait(), timeout=10)
        except asyncio.TimeoutError:
            return ToolResult.error(request.call_id, "grep", f"alone: only {len(arrived)} arrived")
        return ToolResult.ok(request.call_id, "grep", "met the others")

    calls = [call(i, "grep", pattern=f"p{i}") for i in range(4)]
    turn = turn_input(workspace, task_queue, calls, options=TurnOptions(execution="remote"))
    async with build_worker(client, task_queue=task_queue, workspace=None, extra_activities=[barrier_grep]):
        result = await run_turn(client, turn)
    assert [r.output for r in result.results] == ["met the others"] * 4


async def test_infrastructure_failure_cancels_the_rest_of_its_parallel_stage(
    client: Client, workspace: Path, task_queue: str
) -> None:
    started = asyncio.Event()
    cancelled: list[str] = []

    @activity.defn(name="glob")
    async def broken_glob(request: ToolRequest) -> ToolResult:
        await started.wait()
        raise ApplicationError("disk controller on fire", type="DiskError", non_retryable=True)

    @activity.defn(name="grep")
    async def slow_grep(request: ToolRequest) -> ToolResult:
        started.set()
        try:
            while True:  # heartbeats so that the cancellation is delivered
                activity.heartbeat()
                await asyncio.sleep(0.1)
        except asyncio.CancelledError:
            cancelled.append(request.call_id)
            raise

    @activity.defn(name="read_file")
    async def fine_read(request: ToolRequest) -> ToolResult:
        return ToolResult.error(request.call_id, "read_file", "no such file")  # a business error

    calls = [call(0, "read_file", path="x"), call(1, "grep", pattern="a"), call(2, "glob", pattern="*")]
    turn = turn_input(workspace, task_queue, calls, options=TurnOptions(execution="remote"))
    async with build_worker(
        client, task_queue=task_queue, workspace=None, extra_activities=[broken_glob, slow_grep, fine_read]
    ):
        result = await run_turn(client, turn)
    assert [r.status for r in result.results] == [ToolStatus.ERROR, ToolStatus.CANCELLED, ToolStatus.ERROR]
    assert result.results[0].output == "no such file"  # the business error cancelled nothing
    assert "disk controller on fire" in result.results[2].output
    assert result.results[1].output.startswith("Cancelled: tool call #3 (glob)")
    for _ in range(50):
        if cancelled:
            break
        await asyncio.sleep(0.1)
    assert cancelled == ["call_1"]


async def test_workspace_routing_runs_tools_on_the_workspace_worker(
    client: Client, tmp_path: Path
) -> None:
    """The workflow runs on one queue; the files live with another worker."""
    ws_a, ws_b = tmp_path / "a", tmp_path / "b"
    ws_a.mkdir()
    ws_b.mkdir()
    (ws_b / "only-in-b.txt").write_text("hello from b\n")
    q_a, q_b = f"a-{uuid.uuid4().hex[:8]}", f"b-{uuid.uuid4().hex[:8]}"
    turn = turn_input(ws_b, q_b, [call(0, "read_file", path="only-in-b.txt"), call(1, "write_file", path="new.txt", content="x")])
    async with build_worker(client, task_queue=q_a, workspace=str(ws_a)), build_worker(
        client, task_queue=q_b, workspace=str(ws_b)
    ):
        result = await run_turn(client, turn, workflow_queue=q_a)
        # A turn that names the wrong worker's queue is refused whole by that
        # worker when it is planned: nothing runs.
        wrong = turn_input(ws_b, q_a, [call(0, "read_file", path="only-in-b.txt")])
        with pytest.raises(WorkflowFailureError) as refused:
            await run_turn(client, wrong, workflow_queue=q_a)
    assert result.results[0].status == ToolStatus.OK and "hello from b" in result.results[0].output
    assert (ws_b / "new.txt").read_text() == "x" and not (ws_a / "new.txt").exists()
    assert "serves the workspace" in str(refused.value.cause) and "nothing was run" in str(refused.value.cause)
    history = await client.get_workflow_handle(turn.turn_id).fetch_history()
    queues = {
        e.activity_task_scheduled_event_attributes.task_queue.name
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
    }
    assert queues == {q_b}


async def test_local_activities_when_the_workflow_worker_holds_the_workspace(
    client: Client, workspace: Path, task_queue: str
) -> None:
    (workspace / "a.txt").write_text("x\n")
    calls = [call(0, "read_file", path="a.txt"), call(1, "glob", pattern="*")]
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        local = turn_input(workspace, task_queue, calls, options=TurnOptions(execution="local"))
        remote = turn_input(workspace, task_queue, calls, options=TurnOptions(execution="remote"))
        r_local = await run_turn(client, local)
        r_remote = await run_turn(client, remote)
    assert [r.output for r in r_local.results] == [r.output for r in r_remote.results]

    async def scheduled_kinds(turn_id: str) -> tuple[int, int]:
        history = await client.get_workflow_handle(turn_id).fetch_history()
        remote_n = sum(e.HasField("activity_task_scheduled_event_attributes") for e in history.events)
        markers = sum(e.HasField("marker_recorded_event_attributes") for e in history.events)
        return remote_n, markers

    # Both record two markers besides the tools: the one patch marker a turn
    # decides its patches with, and the plan; the two reads are one stage activity.
    assert await scheduled_kinds(local.turn_id) == (0, 2 + 1)
    assert await scheduled_kinds(remote.turn_id) == (1, 2 + 0)


async def test_snapshots_carry_from_turn_to_turn_and_catch_conflicts(
    client: Client, workspace: Path, task_queue: str
) -> None:
    target = workspace / "conf.ini"
    target.write_text("a=1\n")
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        first = await run_turn(client, turn_input(workspace, task_queue, [call(0, "read_file", path="conf.ini")]))
        # Without the first turn's snapshots, overwriting is refused.
        blind = await run_turn(
            client, turn_input(workspace, task_queue, [call(0, "write_file", path="conf.ini", content="a=2\n")])
        )
        assert blind.results[0].is_error and "read it first" in blind.results[0].output
        # With them, it works...
        seeded = await run_turn(
            client,
            turn_input(
                workspace,
                task_queue,
                [call(0, "write_file", path="conf.ini", content="a=2\n")],
                snapshots=first.snapshots,
            ),
        )
        assert seeded.results[0].status == ToolStatus.OK
        # ...and someone else's change after our last view is a conflict.
        target.write_text("a=3 (changed by a human)\n")
        stale = await run_turn(
            client,
            turn_input(
                workspace,
                task_queue,
                [call(0, "edit_file", path="conf.ini", old_string="a=", new_string="b=")],
                snapshots=seeded.snapshots,
            ),
        )
    assert stale.results[0].is_error and "conflict" in stale.results[0].output
    assert target.read_text() == "a=3 (changed by a human)\n"


async def test_status_query_reports_per_call_progress(client: Client, workspace: Path, task_queue: str) -> None:
    (workspace / "slow.py").write_text("import time\ntime.sleep(2)\nprint('done')\n")
    calls = [call(0, "read_file", path="slow.py"), call(1, "bash", command="python3 slow.py")]
    turn = turn_input(workspace, task_queue, calls)
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        handle = await client.start_workflow(
            AgentTurnWorkflow.run, turn, id=turn.turn_id, task_queue=task_queue, result_type=TurnResult
        )
        seen_running = None
        for _ in range(60):
            progress = await handle.query(AgentTurnWorkflow.status, result_type=TurnProgress)
            if progress.calls[1].state == "running":
                seen_running = progress
                break
            await asyncio.sleep(0.05)
        result = await handle.result()
        final = await handle.query(AgentTurnWorkflow.status, result_type=TurnProgress)
    assert seen_running is not None
    assert seen_running.status == TurnStatus.RUNNING
    assert seen_running.calls[0].state == "done" and seen_running.calls[0].status == ToolStatus.OK
    assert result.results[1].output.strip().startswith("done")
    assert final.status == TurnStatus.COMPLETED and all(c.state == "done" for c in final.calls)


@pytest.mark.parametrize("execution", ["local", "remote"])
async def test_worker_default_policy_applies_when_the_turn_names_none(
    client: Client, workspace: Path, task_queue: str, execution: str
) -> None:
    turn = turn_input(
        workspace, task_queue, [call(0, "write_file", path="x.txt", content="x")], policy=None,
        options=TurnOptions(execution=execution),
    )
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace), default_policy=Policy(mode="auto")):
        result = await run_turn(client, turn)
    assert result.status == TurnStatus.COMPLETED and (workspace / "x.txt").read_text() == "x"


async def test_oversized_result_is_an_error_naming_the_tool_and_not_retried(
    client: Client, workspace: Path, task_queue: str
) -> None:
    attempts: list[int] = []

    @activity.defn(name="glob")
    async def huge_glob(request: ToolRequest) -> ToolResult:
        attempts.append(activity.info().attempt)
        return ToolResult.ok(request.call_id, "glob", "x" * (3 * 1024 * 1024))

    turn = turn_input(workspace, task_queue, [call(0, "glob", pattern="**")], options=TurnOptions(execution="remote"))
    async with build_worker(client, task_queue=task_queue, workspace=None, extra_activities=[huge_glob]):
        result = await run_turn(client, turn)
    [only] = result.results
    assert only.is_error and only.metadata["failure"] == "payload_too_large"
    assert only.output.startswith("The glob result was too large to pass back through Temporal")
    assert attempts == [1]


async def test_tool_wrapper_bounds_any_oversized_output(workspace: Path) -> None:
    """The backstop in activities.base: whatever a tool returns, the result
    stays small and the rest is saved as an artifact."""
    from activities.base import HARD_OUTPUT_CHARS, run_tool

    def chatty(request: ToolRequest, args: object) -> ToolResult:
        return ToolResult.ok(request.call_id, "glob", "line\n" * 200_000)

    request = ToolRequest(call_id="c1", tool="glob", workspace_root=str(workspace), arguments={"pattern": "*"})
    result = await run_tool(request, chatty, in_thread=True)
    assert len(result.output) < HARD_OUTPUT_CHARS + 500
    saved = workspace / result.metadata["full_output"]
    assert saved.read_text() == "line\n" * 200_000
    assert "full output saved to .agent-artifacts/" in result.output


@pytest.mark.parametrize("execution", ["local", "remote"])
async def test_a_tool_that_raises_is_an_error_result_and_the_batch_runs_on(
    client: Client, workspace: Path, task_queue: str, execution: str
) -> None:
    from activities.base import tool_activity

    def raising_glob(request: ToolRequest, args: object) -> ToolResult:
        raise OSError(36, "File name too long")

    (workspace / "a.txt").write_text("a\n")
    calls = [call(0, "glob", pattern="x" * 300 + "/*"), call(1, "read_file", path="a.txt"),
             call(2, "write_file", path="b.txt", content="b\n")]
    turn = turn_input(workspace, task_queue, calls, options=TurnOptions(execution=execution))
    async with build_worker(
        client, task_queue=task_queue, workspace=str(workspace), extra_activities=[tool_activity("glob", raising_glob)]
    ):
        result = await run_turn(client, turn)
    assert result.status == TurnStatus.COMPLETED
    assert [r.status for r in result.results] == [ToolStatus.ERROR, ToolStatus.OK, ToolStatus.OK]
    assert "glob failed: OSError: [Errno 36] File name too long" in result.results[0].output
    assert result.results[0].metadata["failure"] == "tool_exception"


async def test_twenty_long_bash_commands_plan_outside_the_workflow_task(
    client: Client, workspace: Path, task_queue: str
) -> None:
    """Validation used to run inside the workflow task: 20 commands of 10,000
    characters tripped the deadlock detector. Now it runs in plan_turn."""
    command = "echo " + " ".join(["word"] * 2000)
    calls = [call(i, "bash", command=command[:10_000]) for i in range(20)]
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        result = await run_turn(client, turn_input(workspace, task_queue, calls))
    assert result.status == TurnStatus.COMPLETED
    assert len(result.results) == 20 and all(r.status in (ToolStatus.OK, ToolStatus.ERROR) for r in result.results)


async def test_add_to_worker_puts_turns_into_an_existing_worker(
    client: Client, workspace: Path, task_queue: str
) -> None:
    from runtime.api import TurnClient, add_to_worker, build_turn_input

    (workspace / "a.txt").write_text("from an existing worker\n")
    options = add_to_worker({"task_queue": task_queue}, workspace_root=str(workspace))
    turn = build_turn_input(
        workspace_root=str(workspace), task_queue=task_queue, tool_calls=[call(0, "read_file", path="a.txt")],
        policy=Policy(mode="auto"),
    )
    async with Worker(client, **options):
        result = await TurnClient(client).run_turn(turn)
    assert "from an existing worker" in result.results[0].output


async def test_calls_sharing_an_id_are_refused_not_answered_with_each_others_result(
    client: Client, workspace: Path, task_queue: str
) -> None:
    """Results, the bash journal and approvals are matched to calls by id: a
    starter that bypasses the client (which refuses such a document) must not
    get the first call's output back as the second's, or a write run twice."""
    calls = [
        ToolCall(id="same", name="bash", arguments='{"command": "echo first >> log.txt"}'),
        call(1, "read_file", path="log.txt"),
        ToolCall(id="same", name="bash", arguments='{"command": "echo second >> log.txt"}'),
    ]
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        result = await run_turn(client, turn_input(workspace, task_queue, calls))
    refused = [result.results[0], result.results[2]]
    assert all(r.is_error and r.tool_call_id == "same" for r in refused), [r.output for r in result.results]
    for r in refused:
        assert "id 'same' is used by calls 0 and 2" in r.output and "own id" in r.output
    assert not (workspace / "log.txt").exists()  # neither write ran
    assert result.results[1].tool_call_id == "call_1"
