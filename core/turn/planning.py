"""From a model's batch of tool calls to an execution plan. Pure.

``prepare_batch`` looks up each call's tool, parses and validates its
arguments, asks the shell validator about bash commands and the policy about
risk. Calls that cannot run (unknown tool, bad arguments, rejected command,
denied by a rule) get their error result right here, without an activity.

``plan_stages`` keeps the model's order: consecutive concurrency-safe calls
form one parallel stage; every unsafe call is a stage of its own. A read that
follows a write in the same batch therefore sees the write.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import posixpath
from dataclasses import dataclass
from typing import Any, Callable

from core.tools.arguments import input_problem, parse_tool_arguments
from core.contracts import (
    PendingCall,
    PlannedCall,
    PlannedStage,
    Policy,
    ToolCall,
    ToolResult,
    ToolStatus,
    TurnPlan,
)
from core.turn.effects import asks_for_effects
from core.turn.policy import RiskDecision, decide_risk
from core.shell import Verdict, validate_command
from core.tools.specs import TOOLS, BashArgs, ToolArgs

Validate = Callable[[str], Verdict]
DecideRisk = Callable[..., RiskDecision]


# Keeps every activity input well under Temporal's 2 MiB payload limit (the
# SDK starts warning at 512 KiB).
MAX_CALL_ARGUMENT_BYTES = 512 * 1024


@dataclass
class PreparedCall:
    index: int
    call: ToolCall
    args: ToolArgs | None
    concurrency_safe: bool
    risk: RiskDecision
    bash: Verdict | None = None
    # Set when the call is settled without running (bad input, rejection).
    early_result: ToolResult | None = None

    @property
    def needs_approval(self) -> bool:
        return self.early_result is None and self.risk.action == "ask"

    def arguments_dict(self) -> dict[str, Any]:
        return self.args.model_dump() if self.args is not None else {}


@dataclass(frozen=True)
class Stage:
    parallel: bool
    indices: tuple[int, ...]


def prepare_call(
    index: int,
    call: ToolCall,
    policy: Policy,
    validate: Validate | None = None,
    decide: DecideRisk | None = None,
) -> PreparedCall:
    """``validate`` and ``decide`` default to the pure validator and policy
    (what the workflow used before plans were recorded); the planning
    activity passes the workspace-aware validator."""
    spec = TOOLS.get(call.name)
    problem = input_problem(call.arguments) if validate is not None else None
    parsed = f"invalid arguments for {call.name}: {problem}" if problem else parse_tool_arguments(call.name, call.arguments)
    if isinstance(parsed, str):
        # Unknown tools and invalid bash/write/edit arguments count as failed
        # unsafe calls: the model meant an action that did not happen, so
        # later unsafe calls that may depend on it must not run.
        safe = spec is not None and not spec.writes
        return PreparedCall(
            index,
            call,
            None,
            safe,
            RiskDecision("allow", "not run: invalid call"),
            early_result=ToolResult.error(call.id, call.name, parsed),
        )
    assert spec is not None
    size = len(json.dumps(parsed.model_dump(), ensure_ascii=False).encode())
    if size > MAX_CALL_ARGUMENT_BYTES:
        return PreparedCall(
            index,
            call,
            None,
            not spec.writes,
            RiskDecision("allow", "not run: too large"),
            early_result=ToolResult.error(
                call.id,
                call.name,
                f"{call.name} arguments are too large ({size:,} bytes; one call may carry at most "
                f"{MAX_CALL_ARGUMENT_BYTES:,}, to stay clear of Temporal's 2 MiB payload limit). "
                "Send the content in parts: write_file a first part, then add the rest with edit_file calls.",
            ),
        )
    if validate is None:
        verdict = validate_command(parsed.command) if isinstance(parsed, BashArgs) else None
        risk = decide_risk(call.name, policy, verdict)
        safe = spec.concurrency_safe(parsed)
    else:
        verdict = validate(parsed.command) if isinstance(parsed, BashArgs) else None
        risk = decide_with_path(decide or decide_risk, call.name, policy, verdict, getattr(parsed, "path", None))
        safe = verdict.verdict == "allow" if verdict is not None else spec.concurrency_safe(parsed)
    prepared = PreparedCall(index, call, parsed, safe, risk, verdict)
    if verdict is not None and verdict.verdict == "reject":
        text = f"Command rejected: {verdict.reason}"
        if verdict.hint:
            text += f"\nInstead: {verdict.hint}"
        prepared.early_result = ToolResult.error(
            call.id, call.name, text, metadata={"verdict": "reject"}
        )
    elif risk.action == "deny":
        prepared.early_result = ToolResult.error(
            call.id,
            call.name,
            f"Denied by policy ({risk.reason}); this call was not run.",
            status=ToolStatus.DENIED,
        )
    return prepared


def decide_with_path(
    decide: DecideRisk, tool: str, policy: Policy, verdict: Verdict | None, path: str | None
) -> RiskDecision:
    """Pass the file tool's path to a policy that takes it (writes into
    ``.git/hooks`` ask in every mode there), and not to one that does not."""
    if "path" in inspect.signature(decide).parameters:
        return decide(tool, policy, bash=verdict, path=path)
    return decide(tool, policy, verdict)


def prepare_batch(calls: list[ToolCall], policy: Policy) -> list[PreparedCall]:
    return [prepare_call(i, call, policy) for i, call in enumerate(calls)]


# A parallel stage of more calls than this runs in waves: each wave's results
# are committed to history before the next starts, so no single workflow task
# completion nears Temporal's 4 MB gRPC message limit (local activities record
# every result in the completion that ends the task).
MAX_WAVE_CALLS = 200


def plan_stages(prepared: list[PreparedCall]) -> list[Stage]:
    stages: list[Stage] = []
    run: list[int] = []
    for item in prepared:
        if item.concurrency_safe:
            run.append(item.index)
            continue
        if run:
            stages.append(Stage(True, tuple(run)))
            run = []
        stages.append(Stage(False, (item.index,)))
    if run:
        stages.append(Stage(True, tuple(run)))
    return stages


def planned_call(p: PreparedCall, keep_arguments: bool = False) -> PlannedCall:
    """A prepared call as recorded data. The arguments are kept only when the
    model's own ones do not decode to the same object (repaired JSON), or when
    ``keep_arguments`` asks for them (the pre-recording path sent them so)."""
    arguments: dict[str, Any] | None = None
    if p.args is not None:
        own = p.call.arguments
        if isinstance(own, str):
            try:
                own = json.loads(own) if own else {}
            except (ValueError, RecursionError):
                own = None
        elif own is None:
            own = {}
        if keep_arguments or not isinstance(own, dict):
            arguments = p.arguments_dict()
    return PlannedCall(
        index=p.index,
        call_id=p.call.id,
        name=p.call.name,
        arguments=arguments,
        concurrency_safe=p.concurrency_safe,
        action=p.risk.action,
        reason=p.risk.reason,
        verdict=p.bash.verdict if p.bash is not None else None,
        bash_timeout_seconds=p.args.timeout_seconds if isinstance(p.args, BashArgs) else None,
        path=call_path(p),
        early_result=p.early_result,
    )


def settled_by_effects(p: PreparedCall, policy: Policy) -> bool:
    """A bash call that asks under ask-writes only because it may write or
    runs project code (the mode's own reason, every asking part's validator
    reason of that kind): it runs captured first and its changeset decides."""
    if not (policy.effect_gate and policy.mode == "ask-writes" and p.needs_approval and p.bash is not None):
        return False
    if p.bash.verdict != "ask" or p.bash.destructive or p.risk.reason.startswith(("policy", "destructive")):
        return False
    parts = p.bash.plan.all_commands() if p.bash.plan is not None else []
    reasons = [getattr(c, "reason", "") for c in parts if c.verdict == "ask"] or [p.bash.reason]
    return asks_for_effects(reasons)


def _by_effects(call: PlannedCall, p: PreparedCall, policy: Policy, recorded: bool) -> PlannedCall:
    if recorded and settled_by_effects(p, policy):
        call.by_effects = True
    return call


def plan_from_prepared(
    calls: list[ToolCall], prepared: list[PreparedCall], policy: Policy, *, recorded: bool, planned_by: str = ""
) -> TurnPlan:
    """``recorded=False`` reproduces exactly what turns did before plans were
    recorded (no waves, full arguments): the path old histories replay on."""
    stages = plan_stages(prepared)
    return TurnPlan(
        batch_digest=batch_digest(calls),
        policy=policy,
        calls=[_by_effects(planned_call(p, keep_arguments=not recorded), p, policy, recorded) for p in prepared],
        stages=[PlannedStage(parallel=s.parallel, indices=list(s.indices)) for s in (waves(stages) if recorded else stages)],
        planned_by=planned_by,
    )


def make_plan(
    calls: list[ToolCall],
    policy: Policy,
    validate: Validate,
    decide: DecideRisk | None = None,
    planned_by: str = "",
) -> TurnPlan:
    """The whole turn's decisions as data: what the planning activity records.
    A call whose planning raises (a bug, an input nobody foresaw) is settled
    as an error result; the rest of the batch is planned normally."""
    prepared: list[PreparedCall] = []
    shared = shared_ids(calls)
    for i, call in enumerate(calls):
        if call.id in shared:
            prepared.append(_refused_shared_id(i, call, shared[call.id]))
            continue
        if input_problem(call.id) or input_problem(call.name):
            # Only a starter that bypasses the client can send this; echoing
            # the id raw would make the turn's result unencodable for ever.
            call = ToolCall(id=ascii(call.id)[1:-1], name=ascii(call.name)[1:-1], arguments=None)
            prepared.append(
                PreparedCall(
                    i,
                    call,
                    None,
                    False,
                    RiskDecision("allow", "not run: invalid call"),
                    early_result=ToolResult.error(
                        call.id, call.name, "this call's id or tool name is not valid Unicode text; it was not run"
                    ),
                )
            )
            continue
        try:
            prepared.append(prepare_call(i, call, policy, validate, decide))
        except Exception as exc:  # noqa: BLE001 - one bad call must not wedge the turn
            spec = TOOLS.get(call.name)
            prepared.append(
                PreparedCall(
                    i,
                    call,
                    None,
                    spec is not None and not spec.writes,
                    RiskDecision("allow", "not run: planning failed"),
                    early_result=ToolResult.error(
                        call.id,
                        call.name,
                        f"this call could not be planned ({type(exc).__name__}: {ascii(str(exc))[1:-1][:300]}); "
                        "it was not run. Check its arguments and send it again.",
                        metadata={"failure": "planning"},
                    ),
                )
            )
    return plan_from_prepared(calls, prepared, policy, recorded=True, planned_by=planned_by)


def shared_ids(calls: list[ToolCall]) -> dict[str, list[int]]:
    """Each id used by more than one call of the batch, with those calls' positions."""
    positions: dict[str, list[int]] = {}
    for i, call in enumerate(calls):
        positions.setdefault(call.id, []).append(i)
    return {k: v for k, v in positions.items() if len(v) > 1}


def _refused_shared_id(index: int, call: ToolCall, positions: list[int]) -> PreparedCall:
    """A call whose id another call of the batch also uses. Results, the
    applied-calls journal and approvals are matched to calls by id, so one
    would be answered with the other's result: none of them runs. Counted as a
    failed unsafe call, like any call that could not run as meant. (In a
    streamed batch a call that started early may be one of them; only reads
    start early, so what it did is nothing the answer hides.)"""
    where = ", ".join(str(p) for p in positions[:-1]) + f" and {positions[-1]}"
    call = ToolCall(id=_encodable(call.id), name=_encodable(call.name), arguments=call.arguments)
    return PreparedCall(
        index,
        call,
        None,
        False,
        RiskDecision("allow", "not run: id shared"),
        early_result=ToolResult.error(
            call.id,
            call.name,
            f"tool call id {call.id!r} is used by calls {where} of this batch; each call needs its own id "
            "(results are matched to calls by id), so none of them was run. Send them again with distinct ids.",
        ),
    )


def _encodable(text: str) -> str:
    """``text``, escaped when it is not valid Unicode (a lone surrogate would
    make the turn's result unencodable for ever)."""
    return ascii(text)[1:-1] if input_problem(text) else text


def waves(stages: list[Stage], size: int = MAX_WAVE_CALLS) -> list[Stage]:
    out: list[Stage] = []
    for stage in stages:
        if not stage.parallel or len(stage.indices) <= size:
            out.append(stage)
            continue
        out.extend(Stage(True, stage.indices[i : i + size]) for i in range(0, len(stage.indices), size))
    return out


def planned_pending(plan: TurnPlan, arguments: Callable[[PlannedCall], dict[str, Any]]) -> list[PendingCall]:
    return [
        PendingCall(
            index=c.index, tool_call_id=c.call_id, name=c.name, arguments=arguments(c), reason=c.reason,
            review=c.review,
        )
        for c in plan.calls
        if c.needs_approval
    ]


def planned_arguments(plan_call: PlannedCall, call: ToolCall) -> dict[str, Any]:
    """The arguments an activity receives for a planned call."""
    if plan_call.arguments is not None:
        return plan_call.arguments
    raw = call.arguments
    if isinstance(raw, dict):
        return raw
    if not raw:
        return {}
    value = json.loads(raw)
    return value if isinstance(value, dict) else {}


def batch_digest(calls: list[ToolCall]) -> str:
    """sha256 over the canonical form of the calls: an approval names exactly
    the batch it approves."""
    canonical = [
        {"id": c.id, "name": c.name, "arguments": c.arguments} for c in calls
    ]
    text = json.dumps(canonical, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


def pending_calls(prepared: list[PreparedCall]) -> list[PendingCall]:
    return [
        PendingCall(
            index=p.index,
            tool_call_id=p.call.id,
            name=p.call.name,
            arguments=p.arguments_dict(),
            reason=p.risk.reason,
        )
        for p in prepared
        if p.needs_approval
    ]


def snapshot_key(workspace_root: str, path: str) -> str:
    """Lexical key under which the workflow files a snapshot for a requested
    path. The activity does the real (symlink-aware) resolution; this only
    makes 'src/./a.py', './src/a.py' and '/ws/src/a.py' agree."""
    root = workspace_root.rstrip("/")
    if path.startswith(root + "/"):
        path = path[len(root) + 1 :]
    return posixpath.normpath(path).lstrip("/") if path else path


def call_path(prepared: PreparedCall) -> str | None:
    return getattr(prepared.args, "path", None) if prepared.args is not None else None

