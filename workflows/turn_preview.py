"""Preview before approval, the turn's side.

With ``Policy.preview_bash`` a paused turn first runs its previewable
``ask`` bash call in a throwaway copy-on-write view (activity
``bash_preview``); the pending call's ``preview`` then holds the command's
output and the diff of what it would change. Approving runs the bash
activity as usual, which finds the preview (txn.start -> "previewed") and
applies exactly that changeset, no second run, or reports it stale (the
workspace changed since: an error result telling the model to run it again).
Rejecting discards it (activity ``bash_discard_preview``).

Which call is previewed: the first call of the turn that changes the
workspace, if it is a bash call waiting for approval. A later one would see
a workspace its predecessors have not changed yet, so its preview would be
stale by the time it is applied; those are not previewed.

Behind patch ``bash-preview`` (and only for turns whose policy asks for it)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Protocol

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from core.names import BASH_PREVIEW_ACTIVITY, DISCARD_PREVIEW_ACTIVITY, PREVIEW_PATCH
    from core.contracts import PendingCall, PlannedCall, Policy, ToolRequest, ToolResult, ToolStatus, TurnInput
    from core.tools.specs import BASH, TOOLS
    from workflows.activity_options import HEARTBEAT_TIMEOUT, options_for
    from workflows.versions import Versions


class PreviewedTurn(Protocol):
    """What the previews read of the turn (the turn workflow has these)."""

    _turn: TurnInput
    _recorded: bool
    _versions: Versions
    _policy: Policy
    _pending: list[PendingCall]
    @property
    def _calls(self) -> list[PlannedCall]: ...
    _results: dict[int, ToolResult]

    def _arguments(self, call: PlannedCall) -> dict[str, Any]: ...


RUNNING_TEXT = "(preview running: the command runs in a throwaway copy of the workspace)"


def _writes(call: PlannedCall) -> bool:
    if call.early_result is not None:
        return False
    # A tool that writes, unless it is a command the validator judged read-only.
    return TOOLS[call.name].writes and call.verdict != "allow"


def previewable(calls: list[PlannedCall]) -> PlannedCall | None:
    """The call to preview: the turn's first writer, if it is an ask bash call."""
    for c in sorted(calls, key=lambda c: c.index):
        if _writes(c):
            return c if c.name == BASH and c.needs_approval and c.verdict == "ask" else None
    return None


class TurnPreviews:
    """The previews of one turn (at most one call today, see the module doc)."""

    def __init__(self, turn: PreviewedTurn) -> None:
        self.turn = turn
        self.previewed: list[PlannedCall] = []

    def wanted(self) -> bool:
        t = self.turn
        return bool(t._recorded and t._policy.preview_bash and t._pending) and t._versions.has(PREVIEW_PATCH)

    def _request(self, call: PlannedCall) -> ToolRequest:
        t = self.turn
        return ToolRequest(call_id=call.call_id, tool=BASH, workspace_root=t._turn.workspace.root,
                           arguments=t._arguments(call), turn_id=t._turn.turn_id)

    async def run_previews(self) -> None:
        """Before the turn waits for its decision."""
        call = previewable(self.turn._calls)
        pending = next((p for p in self.turn._pending if call is not None and p.index == call.index), None)
        if call is None or pending is None:
            return
        pending.preview = RUNNING_TEXT
        options = options_for(BASH, bash_timeout=call.bash_timeout_seconds)
        try:
            result = await workflow.execute_activity(
                BASH_PREVIEW_ACTIVITY, self._request(call), result_type=ToolResult,
                task_queue=self.turn._turn.workspace.task_queue, start_to_close_timeout=options.start_to_close,
                heartbeat_timeout=HEARTBEAT_TIMEOUT,
                retry_policy=RetryPolicy(maximum_attempts=3, initial_interval=timedelta(seconds=1)),
            )
        except ActivityError as err:
            pending.preview = f"(no preview: {err.cause or err})"
            return
        self.previewed.append(call)
        # Approval applies only the changeset with this digest (the one shown).
        self.turn._txn_digests[call.call_id] = result.metadata.get("txn_digest", "")
        capture = result.metadata.get("capture", "")
        head = f"Preview ({capture or 'not captured'}; exit code {result.metadata.get('exit_code', '?')}):"
        pending.preview = f"{head}\n{result.output}"

    async def discard(self, keep_applied: bool = False) -> None:
        """Rejected (or skipped after approval): drop the kept previews."""
        for call in self.previewed:
            result = self.turn._results.get(call.index)
            if keep_applied and result is not None and result.status not in (ToolStatus.SKIPPED,
                                                                              ToolStatus.CANCELLED):
                continue
            try:
                await workflow.execute_activity(
                    DISCARD_PREVIEW_ACTIVITY, self._request(call), task_queue=self.turn._turn.workspace.task_queue,
                    start_to_close_timeout=timedelta(seconds=60),
                    retry_policy=RetryPolicy(maximum_attempts=3),
                )
            except ActivityError as err:
                workflow.logger.warning("could not discard the preview of %s: %s", call.call_id, err)
