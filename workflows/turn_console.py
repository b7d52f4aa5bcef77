"""How a turn shows itself outside the worker: its ``status`` query's answer,
the memo ``agent-turn pending``
reads, the search attributes the Web UI list and ``temporal workflow list -q``
filter on, and the Web UI's current details (markdown: what each waiting call
will do, the short digest, a decision that was ignored and why).

Search attributes are upserted only by turns started with ``AgentWorkspace``
set (the client sets it when the server has the attributes registered), so a
server without them never sees an upsert it would refuse.
"""

from __future__ import annotations

from typing import Any, Protocol, Sequence

from temporalio import workflow
from temporalio.common import SearchAttributeKey, TypedSearchAttributes

with workflow.unsafe.imports_passed_through():
    import core.tools.display  # noqa: F401 - used by the review functions, imported lazily there
    import core.tools.review  # noqa: F401
    from core.contracts import CallProgress, PlannedCall, TurnProgress, TurnStatus
    from core.names import SEARCH_ATTRIBUTES_PATCH
    from core.turn.details import finished_details, pending_details



class VisibleTurn(Protocol):
    """What this module reads of a turn (the turn's own state, read-only)."""

    _turn: Any  # TurnInput
    _status: Any  # TurnStatus
    _digest: str
    _calls: Sequence[Any]  # the planned calls
    _pending: Sequence[Any]  # PendingCall
    _decision: Any  # DecisionRecord | None
    _ignored: str
    _versions: Any  # workflows.versions.Versions
    _results: dict[int, Any]  # index -> ToolResult
    _running: Any  # the indices running now
    _dispatch: Any  # workflows.turn_dispatch.TurnDispatch | None
    _plan: Any  # TurnPlan | None

TURN_STATUS_KEY = SearchAttributeKey.for_keyword("AgentTurnStatus")
WORKSPACE_KEY = SearchAttributeKey.for_keyword("AgentWorkspace")


def publish(wf: VisibleTurn) -> None:
    workflow.upsert_memo({"turn_status": wf._status.value, "batch_digest": wf._digest})
    started_with = workflow.info().typed_search_attributes.get(WORKSPACE_KEY)
    if started_with is not None and wf._versions.has(SEARCH_ATTRIBUTES_PATCH):
        current = workflow.info().typed_search_attributes.get(TURN_STATUS_KEY)
        if current != wf._status.value:
            workflow.upsert_search_attributes([TURN_STATUS_KEY.value_set(wf._status.value)])
    if wf._status == TurnStatus.PAUSED:
        # Not recorded on replay (the SDK's workflow meter skips it).
        workflow.metric_meter().create_counter("agent_turns_paused", "turns that paused for approval").add(1)
    workflow.set_current_details(details(wf))


def child_turn_attributes() -> TypedSearchAttributes | None:
    """The attributes a session gives the turns it starts: its own workspace,
    and "running" (None when the session was started without them: the
    server has them not registered, or an older client started it)."""
    root = workflow.info().typed_search_attributes.get(WORKSPACE_KEY)
    if root is None:
        return None
    return TypedSearchAttributes([TURN_STATUS_KEY.value_set("running"), WORKSPACE_KEY.value_set(root)])


def details(wf: VisibleTurn) -> str:
    if wf._status == TurnStatus.PAUSED:
        verdicts = {c.index: (c.verdict or "ask", c.reason) for c in wf._calls}
        return pending_details(wf._turn.turn_id, wf._pending, wf._digest, verdicts, wf._ignored)
    return finished_details(wf._status.value, wf._decision, wf._ignored)


def progress(wf: VisibleTurn) -> TurnProgress:
    """The ``status`` query's answer: each call's state, the decision."""
    calls = []
    # While the plan is being recorded, every call of the input is pending.
    listed = wf._calls or [PlannedCall(index=i, call_id=c.id, name=c.name) for i, c in enumerate(wf._turn.tool_calls)]
    for p in listed:
        result = wf._results.get(p.index)
        state = "done" if result else ("running" if p.index in wf._running else "pending")
        calls.append(CallProgress(index=p.index, tool_call_id=p.call_id, name=p.name, state=state,
                                  status=result.status if result else None))
    if wf._dispatch is not None and wf._plan is None:  # calls running early
        calls = wf._dispatch.progress()
    return TurnProgress(
        turn_id=wf._turn.turn_id,
        status=wf._status,
        batch_digest=wf._digest,
        pending=list(wf._pending) if wf._status == TurnStatus.PAUSED else [],
        calls=calls,
        decision=wf._decision,
        ignored_decision=wf._ignored,
    )
