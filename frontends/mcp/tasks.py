"""Task-augmented tools/call (MCP 2025-11-25 Tasks), backed by Temporal.

The SDK (mcp 2.3) defines the 2025-11-25 task types but dispatches none of
the task methods, so this middleware serves them on handshake-era
connections: ``tools/call`` with ``task`` starts the turn and answers
``CreateTaskResult`` at once; ``tasks/get``, ``tasks/result`` and
``tasks/cancel`` read and drive the turn; ``tasks/list`` pages through this
server's turns, read from Temporal's visibility store.

The task id is the turn's workflow id and everything a task answer says is
read from Temporal (the workflow's status and memo, its result), so any
server process on the namespace answers for any task, after restarts too.
Status: working while the turn runs, input_required while it is paused for
approval (``tasks/result`` then asks by elicitation, or says where to
decide), completed when it finished (a rejected or failed call is a
completed task whose result has isError), failed when the workflow failed
or was terminated, cancelled when it was cancelled (``tasks/cancel``).
"""

from __future__ import annotations

import asyncio
import base64
import logging
from datetime import datetime, timezone
from typing import Any

import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import EventType
from temporalio.api.workflowservice.v1 import GetWorkflowExecutionHistoryReverseRequest, ListWorkflowExecutionsRequest
from temporalio.client import WorkflowExecutionDescription, WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from core.contracts import TurnStatus
from core.names import TURN_WORKFLOW
from core.tools.specs import TOOLS
from frontends.mcp.approval import where_to_decide
from frontends.mcp.turns import NotConnected

log = logging.getLogger("agent-tools.mcp")

TASKS_VERSION = "2025-11-25"
RELATED_TASK = "io.modelcontextprotocol/related-task"
POLL_INTERVAL_MS = 500
CAPABILITY = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
LIST_PAGE = 20

_TERMINAL = {
    WorkflowExecutionStatus.COMPLETED: "completed",
    WorkflowExecutionStatus.FAILED: "failed",
    WorkflowExecutionStatus.TERMINATED: "failed",
    WorkflowExecutionStatus.TIMED_OUT: "failed",
    WorkflowExecutionStatus.CANCELED: "cancelled",
    WorkflowExecutionStatus.CONTINUED_AS_NEW: "failed",
}


def _wire(model: Any) -> dict[str, Any]:
    data = model.model_dump(by_alias=True, mode="json", exclude_none=True)
    task = data.get("task", data)
    task.setdefault("ttl", None)  # required, null for "kept as long as the turn's history"
    return data


def _iso(moment: datetime | None) -> str:
    return (moment or datetime.now(timezone.utc)).astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


class TaskMiddleware:
    """A ServerMiddleware: the task methods, in front of the normal handlers."""

    def __init__(self, frontend: Any) -> None:
        self.frontend = frontend  # McpFrontend (its turns, order and waiting)
        self.turns = frontend.turns
        self._background: set[asyncio.Task[Any]] = set()

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        method, params = ctx.method, dict(ctx.params or {})
        if method == "initialize":
            result = await call_next(ctx)
            if isinstance(result, dict) and result.get("protocolVersion") == TASKS_VERSION:
                tasks = {k: v for k, v in CAPABILITY.items() if v is not None}
                result.setdefault("capabilities", {})["tasks"] = tasks
            return result
        if ctx.request_id is None or ctx.protocol_version != TASKS_VERSION:
            return await call_next(ctx)
        if method == "tools/call" and params.get("task") is not None:
            return await self._create(ctx, params)
        if method == "tasks/get":
            return _wire(await self._task(self._task_id(params)))
        if method == "tasks/result":
            return await self._result(ctx, self._task_id(params))
        if method == "tasks/cancel":
            return await self._cancel(self._task_id(params))
        if method == "tasks/list":
            return await self._list(params.get("cursor"))
        return await call_next(ctx)

    def _task_id(self, params: dict[str, Any]) -> str:
        task_id = params.get("taskId")
        if not isinstance(task_id, str) or not self.turns.owns(task_id):
            # Only our own turns: a task id is a workflow id, and this server
            # must not become a window onto every workflow in the namespace.
            raise MCPError(types.INVALID_PARAMS, f"no task {task_id!r} on this server (task ids are its turn ids)")
        return task_id

    async def _create(self, ctx: ServerRequestContext[Any, Any], params: dict[str, Any]) -> dict[str, Any]:
        name = params.get("name")
        if name not in TOOLS:
            raise MCPError(types.INVALID_PARAMS, f"unknown tool {name!r}: the tools are {', '.join(TOOLS)} (tools/list)")
        arguments = params.get("arguments")
        try:
            turn_id = await self.turns.start(name, arguments if isinstance(arguments, dict) else None)
        except Exception as exc:  # noqa: BLE001 - bad input, no worker: the client hears why
            raise MCPError(types.INVALID_PARAMS, f"the task was not started: {exc}") from None
        # Remember the snapshots when the turn ends, if this process is still
        # there; tasks/result remembers them too (whichever process serves it).
        job = asyncio.ensure_future(self._remember_when_done(turn_id))
        self._background.add(job)
        job.add_done_callback(self._background.discard)
        task = await self._task(turn_id)
        return _wire(types.CreateTaskResult(task=task))

    async def _remember_when_done(self, turn_id: str) -> None:
        handle = self.turns.client.get_workflow_handle(turn_id)
        try:
            waiting = asyncio.ensure_future(handle.result())
            await asyncio.wait({waiting})
            await self.turns.finish(turn_id, waiting)
        except Exception:  # noqa: BLE001 - best effort; tasks/result does it as well
            log.debug("could not remember the snapshots of %s", turn_id, exc_info=True)

    async def _describe(self, turn_id: str) -> WorkflowExecutionDescription:
        try:
            await self.turns.ready()
        except NotConnected as exc:
            raise MCPError(types.INTERNAL_ERROR, str(exc)) from None
        try:
            return await self.turns.client.get_workflow_handle(turn_id).describe()
        except RPCError as exc:
            if exc.status == RPCStatusCode.NOT_FOUND:
                raise MCPError(types.INVALID_PARAMS, f"no task {turn_id!r}: its turn is not on this server") from None
            raise

    async def _task(self, turn_id: str) -> types.GetTaskResult:
        desc = await self._describe(turn_id)
        memo = await desc.memo()
        message = None
        if desc.status == WorkflowExecutionStatus.RUNNING:
            status = "working"
            if memo.get("turn_status") == TurnStatus.PAUSED.value:
                status = "input_required"
                message = where_to_decide(turn_id, self.turns.settings.web_ui_link(turn_id)) + (
                    "; or call tasks/result, which asks by elicitation when the client supports it"
                )
        else:
            status = _TERMINAL.get(desc.status, "failed") if desc.status else "failed"
            if status == "completed" and await self._cancel_requested(turn_id):
                # A cancelled turn still finishes with what ran recorded
                # (the killed command's result): for the task, it was cancelled.
                status, message = "cancelled", "cancelled; tasks/result has what ran before"
        return types.GetTaskResult(
            task_id=turn_id,
            status=status,  # type: ignore[arg-type]
            status_message=message,
            created_at=_iso(desc.start_time),
            last_updated_at=_iso(desc.close_time),
            ttl=None,
            poll_interval=POLL_INTERVAL_MS,
        )

    async def _cancel_requested(self, turn_id: str) -> bool:
        client = self.turns.client
        response = await client.workflow_service.get_workflow_execution_history_reverse(
            GetWorkflowExecutionHistoryReverseRequest(
                namespace=client.namespace, execution=WorkflowExecution(workflow_id=turn_id), maximum_page_size=100
            )
        )
        return any(e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED for e in response.history.events)

    async def _result(self, ctx: ServerRequestContext[Any, Any], turn_id: str) -> dict[str, Any]:
        await self._describe(turn_id)  # a clear error for an unknown task
        result = await self.frontend._wait(ctx, turn_id)
        data = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        data.setdefault("_meta", {})[RELATED_TASK] = {"taskId": turn_id}
        return data

    async def _list(self, cursor: Any) -> dict[str, Any]:
        """One page of this server's turns as tasks. The cursor is the
        visibility store's page token (opaque to the client)."""
        try:
            token = base64.b64decode(cursor.encode("ascii"), altchars=b"-_", validate=True) if cursor else b""
        except (AttributeError, ValueError, UnicodeEncodeError):
            raise MCPError(types.INVALID_PARAMS, f"bad cursor {cursor!r}: pass the nextCursor of the last page") from None
        try:
            await self.turns.ready()
        except NotConnected as exc:
            raise MCPError(types.INTERNAL_ERROR, str(exc)) from None
        client = self.turns.client
        prefix = self.turns.settings.turn_prefix.replace("\\", "").replace('"', "")
        response = await client.workflow_service.list_workflow_executions(ListWorkflowExecutionsRequest(
            namespace=client.namespace, page_size=LIST_PAGE, next_page_token=token,
            query=f'WorkflowType="{TURN_WORKFLOW}" AND WorkflowId STARTS_WITH "{prefix}"',
        ))
        tasks = [await self._task(e.execution.workflow_id) for e in response.executions
                 if self.turns.owns(e.execution.workflow_id)]
        page = types.ListTasksResult(
            tasks=[types.Task(**t.model_dump(exclude={"meta"})) for t in tasks],
            next_cursor=base64.urlsafe_b64encode(response.next_page_token).decode("ascii")
            if response.next_page_token else None,
        )
        data = page.model_dump(by_alias=True, mode="json", exclude_none=True)
        for task in data["tasks"]:
            task.setdefault("ttl", None)
        return data

    async def _cancel(self, turn_id: str) -> dict[str, Any]:
        desc = await self._describe(turn_id)
        if desc.status != WorkflowExecutionStatus.RUNNING:
            raise MCPError(types.INVALID_PARAMS, f"task {turn_id} is already {_TERMINAL.get(desc.status, 'over')}")
        await self.turns.cancel(turn_id)
        task = await self._task(turn_id)
        if task.status == "working" or task.status == "input_required":
            task = task.model_copy(update={"status": "cancelled", "status_message": "cancellation requested"})
        return _wire(types.CancelTaskResult(**task.model_dump()))
