"""The effect gate, the turn's side: a second, durable pause point at a call.

A bash call runs with an ``EffectGate`` in its request: ``effects`` for a call
the plan marked ``by_effects`` (under ask-writes it asks only because it may
write or runs project code: it runs captured before approval, and a changeset
of caches alone is applied with no pause), ``destructive`` for every other
bash call that may write (a changeset destructive by effect pauses in every
mode, ``auto`` included). The activity keeps a stopped changeset unapplied
(``capture=gated``); the turn then pauses at that call with the same
approve/reject signals and ``decide`` update, the pending call showing the
changeset, and a digest bound to it. Approval runs the bash call again
without a gate: it finds the kept changeset and applies exactly it, or
reports it stale. Rejection discards it.

When the batch pauses anyway (another call asks for another reason), the
``by_effects`` calls stay in it: one decision for the person, after which they
keep only the destructive check. A call a person approved in the whole-batch
pause after being told it was destructive is not stopped again.

Behind patch ``effect-gate`` (and the policy's ``effect_gate``)."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from typing import Awaitable, Callable, Protocol

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from core.contracts import DecisionRecord, EffectGate, PendingCall, PlannedCall, Policy, ToolRequest, ToolResult
    from core.tools.formatting import denied_result
    from core.tools.specs import BASH
    from core.turn.effects import DESTRUCTIVE, EFFECTS
    from core.names import DISCARD_PREVIEW_ACTIVITY, EFFECT_GATE_PATCH  # noqa: F401 - EFFECT_GATE_PATCH re-exported

DISCARD_ACTIVITY = DISCARD_PREVIEW_ACTIVITY
ASK_FIRST = "ask-first"  # = activities.bash.tool.GATE_ASK_FIRST


class PausingTurn(Protocol):
    """What the gate needs from the turn."""

    async def pause_at_call(self, pending: PendingCall, digest: str) -> DecisionRecord: ...


def deferred(pending: list[PendingCall], calls: list[PlannedCall]) -> list[PendingCall]:
    """The whole-batch pending list: empty when every call in it is settled
    by its effects (they run first, each pausing only if it changed files);
    otherwise unchanged, so a person decides once for the batch that pauses
    anyway, and the approved calls keep only the destructive check."""
    by_effects = {c.index for c in calls if c.by_effects}
    return [] if all(p.index in by_effects for p in pending) else pending


DETAILS_PREVIEW_LINES = 60


def call_digest(batch_digest: str, call_id: str, changes_digest: str) -> str:
    return hashlib.sha256(f"{batch_digest}\0{call_id}\0{changes_digest}".encode()).hexdigest()


class TurnGate:
    def __init__(self, turn: PausingTurn, policy: Policy, batch_digest: str, task_queue: str,
                 bind_digest: bool = False) -> None:
        self.turn = turn
        # The approved run applies only the changeset whose digest the gated
        # result recorded (turns with the baseline; before, whatever was kept).
        self.bind_digest = bind_digest
        self.policy = policy
        self.batch_digest = batch_digest
        self.task_queue = task_queue

    @staticmethod
    def wanted(calls: list[PlannedCall]) -> bool:
        """Only a turn with a bash call that may write has anything to gate
        (read-only turns record no patch marker)."""
        return any(c.name == BASH and c.verdict not in (None, "allow") and c.early_result is None for c in calls)

    def gate_for(self, call: PlannedCall, approved_in_batch: bool) -> EffectGate | None:
        if call.name != BASH or call.verdict == "allow":
            return None
        if call.by_effects and not approved_in_batch:
            mode = EFFECTS
        elif approved_in_batch and call.reason.startswith("destructive"):
            return None  # the person approved it knowing it was destructive
        else:
            mode = DESTRUCTIVE
        p = self.policy
        return EffectGate(mode=mode, cache_paths=list(p.cache_paths or []), max_files=p.effect_max_files,
                          max_bytes=p.effect_max_bytes)

    async def settle(self, call: PlannedCall, request: ToolRequest, result: ToolResult,
                     run: Callable[[ToolRequest], Awaitable[ToolResult]]) -> ToolResult:
        """The call's result, after a pause at it when its effects ask for one."""
        meta = result.metadata
        ask_first = meta.get("gate") == ASK_FIRST
        if meta.get("capture") != "gated" and not ask_first:
            return result
        if ask_first:
            reason = f"{call.reason} ({result.output})"
            shown = ""
        else:
            reason = meta.get("gate_reason", "") or "its changes need approval"
            shown = f"Ran captured (exit code {meta.get('exit_code', '?')}); nothing applied yet.\n{result.output}"
        pending = PendingCall(index=call.index, tool_call_id=call.call_id, name=call.name,
                              arguments=request.arguments, reason=reason, preview=shown)
        digest = call_digest(self.batch_digest, call.call_id, meta.get("gate_digest", ASK_FIRST))
        decision = await self.turn.pause_at_call(pending, digest)
        if decision.approve:
            update: dict = {"gate": None}
            if self.bind_digest:
                update.update(journal_only=False, txn_digest=meta.get("txn_digest", ""))
            approved = await run(request.model_copy(update=update))
            approved.metadata.update(gate_approver=decision.approver, gate_digest=meta.get("gate_digest", ""))
            return approved
        if not ask_first:
            try:
                await workflow.execute_activity(
                    DISCARD_ACTIVITY, request, task_queue=self.task_queue,
                    start_to_close_timeout=timedelta(seconds=60), retry_policy=RetryPolicy(maximum_attempts=3),
                )
            except ActivityError as err:
                workflow.logger.warning("could not discard the kept changes of %s: %s", call.call_id, err)
        denied = denied_result(call.call_id, call.name, decision.approver, decision.reason)
        if not ask_first:
            denied.output = (
                f"Denied by {decision.approver}" + (f": {decision.reason}" if decision.reason else "")
                + ". The command ran in a throwaway copy of the workspace; none of its changes were applied "
                "(its output is withheld: the person rejected it)."
            )
        denied.metadata.update(gate="rejected", gate_digest=meta.get("gate_digest", ""))
        return denied
