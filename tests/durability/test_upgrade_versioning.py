"""Worker versioning on the dev server: a turn started on build v1 of a
deployment stays pinned to v1 after v2 becomes current (the way to ship a
workflow change that cannot be patched)."""

from __future__ import annotations

import asyncio
import subprocess
import time
import uuid
from pathlib import Path

from temporalio.client import Client

from activities.sandbox.binaries import find_binary
from core.contracts import Policy, TurnProgress, TurnResult, TurnStatus
from runtime.api import TurnClient, build_turn_input
from tests.processes import server_address
from tests.support import call
from runtime.worker import build_worker
from workflows.turn import AgentTurnWorkflow


def set_current(address: str, deployment: str, build_id: str) -> None:
    temporal = find_binary("temporal")
    assert temporal
    for _ in range(50):  # the version exists once its worker has polled
        done = subprocess.run(
            [temporal, "worker", "deployment", "set-current-version", "--address", address,
             "--deployment-name", deployment, "--build-id", build_id, "--yes"],
            capture_output=True, text=True, timeout=30,
        )
        if done.returncode == 0:
            return
        time.sleep(0.2)
    raise AssertionError(done.stderr)


async def test_a_paused_turn_stays_on_the_build_that_started_it(
    client: Client, workspace: Path, task_queue: str
) -> None:
    deployment = f"agent-{uuid.uuid4().hex[:6]}"
    address = server_address(client)
    turn = build_turn_input(
        workspace_root=str(workspace), task_queue=task_queue, policy=Policy(mode="ask-writes"),
        tool_calls=[call(0, "write_file", path="v.txt", content="pinned\n")], turn_id=f"pin-{uuid.uuid4().hex[:6]}",
    )
    turns = TurnClient(client)
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace), deployment=(deployment, "v1")):
        await asyncio.to_thread(set_current, address, deployment, "v1")
        handle = await turns.start_turn(turn)
        for _ in range(100):
            if (await handle.query(AgentTurnWorkflow.status, result_type=TurnProgress)).status == TurnStatus.PAUSED:
                break
            await asyncio.sleep(0.05)
        other = await Client.connect(address, data_converter=client.data_converter, identity="build-v2")
        async with build_worker(other, task_queue=task_queue, workspace=str(workspace), deployment=(deployment, "v2")):
            await asyncio.to_thread(set_current, address, deployment, "v2")
            desc = await handle.describe()
            versioning = desc.raw_description.workflow_execution_info.versioning_info
            assert versioning.deployment_version.build_id == "v1", versioning
            await turns.approve(turn.turn_id, approver="ops", reason="ok")
            result: TurnResult = await handle.result()
    assert result.status == TurnStatus.COMPLETED
    assert (workspace / "v.txt").read_text() == "pinned\n"
    history = await handle.fetch_history()
    identities = {
        e.workflow_task_completed_event_attributes.identity
        for e in history.events
        if e.HasField("workflow_task_completed_event_attributes")
    }
    assert "build-v2" not in identities  # v2 never ran a task of the pinned turn
