"""Temporal's size limits, checked before a turn is started. Pure.

The server refuses a start whose input crosses the payload limit with "Blob
data size exceeds limit" and names nothing; a user needs to hear which calls
are too big and what to do. The workflow enforces the call count too (for
starters that skip this check).
"""

from __future__ import annotations

import json

from core.contracts import ToolCall

# Temporal's defaults: 2 MiB per payload (blob), 4 MB per gRPC message.
PAYLOAD_LIMIT_BYTES = 2 * 1024 * 1024
GRPC_MESSAGE_LIMIT_BYTES = 4 * 1000 * 1000
# The start request carries the input plus headers, memo and ids.
START_INPUT_BUDGET_BYTES = PAYLOAD_LIMIT_BYTES - 64 * 1024
# A recorded plan is ~200 bytes per call and must stay one payload; results of
# this many calls are offloaded to an artifact when they would not fit.
MAX_CALLS_PER_TURN = 5000


class LimitExceeded(ValueError):
    """The batch cannot be started as one turn: the message names the calls
    and sizes and says what to do."""


def call_size(call: ToolCall) -> int:
    return len(json.dumps(call.model_dump(mode="json"), ensure_ascii=False).encode())


def check_batch(calls: list[ToolCall]) -> None:
    if len(calls) > MAX_CALLS_PER_TURN:
        raise LimitExceeded(
            f"the batch has {len(calls):,} tool calls; one turn takes at most {MAX_CALLS_PER_TURN:,}. "
            f"Split it into turns of at most {MAX_CALLS_PER_TURN:,} calls (in order, each turn's snapshots "
            "passed to the next)."
        )
    sizes = [call_size(c) for c in calls]
    total = sum(sizes)
    if total <= START_INPUT_BUDGET_BYTES:
        return
    largest = sorted(range(len(calls)), key=lambda i: -sizes[i])[:5]
    named = ", ".join(f"#{i + 1} {calls[i].name} ({calls[i].id}) {sizes[i]:,} bytes" for i in largest)
    raise LimitExceeded(
        f"the batch's arguments total {total:,} bytes; Temporal takes at most {PAYLOAD_LIMIT_BYTES:,} bytes "
        f"per payload (2 MiB), so this turn cannot start. Largest calls: {named}. Send big file contents in "
        "parts (write_file a first part, then edit_file to add the rest) or spread the calls over several turns."
    )
