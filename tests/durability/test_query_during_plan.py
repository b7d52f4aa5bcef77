"""A status query that reaches the worker while the turn's plan (a local
activity) is still running. The server may then record the plan's marker in
one workflow task and what the turn did after it in the next; a worker that
replays that history (a restart, another build, an evicted cache) must still
answer queries and finish the turn. The turn decides its patches before its
first await so that the split cannot move a patch marker (workflows.versions)."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

from temporalio import activity
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from activities.plan import PlanRequest, build_plan_activity
from core.contracts import ApprovalDecision, Policy, TurnInput, TurnPlan, TurnProgress, TurnResult, TurnStatus, Workspace
from core.names import PLAN_TURN_ACTIVITY
from runtime.worker import build_worker
from tests.support import call
from workflows.turn import AgentTurnWorkflow


def slow_plan(seconds: float):  # type: ignore[no-untyped-def]
    planner = build_plan_activity(Policy())

    @activity.defn(name=PLAN_TURN_ACTIVITY)
    async def plan_turn(request: PlanRequest) -> TurnPlan:
        await asyncio.sleep(seconds)
        return await planner(request)

    return plan_turn


async def _query_until_paused(handle: WorkflowHandle) -> list[TurnProgress]:  # type: ignore[type-arg]
    seen = []
    for _ in range(2000):
        progress = await handle.query(AgentTurnWorkflow.status, result_type=TurnProgress)
        seen.append(progress)
        if progress.status == TurnStatus.PAUSED:
            return seen
        await asyncio.sleep(0.005)
    raise AssertionError(f"never paused: {seen[-1]}")


async def test_queries_during_a_slow_plan_leave_a_history_every_worker_replays(
    client: Client, workspace: Path, task_queue: str
) -> None:
    (workspace / "app.py").write_text("print('app ran')\n")
    (workspace / "writer.py").write_text("open('out.txt', 'w').write('written\\n')\n")
    calls = [
        call(0, "read_file", path="app.py"),
        call(1, "bash", command="python3 writer.py"),  # the effect gate: captured, then a pause at the call
        call(2, "write_file", path="new.txt", content="x\n"),
    ]
    turns = [
        TurnInput(
            turn_id=f"query-plan-{uuid.uuid4().hex[:8]}",
            workspace=Workspace(root=str(workspace), task_queue=task_queue),
            tool_calls=calls,
            policy=Policy(mode="ask-writes"),
        )
        for _ in range(6)
    ]
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace), extra_activities=[slow_plan(0.6)]):
        handles = [
            await client.start_workflow(AgentTurnWorkflow.run, t, id=t.turn_id, task_queue=task_queue, result_type=TurnResult)
            for t in turns
        ]
        await asyncio.gather(*(_query_until_paused(h) for h in handles))

    # A fresh worker holds none of them in its cache: it replays each history
    # to answer, then finishes the turn.
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        for handle in handles:
            progress = await handle.query(AgentTurnWorkflow.status, result_type=TurnProgress)
            assert progress.status == TurnStatus.PAUSED, progress
        for handle in handles:
            progress = await handle.query(AgentTurnWorkflow.status, result_type=TurnProgress)
            await handle.execute_update(
                AgentTurnWorkflow.decide,
                ApprovalDecision(batch_digest=progress.batch_digest, approver="ops", reason="replayed", approve=False),
            )
            result = await asyncio.wait_for(handle.result(), timeout=60)
            assert result.status == TurnStatus.REJECTED

    replayer = Replayer(workflows=[AgentTurnWorkflow], data_converter=pydantic_data_converter)
    for handle in handles:
        history = await handle.fetch_history()
        # Whatever the timing was, every patch marker sits in the first
        # workflow task, ahead of the plan's marker: no split can move one.
        first_task_end = next(
            i for i, e in enumerate(history.events) if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED
        )
        markers = [
            (i, e.marker_recorded_event_attributes.marker_name)
            for i, e in enumerate(history.events)
            if e.HasField("marker_recorded_event_attributes")
        ]
        plan_marker = next(i for i, name in markers if name == "core_local_activity")
        patches = [i for i, name in markers if name == "core_patch"]
        assert patches and all(first_task_end < i < plan_marker for i in patches), markers
        replayed = await replayer.replay_workflow(history, raise_on_replay_failure=False)
        assert replayed.replay_failure is None, replayed.replay_failure
