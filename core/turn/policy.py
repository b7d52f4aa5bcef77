"""Risk policy: does a call run, ask a human first, or never run? Pure.

Order of precedence:
1. A bash command the validator rejects never runs (no rule can allow it).
2. A bash command is decided part by part (every simple command of a
   compound command): rules that match the part (deny beats ask beats allow)
   override the mode's default for that part; the command's decision is its
   strongest part's. Rules match the *parsed* program and subcommand:
   ``git -C . push`` and ``git --no-pager push`` match a rule ``git push``.
3. The mode's default: ``auto`` (nothing asks), ``ask-writes`` (write_file,
   edit_file and bash that is not read-only ask), ``ask-all`` (everything asks).
4. Whatever the mode and the allow rules say, two kinds of call ask (only a
   deny rule is stronger): a destructive bash command (``Verdict.destructive``:
   work lost for good), and a file tool writing inside ``.git`` (hooks and
   config run programs on the developer's machine).
5. Planned by this build (``activities.plan``, whose plans are recorded), a
   file tool writing a file a tool on the person's machine runs by itself
   (``host_file_risk``: ``.envrc``, ``.vscode/tasks.json`` ...) asks in every
   mode too; only a deny rule is stronger.
"""

from __future__ import annotations

import posixpath
import shlex
from dataclasses import dataclass
from typing import Literal

from core.contracts import Policy, PolicyRule
from core.shell import Verdict
from core.tools.specs import BASH, TOOLS
from core.turn.host_files import RUNS_OUTSIDE, host_run

Action = Literal["allow", "ask", "deny"]

_PRECEDENCE: dict[str, int] = {"allow": 0, "ask": 1, "deny": 2}
# git options before the subcommand that take the next word as their value
_GIT_VALUE_OPTS = frozenset("-C -c --git-dir --work-tree --namespace --exec-path --config-env --super-prefix".split())


@dataclass(frozen=True)
class RiskDecision:
    action: Action
    reason: str


@dataclass(frozen=True)
class _Part:
    words: tuple[str, ...]  # normalised for rule matching
    verdict: str
    program: str


def _prefix_words(prefix: str) -> list[str] | None:
    try:
        return shlex.split(prefix)
    except ValueError:
        return None  # an unparsable prefix matches nothing


def rule_words(argv: tuple[str, ...]) -> tuple[str, ...]:
    """The words a rule prefix is compared with: the program by basename, and
    for git the subcommand with the options before it removed."""
    if not argv:
        return ()
    program = argv[0].rsplit("/", 1)[-1]
    rest = list(argv[1:])
    if program == "git":
        i = 0
        while i < len(rest) and rest[i].startswith("-"):
            i += 2 if rest[i] in _GIT_VALUE_OPTS else 1
        rest = rest[i:]
    return (program, *rest)


def _parts(bash: Verdict) -> list[_Part]:
    if bash.plan is not None:
        return [
            _Part(rule_words(c.argv), c.verdict, c.argv[0].rsplit("/", 1)[-1] if c.argv else "command")
            for c in bash.plan.all_commands()
        ]
    return [_Part(rule_words(bash.argv), bash.verdict, bash.program or "command")]


def _matches(rule: PolicyRule, tool: str, part: _Part | None) -> bool:
    if rule.tool not in ("*", tool):
        return False
    if rule.command_prefix is None:
        return True
    if tool != BASH or part is None or not part.words:
        return False
    words = _prefix_words(rule.command_prefix)
    return bool(words) and list(part.words[: len(words)]) == words


def rule_matches(rule: PolicyRule, tool: str, bash: Verdict | None) -> bool:
    """Whether ``rule`` matches the call (for bash: any part of the command)."""
    if tool != BASH or bash is None:
        return _matches(rule, tool, None)
    return any(_matches(rule, tool, part) for part in _parts(bash))


def _describe(rule: PolicyRule) -> str:
    text = f"rule {rule.action} tool={rule.tool}"
    if rule.command_prefix:
        text += f" prefix={rule.command_prefix!r}"
    return text


def _default(tool: str, policy: Policy, part: _Part | None) -> RiskDecision:
    if policy.mode == "auto":
        return RiskDecision("allow", "mode auto")
    if policy.mode == "ask-all":
        return RiskDecision("ask", "mode ask-all: every call needs approval")
    if tool == BASH:  # ask-writes
        if part is not None and part.verdict == "allow":
            return RiskDecision("allow", "read-only command")
        return RiskDecision("ask", f"runs {part.program if part else 'command'!r}, which can change the workspace")
    spec = TOOLS.get(tool)
    if spec is not None and spec.writes:
        return RiskDecision("ask", f"{tool} changes files")
    return RiskDecision("allow", "read-only tool")


def _decide(tool: str, policy: Policy, part: _Part | None) -> RiskDecision:
    matching = [r for r in policy.rules if _matches(r, tool, part)]
    if matching:
        strongest = max(matching, key=lambda r: _PRECEDENCE[r.action])
        return RiskDecision(strongest.action, f"policy {_describe(strongest)}")
    return _default(tool, policy, part)


def with_approval_bound(policy: Policy, seconds: float | None) -> Policy:
    """``policy`` with its approval timeout at most ``seconds`` (the shorter
    bound wins; None leaves the policy as it is)."""
    if seconds is None:
        return policy
    current = policy.approval_timeout_seconds
    if current is not None and current <= seconds:
        return policy
    return policy.model_copy(update={"approval_timeout_seconds": seconds})


def inside_git_folder(path: str) -> bool:
    """Whether a file tool's path lies in (or is) a ``.git`` folder of any
    repository in the workspace, compared case-insensitively."""
    parts = posixpath.normpath(path.replace("\\", "/")).split("/")
    return any(p.lower().rstrip(". ") == ".git" for p in parts)


def decide_risk(
    tool: str, policy: Policy, bash: Verdict | None = None, path: str | None = None
) -> RiskDecision:
    """Decide for one call of a known tool whose arguments are valid.
    ``bash`` is the validator's verdict when the tool is bash; ``path`` the
    file tool's path argument."""
    if tool == BASH and bash is not None:
        if bash.verdict == "reject":
            return RiskDecision("deny", f"command rejected: {bash.reason}")
        decisions = [_decide(tool, policy, part) for part in _parts(bash)]
        decision = max(decisions, key=lambda d: _PRECEDENCE[d.action])
        if bash.destructive and decision.action != "deny":
            return RiskDecision("ask", f"destructive (needs approval in every mode): {bash.reason}")
        return decision
    decision = _decide(tool, policy, None)
    spec = TOOLS.get(tool)
    if path is not None and spec is not None and spec.writes and decision.action != "deny" and inside_git_folder(path):
        return RiskDecision(
            "ask", f"{tool} writes inside .git ({path!r}): hooks and config there run programs (asks in every mode)"
        )
    return decision


def host_file_risk(tool: str, path: str, real: str | None = None, opened_as: str | None = None) -> RiskDecision | None:
    """A file tool writing a file a tool on the person's machine runs by
    itself, named by ``path``, reached through a symlink (``real``: where
    the path leads, relative to the workspace) or opened by that tool through
    a symlink at a host-run name (``opened_as``): it asks in every mode. None
    for any other call. Not part of ``decide_risk``: the turn workflow still
    runs that for histories recorded before plans were, and their calls
    must be decided as they were."""
    spec = TOOLS.get(tool)
    if spec is None or not spec.writes:
        return None
    why, via = host_run(posixpath.normpath(path.replace("\\", "/"))), ""
    if not why and real is not None and (why := host_run(real)):
        via = f" (it leads to {real!r} through a symbolic link)"
    if not why and opened_as is not None and (why := host_run(opened_as)):
        via = f" (the person's tools open it as {opened_as!r}, a symbolic link to it)"
    if not why:
        return None
    return RiskDecision("ask", f"{tool} writes {path!r}{via}, a file that {RUNS_OUTSIDE}: {why} (asks in every mode)")
