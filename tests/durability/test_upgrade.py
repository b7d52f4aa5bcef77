"""Worker upgrades on the real dev server: a turn in flight, or paused for
approval, is finished by a new build whose rules differ. The recorded plan
keeps the replay deterministic; the new build's own rules still guard what
it runs (defence in depth)."""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import replace
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle
from temporalio.contrib.pydantic import pydantic_data_converter

import activities.bash.tool
import core.shell
from core.contracts import (
    ApprovalDecision,
    Policy,
    ToolStatus,
    TurnInput,
    TurnProgress,
    TurnResult,
    TurnStatus,
    Workspace,
)
from activities.txn.store import txn_base
from tests.processes import server_address
from tests.support import call
from runtime.worker import build_worker
from workflows.turn import REFUSED_BY_CURRENT_RULES, AgentTurnWorkflow


def new_build_rules(monkeypatch: pytest.MonkeyPatch, refused: set[str]) -> None:
    """The "new build": its validator rejects ``refused`` commands. Patched
    where every caller looks it up (planning, the bash activity, the
    workspace-aware wrapper when present); ``validate_command`` stays the
    validator's public entry point."""
    original = core.shell.validate_command

    def stricter(command: str):  # type: ignore[no-untyped-def]
        verdict = original(command)
        if command in refused:
            return replace(verdict, verdict="reject", reason="refused by the new build's rules", hint=None)
        return verdict

    monkeypatch.setattr(core.shell, "validate_command", stricter)
    monkeypatch.setattr(activities.bash.tool, "validate_command", stricter, raising=False)
    try:
        import activities.bash.facts as facts  # type: ignore[import-not-found]
    except ImportError:
        return
    wrapped = facts.validate_in_workspace

    def stricter_in_workspace(command: str, root: str):  # type: ignore[no-untyped-def]
        verdict = wrapped(command, root)
        return stricter(command) if command in refused else verdict

    monkeypatch.setattr(facts, "validate_in_workspace", stricter_in_workspace)
    # Wherever the bash activity bound it by name.
    monkeypatch.setattr(activities.bash.tool, "validate_in_workspace", stricter_in_workspace, raising=False)


async def failed_workflow_tasks(handle: WorkflowHandle) -> int:
    history = await handle.fetch_history()
    return sum(e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED for e in history.events)


async def tasks_done_by(handle: WorkflowHandle, identity: str) -> int:
    history = await handle.fetch_history()
    return sum(
        e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED
        and e.workflow_task_completed_event_attributes.identity == identity
        for e in history.events
    )


def turn_of(workspace: Path, task_queue: str, calls: list, policy: Policy | None) -> TurnInput:  # type: ignore[type-arg]
    return TurnInput(
        turn_id=f"upgrade-{uuid.uuid4().hex[:8]}",
        workspace=Workspace(root=str(workspace), task_queue=task_queue),
        tool_calls=calls,
        policy=policy,
    )


async def test_turn_in_flight_finishes_on_a_build_that_rejects_a_command_it_already_ran(
    client: Client, workspace: Path, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    (workspace / "first.py").write_text("print('first ran')\n")
    (workspace / "slow.py").write_text(
        "import pathlib, time\npathlib.Path('slow.started').write_text('x')\ntime.sleep(3)\nprint('slow done')\n"
    )
    calls = [
        call(0, "bash", command="python3 first.py"),
        call(1, "bash", command="python3 slow.py"),
        call(2, "read_file", path="first.py"),
    ]
    turn = turn_of(workspace, task_queue, calls, Policy(mode="auto"))
    old = build_worker(client, task_queue=task_queue, workspace=str(workspace))
    await old.__aenter__()
    try:
        handle = await client.start_workflow(
            AgentTurnWorkflow.run, turn, id=turn.turn_id, task_queue=task_queue, result_type=TurnResult
        )
        deadline = time.monotonic() + 30
        # a captured command's writes show in its copy-on-write upper layer first.
        while not any(Path(txn_base(str(workspace))).glob("*/*/upper/slow.started")) and not (
            workspace / "slow.started"
        ).exists():
            assert time.monotonic() < deadline, "the long command never started"
            await asyncio.sleep(0.05)
        # The deploy: the new build comes up, the old one drains (its running
        # command finishes within the graceful shutdown) and leaves.
        new_build_rules(monkeypatch, refused={"python3 first.py"})
        # Another process in production; here another connection, so the two
        # workers overlap on the queue as during a rolling deploy.
        new_client = await Client.connect(
            server_address(client), data_converter=pydantic_data_converter, identity="new-build"
        )
        new = build_worker(new_client, task_queue=task_queue, workspace=str(workspace))
        await new.__aenter__()
    finally:
        await old.__aexit__(None, None, None)
    try:
        result = await asyncio.wait_for(handle.result(), timeout=60)
    finally:
        await new.__aexit__(None, None, None)
    assert result.status == TurnStatus.COMPLETED
    assert [r.status for r in result.results] == [ToolStatus.OK] * 3, [r.output for r in result.results]
    assert "first ran" in result.results[0].output  # the recorded result is kept
    assert "slow done" in result.results[1].output
    assert await failed_workflow_tasks(handle) == 0
    assert await tasks_done_by(handle, "new-build") >= 1  # the new build replayed and finished it


async def test_paused_turn_is_approved_on_a_build_with_other_policy_and_rules(
    client: Client, workspace: Path, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    (workspace / "app.py").write_text("print('app ran')\n")
    calls = [
        call(0, "write_file", path="new.txt", content="written once\n"),
        call(1, "bash", command="python3 app.py"),
        call(2, "write_file", path="after.txt", content="must be skipped\n"),
        call(3, "read_file", path="app.py"),
    ]
    # No policy in the input: the old build's default (ask-writes) pauses it.
    turn = turn_of(workspace, task_queue, calls, policy=None)
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace), default_policy=Policy()):
        handle = await client.start_workflow(
            AgentTurnWorkflow.run, turn, id=turn.turn_id, task_queue=task_queue, result_type=TurnResult
        )
        for _ in range(200):
            progress = await handle.query(AgentTurnWorkflow.status, result_type=TurnProgress)
            if progress.status == TurnStatus.PAUSED:
                break
            await asyncio.sleep(0.05)
        assert progress.status == TurnStatus.PAUSED
        assert [p.index for p in progress.pending] == [0, 1, 2]

    new_build_rules(monkeypatch, refused={"python3 app.py"})
    async with build_worker(
        client, task_queue=task_queue, workspace=str(workspace), default_policy=Policy(mode="auto")
    ):
        # The new build answers for the paused turn as the old one planned it.
        progress = await handle.query(AgentTurnWorkflow.status, result_type=TurnProgress)
        assert progress.status == TurnStatus.PAUSED and len(progress.pending) == 3
        await handle.execute_update(
            AgentTurnWorkflow.decide,
            ApprovalDecision(batch_digest=progress.batch_digest, approver="ops", reason="after the deploy"),
        )
        result = await asyncio.wait_for(handle.result(), timeout=60)

    assert result.status == TurnStatus.COMPLETED
    assert [r.status for r in result.results] == [ToolStatus.OK, ToolStatus.ERROR, ToolStatus.SKIPPED, ToolStatus.OK]
    assert (workspace / "new.txt").read_text() == "written once\n"  # exactly once
    assert not (workspace / "after.txt").exists()
    refused = result.results[1]
    assert refused.metadata[REFUSED_BY_CURRENT_RULES] == "true"
    assert "refused by the current rules" in refused.output and "not run" in refused.output
    assert "app ran" not in refused.output
    assert await failed_workflow_tasks(handle) == 0
