"""History events per safe call in a session turn.

A long session lives in Temporal histories: every event a call adds counts
against the 50 MB / 51,200-event limits and is read again on every replay.
A scripted model (the tests' OpenAI-protocol server) answers one prompt with
a batch of N ``read_file`` calls, then with a final text; the session runs
its turn as a child ``AgentTurnWorkflow`` on the workspace's queue (local
activities, streaming dispatch on, as ``agent-session`` runs it). The row is
the *marginal* cost: (events of the session and its turn with N calls -
events with 1 call) / (N - 1), so the fixed cost of a turn (start, plan,
finish) is not spread over the calls. It is measured with streaming
dispatch on (each call then arrives as its own signal) and off.

Floor: Temporal records one marker per local activity (three events per
regular activity: scheduled, started, completed), so one activity per call
cannot go below 1 event per call.

    .venv/bin/python -m bench.bench_history [--quick]
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from runtime import session_api as sessions
from runtime.devserver import DevServer, free_port
from runtime.worker import build_worker
from tests.model_server import Reply, ScriptedModelServer, tool

GOAL_EVENTS_PER_CALL = 1.0


async def _events(client: Client, workflow_id: str) -> int:
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    return len(history.events)


async def _session(client: Client, model: ScriptedModelServer, ws: str, queue: str, calls: int,
                   streaming: bool) -> dict[str, int]:
    """Events of one session whose single turn has ``calls`` reads."""
    batch = [tool("read_file", path=f"f{i % 4}.txt") for i in range(calls)]
    model.add(Reply(text="Reading.", tool_calls=batch), Reply(text="Done."))
    sid = await sessions.start_session(
        client, workspace=ws, task_queue=queue, provider="openai", model="scripted", prompt="read them",
        policy="auto", streaming_dispatch=streaming, session_id=f"bench-hist-{uuid.uuid4().hex[:8]}",
    )
    view = await sessions.wait_for_answer(client, sid, timeout=120)
    if view.last_answer != "Done.":
        raise RuntimeError(f"session {sid} ended with {view.last_answer!r}")
    await sessions.close(client, sid)
    await client.get_workflow_handle(sid).result()
    return {"turn": await _events(client, f"{sid}/turn-1"), "session": await _events(client, sid)}


async def _measure(quick: bool) -> dict[str, Any]:
    calls = 9 if quick else 33
    with tempfile.TemporaryDirectory(prefix="bench-hist-") as tmp:
        ws = os.path.join(tmp, "ws")
        os.makedirs(ws)
        for i in range(4):
            Path(ws, f"f{i}.txt").write_text("".join(f"line {j}\n" for j in range(20)))
        dev = DevServer(db_file=Path(tmp) / "temporal.sqlite", port=free_port(), ui_port=None,
                        log_file=Path(tmp) / "server.log")
        await asyncio.to_thread(dev.start)
        model = ScriptedModelServer().start()
        os.environ.update(OPENAI_API_KEY="sk-bench", OPENAI_BASE_URL=model.openai_base_url)
        out: dict[str, Any] = {"calls": calls}
        try:
            client = await Client.connect(dev.address, data_converter=pydantic_data_converter)
            queue = f"bench-hist-{uuid.uuid4().hex[:6]}"
            async with build_worker(client, task_queue=queue, workspace=ws):
                for streaming in (True, False):
                    one = await _session(client, model, ws, queue, 1, streaming)
                    many = await _session(client, model, ws, queue, calls, streaming)
                    out[streaming] = {"one": one, "many": many}
        finally:
            model.stop()
            await asyncio.to_thread(dev.stop)
    return out


def _per_call(m: dict[str, Any], streaming: bool) -> tuple[float, float]:
    got = m[streaming]
    extra = m["calls"] - 1
    turn = (got["many"]["turn"] - got["one"]["turn"]) / extra
    session = (got["many"]["session"] - got["one"]["session"]) / extra
    return turn, session


def _rows(m: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for streaming in (True, False):
        turn, session = _per_call(m, streaming)
        got = m[streaming]
        total = turn + session
        rows.append({
            "benchmark": f"history events per safe call in a session turn (read_file, streaming dispatch "
                         f"{'on' if streaming else 'off'})",
            "measured": f"{total:.2f} events/call",
            "baseline": "one local activity per call: 1 marker (regular activity: 3 events)",
            "ratio": round(total / GOAL_EVENTS_PER_CALL, 2),
            "goal": f"<= {GOAL_EVENTS_PER_CALL:g} event per safe call",
            "met": total <= GOAL_EVENTS_PER_CALL,
            "notes": f"marginal: (events with {m['calls']} calls - with 1) / {m['calls'] - 1}; turn "
                     f"{turn:.2f} + session {session:.2f} per call; turn history {got['one']['turn']} events "
                     f"with 1 call, {got['many']['turn']} with {m['calls']}; session history "
                     f"{got['one']['session']} / {got['many']['session']}",
        })
    return rows


def run(quick: bool = False) -> list[dict[str, Any]]:
    return _rows(asyncio.run(_measure(quick)))


def main(argv: list[str]) -> int:
    for row in run("--quick" in argv):
        print(f"{row['benchmark']}: {row['measured']} (goal {row['goal']}: {'met' if row['met'] else 'missed'})")
        print(f"    {row['notes']}")
    sys.stdout.flush()
    os._exit(0)  # temporalio may crash at interpreter exit (sdk-python#300)


if __name__ == "__main__":
    main(sys.argv[1:])
