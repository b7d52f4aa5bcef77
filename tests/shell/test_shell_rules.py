"""Every rule module's table of cases, collected by one parametrized test.

Each ``core/shell/rules_*.py`` keeps ``CASES = [(command, verdict, reason
substring or None), ...]`` beside its rules (verdict ``ask+destructive``: an
``ask`` that must never run unattended) (the way Codex keeps its
command-safety tables); this test runs them all through the public entry
point, so a case checks the whole path (lexing, cross-check, dispatch, rule).
"""

from __future__ import annotations

import pytest

from core.shell import CASE_MODULES, validate_command

CASES = [
    (module.__name__.rsplit(".", 1)[-1], command, verdict, needle)
    for module in CASE_MODULES
    for command, verdict, needle in module.CASES
]


def test_every_rule_module_has_cases() -> None:
    for module in CASE_MODULES:
        assert len(module.CASES) >= 5, module.__name__
    commands = [c for _, c, _, _ in CASES]
    assert len(commands) == len(set(commands)), "a case appears twice"


@pytest.mark.parametrize(
    ("module", "command", "verdict", "needle"), CASES, ids=[f"{m}:{c!r}"[:80] for m, c, _, _ in CASES]
)
def test_rule_case(module: str, command: str, verdict: str, needle: str | None) -> None:
    v = validate_command(command)
    expected, _, flag = verdict.partition("+")
    assert (v.verdict, v.destructive) == (expected, flag == "destructive"), (command, v)
    if needle is not None:
        assert needle.lower() in v.reason.lower(), (command, v.reason)
    if expected == "reject":
        assert v.hint, v
