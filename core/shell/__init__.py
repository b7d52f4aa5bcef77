"""Fail-closed validation of bash commands (DESIGN.md section 4, "intent fence").

``validate_command`` turns one command string into a :class:`Verdict`:
``allow`` (a known read-only program with known options: no approval, may run
in parallel), ``ask`` (may change things: a human approves it first), or
``reject`` (never runs; ``reason`` says what was found, ``hint`` what to do).

The package, one concern per module:

* ``tokens`` / ``lexer`` / ``quoting`` - the accepted subset of shell syntax
  (words, ``&& || ; |`` and newlines, redirections, quoted here-documents,
  the ``"$(cat <<'EOF' ...)"`` idiom, globs), derived by our own tokenizer;
* ``parser_check`` - bashlex must parse the same structure (any
  disagreement rejects);
* ``compound`` - the parts, the leading ``cd DIR &&``, redirections and
  here-documents: ``Verdict.plan`` (core.command_plan) with per-part verdicts;
* ``programs`` - which rule judges a command (basenames, versioned names,
  program paths), then its paths (``paths``) and toolchain (``facts``);
* ``options`` - the option model (short clusters, attached values, long
  options and their abbreviations, git's parse-options with negations);
* ``sed_grammar`` / ``awk_grammar`` - the small sed and awk languages proven
  read-only;
* ``rules_*`` - one module per family of programs, each with its table of
  cases ``CASES`` beside its rules (collected by tests/test_shell_rules.py).

Everything here is pure: constants at module level, no I/O, so the Temporal
workflow sandbox can import it.
"""

from __future__ import annotations

from core.shell import (
    compound,
    programs,
    rules_awk,
    rules_builds,
    rules_destructive,
    rules_fetch,
    rules_git,
    rules_git_changes,
    rules_host,
    rules_interpreters,
    rules_per_item,
    rules_readonly,
    rules_rejected,
    rules_sed,
)
from core.shell.entry import MAX_COMMAND_CHARS, validate_command
from core.shell.programs import HANDLERS
from core.shell.verdict import Verdict

# Later modules win where a name appears twice (a specific rule over a family).
RULE_MODULES = (
    rules_rejected,
    rules_destructive,
    rules_builds,
    rules_host,
    rules_readonly,
    rules_per_item,
    rules_fetch,
    rules_sed,
    rules_awk,
    rules_interpreters,
    rules_git,
)
# Every module with a CASES table (tests/test_shell_rules.py runs them all).
CASE_MODULES = (*RULE_MODULES, rules_git_changes, programs, compound)
for _module in RULE_MODULES:
    if _module is not rules_host:
        HANDLERS.update(_module.HANDLERS)
# Global installs (npm -g, pipx install, cargo install ...) are checked before the
# family's own rule, which still judges every other use of the program.
rules_host._NEXT.update({name: HANDLERS[name] for name in rules_host._GLOBAL_INSTALLERS if name in HANDLERS})
for _name in rules_host._GLOBAL_INSTALLERS:
    rules_host._NEXT.setdefault(_name, rules_host.default_rule)
HANDLERS.update(rules_host.HANDLERS)

__all__ = ["CASE_MODULES", "MAX_COMMAND_CHARS", "RULE_MODULES", "Verdict", "validate_command"]
