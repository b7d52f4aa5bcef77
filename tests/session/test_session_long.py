"""A long session continues as new and its history stays small: only
references and bounded responses are recorded, never the transcript.

300 model calls take about 2 minutes on a loaded 2-core machine, so the
default here is 150 (three runs of 50); SESSION_LONG_CALLS=300 runs the
issue's full figure (three runs of 100)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from temporalio.client import Client

from core.session.contracts import SessionLimits, SessionState
from runtime import session_api as sessions
from tests.model_server import Recorded, Reply, ScriptedModelServer, tool
from tests.session.test_session_support import model_server  # noqa: F401  (fixture)
from runtime.worker import build_worker

CALLS = int(os.environ.get("SESSION_LONG_CALLS", "150"))
EVERY = CALLS // 3


async def history_figures(client: Client, session_id: str) -> list[dict[str, int]]:
    """Per run of the session: events, bytes of history (serialized events,
    what Temporal's 50 MB limit counts) and model calls."""
    runs = []
    async for execution in client.list_workflows(f'WorkflowId="{session_id}"'):
        history = await client.get_workflow_handle(session_id, run_id=execution.run_id).fetch_history()
        events = list(history.events)
        calls = sum(1 for e in events if e.activity_task_scheduled_event_attributes.activity_type.name == "call_model")
        runs.append({"events": len(events), "bytes": sum(e.ByteSize() for e in events), "model_calls": calls,
                     "start": events[0].event_time.ToNanoseconds()})
    return [{k: v for k, v in r.items() if k != "start"} for r in sorted(runs, key=lambda r: r["start"])]


async def test_a_long_session_continues_as_new_and_stays_small(
    client: Client, workspace: Path, task_queue: str, model_server: ScriptedModelServer
) -> None:
    (workspace / "notes.txt").write_text("hello\n")

    def script(request: Recorded, index: int) -> Reply:
        if index == CALLS - 1:
            return Reply(text=f"done after {CALLS} calls")
        return Reply(text=f"step {index}", tool_calls=[tool("read_file", path="notes.txt")])

    model_server._script = script  # a function of the request number
    # Unsandboxed: the SDK sandbox's CPU per workflow task would double this
    # test's time without testing anything here; the replay tests run sandboxed.
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace), sandboxed_workflows=False):
        sid = await sessions.start_session(
            client, workspace=workspace, task_queue=task_queue, provider="openai", model="scripted",
            prompt="loop", policy="auto",
            limits=SessionLimits(max_model_calls=CALLS + 10, continue_as_new_every=EVERY),
        )
        view = await sessions.wait_for_answer(client, sid, timeout=280, poll_seconds=0.5)
        result = await sessions.close(client, sid)
        runs = await history_figures(client, sid)
    assert view.last_answer == f"done after {CALLS} calls"
    assert result.state == SessionState.CLOSED and result.model_calls == CALLS and result.turns == CALLS - 1
    assert result.runs == CALLS // EVERY and [r["model_calls"] for r in runs] == [EVERY] * (CALLS // EVERY)
    assert result.usage.input_tokens == CALLS * 20
    # The last request carried the whole conversation (across both
    # continue-as-news) although no history did.
    last = model_server.requests[-1].body["messages"]
    assert len(last) == 2 + 2 * (CALLS - 1)
    total_bytes = sum(r["bytes"] for r in runs)
    per_call = {"events": sum(r["events"] for r in runs) / CALLS, "bytes": total_bytes / CALLS}
    print(f"\nsession history per model call: {per_call['events']:.1f} events, {per_call['bytes']:.0f} bytes "
          f"(runs: {json.dumps(runs)}; the last request's transcript: {len(json.dumps(last))} bytes)")
    # Bounded per call and independent of the transcript's length: the last
    # run (transcript three times as long) costs what the first one did.
    first, final = runs[0], runs[-1]
    # No growth with the transcript: the last run is the size of the first.
    # (A few events more or less is load: an extra workflow task, a timer.)
    assert final["bytes"] < first["bytes"] * 1.1 and final["events"] < first["events"] * 1.1, (first, final)
    assert per_call["events"] < 20 and per_call["bytes"] < 8_000
