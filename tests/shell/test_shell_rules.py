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


def test_data_options_are_value_taking_options_of_their_program() -> None:
    """An option marked as taking data (its value never a path) must be one
    the model says takes a value: a flag marked by mistake would hide the next
    word, a real path, from the path check."""
    from core.shell.programs import OPTION_SPECS

    assert {"cut", "sort", "grep", "rg", "awk"} <= set(OPTION_SPECS)
    for program, spec in OPTION_SPECS.items():
        takes_value = spec.short_arg | spec.short_opt | spec.long_arg
        assert spec.data <= takes_value, (program, sorted(spec.data - takes_value))
        assert not (spec.data & spec.short), (program, "a data letter is also listed as a flag")


def _link_cases() -> list[tuple[str, tuple[str, ...]]]:
    from core.shell.programs import LINK_CASES

    return LINK_CASES


@pytest.mark.parametrize(("command", "roots"), _link_cases(), ids=[c for c, _ in _link_cases()])
def test_link_following_walk(command: str, roots: tuple[str, ...]) -> None:
    """Which folders a command walks following the symbolic links it meets
    (core.shell.programs.link_roots): by each program's options, in order."""
    import shlex

    from core.shell.programs import link_roots

    assert link_roots(shlex.split(command)) == roots, command
    if roots:  # and the command itself is one the validator allows (else the walk never matters)
        assert validate_command(command).verdict == "allow", command


def _listing_cases() -> list:
    from core.shell.stdin_names import LISTING_CASES

    return LISTING_CASES


@pytest.mark.parametrize(("command", "listings"), _listing_cases(), ids=[c for c, _ in _listing_cases()])
def test_links_a_lister_hands_on_by_name(command: str, listings: list) -> None:
    """Which folders' links a pipeline's programs open by name, and the find
    name tests such a link must pass (core.shell.stdin_names.pipeline_listings)."""
    import shlex

    from core.shell.stdin_names import pipeline_listings

    parts = [tuple(shlex.split(p)) for p in command.split(" | ")]
    assert pipeline_listings(parts) == listings, command


def _venv_cases() -> list[tuple[str, str, str | None]]:
    from core.shell.environment import VENV_CASES

    return VENV_CASES


@pytest.mark.parametrize(("command", "verdict", "needle"), _venv_cases(), ids=[c[:80] for c, _, _ in _venv_cases()])
def test_venv_case(command: str, verdict: str, needle: str | None) -> None:
    """Activation with the workspace's facts (which folders are virtual environments, and what
    their bin holds besides the system's own interpreter); without facts it stays refused (CASES)."""
    from core.shell.facts import WorkspaceFacts

    facts = WorkspaceFacts(root="/ws", venvs={".venv": (), "proj/.venv": (), "venv": ("pytest",)})
    v = validate_command(command, facts)
    assert v.verdict == verdict, (command, v)
    if needle is not None:
        assert needle.lower() in v.reason.lower(), (command, v.reason)
    if verdict == "reject":
        assert v.hint, v
