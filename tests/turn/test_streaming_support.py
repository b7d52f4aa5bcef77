"""What the streaming tests read from a turn's history (the order in which
dispatches arrived, tools ran and the batch closed), and a turn whose reads
are dispatched early, for them and for the recorded history."""

from __future__ import annotations

import asyncio
import base64
import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest
from google.protobuf.json_format import MessageToDict
from temporalio.client import Client, WorkflowHandle

from core.contracts import ToolCall, TurnInput, TurnResult, Workspace
from core.names import CLOSE_BATCH_UPDATE, DISPATCH_CALLS_SIGNAL
from core.turn.early_dispatch import BatchClose, ClosedBatch, DispatchedCall, DispatchedCalls
from runtime.worker import build_worker
from workflows.turn import AgentTurnWorkflow


@dataclass
class Event:
    event_id: int
    kind: str  # "signal" | "update" | "activity" (a tool or plan_turn, local or not) | "other"
    name: str  # signal name, activity type, update name
    at: datetime


def _marker_activity(details: dict) -> str:
    for payload in details.get("data", {}).get("payloads", []):
        try:
            return json.loads(base64.b64decode(payload["data"])).get("activity_type", "")
        except (ValueError, KeyError):
            continue
    return ""


async def turn_events(client: Client, workflow_id: str) -> list[Event]:
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    out: list[Event] = []
    for e in history.events:
        d = MessageToDict(e)
        at = e.event_time.ToDatetime()
        if "markerRecordedEventAttributes" in d:
            name = _marker_activity(d["markerRecordedEventAttributes"].get("details", {}))
            out.append(Event(e.event_id, "activity" if name else "other", name, at))
        elif "activityTaskScheduledEventAttributes" in d:
            out.append(Event(e.event_id, "activity", d["activityTaskScheduledEventAttributes"]["activityType"]["name"], at))
        elif "workflowExecutionSignaledEventAttributes" in d:
            out.append(Event(e.event_id, "signal", d["workflowExecutionSignaledEventAttributes"]["signalName"], at))
        elif "workflowExecutionUpdateAcceptedEventAttributes" in d:
            name = d["workflowExecutionUpdateAcceptedEventAttributes"]["acceptedRequest"]["input"]["name"]
            out.append(Event(e.event_id, "update", name, at))
        else:
            out.append(Event(e.event_id, "other", d["eventType"], at))
    return out


def tool_runs(events: list[Event], tool: str) -> list[Event]:
    return [e for e in events if e.kind == "activity" and e.name == tool]


def first(events: list[Event], kind: str, name: str) -> Event:
    return next(e for e in events if e.kind == kind and e.name == name)


async def start_with_early_reads(client: Client, workspace: Path, task_queue: str, early: int,
                                 total: int | None = None) -> tuple[WorkflowHandle, list[ToolCall]]:
    """Start a turn whose first ``early`` reads arrive in one
    ``dispatch_calls`` signal, and wait until they have run (a worker must
    poll ``task_queue``); the handle and the ``total`` reads to close with."""
    total = early if total is None else total
    for i in range(total):
        (workspace / f"f{i}.txt").write_text(f"file {i}\n")
    calls = [ToolCall(id=f"c{i}", name="read_file", arguments=f'{{"path": "f{i}.txt"}}') for i in range(total)]
    turn = TurnInput(
        turn_id=f"turn-{task_queue}", workspace=Workspace(root=str(workspace), task_queue=task_queue),
        tool_calls=[], open_batch=True,
    )
    handle = await client.start_workflow(
        AgentTurnWorkflow.run, turn, id=turn.turn_id, task_queue=task_queue, result_type=TurnResult
    )
    await handle.signal(DISPATCH_CALLS_SIGNAL, DispatchedCalls(
        calls=[DispatchedCall(attempt=1, position=i, call=c) for i, c in enumerate(calls[:early])]
    ))
    for _ in range(500):  # until all have started early (the status query shows them)
        progress = await handle.query(AgentTurnWorkflow.status)
        if len(progress.calls) == early and all(c.state == "done" for c in progress.calls):
            break
        await asyncio.sleep(0.02)
    else:
        pytest.fail(f"the dispatched reads did not all run early: {progress.calls}")
    return handle, calls


async def close_and_finish(client: Client, handle: WorkflowHandle, calls: list[ToolCall]) -> tuple[TurnResult, list]:
    """Close the batch with ``calls``; the turn's result and recorded events."""
    await handle.execute_update(CLOSE_BATCH_UPDATE, BatchClose(attempt=1, calls=calls), result_type=ClosedBatch)
    result = await handle.result()
    return result, await turn_events(client, handle.id)


async def dispatch_reads_together(client: Client, workspace: Path, task_queue: str, early: int,
                                  total: int | None = None, **worker: object) -> tuple[TurnResult, list]:
    """``start_with_early_reads`` then ``close_and_finish``, on a worker of
    this process."""
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace), **worker):  # type: ignore[arg-type]
        handle, calls = await start_with_early_reads(client, workspace, task_queue, early, total)
        return await close_and_finish(client, handle, calls)
