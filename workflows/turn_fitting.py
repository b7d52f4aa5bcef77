"""A turn result too large for one payload (thousands of calls) would fail the
workflow task for ever and lose every result: it is written to the
workspace's artifacts in parts, and the turn returns a reference instead."""

from __future__ import annotations

import hashlib
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from activities.turn_results import ResultPart
    from core.contracts import TurnInput, TurnResult
    from core.names import SAVE_RESULT_PART_ACTIVITY
    from workflows.activity_options import LOCAL_START_TO_CLOSE

# A workflow result above this is offloaded (Temporal's limit is 2 MiB); parts
# of at most this many characters (<= 1 MiB of UTF-8) are activity inputs.
RESULT_BUDGET_BYTES = 1536 * 1024
RESULT_PART_CHARS = 256 * 1024
PART_RETRY = RetryPolicy(maximum_attempts=3)


async def fitted(result: TurnResult, turn: TurnInput, runs_locally: bool) -> TurnResult:
    """``result`` itself when it fits; otherwise a reference to its parts."""
    text = result.model_dump_json()
    if len(text.encode("utf-8", "surrogatepass")) <= RESULT_BUDGET_BYTES:
        return result
    folder = ""
    for index, start in enumerate(range(0, len(text), RESULT_PART_CHARS)):
        part = ResultPart(
            workspace_root=turn.workspace.root,
            turn_id=turn.turn_id,
            index=index,
            text=text[start : start + RESULT_PART_CHARS],
        )
        # One at a time: each part is its own workflow task, so no single
        # completion carries more than one part.
        if runs_locally:
            folder = await workflow.execute_local_activity(
                SAVE_RESULT_PART_ACTIVITY, part, result_type=str,
                start_to_close_timeout=LOCAL_START_TO_CLOSE, retry_policy=PART_RETRY,
            )
        else:
            folder = await workflow.execute_activity(
                SAVE_RESULT_PART_ACTIVITY, part, result_type=str,
                task_queue=turn.workspace.task_queue,
                start_to_close_timeout=timedelta(seconds=60), retry_policy=PART_RETRY,
            )
    counts: dict[str, int] = {}
    for r in result.results:
        counts[r.status.value] = counts.get(r.status.value, 0) + 1
    return result.model_copy(
        update={
            "results": [],
            "messages": [],
            "anthropic_blocks": [],
            "results_artifact": folder,
            "result_counts": counts,
            "results_digest": hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(),
        }
    )
