"""The planning activity: a turn's decisions, made once and recorded.

Argument repair and validation, the shell validator's verdicts, the risk
policy and stage planning are code that changes between releases. Run inside
the workflow they would be recomputed on every replay, so a worker with
tightened rules would schedule different activities for a turn already in
flight and fail its workflow task with a non-determinism error. Run here, as
a local activity, their outcome is a marker in the history: a replay on any
later build reads the plan back instead of recomputing it. CPU-heavy
validation also leaves the workflow task (whose deadlock detector fires after
2 s).

The decisions themselves stay pure functions in ``core.turn.planning``; this
module only supplies the I/O-aware validator and the worker's default policy.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable

from pydantic import BaseModel
from temporalio import activity

import core.turn.policy as policy_module
import core.shell as shell_validator
from core.contracts import Policy, ToolCall, TurnPlan
from core.turn.planning import make_plan, planned_arguments
from core.turn.effects import needs_network
from core.turn.policy import RiskDecision
from activities.sandbox.settings import network_on_approval
from core.shell import Verdict

PLAN_TURN_ACTIVITY = "plan_turn"


class PlanRequest(BaseModel):
    workspace_root: str
    tool_calls: list[ToolCall]
    # None: plan with the default policy of the worker that runs the workflow.
    policy: Policy | None = None


def current_validator(workspace_root: str) -> Callable[[str], Verdict]:
    """The validator of this build, looked up at call time (so an operator's
    or a test's replacement of ``validate_command`` is what runs): the
    workspace-aware one when the build has it, else the pure one."""
    try:
        from activities.bash import facts as command_facts  # type: ignore[attr-defined]
    except ImportError:
        return lambda command: shell_validator.validate_command(command)
    return lambda command: command_facts.validate_in_workspace(command, workspace_root)


def current_risk() -> Callable[..., RiskDecision]:
    """This build's decide_risk, looked up at call time."""
    return policy_module.decide_risk


def mark_network_calls(plan: TurnPlan, calls: list[ToolCall], validate: Callable[[str], Verdict]) -> None:
    """On a worker with network on approval: a bash call that needs the
    network asks (in every mode) with the reason "needs network", and runs
    with it once approved."""
    for c in plan.calls:
        if c.name != "bash" or c.early_result is not None or c.verdict != "ask" or c.action == "deny":
            continue
        command = planned_arguments(c, calls[c.index]).get("command", "")
        verdict = validate(str(command))
        parts = verdict.plan.all_commands() if verdict.plan is not None else []
        reasons = [getattr(p, "reason", "") for p in parts if p.verdict == "ask"] or [verdict.reason]
        if needs_network(reasons):
            c.network, c.by_effects, c.action = True, False, "ask"
            c.reason = f"needs network: {'; '.join(r for r in reasons if r)}"


def build_plan_activity(default_policy: Policy, build_id: str = "") -> Any:
    @activity.defn(name=PLAN_TURN_ACTIVITY)
    async def plan_turn(request: PlanRequest) -> TurnPlan:
        # In a thread: validating a big batch must not stall the worker's loop.
        plan = await asyncio.to_thread(
            make_plan,
            request.tool_calls,
            request.policy or default_policy,
            current_validator(request.workspace_root),
            current_risk(),
            build_id,
        )
        if network_on_approval():
            mark_network_calls(plan, request.tool_calls, current_validator(request.workspace_root))
        return plan

    return plan_turn
