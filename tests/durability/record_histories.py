"""Record workflow histories of real runs for the replay tests.

    python -m tests.durability.record_histories            # every scenario but the first release's
    python -m tests.durability.record_histories NAME ...   # just these

Runs each scenario on a fresh dev server with a real worker and real files,
then writes tests/histories/<scenario>.json. Re-record after an intentional,
versioned change to the workflow; the replay test fails on accidental ones.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from activities.sandbox.binaries import find_binary
from core.contracts import ApprovalDecision, Policy, ToolCall, TurnInput, TurnOptions, TurnProgress, TurnResult, TurnStatus, Workspace
from runtime.worker import build_worker
from workflows.turn import AgentTurnWorkflow
from tests.support import call, save_history

HISTORIES = Path(__file__).parents[1] / "histories"
# Scenarios recorded with local activities (the rest use regular ones), so
# replay covers both kinds of command.
LOCAL = {
    "safe_only", "read_after_write", "paused_then_approved", "plan_paused_then_approved", "plan_default_policy",
    "plan_read_stage_local", "baseline_paused_then_approved",
}
# Recorded by the first release, which planned inside the workflow. They stay
# as they are (never re-recorded): they prove that turns started by that
# release still replay. The plan_* scenarios follow a recorded plan.
FIRST_RELEASE = {"safe_only", "mixed_failure_skips", "unknown_tool", "read_after_write", "paused_then_approved", "rejected"}
APPROVED = {
    "paused_then_approved", "plan_paused_then_approved", "gate_paused_at_call_approved",
    "baseline_paused_then_approved", "baseline_gate_paused_at_call_approved",
}
REJECTED = {"rejected", "plan_rejected", "gate_paused_at_call_rejected"}
QUEUE = "record-histories"


SCENARIOS: dict[str, tuple[list[ToolCall], Policy | None]] = {
    "safe_only": (
        [call(0, "read_file", path="app.py"), call(1, "grep", pattern="def "), call(2, "glob", pattern="**/*.py")],
        Policy(mode="auto"),
    ),
    "mixed_failure_skips": (
        [
            call(0, "read_file", path="app.py"),
            call(1, "write_file", path="out.txt", content="first\n"),
            call(2, "bash", command="python3 fail.py"),
            call(3, "write_file", path="never.txt", content="skipped\n"),
            call(4, "glob", pattern="*.txt"),
            call(5, "edit_file", path="app.py", old_string="return 1", new_string="return 2"),
        ],
        Policy(mode="auto"),
    ),
    "unknown_tool": (
        [call(0, "launch_rocket", target="moon"), call(1, "read_file", path="app.py")],
        Policy(mode="auto"),
    ),
    "read_after_write": (
        [
            call(0, "write_file", path="new.txt", content="hello\n"),
            call(1, "read_file", path="new.txt"),
            call(2, "edit_file", path="new.txt", old_string="hello", new_string="hello, world"),
            call(3, "read_file", path="new.txt"),
        ],
        Policy(mode="auto"),
    ),
    "paused_then_approved": (
        [
            call(0, "read_file", path="app.py"),
            call(1, "edit_file", path="app.py", old_string="return 1", new_string="return 2"),
            call(2, "bash", command="python3 app.py"),
        ],
        Policy(mode="ask-writes"),
    ),
    "rejected": (
        [call(0, "write_file", path="x.txt", content="x\n"), call(1, "bash", command="make")],
        Policy(mode="ask-writes"),
    ),
    "plan_paused_then_approved": (
        [
            call(0, "read_file", path="app.py"),
            call(1, "edit_file", path="app.py", old_string="return 1", new_string="return 2"),
            call(2, "bash", command="python3 app.py"),
            call(3, "bash", command="ls"),
        ],
        Policy(mode="ask-writes"),
    ),
    "plan_mixed_failure_skips": (
        [
            call(0, "read_file", path="app.py"),
            call(1, "write_file", path="out.txt", content="first\n"),
            call(2, "bash", command="python3 fail.py"),
            call(3, "write_file", path="never.txt", content="skipped\n"),
            call(4, "glob", pattern="*.txt"),
            ToolCall(id="call_5", name="read_file", arguments='{"path": "app.py",}'),  # repaired JSON
            call(6, "bash", command="rm -rf /"),
        ],
        Policy(mode="auto"),
    ),
    "plan_rejected": (
        [call(0, "write_file", path="x.txt", content="x\n"), call(1, "bash", command="make")],
        Policy(mode="ask-writes"),
    ),
    # A stage of reads as one read_stage activity (patch read-stage-activity),
    # one call failing with a business error, then a write and a second stage.
    "plan_read_stage": (
        [
            call(0, "read_file", path="app.py"),
            call(1, "grep", pattern="def "),
            call(2, "glob", pattern="*.py"),
            call(3, "read_file", path="missing.txt"),
            call(4, "write_file", path="out.txt", content="x\n"),
            call(5, "read_file", path="out.txt"),
            call(6, "glob", pattern="*.txt"),
        ],
        Policy(mode="auto"),
    ),
    "plan_read_stage_local": (
        [call(0, "read_file", path="app.py"), call(1, "grep", pattern="def "), call(2, "glob", pattern="*.py")],
        Policy(mode="auto"),
    ),
    # The effect gate: a bash call that asks only because it may write runs
    # captured first, and the turn pauses at that call on what it changed.
    "gate_paused_at_call_approved": (
        [call(0, "read_file", path="app.py"), call(1, "bash", command="python3 writer.py"), call(2, "bash", command="ls")],
        Policy(mode="ask-writes"),
    ),
    "gate_paused_at_call_rejected": (
        [call(0, "read_file", path="app.py"), call(1, "bash", command="python3 writer.py"), call(2, "bash", command="ls")],
        Policy(mode="ask-writes"),
    ),
    # Recorded by builds that decide every patch in the turn's first activation
    # (workflows.versions): one patch marker, ahead of the plan's.
    "baseline_read_stage": (
        [
            call(0, "read_file", path="app.py"),
            call(1, "grep", pattern="def "),
            call(2, "glob", pattern="*.py"),
            call(3, "write_file", path="out.txt", content="x\n"),
            call(4, "read_file", path="out.txt"),
            call(5, "glob", pattern="*.txt"),
        ],
        Policy(mode="auto"),
    ),
    # Consecutive writes and edits as one write_stage activity; the first error
    # stops the run and the rest are skipped.
    "baseline_write_stage": (
        [
            call(0, "write_file", path="new.txt", content="one\n"),
            call(1, "edit_file", path="new.txt", old_string="one", new_string="two"),
            call(2, "edit_file", path="new.txt", old_string="missing", new_string="x"),
            call(3, "write_file", path="never.txt", content="skipped\n"),
            call(4, "read_file", path="new.txt"),
        ],
        Policy(mode="auto"),
    ),
    # No policy in the input: the worker's default (ask-writes) is part of the plan.
    "plan_default_policy": (
        [call(0, "read_file", path="app.py"), call(1, "glob", pattern="*.py")],
        None,
    ),
}


# The same batches as earlier scenarios, recorded by builds with the baseline.
SCENARIOS["baseline_paused_then_approved"] = SCENARIOS["plan_paused_then_approved"]
SCENARIOS["baseline_gate_paused_at_call_approved"] = SCENARIOS["gate_paused_at_call_approved"]


def seed_workspace(root: Path) -> None:
    (root / "app.py").write_text("def f():\n    return 1\n\nprint(f())\n")
    (root / "fail.py").write_text("raise SystemExit(4)\n")
    (root / "writer.py").write_text("open('out.txt', 'w').write('written\\n')\n")


async def _decide_when_paused(client: Client, turn_id: str, approve: bool) -> None:
    handle = client.get_workflow_handle(turn_id)
    for _ in range(400):
        progress = await handle.query(AgentTurnWorkflow.status, result_type=TurnProgress)
        if progress.status == TurnStatus.PAUSED:
            await handle.execute_update(
                AgentTurnWorkflow.decide,
                ApprovalDecision(
                    batch_digest=progress.batch_digest,
                    approve=approve,
                    approver="recorder",
                    reason="recorded scenario",
                ),
            )
            return
        await asyncio.sleep(0.05)
    raise RuntimeError(f"{turn_id} never paused")


async def record(names: list[str]) -> None:
    env = await WorkflowEnvironment.start_local(
        data_converter=pydantic_data_converter, dev_server_existing_path=find_binary("temporal"), ui=False
    )
    HISTORIES.mkdir(exist_ok=True)
    try:
        for name in names:
            calls, policy = SCENARIOS[name]
            with tempfile.TemporaryDirectory() as tmp:
                root = Path(tmp)
                seed_workspace(root)
                turn = TurnInput(
                    turn_id=f"history-{name}",
                    workspace=Workspace(root=str(root), task_queue=QUEUE),
                    tool_calls=calls,
                    policy=policy,
                    options=TurnOptions(execution="local" if name in LOCAL else "remote"),
                )
                async with build_worker(env.client, task_queue=QUEUE, workspace=str(root)):
                    handle = await env.client.start_workflow(
                        AgentTurnWorkflow.run, turn, id=turn.turn_id, task_queue=QUEUE, result_type=TurnResult
                    )
                    if name in APPROVED | REJECTED:
                        await _decide_when_paused(env.client, turn.turn_id, approve=name in APPROVED)
                    result = await handle.result()
                history = await handle.fetch_history()
            save_history(HISTORIES, name, history)
            print(f"{name}: {result.status.value}, {[r.status.value for r in result.results]}")
    finally:
        await env.shutdown()


def main() -> None:
    names = sys.argv[1:] or [n for n in SCENARIOS if n not in FIRST_RELEASE]
    asyncio.run(record(names))
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
