"""What tests share: one call builder (``call``), one turn builder
(``turn``), one history recorder (``save_history`` / ``load_history``),
and a single tool activity run on the real dev server through a one-line
workflow, so tool tests exercise serialization and the activity boundary."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any, Callable

from temporalio import workflow
from temporalio.client import Client, WorkflowHistory
from temporalio.worker import Worker

with workflow.unsafe.imports_passed_through():
    from core.contracts import Policy, ToolCall, ToolRequest, ToolResult, TurnInput, Workspace


@workflow.defn
class SingleToolWorkflow:
    @workflow.run
    async def run(self, request: ToolRequest) -> ToolResult:
        return await workflow.execute_activity(
            request.tool,
            request,
            result_type=ToolResult,
            start_to_close_timeout=timedelta(seconds=60),
        )


async def run_tool_on_server(
    client: Client, activities: list[Callable[..., Any]], request: ToolRequest
) -> ToolResult:
    task_queue = f"single-{uuid.uuid4().hex[:8]}"
    async with Worker(client, task_queue=task_queue, workflows=[SingleToolWorkflow], activities=activities):
        return await client.execute_workflow(
            SingleToolWorkflow.run,
            request,
            id=f"single-tool-{uuid.uuid4().hex}",
            task_queue=task_queue,
            result_type=ToolResult,
        )


def worker_activities(workspace: Path | str | None, *names: str) -> list[Callable[..., Any]]:
    """The activities a worker for ``workspace`` registers (the same wiring,
    the workspace fence included), by name."""
    from runtime.plugin import AgentToolsPlugin, activity_name

    registered = {activity_name(a): a for a in AgentToolsPlugin(workspace=None if workspace is None else str(workspace)).registered_activities()}
    return [registered[name] for name in names]


def call(i: int, name: str, **args: object) -> ToolCall:
    """A tool call as a model would send it (OpenAI style: JSON-string arguments)."""
    return ToolCall(id=f"call_{i}", name=name, arguments=json.dumps(args))


def turn(workspace: Path | str, task_queue: str, calls: list[ToolCall], *, prefix: str = "turn",
         policy: Policy | None = None, **fields: object) -> TurnInput:
    """A turn with a fresh id (``prefix-<hex>``); ``fields`` are any other
    TurnInput fields (options, snapshots, open_batch ...)."""
    return TurnInput(
        turn_id=f"{prefix}-{uuid.uuid4().hex[:10]}",
        workspace=Workspace(root=str(workspace), task_queue=task_queue),
        tool_calls=calls,
        policy=policy,
        **fields,  # type: ignore[arg-type]
    )


HISTORIES = Path(__file__).parent / "histories"


def save_history(folder: Path, name: str, history: WorkflowHistory) -> Path:
    """Record a history for the replay tests (``folder``: HISTORIES or a subfolder)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    path.write_text(history.to_json())
    return path


def load_history(folder: Path, name: str) -> WorkflowHistory:
    return WorkflowHistory.from_json(f"history-{name}", (folder / f"{name}.json").read_text())
