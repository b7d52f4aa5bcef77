"""Streaming dispatch, the model activity's side.

``call_model`` is given the id of an open turn (``ModelCallRequest.dispatch_to``).
Each tool call whose arguments closed in the stream is signalled to that
turn (``dispatch``) at once, in stream order, by one sender task so the
stream is never held up by a round trip; when the stream ends the complete
response goes to the turn as the update ``close_batch``, whose answer is the
merged batch (calls that started in an earlier attempt of this activity
included, see core.turn.early_dispatch) that the transcript then records.

The activity talks to the turn through its worker's own client
(``activity.client()``), the way activities that signal workflows do.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from temporalio import activity
from temporalio.client import Client, WorkflowHandle
from temporalio.service import RPCError, RPCStatusCode

from core.contracts import ToolCall
from core.names import ABANDON_BATCH_ACTIVITY, CLOSE_BATCH_UPDATE, CLOSED_BATCH_QUERY, DISPATCH_CALLS_SIGNAL, DISPATCH_SIGNAL
from core.turn.early_dispatch import AbandonRequest, BatchClose, ClosedBatch, DispatchedCall, DispatchedCalls
from core.session.stream_assembly import AssembledCall



def dispatched_arguments(provider: str, call: AssembledCall) -> str | dict[str, Any]:
    """The arguments as the final response will carry them (OpenAI: the JSON
    text; Anthropic: the object)."""
    if provider == "anthropic":
        value = json.loads(call.raw_arguments or "{}")
        return value if isinstance(value, dict) else {}
    return call.raw_arguments


class StreamDispatcher:
    def __init__(self, client: Client, turn_id: str, provider: str, attempt: int) -> None:
        self._handle = client.get_workflow_handle(turn_id)
        self._provider = provider
        self._attempt = attempt
        self._queue: asyncio.Queue[DispatchedCall | None] = asyncio.Queue()
        self._sender = asyncio.create_task(self._send_all())
        self.sent = 0
        self.signals = 0  # fewer than sent when calls closed together
        # The turn already ran its batch to the end: this is a retried model
        # call whose earlier attempt closed the batch before it failed.
        self.turn_finished = False

    @classmethod
    def for_activity(cls, turn_id: str | None, provider: str) -> "StreamDispatcher | None":
        if not turn_id:
            return None
        return cls(activity.client(), turn_id, provider, activity.info().attempt)

    def closed(self, call: AssembledCall) -> None:
        """Called from the stream loop: never blocks it."""
        tool_call = ToolCall(id=call.id, name=call.name, arguments=dispatched_arguments(self._provider, call))
        self._queue.put_nowait(DispatchedCall(attempt=self._attempt, position=call.position, call=tool_call))

    async def _send_all(self) -> None:
        done = False
        while not done:
            batch = [await self._queue.get()]
            # What closed while the last signal was on its way goes together:
            # one history event for the lot instead of one per call.
            while not self._queue.empty():
                batch.append(self._queue.get_nowait())
            if batch[-1] is None:  # the end (close() puts it last)
                batch.pop()
                done = True
            calls = [c for c in batch if c is not None]
            if self.turn_finished:
                continue  # what it ran is read at the close
            try:
                if len(calls) == 1:
                    await self._handle.signal(DISPATCH_SIGNAL, calls[0])
                elif calls:
                    await self._handle.signal(DISPATCH_CALLS_SIGNAL, DispatchedCalls(calls=calls))
            except RPCError as exc:
                if not _finished(exc):
                    raise
                self.turn_finished = True
                continue
            self.sent += len(calls)
            self.signals += 1 if calls else 0

    async def close(self, calls: list[ToolCall], abandon: bool = False) -> ClosedBatch:
        """Send what is queued, then the whole response; the merged batch.
        ``abandon``: the session ends with this response (its token limit),
        so only the calls that started are kept."""
        while not self._queue.empty():  # not yet sent: the close carries them anyway
            self._queue.get_nowait()
        self._queue.put_nowait(None)
        await self._sender
        beat = asyncio.create_task(_heartbeat_while_waiting())  # the turn's worker may be slow to take it
        try:
            closed = await close_or_read(
                self._handle,
                BatchClose(attempt=self._attempt, calls=calls, abandon=abandon, reason="token limit" if abandon else ""),
            )
        finally:
            beat.cancel()
        closed.dropped = max(0, len(calls) - len(closed.calls)) if abandon else 0
        return closed

    def cancel(self) -> None:
        """The stream failed: a retry dispatches again (deduplicated there)."""
        self._sender.cancel()


async def _heartbeat_while_waiting(every_s: float = 2.0) -> None:
    while True:
        await asyncio.sleep(every_s)
        activity.heartbeat()


def _finished(exc: RPCError) -> bool:
    """The workflow is no longer running (signals and updates are refused)."""
    return exc.status == RPCStatusCode.NOT_FOUND


async def close_or_read(handle: WorkflowHandle[Any, Any], close: BatchClose) -> ClosedBatch:
    """Close the turn's batch; when the turn already finished (a retry of a
    model call whose earlier attempt closed it), the batch it ran."""
    try:
        return await handle.execute_update(CLOSE_BATCH_UPDATE, close, result_type=ClosedBatch)
    except RPCError as exc:
        if not _finished(exc):
            raise
        closed = await handle.query(CLOSED_BATCH_QUERY, result_type=ClosedBatch)  # type: ignore[arg-type]
        if closed is None:  # it ended without closing: nothing of this batch ran
            raise
        return closed


def merged_response(response: Any, closed: ClosedBatch) -> Any:
    """The bounded ModelResponse with the merged batch (repair notes moved
    to the merged positions)."""
    repairs = {str(int(k) + closed.prepended): v for k, v in response.repairs.items()}
    return response.model_copy(update={"tool_calls": closed.calls, "repairs": repairs, "dropped_calls": closed.dropped})


@activity.defn(name=ABANDON_BATCH_ACTIVITY)
async def abandon_batch(request: AbandonRequest) -> ClosedBatch:
    """Close a session's open turn after its model call failed for good: the
    calls that started early are kept (the answer lists them), nothing else runs."""
    handle = activity.client().get_workflow_handle(request.turn_id)
    return await close_or_read(handle, BatchClose(attempt=0, abandon=True, reason=request.reason))
