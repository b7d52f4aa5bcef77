"""A recorded streaming-dispatch session (its session history and its
open-batch turn: dispatch signals, early plans and runs, the close update, a
whole-batch approval) replays against the current code.

    python -m tests.turn.test_streaming_replay [NAME ...]   # record tests/histories/streaming/NAME.json
                                                             # (default: those not recorded yet)

Re-record only after an intentional, versioned (workflow.patched) change.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer

from activities.sandbox.binaries import find_binary
from runtime import session_api as sessions
from tests.model_server import Reply, ScriptedModelServer, tool
from tests.support import load_history, save_history
from tests.turn.test_streaming_support import dispatch_reads_together
from runtime.worker import build_worker
from workflows.session import AgentSessionWorkflow
from workflows.turn import AgentTurnWorkflow

HISTORIES = Path(__file__).parents[1] / "histories" / "streaming"  # apart: the turn replay test lists histories/*.json
SESSION, TURN = "streaming_session", "streaming_turn"
# Three reads dispatched together (one read_stage while the batch is open),
# then the batch closes with five more (one read_stage beside them).
EARLY_STAGE = "early_read_stage_turn"


def load(name: str) -> WorkflowHistory:
    return load_history(HISTORIES, name)


@pytest.mark.parametrize("name", [SESSION, TURN, EARLY_STAGE])
async def test_streaming_history_replays_against_current_code(name: str) -> None:
    replayer = Replayer(workflows=[AgentSessionWorkflow, AgentTurnWorkflow], data_converter=pydantic_data_converter)
    result = await replayer.replay_workflow(load(name), raise_on_replay_failure=False)
    assert result.replay_failure is None, f"{name}: {result.replay_failure}"


def test_the_recorded_turn_dispatched_while_streaming() -> None:
    events = load(TURN).events
    signals = [e.event_id for e in events if e.HasField("workflow_execution_signaled_event_attributes")
               and e.workflow_execution_signaled_event_attributes.signal_name == "dispatch"]
    updates = {e.workflow_execution_update_accepted_event_attributes.accepted_request.input.name: e.event_id
               for e in events if e.HasField("workflow_execution_update_accepted_event_attributes")}
    close = updates["close_batch"]
    markers = [e.event_id for e in events if e.HasField("marker_recorded_event_attributes")
               and any(b'"read_file"' in p.data for p in e.marker_recorded_event_attributes.details["data"].payloads)]
    assert len(signals) >= 2 and max(signals) < close
    assert markers[0] < close < markers[1]  # one read ran while streaming, the other after the write
    assert close < updates["decide"]  # the whole batch was approved after it closed


def test_the_recorded_early_stage_turn_ran_its_reads_as_two_stages() -> None:
    events = load(EARLY_STAGE).events
    close = next(e.event_id for e in events if e.HasField("workflow_execution_update_accepted_event_attributes"))
    ran = [(e.event_id, e.activity_task_scheduled_event_attributes.activity_type.name) for e in events
           if e.HasField("activity_task_scheduled_event_attributes")]
    stages = [at for at, name in ran if name == "read_stage"]
    assert len(stages) == 2 and stages[0] < close < stages[1], ran
    assert [name for _, name in ran if name != "read_stage"] == [], ran  # no read ran on its own


# ---------------------------------------------------------------- recording
async def _record(client: Client, root: Path, server: ScriptedModelServer) -> tuple[WorkflowHistory, WorkflowHistory]:
    (root / "a.txt").write_text("alpha\n")
    server.add(
        Reply(text="Reading, then writing.", tool_calls=[
            tool("read_file", path="a.txt"), tool("write_file", path="b.txt", content="beta\n" * 40),
            tool("read_file", path="b.txt")], tokens_per_second=150),
        Reply(text="Done."),
    )
    queue = "record-streaming"
    async with build_worker(client, task_queue=queue, workspace=str(root)):
        sid = await sessions.start_session(
            client, session_id=f"history-{SESSION}", workspace=root, task_queue=queue, provider="openai",
            model="scripted", prompt="read a, write b", policy="ask-writes",
        )
        while not (await sessions.session_status(client, sid)).waiting_for_approval:
            await asyncio.sleep(0.05)
        await sessions.approve(client, sid, approver="recorder", reason="recorded scenario")
        await sessions.wait_for_answer(client, sid)
        await sessions.close(client, sid, "recorded")
        return (await client.get_workflow_handle(sid).fetch_history(),
                await client.get_workflow_handle(f"{sid}/turn-1").fetch_history())


async def record(names: set[str]) -> None:
    env = await WorkflowEnvironment.start_local(
        data_converter=pydantic_data_converter, dev_server_existing_path=find_binary("temporal"), ui=False
    )
    server = ScriptedModelServer().start()
    os.environ.update(OPENAI_API_KEY="recorder-key", OPENAI_BASE_URL=server.openai_base_url)
    recorded: dict[str, WorkflowHistory] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            if names & {SESSION, TURN}:
                recorded[SESSION], recorded[TURN] = await _record(env.client, Path(tmp), server)
            if EARLY_STAGE in names:
                await dispatch_reads_together(env.client, Path(tmp), "record-early-stage", 3, total=8)
                recorded[EARLY_STAGE] = await env.client.get_workflow_handle("turn-record-early-stage").fetch_history()
        for name in sorted(names):
            save_history(HISTORIES, name, recorded[name])
            print(f"{name}: {len(recorded[name].events)} events")
    finally:
        server.stop()
        await env.shutdown()


def main() -> None:
    """Record the histories named on the command line (default: those not
    recorded yet; older ones are kept, the replay tests need them)."""
    known = {SESSION, TURN, EARLY_STAGE}
    names = set(sys.argv[1:]) or {n for n in known if not (HISTORIES / f"{n}.json").exists()}
    unknown = names - known
    if unknown:
        sys.exit(f"unknown histories {sorted(unknown)}: choose from {sorted(known)}")
    asyncio.run(record(names))
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
