"""decide_risk: rules on the parsed program and subcommand, the destructive
class and writes inside .git ask in every mode."""

from __future__ import annotations

import pytest

from core.contracts import Policy, PolicyRule
from core.turn.policy import decide_risk, inside_git_folder, rule_words, with_approval_bound
from core.shell import validate_command

DENY_PUSH = PolicyRule(action="deny", tool="bash", command_prefix="git push")


@pytest.mark.parametrize(
    "command",
    ["git push origin main", "git -C . push origin main", "git --no-pager push", "/usr/bin/git push",
     "git -C sub --no-pager push origin main"],
)
def test_a_rule_matches_the_parsed_program_and_subcommand(command: str) -> None:
    policy = Policy(mode="auto", rules=[DENY_PUSH])
    assert decide_risk("bash", policy, validate_command(command)).action == "deny", command


def test_rule_words_drop_git_global_options() -> None:
    assert rule_words(("git", "-C", ".", "--no-pager", "push", "-u")) == ("git", "push", "-u")
    assert rule_words(("/usr/bin/git", "status")) == ("git", "status")
    assert rule_words(("ls", "-C")) == ("ls", "-C")


@pytest.mark.parametrize("mode", ["auto", "ask-writes", "ask-all"])
@pytest.mark.parametrize("command", ["git reset --hard HEAD~5", "git checkout -- .", "chmod -R 000 .", "rm -rf build"])
def test_destructive_commands_ask_in_every_mode_even_with_an_allow_rule(mode: str, command: str) -> None:
    policy = Policy(mode=mode, rules=[PolicyRule(action="allow", tool="bash")])  # type: ignore[arg-type]
    v = validate_command(command)
    assert v.destructive, v
    decision = decide_risk("bash", policy, v)
    assert decision.action == "ask" and "destructive" in decision.reason


def test_a_deny_rule_still_beats_destructive() -> None:
    policy = Policy(mode="auto", rules=[PolicyRule(action="deny", tool="bash", command_prefix="rm")])
    assert decide_risk("bash", policy, validate_command("rm -rf build")).action == "deny"


@pytest.mark.parametrize("mode", ["auto", "ask-writes", "ask-all"])
@pytest.mark.parametrize(
    "path", [".git/hooks/pre-commit", ".git/config", "./.git/config", "sub/.git/hooks/x", ".GIT/config",
             "a/../.git/hooks/post-checkout", ".git/modules/m/hooks/x"],
)
@pytest.mark.parametrize("tool", ["write_file", "edit_file"])
def test_writes_inside_dot_git_ask_in_every_mode(mode: str, path: str, tool: str) -> None:
    policy = Policy(mode=mode, rules=[PolicyRule(action="allow", tool=tool)])  # type: ignore[arg-type]
    decision = decide_risk(tool, policy, path=path)
    assert decision.action == "ask" and ".git" in decision.reason


def test_ordinary_paths_and_reads_are_unaffected() -> None:
    assert decide_risk("write_file", Policy(mode="auto"), path="src/git/config.py").action == "allow"
    assert decide_risk("write_file", Policy(mode="auto"), path=".gitignore").action == "allow"
    assert decide_risk("read_file", Policy(mode="auto"), path=".git/config").action == "allow"
    assert not inside_git_folder("docs/.github/workflows/ci.yml")


@pytest.mark.parametrize(
    ("policy_bound", "starter_bound", "expected"),
    [
        (None, None, None),  # nobody bounds the pause
        (None, 5.0, 5.0),  # the starter's bound applies over a policy without one
        (60.0, 5.0, 5.0),  # the shorter wins
        (3.0, 5.0, 3.0),
        (3.0, None, 3.0),
    ],
)
def test_a_starters_approval_bound_never_lengthens_the_policys(
    policy_bound: float | None, starter_bound: float | None, expected: float | None
) -> None:
    policy = Policy(mode="ask-all", approval_timeout_seconds=policy_bound, rules=[PolicyRule(tool="grep", action="allow")])
    bounded = with_approval_bound(policy, starter_bound)
    assert bounded.approval_timeout_seconds == expected
    assert (bounded.mode, bounded.rules) == (policy.mode, policy.rules)  # nothing else changes
