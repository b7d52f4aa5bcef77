"""A paused turn as the server shows it: search attributes the Web UI list and
`temporal workflow list -q` filter on, a summary and details in markdown that
show what it will change, an ignored decision visible, the short digest and
a default approver accepted from a signal."""

from __future__ import annotations

import asyncio
import subprocess
import time
from pathlib import Path

from temporalio.api.sdk.v1 import WorkflowMetadata
import pytest
from temporalio.client import Client, WorkflowFailureError

from activities.sandbox.binaries import find_binary
from core.contracts import ApprovalDecision, Policy, TurnProgress, TurnResult, TurnStatus
from runtime.api import TurnClient, build_turn_input
from runtime.visibility import start_attributes
from workflows.turn import AgentTurnWorkflow
from runtime.worker import build_worker
from tests.cli.test_review_show import wait_paused
from tests.processes import run_client, server_address
from tests.support import call


async def listed(client: Client, query: str, turn_id: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if turn_id in [w.id async for w in client.list_workflows(query)]:
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"{turn_id} not listed by {query!r} within {timeout} s")


async def test_paused_turn_is_found_shown_and_approved_with_the_short_digest(
    client: Client, workspace: Path, task_queue: str
) -> None:
    (workspace / "app.py").write_text("".join(f"x{i} = {i}\n" for i in range(40)))
    turn = build_turn_input(
        workspace_root=str(workspace), task_queue=task_queue, policy=Policy(mode="ask-all"),
        tool_calls=[
            call(2, "read_file", path="app.py"),  # the edit needs the snapshot this read takes
            call(0, "edit_file", path="app.py", old_string="x20 = 20\n", new_string="x20 = 'twenty'\n"),
            call(1, "bash", command="rm -rf build"),
        ],
    )
    turns = TurnClient(client)
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        handle = await turns.start_turn(turn)
        progress = await wait_paused(turns, turn.turn_id)
        paused_query = f"AgentTurnStatus='paused' AND AgentWorkspace='{workspace}'"
        await listed(client, paused_query, turn.turn_id)
        temporal = find_binary("temporal")
        assert temporal is not None
        cli_list = await asyncio.to_thread(
            subprocess.run,
            [temporal, "workflow", "list", "--address", server_address(client), "-q", paused_query],
            capture_output=True, text=True, timeout=60,
        )
        assert turn.turn_id in cli_list.stdout, cli_list.stderr

        desc = await handle.describe()
        summary = await desc.static_summary()
        assert summary is not None and "3 call(s)" in summary and "edit_file" in summary
        meta = await handle.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)
        details = meta.current_details
        short = progress.batch_digest[:12]
        assert "Waiting for approval" in details and f"`{short}`" in details
        assert "@@ -18,7 +18,7 @@" in details and "+x20 = 'twenty'" in details
        assert "$ rm -rf build" in details and "validator:" in details

        # A wrong digest is ignored, and says so in the details and in status.
        await handle.signal("approve", ApprovalDecision(batch_digest="0" * 64, approver="mallory"))
        deadline = time.monotonic() + 20
        while not (await turns.status(turn.turn_id)).ignored_decision:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.1)
        status = await asyncio.to_thread(run_client, "--address", server_address(client), "status", turn.turn_id)
        assert "last decision ignored: approve from mallory: batch digest" in status.stdout
        meta = await handle.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)
        assert "Last decision ignored" in meta.current_details

        # The Web UI's signal: the short digest, no approver.
        await handle.signal("approve", {"batch_digest": short, "reason": "ok"})
        result: TurnResult = await asyncio.wait_for(handle.result(), 60)
    assert result.status == TurnStatus.COMPLETED
    assert result.decision is not None and result.decision.approver == "web-ui"
    assert result.decision.batch_digest == progress.batch_digest
    assert "x20 = 'twenty'" in (workspace / "app.py").read_text()
    await listed(client, f"AgentTurnStatus='completed' AND AgentWorkspace='{workspace}'", turn.turn_id)


async def test_a_turn_refused_whole_is_listed_as_failed(client: Client, workspace: Path, task_queue: str,
                                                        tmp_path: Path) -> None:
    """Planning refuses a turn for another workspace before anything runs; the
    Web UI list and `pending` then show it failed, not running for ever."""
    other = tmp_path / "other"
    other.mkdir()
    turn = build_turn_input(workspace_root=str(other), task_queue=task_queue, policy=Policy(mode="auto"),
                            tool_calls=[call(0, "write_file", path="x.txt", content="x\n")])
    attributes = await start_attributes(client, turn)
    assert attributes is not None  # the embedded dev server registers them
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        handle = await client.start_workflow(
            AgentTurnWorkflow.run, turn, id=turn.turn_id, task_queue=task_queue, result_type=TurnResult,
            search_attributes=attributes,
        )
        with pytest.raises(WorkflowFailureError):
            await handle.result()
    await listed(client, f"AgentTurnStatus='failed' AND AgentWorkspace='{other}'", turn.turn_id)
    memo = await (await handle.describe()).memo()
    assert memo["turn_status"] == "failed"
    assert not (other / "x.txt").exists()
