"""The effect gate on a test run under ask-writes, end to end.

One real turn (embedded dev server, real worker, bubblewrap and overlay) runs
``python3 -m pytest -q`` on a small test file, which writes only caches
(``.pytest_cache``, ``__pycache__``):

* with the gate (``Policy(effect_gate=True)``, the default): the command runs
  captured at once, its changeset is caches only, the result comes back with
  no pause and no person;
* without the gate (``effect_gate=False``, the behaviour before): the turn
  pauses before anything runs; the bench approves it the moment the pause is
  visible (a machine's reflexes, so the figure is the pipeline's own cost of
  the extra round trip; a person adds seconds to minutes).

Alternating, median of several runs after a warm-up. Also counted: how many
of the gated runs needed a person (goal: 0).

    .venv/bin/python -m bench.bench_gate [--quick]
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from core.names import BASH
from core.contracts import ApprovalDecision, Policy, ToolCall, TurnInput, TurnResult, TurnStatus, Workspace
from runtime.devserver import DevServer, free_port
from runtime.worker import build_worker
from workflows.turn import AgentTurnWorkflow

TEST = "def test_one():\n    assert 1 + 1 == 2\n"
COMMAND = "python3 -m pytest -q -p no:benchmark test_one.py"


async def _one(client: Client, ws: Path, queue: str, gate: bool) -> tuple[float, bool]:
    """(seconds from start to result, whether it paused)."""
    turn = TurnInput(
        turn_id=f"bench-gate-{uuid.uuid4().hex[:10]}",
        workspace=Workspace(root=str(ws), task_queue=queue),
        tool_calls=[ToolCall(id="call_0", name=BASH, arguments={"command": COMMAND})],
        policy=Policy(mode="ask-writes", effect_gate=gate),
    )
    started = time.perf_counter()
    handle = await client.start_workflow(AgentTurnWorkflow.run, turn, id=turn.turn_id, task_queue=queue,
                                         result_type=TurnResult)
    paused = False
    while True:
        desc = await handle.describe()
        if desc.status is not None and desc.status.name != "RUNNING":
            break
        memo = await desc.memo()
        if memo.get("turn_status") == TurnStatus.PAUSED.value:
            paused = True
            await handle.execute_update(AgentTurnWorkflow.decide, ApprovalDecision(
                batch_digest=str(memo["batch_digest"]), approver="bench"))
            break
        await asyncio.sleep(0.01)
    result = await handle.result()
    elapsed = time.perf_counter() - started
    if result.results[0].is_error or "1 passed" not in result.results[0].output:
        raise RuntimeError(f"the test run failed: {result.results[0].output[:500]}")
    return elapsed, paused


async def _run(quick: bool) -> list[dict]:
    reps = 3 if quick else 8
    with tempfile.TemporaryDirectory(prefix="bench-gate-") as tmp:
        root = Path(tmp)
        ws = root / "ws"
        ws.mkdir()
        (ws / "test_one.py").write_text(TEST)
        server = DevServer(db_file=root / "t.sqlite", port=free_port(), ui_port=None, log_file=root / "server.log")
        await asyncio.to_thread(server.start)
        try:
            client = await Client.connect(server.address, data_converter=pydantic_data_converter)
            queue = f"bench-gate-{uuid.uuid4().hex[:6]}"
            async with build_worker(client, task_queue=queue, workspace=str(ws)):
                await _one(client, ws, queue, True)
                await _one(client, ws, queue, False)
                with_gate: list[float] = []
                without: list[float] = []
                pauses = 0
                for _ in range(reps):
                    t, p = await _one(client, ws, queue, True)
                    with_gate.append(t)
                    pauses += p
                    t, _ = await _one(client, ws, queue, False)
                    without.append(t)
        finally:
            await asyncio.to_thread(server.stop)
    g, w = statistics.median(with_gate), statistics.median(without)
    return [{
        "benchmark": "ask-writes test run end to end (pytest, caches only): effect gate vs pause-first",
        "measured": f"{g * 1e3:.0f} ms, {pauses} pause(s)",
        "baseline": f"{w * 1e3:.0f} ms + a person (approved by the bench at once)",
        "ratio": round(g / w, 2), "goal": "0 pauses", "met": pauses == 0,
        "notes": f"median of {reps}, alternating; with the gate no person is needed",
    }]


def run(quick: bool = False) -> list[dict]:
    return asyncio.run(_run(quick))


if __name__ == "__main__":
    for row in run("--quick" in sys.argv):
        print(f"{row['benchmark']}: {row['measured']} vs {row['baseline']} = {row['ratio']}x "
              f"(goal {row['goal']}, met {row['met']}) - {row['notes']}")
