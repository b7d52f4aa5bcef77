"""The recorded history of an MCP session's snapshot store replays against the
current code (its workflow, signal and query names are in histories).

    python -m tests.mcp.test_mcp_session_replay     # re-record tests/histories/mcp/mcp_session.json

Re-record only after an intentional, versioned (workflow.patched) change.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

from temporalio.client import Client, WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer, Worker

from activities.sandbox.binaries import find_binary
from core.contracts import Snapshot
from frontends.mcp.settings import McpSettings
from frontends.mcp.turns import McpTurns
from runtime.devserver import dynamic_config_args
from workflows.mcp_session import McpSessionWorkflow

HISTORY = Path(__file__).parents[1] / "histories" / "mcp" / "mcp_session.json"


def _snap(path: str, n: int) -> Snapshot:
    return Snapshot(path=path, mtime_ns=n, size=n, sha256=f"{n:064x}")


async def _record(client: Client) -> WorkflowHistory:
    queue = f"mcp-rec-{uuid.uuid4().hex[:6]}"
    store = McpTurns(client, McpSettings(workspace="/ws", task_queue=queue, session=f"rec-{uuid.uuid4().hex[:6]}"))
    async with Worker(client, task_queue=queue, workflows=[McpSessionWorkflow]):
        await store.remember([_snap("a.py", 1)])
        await store.remember([_snap("b.py", 2), _snap("a.py", 3)])
        assert [(s.path, s.size) for s in await store.snapshots()] == [("a.py", 3), ("b.py", 2)]
        handle = client.get_workflow_handle(store.settings.snapshots_workflow_id)
        await handle.signal(McpSessionWorkflow.close)
        await handle.result()
        return await handle.fetch_history()


async def test_snapshot_store_keeps_the_latest_per_path_and_replays(client: Client) -> None:
    history = await _record(client)
    replayer = Replayer(workflows=[McpSessionWorkflow], data_converter=pydantic_data_converter)
    assert (await replayer.replay_workflow(history, raise_on_replay_failure=False)).replay_failure is None
    recorded = WorkflowHistory.from_json("mcp-session", HISTORY.read_text())
    result = await replayer.replay_workflow(recorded, raise_on_replay_failure=False)
    assert result.replay_failure is None, result.replay_failure


async def _main() -> None:
    env = await WorkflowEnvironment.start_local(
        data_converter=pydantic_data_converter, dev_server_existing_path=find_binary("temporal"),
        ui=False, dev_server_extra_args=dynamic_config_args(),
    )
    try:
        HISTORY.write_text((await _record(env.client)).to_json())
        print(f"recorded {HISTORY}")
    finally:
        await env.shutdown()


if __name__ == "__main__":
    asyncio.run(_main())
