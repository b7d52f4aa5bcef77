"""The effect gate's classification (pure)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from core.turn import effects
from core.turn.effects import (CASES, DESTRUCTIVE, EFFECTS, NETWORK_CASES, EffectRules, Effects, classify, kept_fraction,
                               kept_lines, needs_network_command)


@dataclass(frozen=True)
class N:
    kind: str
    mode: int
    size: int
    sha256: str
    target: str


@dataclass
class C:
    path: str
    old: N | None
    new: N | None


def _changes(rows):
    return [C(p, N(*o) if o else None, N(*n) if n else None) for p, o, n in rows]


@pytest.mark.parametrize("name", sorted(CASES))
def test_cases(name: str) -> None:
    rows, kept, destructive = CASES[name]
    out = classify(_changes(rows), kept=kept)
    assert bool(out.destructive) is destructive, (name, out)
    assert out.pauses(DESTRUCTIVE) is destructive


def test_caches_do_not_pause_even_under_ask_writes() -> None:
    rows, kept, _ = CASES["pycache only"]
    out = classify(_changes(rows), kept=kept)
    assert out.caches and not out.other and not out.pauses(EFFECTS)
    rows, kept, _ = CASES["create a file"]
    assert classify(_changes(rows), kept=kept).pauses(EFFECTS)


def test_cache_paths_are_configurable() -> None:
    rows = [("build/out.o", None, ("file", 0o644, 1, "x", ""))]
    assert classify(_changes(rows)).pauses(EFFECTS)
    assert not classify(_changes(rows), EffectRules(cache_paths=("build",))).pauses(EFFECTS)
    # a cache path never hides .git
    git = [(".git/__pycache__/x", None, ("file", 0o644, 1, "x", ""))]
    assert classify(_changes(git)).destructive


def test_bounds() -> None:
    rows = [(f"f{i}", None, ("file", 0o644, 10, str(i), "")) for i in range(5)]
    assert not classify(_changes(rows), EffectRules(max_files=5)).destructive
    assert classify(_changes(rows), EffectRules(max_files=4)).destructive
    assert classify(_changes(rows), EffectRules(max_bytes=49)).destructive


def test_symlink_through_existing_link_into_git() -> None:
    current = {"g": N("symlink", 0o777, 0, "", ".git")}
    rows = [("hooks", None, ("symlink", 0o777, 0, "", "g/hooks"))]
    assert classify(_changes(rows), current=current.get).destructive
    assert not classify(_changes(rows)).destructive  # g unknown: not into .git


def test_kept_fraction() -> None:
    assert kept_fraction(b"hello a world\n", b"hello b world\n") > 0.5  # sed -i 's/a/b/'
    text = b"".join(b"line %d\n" % i for i in range(100))
    assert kept_fraction(text, text.replace(b"line 5\n", b"LINE 5\n")) > 0.9
    assert kept_fraction(text, b"x\n") < 0.5  # tee
    assert kept_fraction(text, b"") == 0.0
    assert kept_fraction(b"", b"anything") == 1.0


def test_the_hooks_folder_core_hookspath_names_is_judged_like_git() -> None:
    rows = [(".husky/pre-commit", None, ("file", 0o755, 1, "x", "")), ("h", None, ("symlink", 0o777, 0, "", ".husky"))]
    out = classify(_changes(rows), EffectRules(hooks=(".husky",)))
    assert [p for p, _ in out.destructive] == [".husky/pre-commit", "h"]
    assert not classify(_changes(rows)).destructive  # no hooksPath: an ordinary folder
    assert not classify(_changes([(".husky-notes", None, ("file", 0o644, 1, "x", ""))]),
                        EffectRules(hooks=(".husky",))).destructive


def test_kept_lines_counts_the_whole_file() -> None:
    text = [b"line %d\n" % i for i in range(1000)]
    assert kept_lines(text, text[:300]) == 0.3  # cut after its start
    assert kept_lines(text, text[:300] + [b"x\n"] * 700) == 0.3  # its tail replaced, same length
    assert kept_lines(text, text + [b"appended\n"]) == 1.0
    assert kept_lines(text, [b"edited\n"] + text[1:]) == 0.999
    assert kept_lines(text, text, max_distinct=10) is None  # cannot tell: the caller judges it replaced
    assert kept_lines([], [b"new\n"]) == 1.0


def test_the_reason_names_what_runs_code_first() -> None:
    out = Effects(destructive=[(f"!{i}", "deletes an existing file") for i in range(8)]
                  + [(".git/hooks/pre-commit", "changes inside .git"), ("run.sh", "adds mode bits 0o111 to an existing file")])
    reason = out.reason(DESTRUCTIVE)
    assert reason.index(".git/hooks/pre-commit") < reason.index("run.sh") < reason.index("!0")
    assert "(and 5 more)" in reason


def test_asks_for_effects() -> None:
    assert effects.asks_for_effects(["`python -m pytest` runs the test suite (project code) and may change files"])
    assert effects.asks_for_effects(["`python3 -c` runs inline code", "`cp` copies files (may overwrite)"])
    assert not effects.asks_for_effects(["`cat` only reads, but `/etc/passwd` is outside the workspace"])
    assert not effects.asks_for_effects(["`curl` downloads from the network (the sandbox may have none)"])
    assert not effects.asks_for_effects(["`pip` installs or changes Python packages"])
    assert not effects.asks_for_effects([])


@pytest.mark.parametrize(
    "command, mode, by_effects",
    [
        ("python -m pytest", "ask-writes", True),
        ("python3 -c \"import shutil; shutil.rmtree('src')\"", "ask-writes", True),
        ("cp /dev/null keep.txt", "ask-writes", True),
        ("make", "ask-writes", True),
        ("cat /etc/passwd", "ask-writes", False),  # reads outside: asks before it runs
        ("pip install requests", "ask-writes", False),  # network
        ("rm -rf src", "ask-writes", False),  # destructive by its words: asks before it runs
        ("ls", "ask-writes", False),  # read-only: no ask at all
        ("python -m pytest", "auto", False),  # nothing asks under auto (the destructive gate still runs)
        ("python -m pytest", "ask-all", False),
    ],
)
def test_which_bash_asks_the_plan_settles_by_effects(tmp_path, command: str, mode: str, by_effects: bool) -> None:
    import json

    from activities.plan import current_validator
    from core.contracts import Policy, ToolCall
    from core.turn.planning import make_plan

    calls = [ToolCall(id="c0", name="bash", arguments=json.dumps({"command": command}))]
    plan = make_plan(calls, Policy(mode=mode), current_validator(str(tmp_path)))  # type: ignore[arg-type]
    assert plan.calls[0].by_effects is by_effects, plan.calls[0]
    off = make_plan(calls, Policy(mode=mode, effect_gate=False), current_validator(str(tmp_path)))  # type: ignore[arg-type]
    assert off.calls[0].by_effects is False


def test_a_rule_that_asks_keeps_the_pause_before_running(tmp_path) -> None:
    import json

    from activities.plan import current_validator
    from core.contracts import Policy, PolicyRule, ToolCall
    from core.turn.planning import make_plan

    calls = [ToolCall(id="c0", name="bash", arguments=json.dumps({"command": "python -m pytest"}))]
    policy = Policy(mode="ask-writes", rules=[PolicyRule(action="ask", tool="bash", command_prefix="python -m pytest")])
    assert make_plan(calls, policy, current_validator(str(tmp_path))).calls[0].by_effects is False


@pytest.mark.parametrize("command", sorted(NETWORK_CASES))
def test_network_cases(command: str) -> None:
    assert needs_network_command(tuple(command.split())) is NETWORK_CASES[command]
