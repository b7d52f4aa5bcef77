"""Running a stage (several calls as one activity) where the turn runs its
tools: a local activity when the turn runs them locally, a regular one with
heartbeats on the workspace's queue otherwise. Shared by the read stage and
the write stage."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, TypeVar

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from core.contracts import PlannedCall, Snapshot, ToolRequest, TurnInput
    from workflows.activity_options import HEARTBEAT_TIMEOUT, LOCAL_START_TO_CLOSE, ToolActivityOptions

R = TypeVar("R")


async def run_stage_activity(name: str, stage: Any, result_type: type[R], turn: TurnInput, local: bool,
                             options: list[ToolActivityOptions], start_to_close: timedelta) -> R:
    if local:
        return await workflow.execute_local_activity(
            name, stage, result_type=result_type,
            start_to_close_timeout=LOCAL_START_TO_CLOSE, retry_policy=options[0].retry,
        )
    return await workflow.execute_activity(
        name, stage, result_type=result_type,
        task_queue=turn.workspace.task_queue,
        start_to_close_timeout=start_to_close,
        heartbeat_timeout=HEARTBEAT_TIMEOUT,
        retry_policy=options[0].retry,
    )


def call_request(turn: TurnInput, call: PlannedCall, arguments: dict[str, Any],
                 snapshot: Snapshot | None = None) -> ToolRequest:
    """One call of a stage, as its tool activity would get it."""
    return ToolRequest(
        call_id=call.call_id,
        tool=call.name,
        workspace_root=turn.workspace.root,
        arguments=arguments,
        snapshot=snapshot,
        turn_id=turn.turn_id,
    )


def stage_failure_details(err: ActivityError, failure_type: str) -> dict[str, Any]:
    """What a stage activity attached to its failure of type ``failure_type``
    (which call failed, the results before it), or {} when the stage failed
    as a whole (a timeout, a lost worker)."""
    cause = err.cause
    if isinstance(cause, ApplicationError) and cause.type == failure_type and cause.details:
        first = cause.details[0]
        return first if isinstance(first, dict) else {}
    return {}
