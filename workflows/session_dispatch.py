"""Streaming dispatch, the session's side.

Before each model call the session starts its next child turn as an *open
batch* (``TurnInput.open_batch``, id ``<session>/turn-<n>``) and names it in
the model request, so the ``call_model`` activity can hand the turn each
tool call as it closes in the stream. After the call:

* the response has tool calls: the open turn *is* the turn of that batch
  (the activity already closed it with the complete response);
* it has none: the activity closed it empty, the turn ends with no results
  and its id is used again by the next open batch (an empty batch is not
  counted as a turn);
* the model call failed for good: the batch is abandoned; calls that
  started early are kept, reported, and nothing else runs.

Behind the patch ``streaming-dispatch`` (sessions recorded before it replay
unchanged) and ``SessionInput.streaming_dispatch`` (on by default).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.workflow import ChildWorkflowHandle, ParentClosePolicy

with workflow.unsafe.imports_passed_through():
    from workflows.turn_console import child_turn_attributes
    from core.names import ABANDON_BATCH_ACTIVITY, STREAMING_DISPATCH_PATCH, TURN_WORKFLOW
    from core.contracts import Snapshot, ToolCall, TurnInput, TurnResult
    from core.turn.early_dispatch import AbandonRequest, ClosedBatch
    from core.session.contracts import SessionInput



@dataclass
class OpenBatch:
    turn_id: str
    handle: ChildWorkflowHandle

    async def drop(self) -> None:
        """The response had no tool calls: wait for the empty turn to end."""
        await self.handle

    async def abandon(self, reason: str, task_queue: str) -> tuple[list[ToolCall], TurnResult]:
        """The model call failed: keep what started, run nothing else. The
        batch is closed through an activity (a workflow cannot send an
        update) so the session learns which calls the turn kept."""
        closed = await workflow.execute_activity(
            ABANDON_BATCH_ACTIVITY,
            AbandonRequest(turn_id=self.turn_id, reason=reason[:500]),
            result_type=ClosedBatch,
            task_queue=task_queue,
            start_to_close_timeout=timedelta(seconds=60),
            retry_policy=RetryPolicy(maximum_attempts=5),
        )
        return closed.calls, await self.handle


async def open_batch(session: SessionInput, turn_id: str, snapshots: list[Snapshot]) -> OpenBatch | None:
    if not session.streaming_dispatch or not workflow.patched(STREAMING_DISPATCH_PATCH):
        return None
    handle = await workflow.start_child_workflow(
        TURN_WORKFLOW,
        TurnInput(
            turn_id=turn_id,
            workspace=session.workspace,
            tool_calls=[],
            snapshots=snapshots,
            policy=session.policy,
            options=session.turn_options,
            open_batch=True,
        ),
        id=turn_id,
        task_queue=session.workspace.task_queue,
        result_type=TurnResult,
        parent_close_policy=ParentClosePolicy.REQUEST_CANCEL,
        search_attributes=child_turn_attributes(),
    )
    return OpenBatch(turn_id, handle)
