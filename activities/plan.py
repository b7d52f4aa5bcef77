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
import os
from typing import Any, Callable

from pydantic import BaseModel
from temporalio import activity
from temporalio.exceptions import ApplicationError

import core.turn.policy as policy_module
import core.shell as shell_validator
from activities.files.review import with_reviews
from activities.workspace.host_links import host_run_links, landing
from core.turn import host_files
from core.contracts import Policy, ToolCall, TurnPlan
import core.turn.planning as planning
from core.turn.planning import make_plan, planned_arguments
from core.names import PLAN_TURN_ACTIVITY
from core.tools.specs import TOOLS
from core.turn.effects import needs_network
from core.turn.policy import RiskDecision
from activities.sandbox.settings import network_on_approval
from core.shell import Verdict



class PlanRequest(BaseModel):
    workspace_root: str
    tool_calls: list[ToolCall]
    # None: plan with the default policy of the worker that runs the workflow.
    policy: Policy | None = None
    # The queue of the worker that holds the workspace ("": not said).
    task_queue: str = ""
    # The paths of the snapshots the turn holds (None: not said).
    snapshot_paths: list[str] | None = None
    # The turn starter's bound on a pause (TurnInput.approval_timeout_seconds).
    approval_timeout_seconds: float | None = None


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


def wrong_workspace(request: PlanRequest, allowed_root: str | None, this_queue: str) -> str | None:
    """Why a turn planned on this worker can run none of its calls here: it
    names this worker's queue for its files, but another folder."""
    if allowed_root is None or not request.task_queue or request.task_queue != this_queue:
        return None
    allowed = os.path.realpath(allowed_root)
    asked = os.path.realpath(request.workspace_root)
    if asked == allowed or asked.startswith(allowed.rstrip("/") + "/"):
        return None
    return (
        f"the worker on task queue {this_queue!r} serves the workspace {allowed}, not {request.workspace_root}; "
        "nothing was run. Start the turn on the queue of the worker that holds that folder (the default "
        "queue is derived from the folder: leave --task-queue out)"
    )


def resolved_path(workspace_root: str, path: str) -> str | None:
    """The workspace-relative real path of a file tool's ``path``, symlinks
    followed (through the nearest existing folder; nothing is opened for
    writing); None outside the workspace (the tool refuses it)."""
    root = os.path.realpath(workspace_root)
    full = os.path.realpath(os.path.join(root, path.lstrip("/")) if not os.path.isabs(path) else path)
    if not full.startswith(root.rstrip("/") + "/"):
        return None
    return os.path.relpath(full, root)


def resolved_git_path(workspace_root: str, path: str) -> str | None:
    """The workspace-relative real path of a file tool's ``path`` when it lies
    inside a ``.git`` folder although the path does not say so (a symlink on
    the way, e.g. ``g -> .git``); None otherwise."""
    if policy_module.inside_git_folder(path):
        return None
    rel = resolved_path(workspace_root, path)
    return rel if rel is not None and policy_module.inside_git_folder(rel) else None


def opened_as_host_file(workspace_root: str, real: str | None, links: list[str] | None = None) -> str | None:
    """The name a tool on the person's machine opens the workspace file
    ``real`` by (relative real path) through a host-run symlink of the
    workspace (``links``: activities.workspace.host_links; ``.vscode -> cfg``
    makes ``cfg/tasks.json`` VS Code's ``.vscode/tasks.json``, ``svc/.envrc ->
    ../tools/env.sh`` makes tools/env.sh an ``.envrc``); None when no such
    link leads there."""
    if real is None:
        return None
    found = host_run_links(workspace_root) if links is None else links
    for name, lands in landing(workspace_root, found):
        opened = host_files.opened_name(real, name, lands)
        if opened and host_files.host_run(opened):
            return opened
    return None


def resolving_risk(decide: Callable[..., RiskDecision], workspace_root: str) -> Callable[..., RiskDecision]:
    """``decide`` judging a file tool by where its path really leads: a path
    that reaches .git through a symlink asks in every mode, shown as the
    .git change it is; so does a write of a file a tool on the person's
    machine runs by itself, named or reached through a symlink."""

    links: list[list[str]] = []  # the workspace's host-run links, walked once, at the first write

    def risk(tool: str, policy: Policy, bash: Verdict | None = None, path: str | None = None) -> RiskDecision:
        spec = TOOLS.get(tool)
        written = path if path is not None and spec is not None and spec.writes else None
        real = resolved_git_path(workspace_root, written) if written is not None else None
        decision = planning.decide_with_path(decide, tool, policy, bash, path if real is None else real)
        if decision.action == "deny":
            return decision
        if real is None:
            lands = None if written is None else resolved_path(workspace_root, written)
            if written is not None and not links:
                links.append(host_run_links(workspace_root))
            host = None if written is None else policy_module.host_file_risk(
                tool, written, lands, opened_as_host_file(workspace_root, lands, links[0]))
            return host or decision
        why = decision.reason if decision.action == "ask" and ".git" in decision.reason else (
            f"{tool} writes inside .git: hooks and config there run programs (asks in every mode)")
        return RiskDecision("ask", f"{path!r} leads to {real!r} through a symbolic link: {why}")

    return risk


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
        if needs_network(reasons, [p.argv for p in parts]):
            c.network, c.by_effects, c.action = True, False, "ask"
            c.reason = f"needs network: {'; '.join(r for r in reasons if r)}"


def build_plan_activity(default_policy: Policy, build_id: str = "", allowed_root: str | None = None) -> Any:
    @activity.defn(name=PLAN_TURN_ACTIVITY)
    async def plan_turn(request: PlanRequest) -> TurnPlan:
        problem = wrong_workspace(request, allowed_root, activity.info().task_queue)
        if problem:
            # Refused whole, before anything runs: every call would fail.
            raise ApplicationError(problem, type="WrongWorkspace", non_retryable=True)
        # In a thread: validating a big batch must not stall the worker's loop.
        plan = await asyncio.to_thread(
            make_plan,
            request.tool_calls,
            policy_module.with_approval_bound(request.policy or default_policy, request.approval_timeout_seconds),
            current_validator(request.workspace_root),
            resolving_risk(current_risk(), request.workspace_root),
            build_id,
        )
        if network_on_approval():
            mark_network_calls(plan, request.tool_calls, current_validator(request.workspace_root))
        if request.task_queue != activity.info().task_queue:
            return plan  # the workflow runs apart from the files: no review diff from here
        return await asyncio.to_thread(
            with_reviews, plan, request.workspace_root, request.tool_calls, request.snapshot_paths
        )

    return plan_turn
