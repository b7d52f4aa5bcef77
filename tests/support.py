"""Run a single tool activity on the real dev server, through a one-line
workflow, so tool tests exercise serialization and the activity boundary."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from typing import Any, Callable

from temporalio import workflow
from temporalio.client import Client
from temporalio.worker import Worker

with workflow.unsafe.imports_passed_through():
    from core.contracts import ToolCall, ToolRequest, ToolResult


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


def call(i: int, name: str, **args: object) -> ToolCall:
    """A tool call as a model would send it (OpenAI style: JSON-string arguments)."""
    return ToolCall(id=f"call_{i}", name=name, arguments=json.dumps(args))
