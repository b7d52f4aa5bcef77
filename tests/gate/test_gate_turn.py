"""The effect gate end to end: real Temporal dev server, real worker, real
bubblewrap and overlay. Under `auto` a command whose words look harmless but
whose effects destroy pauses at that call; under `ask-writes` a test run that
only writes caches needs no person, one that writes a file pauses at the call."""

from __future__ import annotations

import asyncio
import os
import uuid
from pathlib import Path

import pytest
from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.client import Client, WorkflowHandle, WorkflowUpdateFailedError

from core.contracts import (ApprovalDecision, PendingCall, Policy, ToolStatus, TurnInput, TurnProgress, TurnResult,
                            TurnStatus, Workspace)
from runtime.worker import build_worker
from tests.support import call
from tests.txn.support.helpers import needs_overlay
from workflows.turn import AgentTurnWorkflow

pytestmark = needs_overlay


def turn(ws: Path, queue: str, commands: list[str], mode: str = "auto") -> TurnInput:
    return TurnInput(
        turn_id=f"gate-{uuid.uuid4().hex[:10]}",
        workspace=Workspace(root=str(ws), task_queue=queue),
        tool_calls=[call(i, "bash", command=c) for i, c in enumerate(commands)],
        policy=Policy(mode=mode),  # type: ignore[arg-type]
    )


async def start(client: Client, t: TurnInput) -> WorkflowHandle:
    return await client.start_workflow(AgentTurnWorkflow.run, t, id=t.turn_id, task_queue=t.workspace.task_queue,
                                       result_type=TurnResult)


async def paused_or_done(handle: WorkflowHandle) -> TurnProgress | None:
    """The progress once paused; None when the turn finished without pausing.
    Watched through the memo the turn publishes (describe), not by query:
    a query that lands while the plan's local activity completes is not
    answered reliably by the SDK."""
    for _ in range(1200):
        desc = await handle.describe()
        if desc.status is not None and desc.status.name != "RUNNING":
            return None
        memo = await desc.memo()
        if memo.get("turn_status") == TurnStatus.PAUSED.value:
            return await handle.query(AgentTurnWorkflow.status, result_type=TurnProgress)
        await asyncio.sleep(0.05)
    raise AssertionError("turn neither paused nor finished")


def seed(ws: Path) -> None:
    (ws / "src").mkdir()
    (ws / "src" / "m.py").write_text("x = 1\n")
    (ws / "keep.txt").write_text("precious\n")
    (ws / "a").write_text("from a\n")
    (ws / "b").write_text("b's own content\n")
    (ws / "run.sh").write_text("echo run\n")
    (ws / "edit.txt").write_text("hello a world\n")
    hooks = ws / ".git" / "hooks"
    hooks.mkdir(parents=True)
    (hooks / "pre-commit").write_text("#!/bin/sh\n")


def snapshot(ws: Path) -> dict[str, tuple[str, int, str]]:
    out = {}
    for dirpath, dirs, files in os.walk(ws):
        dirs[:] = [d for d in dirs if d != ".agent-artifacts"]
        for name in dirs + files:
            p = Path(dirpath) / name
            rel = str(p.relative_to(ws))
            if p.is_symlink():
                out[rel] = ("link", 0, os.readlink(p))
            elif p.is_dir():
                out[rel] = ("dir", p.stat().st_mode & 0o7777, "")
            else:
                out[rel] = ("file", p.stat().st_mode & 0o7777, p.read_text(errors="replace"))
    return out


DESTRUCTIVE_UNDER_AUTO = {
    "rmtree": "python3 -c \"import shutil; shutil.rmtree('src')\"",
    "empty": "cp /dev/null keep.txt",
    "mv onto": "mv a b",
    "ln -sf": "ln -sf a keep.txt",
    "chmod +x": "chmod +x run.sh",
    # `>> .git/...` is destructive by its words already (the whole batch
    # pauses); code that writes there is caught only by what it changed.
    "hook": "python3 -c \"open('.git/hooks/pre-commit', 'a').write('x')\"",
}


async def pause_and_reject(client: Client, t: TurnInput, workspace: Path) -> tuple[PendingCall, TurnResult]:
    """Run a turn of one call to its pause (failing when it ran unattended),
    check nothing landed meanwhile, reject: the pending call and the result."""
    before = snapshot(workspace)
    async with build_worker(client, task_queue=t.workspace.task_queue, workspace=str(workspace)):
        handle = await start(client, t)
        progress = await paused_or_done(handle)
        assert progress is not None, f"ran unattended: {(await handle.result()).results[0].output}"
        [pending] = progress.pending
        assert snapshot(workspace) == before  # nothing applied while paused
        await handle.execute_update(AgentTurnWorkflow.decide,
                                    ApprovalDecision(batch_digest=progress.batch_digest, approve=False,
                                                     approver="carol", reason="no"))
        result = await handle.result()
    assert snapshot(workspace) == before
    assert result.results[0].status == ToolStatus.DENIED
    return pending, result


@pytest.mark.parametrize("name", sorted(DESTRUCTIVE_UNDER_AUTO))
async def test_destructive_effects_pause_under_auto_and_reject_applies_nothing(
    client: Client, workspace: Path, task_queue: str, name: str
) -> None:
    seed(workspace)
    pending, result = await pause_and_reject(client, turn(workspace, task_queue, [DESTRUCTIVE_UNDER_AUTO[name]]),
                                             workspace)
    assert "destructive by effect" in pending.reason, pending.reason
    assert "nothing applied yet" in pending.preview
    assert "none of its changes were applied" in result.results[0].output
    assert [d.approver for d in result.call_decisions] == ["carol"]


async def test_approval_at_the_call_applies_exactly_that_changeset(client: Client, workspace: Path,
                                                                  task_queue: str) -> None:
    seed(workspace)
    t = turn(workspace, task_queue, ["cp /dev/null keep.txt", "cat keep.txt"])
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        handle = await start(client, t)
        progress = await paused_or_done(handle)
        assert progress is not None and progress.pending[0].index == 0
        assert progress.batch_digest != t.turn_id and progress.batch_digest != (await handle.query(
            AgentTurnWorkflow.status, result_type=TurnProgress)).calls[0].tool_call_id
        details = await handle.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)
        assert "destructive by effect" in details.current_details and "-precious" in details.current_details
        assert progress.batch_digest[:12] in details.current_details  # the short digest a signal accepts
        with pytest.raises(WorkflowUpdateFailedError):  # the batch's digest is not the call's
            await handle.execute_update(AgentTurnWorkflow.decide,
                                        ApprovalDecision(batch_digest="0" * 64, approver="mallory"))
        await handle.signal(AgentTurnWorkflow.approve,
                            ApprovalDecision(batch_digest=progress.batch_digest, approver="alice"))
        result = await handle.result()
    assert result.status == TurnStatus.COMPLETED
    assert result.results[0].metadata["capture"] == "applied", result.results[0].output
    assert result.results[0].metadata["gate_approver"] == "alice"
    assert (workspace / "keep.txt").read_text() == ""
    assert result.call_decisions[0].via == "signal"


async def test_stale_changeset_is_not_applied_and_said_so(client: Client, workspace: Path, task_queue: str) -> None:
    seed(workspace)
    t = turn(workspace, task_queue, ["cp /dev/null keep.txt"])
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        handle = await start(client, t)
        progress = await paused_or_done(handle)
        assert progress is not None
        (workspace / "src" / "m.py").write_text("x = 2\n")  # the workspace moves on meanwhile
        await handle.execute_update(AgentTurnWorkflow.decide,
                                    ApprovalDecision(batch_digest=progress.batch_digest, approver="alice"))
        result = await handle.result()
    r = result.results[0]
    assert r.is_error and r.metadata["capture"] == "stale" and "NOT applied" in r.output
    assert (workspace / "keep.txt").read_text() == "precious\n"


async def test_in_place_edit_is_not_paused_under_auto(client: Client, workspace: Path, task_queue: str) -> None:
    seed(workspace)
    t = turn(workspace, task_queue, ["sed -i s/a/b/ edit.txt"])
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        handle = await start(client, t)
        assert await paused_or_done(handle) is None
        result = await handle.result()
    assert result.status == TurnStatus.COMPLETED and not result.call_decisions
    assert (workspace / "edit.txt").read_text() == "hello b world\n"


TEST_FILE = "def test_one():\n    assert 1 + 1 == 2\n"
WRITING_TEST = "def test_writes():\n    open('report.txt', 'w').write('done\\n')\n"


async def test_ask_writes_test_run_with_only_caches_needs_no_person(client: Client, workspace: Path,
                                                                   task_queue: str) -> None:
    (workspace / "test_one.py").write_text(TEST_FILE)
    t = turn(workspace, task_queue, ["python3 -m pytest -q -p no:benchmark test_one.py"], mode="ask-writes")
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        handle = await start(client, t)
        paused = await paused_or_done(handle)
        assert paused is None, (paused.pending[0].reason, paused.pending[0].preview)
        result = await handle.result()
    r = result.results[0]
    assert result.status == TurnStatus.COMPLETED and r.status == ToolStatus.OK, r.output
    assert "1 passed" in r.output
    assert (workspace / ".pytest_cache").is_dir()  # the caches were applied
    assert result.decision is None and not result.call_decisions


async def test_ask_writes_test_run_that_writes_pauses_at_the_call(client: Client, workspace: Path,
                                                                 task_queue: str) -> None:
    (workspace / "test_w.py").write_text(WRITING_TEST)
    t = turn(workspace, task_queue, ["python3 -m pytest -q -p no:benchmark test_w.py", "ls"], mode="ask-writes")
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        handle = await start(client, t)
        progress = await paused_or_done(handle)
        assert progress is not None
        [pending] = progress.pending
        assert pending.index == 0 and "changed 1 file(s)" in pending.reason, pending.reason
        assert "create report.txt" in pending.preview and "+done" in pending.preview
        assert "1 passed" in pending.preview  # its output too
        assert not (workspace / "report.txt").exists()
        await handle.execute_update(AgentTurnWorkflow.decide,
                                    ApprovalDecision(batch_digest=progress.batch_digest, approver="alice"))
        result = await handle.result()
    assert (workspace / "report.txt").read_text() == "done\n"
    assert "report.txt" in result.results[1].output  # the later call sees the applied change
    assert result.decision is None and [d.approver for d in result.call_decisions] == ["alice"]
