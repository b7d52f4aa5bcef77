"""What the streaming tests read from a turn's history: the order in which
dispatches arrived, tools ran and the batch closed."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from datetime import datetime

from google.protobuf.json_format import MessageToDict
from temporalio.client import Client


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
