"""Risk policy: does a call run, ask a human first, or never run? Pure.

Order of precedence:
1. A bash command the validator rejects never runs (no rule can allow it).
2. Rules that match the call: deny beats ask beats allow. A matching rule
   overrides the mode's default.
3. The mode's default: ``auto`` (nothing asks), ``ask-writes`` (write_file,
   edit_file and bash that is not read-only ask), ``ask-all`` (everything asks).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Literal

from core.contracts import Policy, PolicyRule
from core.shell_validator import Verdict
from core.tool_specs import BASH, TOOLS

Action = Literal["allow", "ask", "deny"]

# Activity type through which a turn without a policy asks the worker for its
# default (recorded in history, so replay decides the same way).
DEFAULT_POLICY_ACTIVITY = "default_policy"
_PRECEDENCE: dict[str, int] = {"allow": 0, "ask": 1, "deny": 2}


@dataclass(frozen=True)
class RiskDecision:
    action: Action
    reason: str


def _prefix_words(prefix: str) -> list[str] | None:
    try:
        return shlex.split(prefix)
    except ValueError:
        return None  # an unparsable prefix matches nothing


def rule_matches(rule: PolicyRule, tool: str, bash: Verdict | None) -> bool:
    if rule.tool not in ("*", tool):
        return False
    if rule.command_prefix is None:
        return True
    if tool != BASH or bash is None or not bash.argv:
        return False
    words = _prefix_words(rule.command_prefix)
    if not words:
        return False
    argv = list(bash.argv)
    # The program is compared by basename, like the validator judges it.
    argv[0] = argv[0].rsplit("/", 1)[-1]
    return argv[: len(words)] == words


def _describe(rule: PolicyRule) -> str:
    text = f"rule {rule.action} tool={rule.tool}"
    if rule.command_prefix:
        text += f" prefix={rule.command_prefix!r}"
    return text


def decide_risk(tool: str, policy: Policy, bash: Verdict | None = None) -> RiskDecision:
    """Decide for one call of a known tool whose arguments are valid.
    ``bash`` is the validator's verdict when the tool is bash."""
    if tool == BASH and bash is not None and bash.verdict == "reject":
        return RiskDecision("deny", f"command rejected: {bash.reason}")

    matching = [r for r in policy.rules if rule_matches(r, tool, bash)]
    if matching:
        strongest = max(matching, key=lambda r: _PRECEDENCE[r.action])
        return RiskDecision(strongest.action, f"policy {_describe(strongest)}")

    if policy.mode == "auto":
        return RiskDecision("allow", "mode auto")
    if policy.mode == "ask-all":
        return RiskDecision("ask", "mode ask-all: every call needs approval")
    # ask-writes
    if tool == BASH:
        if bash is not None and bash.verdict == "allow":
            return RiskDecision("allow", "read-only command")
        program = bash.program if bash is not None and bash.program else "command"
        return RiskDecision("ask", f"runs {program!r}, which can change the workspace")
    spec = TOOLS.get(tool)
    if spec is not None and spec.writes:
        return RiskDecision("ask", f"{tool} changes files")
    return RiskDecision("allow", "read-only tool")
