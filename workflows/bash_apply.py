"""Bash in two halves: a command's changeset is applied only by the digest the
turn's history holds.

A bash call of a turn with the baseline runs ``journal_only``: the command
runs captured, its changeset is journaled in the worker's state folder, and
its result (recorded in the history) carries the changeset's digest
(``txn_digest``). The turn then runs ``bash_apply_journal`` with that digest:
the journal is applied only if it is that changeset, every content re-hashed
while it is copied in. A retry of the first half never trusts what an earlier
attempt left (the history holds no digest of it): it discards it and runs
the command again, which is safe because the first half never touches the
workspace. A retry of the second half finishes the apply (it is idempotent).
"""

from __future__ import annotations

from typing import Awaitable, Callable

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from core.contracts import ToolRequest, ToolResult
    from core.names import APPLY_JOURNAL_ACTIVITY
    from core.tools.formatting import with_applied_changes
    from core.tools.specs import BASH
    from workflows.activity_options import APPLY_JOURNAL_OPTIONS, ToolActivityOptions

JOURNALED = "journaled"  # = activities.txn.api: capture status of a journal-only run

Run = Callable[[ToolRequest, ToolActivityOptions], Awaitable[ToolResult]]


def journal_only(request: ToolRequest) -> bool:
    """Which bash requests of a baseline turn run as the first half: all but
    an approved preview's, which already applies by its recorded digest."""
    return request.tool == BASH and not request.txn_digest


async def applied(request: ToolRequest, result: ToolResult, run: Run) -> ToolResult:
    """``result`` with its journaled changes applied (or why not)."""
    if result.metadata.get("capture") != JOURNALED:
        return result
    second = request.model_copy(update={
        "tool": APPLY_JOURNAL_ACTIVITY, "journal_only": False, "gate": None,
        "txn_digest": result.metadata.get("txn_digest", ""),
    })
    return with_applied_changes(result, await run(second, APPLY_JOURNAL_OPTIONS))
