"""Turn rollback through Temporal: ``rollback(client, turn_id)``.

The restore must happen on the worker that holds the workspace, so it runs
as the ``rollback_turn`` activity inside a tiny workflow started on that
worker's task queue. Where the workspace is and which queue serves it are
read from the turn's own workflow input (its first history event), so a
turn id is all a caller needs, from any machine, after any restart; a
session's turns (``<session>/turn-3``) are child workflows with that id and
work the same. ``workspace_root``/``task_queue`` override the lookup (a turn
whose history was deleted by retention)."""

from __future__ import annotations

import uuid

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError

from core.contracts import TurnInput
from core.txn_contracts import RollbackRequest, RollbackResult
from core.names import ROLLBACK_WORKFLOW


class RollbackLookupFailed(LookupError):
    """The turn's workspace could not be found; the message says what to pass."""


async def turn_workspace(client: Client, turn_id: str) -> tuple[str, str]:
    """(workspace root, task queue) the turn ran with, from its first event."""
    handle = client.get_workflow_handle(turn_id)
    try:
        async for event in handle.fetch_history_events():
            if event.event_type != EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
                break
            attrs = event.workflow_execution_started_event_attributes
            if attrs.workflow_type.name != "AgentTurnWorkflow" or not attrs.input.payloads:
                break
            [turn] = await client.data_converter.decode(attrs.input.payloads[:1], [TurnInput])
            return turn.workspace.root, turn.workspace.task_queue
    except RPCError:
        pass  # no such workflow (never, or its history is gone)
    raise RollbackLookupFailed(
        f"{turn_id} is not an agent turn on this server: pass --workspace and --task-queue of the worker that holds it"
    )


async def _running(client: Client, turn_id: str) -> bool:
    try:
        return (await client.get_workflow_handle(turn_id).describe()).status == WorkflowExecutionStatus.RUNNING
    except RPCError:
        return False  # no such workflow (history gone): the files on disk decide


async def rollback(
    client: Client, turn_id: str, *, workspace_root: str | None = None, task_queue: str | None = None
) -> RollbackResult:
    """Restore every file the turn changed (write_file, edit_file, bash) from
    its pre-images; files changed since by someone else are left and listed."""
    if workspace_root is None or task_queue is None:
        root, queue = await turn_workspace(client, turn_id)
        workspace_root, task_queue = workspace_root or root, task_queue or queue
    if await _running(client, turn_id):
        raise RollbackLookupFailed(f"turn {turn_id} is still running: wait for it to finish (or reject it) first")
    return await client.execute_workflow(
        ROLLBACK_WORKFLOW,
        RollbackRequest(workspace_root=workspace_root, turn_id=turn_id),
        id=f"rollback/{turn_id}/{uuid.uuid4().hex[:8]}",
        task_queue=task_queue,
        result_type=RollbackResult,
    )
