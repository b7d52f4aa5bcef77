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
import json
import posixpath
from dataclasses import dataclass
from typing import Any

from core.arguments import parse_tool_arguments
from core.contracts import PendingCall, Policy, ToolCall, ToolResult, ToolStatus
from core.policy import RiskDecision, decide_risk
from core.shell_validator import Verdict, validate_command
from core.tool_specs import TOOLS, BashArgs, ToolArgs


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


def prepare_call(index: int, call: ToolCall, policy: Policy) -> PreparedCall:
    parsed = parse_tool_arguments(call.name, call.arguments)
    spec = TOOLS.get(call.name)
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
    verdict = validate_command(parsed.command) if isinstance(parsed, BashArgs) else None
    risk = decide_risk(call.name, policy, verdict)
    prepared = PreparedCall(index, call, parsed, spec.concurrency_safe(parsed), risk, verdict)
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


def prepare_batch(calls: list[ToolCall], policy: Policy) -> list[PreparedCall]:
    return [prepare_call(i, call, policy) for i, call in enumerate(calls)]


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

