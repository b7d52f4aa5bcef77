"""Decisions on a call the effect gate paused while something else moves:
another turn edits the file the kept changeset would replace (the approval
is reported stale and applies nothing, the other turn's edit stays), and a
turn paused twice is approved with the first pause's digest at its second
pause (refused, by update and by signal). Real dev server, in-process
worker, bubblewrap and overlay."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowUpdateFailedError

from core.contracts import ApprovalDecision, Policy, TurnStatus
from runtime.api import TurnClient
from runtime.worker import build_worker
from tests.gate.test_gate_turn import paused_or_done, start, turn
from tests.support import call, turn as tool_turn
from workflows.turn import AgentTurnWorkflow

from tests.txn.support.helpers import needs_overlay

pytestmark = needs_overlay


async def test_another_turns_edit_makes_the_paused_changeset_stale(
    client: Client, workspace: Path, task_queue: str
) -> None:
    (workspace / "keep.txt").write_text("precious\n")
    a = turn(workspace, task_queue, ["cp /dev/null keep.txt"])  # emptying a file: destructive, pauses
    edit = [call(0, "read_file", path="keep.txt"),
            call(1, "edit_file", path="keep.txt", old_string="precious", new_string="edited by B")]
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        handle = await start(client, a)
        paused = await paused_or_done(handle)
        assert paused is not None
        b = await TurnClient(client).run_turn(tool_turn(workspace, task_queue, edit, policy=Policy(mode="auto")))
        assert b.status == TurnStatus.COMPLETED and not b.results[1].is_error, b.results[1].output
        await TurnClient(client).approve(a.turn_id, approver="alice", digest=paused.batch_digest)
        done = await handle.result()
    [r] = done.results
    assert r.is_error and r.metadata["capture"] == "stale" and "NOT applied" in r.output, r.output
    assert (workspace / "keep.txt").read_text() == "edited by B\n"


async def test_a_digest_from_the_turns_earlier_pause_does_not_decide_the_next(
    client: Client, workspace: Path, task_queue: str
) -> None:
    (workspace / "one.txt").write_text("first\n")
    (workspace / "two.txt").write_text("second\n")
    t = turn(workspace, task_queue, ["cp /dev/null one.txt", "cp /dev/null two.txt"])
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        handle = await start(client, t)
        first = await paused_or_done(handle)
        assert first is not None
        await handle.execute_update(AgentTurnWorkflow.decide,
                                    ApprovalDecision(batch_digest=first.batch_digest, approver="alice"))
        for _ in range(400):  # the second call's pause: another changeset, another digest
            second = await paused_or_done(handle)
            if second is not None and second.batch_digest != first.batch_digest:
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("the turn never paused at its second call")
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await handle.execute_update(AgentTurnWorkflow.decide,
                                        ApprovalDecision(batch_digest=first.batch_digest, approver="replayer"))
        await handle.signal(AgentTurnWorkflow.approve,
                            ApprovalDecision(batch_digest=first.batch_digest, approver="replayer"))
        await asyncio.sleep(0.5)
        assert (await paused_or_done(handle)) is not None  # still paused: the old digest decided nothing
        await handle.execute_update(AgentTurnWorkflow.decide, ApprovalDecision(
            batch_digest=second.batch_digest, approve=False, approver="bob", reason="keep two"))
        done = await handle.result()
    assert "does not match the pending batch" in str(refused.value.cause)
    assert (workspace / "one.txt").read_text() == "" and (workspace / "two.txt").read_text() == "second\n"
    assert [d.approver for d in done.call_decisions] == ["alice", "bob"]
    assert done.results[1].status.value == "denied" or done.results[1].is_error
