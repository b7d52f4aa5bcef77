"""Which decision a turn accepts: the checks of the ``approve``/``reject``
signals and the ``decide`` update, kept out of the workflow class.

A decision counts only for exactly what the turn is waiting on: the batch it
is paused at (or, while the plan is being recorded, the batch that plan is
for), or the one call the effect gate paused at.

An open batch (streaming dispatch) has no batch to decide until it closes:
its digest until then is the empty batch's, which anyone can compute, so a
decision naming it would approve whatever calls arrive later. Such turns
(behind patch ``decision-integrity``) refuse every decision until the batch
closed and the turn took the closed batch's digest.

A decision that named the batch while its plan was being recorded is that
batch's decision, as if the turn had paused for it: the effect gate then
does not take the batch over (it would run the calls a person rejected, each
pausing only on its changes, and record a rejection that stopped nothing).
"""

from __future__ import annotations

from typing import Any, Protocol

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from core.contracts import ApprovalDecision, TurnStatus
    from core.names import SHORT_DIGEST_PATCH
    from core.tools.specs import BASH


class DecidingTurn(Protocol):
    """What these checks read of a turn."""

    _turn: Any  # TurnInput
    _status: Any  # TurnStatus
    _digest: str
    _plan: Any  # TurnPlan | None
    _recorded: bool
    _decision: Any  # DecisionRecord | None
    _versions: Any  # workflows.versions.Versions
    _batch_open: bool  # an open batch whose closed batch the turn has not taken yet (patched)
    _strict_decisions: bool  # the run has patch decision-integrity


def decision_problem(turn: DecidingTurn, decision: ApprovalDecision, short_ok: bool = False) -> str | None:
    """Why ``decision`` cannot be accepted now, or None."""
    if turn._batch_open:
        return f"turn {turn._turn.turn_id} is still receiving its calls; there is no batch to decide yet"
    planning = turn._recorded and turn._plan is None
    # While the plan is being recorded, a decision that names this batch
    # is kept (it may have come with the very first workflow task); it
    # takes effect if the plan asks for approval.
    if not planning and turn._status != TurnStatus.PAUSED:
        return f"turn {turn._turn.turn_id} is not waiting for approval (status {turn._status.value})"
    if turn._decision is not None:
        return f"turn {turn._turn.turn_id} was already decided by {turn._decision.approver}"
    if decision.batch_digest != turn._digest and not (
        short_ok
        and len(decision.batch_digest) >= 12
        and turn._digest.startswith(decision.batch_digest)
        and turn._versions.has(SHORT_DIGEST_PATCH)  # the short digest the details show
    ):
        return (
            f"batch digest {decision.batch_digest!r} does not match the pending batch "
            f"({turn._digest}); fetch the current digest with the status query"
        )
    return None


def holds_batch_decision(turn: DecidingTurn) -> bool:
    """A decision kept from planning decides the batch (not the effect gate)."""
    return turn._strict_decisions and turn._decision is not None


def strict_decisions_wanted(turn_input: Any) -> bool:
    """Only an open batch and a batch with a bash call (the effect gate) have
    anything these rules change."""
    return bool(turn_input.open_batch or any(c.name == BASH for c in turn_input.tool_calls))
