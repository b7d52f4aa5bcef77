"""Temporal's limits: batches of thousands of calls end with a clear outcome
and keep their results; oversized arguments are refused up front, naming the
calls."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
from temporalio.client import Client

from core.contracts import Policy, ToolStatus, TurnOptions, TurnResult, TurnStatus
from runtime.api import TurnClient, TurnInputError, build_turn_input
from tests.support import call
from runtime.worker import build_worker


def reads(n: int) -> list:  # type: ignore[type-arg]
    return [call(i, "read_file", path="tiny.txt") for i in range(n)]


@pytest.mark.parametrize("n", [3000, 5000])
async def test_thousands_of_calls_complete_and_keep_every_result(
    client: Client, workspace: Path, task_queue: str, n: int
) -> None:
    (workspace / "tiny.txt").write_text("hi\n")
    turn = build_turn_input(
        workspace_root=str(workspace), task_queue=task_queue, tool_calls=reads(n),
        policy=Policy(mode="auto"), execution="local", turn_id=f"big-{n}-{uuid.uuid4().hex[:6]}",
    )
    started = time.monotonic()
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        result = await TurnClient(client).run_turn(turn)
    print(f"{n} calls: {time.monotonic() - started:.1f} s")
    assert result.status == TurnStatus.COMPLETED
    assert len(result.results) == n
    assert all(r.status == ToolStatus.OK and "     1|hi" in r.output for r in result.results)
    assert [r.tool_call_id for r in result.results] == [c.id for c in turn.tool_calls]
    assert [m["tool_call_id"] for m in result.messages] == [c.id for c in turn.tool_calls]
    # Thousands of results exceed one payload: they were kept in the workspace, in parts.
    offloaded = list((workspace / ".agent-artifacts" / "turn-results").glob("*/*.part"))
    assert offloaded


def test_oversized_arguments_are_refused_up_front_naming_the_calls(workspace: Path) -> None:
    one = [call(0, "write_file", path="big.txt", content="x" * 3_000_000)]
    five = [call(i, "write_file", path=f"p{i}.txt", content="y" * 450_000) for i in range(5)]
    for calls, named in ((one, "#1 write_file (call_0) 3,000,"), (five, "#1 write_file (call_0) 450,")):
        with pytest.raises(TurnInputError) as refused:
            build_turn_input(workspace_root=str(workspace), task_queue="q", tool_calls=calls)
        assert named in str(refused.value) and "2 MiB" in str(refused.value)
    with pytest.raises(TurnInputError, match="at most 5,000"):
        build_turn_input(workspace_root=str(workspace), task_queue="q", tool_calls=reads(5001))


async def test_calls_past_the_history_budget_are_not_run_and_say_so(
    client: Client, workspace: Path, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import workflows.turn

    # Unsandboxed workflow code sees the patched budget (the sandbox would re-import the module).
    monkeypatch.setattr(workflows.turn, "HISTORY_BUDGET_BYTES", 3000)
    (workspace / "page.txt").write_text("x" * 1000 + "\n")
    calls = [*(call(i, "read_file", path="page.txt") for i in range(4)), call(4, "write_file", path="new.txt", content="n\n")]
    turn = build_turn_input(workspace_root=str(workspace), task_queue=task_queue, tool_calls=calls,
                            policy=Policy(mode="auto"), execution="local")
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace), sandboxed_workflows=False):
        result = await TurnClient(client).run_turn(turn)
    # The four reads form one parallel wave and start together; the budget stops what comes after.
    assert [r.status for r in result.results] == [ToolStatus.OK] * 4 + [ToolStatus.ERROR]
    assert result.results[4].metadata["failure"] == "history_budget"
    assert "Send this call again in a new turn" in result.results[4].output
    assert not (workspace / "new.txt").exists()
