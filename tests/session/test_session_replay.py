"""Recorded session histories (a paused-then-approved turn, a continue-as-new,
a cancel in the middle of a turn) replay against the current session code.

    python -m tests.session.test_session_replay     # re-record tests/histories/sessions/session_*.json

Re-record only after an intentional, versioned (workflow.patched) change.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer

from activities.sandbox.binaries import find_binary
from core.session.contracts import SessionLimits
from runtime import session_api as sessions
from tests.model_server import Reply, ScriptedModelServer, tool
from tests.support import load_history, save_history
from runtime.worker import build_worker
from workflows.session import AgentSessionWorkflow
from tests.txn.support.helpers import written

CONTINUED_AS_NEW = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW
CANCEL_REQUESTED = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED
CHILD_STARTED = EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED
# A folder of their own: tests/durability/test_replay.py expects exactly its turn scenarios in histories/.
HISTORIES = Path(__file__).parents[1] / "histories" / "sessions"
SCENARIOS = ["session_approval", "session_continue_as_new", "session_cancelled"]


def load(name: str) -> WorkflowHistory:
    return load_history(HISTORIES, name)


@pytest.mark.parametrize("name", SCENARIOS)
async def test_session_history_replays_against_current_code(name: str) -> None:
    replayer = Replayer(workflows=[AgentSessionWorkflow], data_converter=pydantic_data_converter)
    result = await replayer.replay_workflow(load(name), raise_on_replay_failure=False)
    assert result.replay_failure is None, f"{name}: {result.replay_failure}"


def test_the_recorded_histories_show_what_they_claim() -> None:
    kinds = {name: [e.event_type for e in load(name).events] for name in SCENARIOS}
    assert CONTINUED_AS_NEW in kinds["session_continue_as_new"]
    assert CONTINUED_AS_NEW not in kinds["session_approval"] and CHILD_STARTED in kinds["session_approval"]
    assert CANCEL_REQUESTED in kinds["session_cancelled"]


# ---------------------------------------------------------------- recording
async def _record_one(client: Client, name: str, root: Path, server: ScriptedModelServer) -> WorkflowHistory:
    (root / "app.py").write_text("def f():\n    return 1\n")
    (root / "slow.py").write_text("import time\nopen('started.txt', 'w')\ntime.sleep(60)\n")
    queue = f"record-{name}"
    common = dict(workspace=root, task_queue=queue, provider="openai", model="scripted", prompt="fix f")
    async with build_worker(client, task_queue=queue, workspace=str(root)):
        if name == "session_approval":
            server.add(Reply(tool_calls=[tool("read_file", path="app.py"),
                                         tool("edit_file", path="app.py", old_string="return 1", new_string="return 2")]),
                       Reply(text="f returns 2 now"))
            sid = await sessions.start_session(client, session_id=f"history-{name}", policy="ask-writes", **common)
            while not (await sessions.session_status(client, sid)).waiting_for_approval:
                await asyncio.sleep(0.05)
            await sessions.approve(client, sid, approver="recorder", reason="recorded scenario")
            await sessions.wait_for_answer(client, sid)
            await sessions.close(client, sid, "recorded")
            return await client.get_workflow_handle(sid).fetch_history()
        if name == "session_continue_as_new":
            server.add(Reply(tool_calls=[tool("glob", pattern="*.py")]), Reply(tool_calls=[tool("read_file", path="app.py")]),
                       Reply(text="looked around"))
            sid = await sessions.start_session(client, session_id=f"history-{name}", policy="auto",
                                               limits=SessionLimits(continue_as_new_every=2), **common)
            await sessions.wait_for_answer(client, sid)
            await sessions.close(client, sid)
            for _ in range(100):  # visibility lags a little behind
                async for execution in client.list_workflows(f'WorkflowId="{sid}"'):
                    history = await client.get_workflow_handle(sid, run_id=execution.run_id).fetch_history()
                    if any(e.event_type == CONTINUED_AS_NEW for e in history.events):
                        return history
                await asyncio.sleep(0.1)
            raise RuntimeError("no run continued as new")
        server.add(Reply(tool_calls=[tool("read_file", path="app.py"), tool("bash", command="python3 slow.py")]))
        sid = await sessions.start_session(client, session_id=f"history-{name}", policy="auto", **common)
        while not written(root, "started.txt"):  # captured writes show in the upper layer
            await asyncio.sleep(0.05)
        await sessions.cancel(client, sid)
        return await client.get_workflow_handle(sid).fetch_history()


async def record(names: list[str]) -> None:
    env = await WorkflowEnvironment.start_local(
        data_converter=pydantic_data_converter, dev_server_existing_path=find_binary("temporal"), ui=False
    )
    server = ScriptedModelServer().start()
    os.environ.update(OPENAI_API_KEY="recorder-key", OPENAI_BASE_URL=server.openai_base_url)
    try:
        for name in names:
            with tempfile.TemporaryDirectory() as tmp:
                history = await _record_one(env.client, name, Path(tmp), server)
            save_history(HISTORIES, name, history)
            print(f"{name}: {len(history.events)} events")
    finally:
        server.stop()
        await env.shutdown()


def main() -> None:
    asyncio.run(record(sys.argv[1:] or SCENARIOS))
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
