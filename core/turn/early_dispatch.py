"""Streaming dispatch: the pure rules. No I/O, no Temporal.

While the model streams, the ``call_model`` activity hands each tool call
whose JSON closed to the open turn (``DispatchedCall``), and at the end the
complete response (``BatchClose``). This module keeps the book of what was
dispatched, says which calls may start at once, and merges what started
early with the final response.

Dedup. A dispatch is keyed by (stream attempt, position); a repeat of the
same key with the same call id is a duplicate and is ignored, a different id
at a taken key (or a taken id at another position) is refused.

Starting early. A call starts before the stream ends only when its plan (the
same planning code as the whole batch, recorded) says it is concurrency-safe,
allowed without approval and settled by nothing else, and every earlier
position of the same attempt was dispatched and planned concurrency-safe:
a read after a write waits and then sees the write.

A retried model call (the activity failed after some calls started; the new
stream may differ). Calls that started are never started again and their
results are kept. The rule that makes the assistant message consistent:

* a started call of an older attempt *is* the retried response's call at its
  position when that call has the same name and arguments and every earlier
  position of both streams holds the same calls (the same context before
  it); the merged call keeps the started call's id, so its result pairs
  with it, and a later dispatch of it is not run again;
* a started call that is not in the final response that way is an
  *orphan*: it ran, so it is kept, and it goes *before* the final response's
  calls in the merged batch (it ran before any of them could have; only
  reads start early, so nothing in the final batch changed what it saw);
* everything else in the final response is planned and run as usual, with
  the whole-batch approval on the merged batch.

``abandon`` (the model call failed for good): the merged batch is the
started calls only; nothing else runs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field

from core.contracts import ToolCall

Key = tuple[int, int]  # (stream attempt, position)


class DispatchedCall(BaseModel):
    """One tool call whose arguments closed in the stream (signal ``dispatch``)."""

    attempt: int  # the call_model activity attempt that streamed it
    position: int  # 0-based place in that stream's batch
    call: ToolCall


class DispatchedCalls(BaseModel):
    """Calls that closed while the previous signal was on its way (signal
    ``dispatch_calls``): one history event for all of them."""

    calls: list[DispatchedCall]


class BatchClose(BaseModel):
    """The complete response's calls (update ``close_batch``)."""

    attempt: int
    calls: list[ToolCall] = Field(default_factory=list)
    abandon: bool = False  # the model call failed: keep what started, run nothing else
    reason: str = ""


class AbandonRequest(BaseModel):
    """The session's request to close its open turn after a failed model call."""

    turn_id: str
    reason: str = ""


class ClosedBatch(BaseModel):
    """What the turn will run: the merged batch, as the transcript must record it."""

    calls: list[ToolCall]
    # How many started-but-absent calls (orphans) were put before the final
    # response's calls: the response's position p is merged position p + prepended.
    prepended: int = 0
    # Merged positions whose call started while the model was streaming.
    started_early: list[int] = Field(default_factory=list)
    # Calls of the response that will not run because the batch was abandoned.
    dropped: int = 0


@dataclass(frozen=True)
class CallFacts:
    """What the recorded plan of one dispatched call says about starting it."""

    concurrency_safe: bool
    runs_without_approval: bool  # allowed by the policy and not settled without running


def canonical_arguments(arguments: str | dict[str, Any] | None) -> str:
    """Arguments in one comparable form: OpenAI sends JSON text, Anthropic an
    object; unparseable text compares as itself."""
    value: Any = arguments
    if isinstance(arguments, str):
        try:
            value = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            return "text:" + arguments
    if value is None:
        value = {}
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def same_call(a: ToolCall, b: ToolCall) -> bool:
    return a.name == b.name and canonical_arguments(a.arguments) == canonical_arguments(b.arguments)


Outcome = Literal["new", "duplicate", "refused"]


@dataclass
class BatchBook:
    """Every dispatch of an open batch, per stream attempt, and which started."""

    streams: dict[int, dict[int, ToolCall]] = field(default_factory=dict)
    facts: dict[Key, CallFacts] = field(default_factory=dict)
    started: list[Key] = field(default_factory=list)  # in start order
    # A dispatch recognised as a call that already started (key -> started key).
    aliases: dict[Key, Key] = field(default_factory=dict)

    def accept(self, dispatched: DispatchedCall) -> Outcome:
        stream = self.streams.setdefault(dispatched.attempt, {})
        held = stream.get(dispatched.position)
        if held is not None:
            return "duplicate" if held.id == dispatched.call.id else "refused"
        if any(c.id == dispatched.call.id for c in stream.values()):
            return "refused"
        stream[dispatched.position] = dispatched.call
        return "new"

    def _same_prefix(self, a: dict[int, ToolCall], b: dict[int, ToolCall] | list[ToolCall], upto: int) -> bool:
        for q in range(upto + 1):
            left = a.get(q)
            right = (b[q] if q < len(b) else None) if isinstance(b, list) else b.get(q)
            if left is None or right is None or not same_call(left, right):
                return False
        return True

    def started_match(self, key: Key) -> Key | None:
        """The started call of an older attempt this dispatch is (same call,
        same calls before it), if any."""
        attempt, position = key
        stream = self.streams[attempt]
        for other in self.started:
            if other[0] != attempt and other[1] == position and self._same_prefix(self.streams[other[0]], stream, position):
                return other
        return None

    def may_start(self, key: Key) -> bool:
        """Planned, safe, needs no approval, and only safe calls before it."""
        attempt, position = key
        facts = self.facts.get(key)
        if facts is None or not (facts.concurrency_safe and facts.runs_without_approval):
            return False
        if key in self.started or key in self.aliases:
            return False
        for q in range(position):
            earlier = self.facts.get((attempt, q))
            if earlier is None or not earlier.concurrency_safe:
                return False
        return True

    def merge(self, close: BatchClose) -> tuple[ClosedBatch, dict[int, Key]]:
        """The merged batch and, per merged position, the started call whose
        result it takes."""
        final = [] if close.abandon else list(close.calls)
        matched: dict[int, Key] = {}
        for key in self.started:
            attempt, position = key
            if position < len(final) and position not in matched and self._same_prefix(self.streams[attempt], final, position):
                matched[position] = key
        orphans = [k for k in self.started if k not in matched.values()]
        merged: list[ToolCall] = [self.streams[a][p] for a, p in orphans]
        origin: dict[int, Key] = {i: k for i, k in enumerate(orphans)}
        offset = len(orphans)
        for position, call in enumerate(final):
            key = matched.get(position)
            if key is not None:
                call = call.model_copy(update={"id": self.streams[key[0]][key[1]].id})
                origin[offset + position] = key
            merged.append(call)
        return (
            ClosedBatch(calls=merged, prepended=offset, started_early=sorted(origin)),
            origin,
        )
