"""Fail-closed validation of bash commands (the "intent fence").

``validate_command`` turns one command string into a :class:`Verdict`:
``allow`` (a known read-only program with known options: no approval, may run
in parallel), ``ask`` (may change things: a human approves it first), or
``reject`` (never runs; ``reason`` says what was found, ``hint`` what to do).

The package, one concern per module:

* ``tokens`` / ``lexer`` - the accepted subset of shell syntax
  (words, ``&& || ; |`` and newlines, redirections, quoted here-documents,
  the ``"$(cat <<'EOF' ...)"`` idiom, globs), derived by our own tokenizer;
* ``parser_check`` - bashlex must parse the same structure (any
  disagreement rejects);
* ``compound`` - the parts, the leading ``cd DIR &&``, redirections and
  here-documents: ``Verdict.plan`` (core.shell.command_plan) with per-part verdicts;
* ``programs`` - which rule judges a command (basenames, versioned names,
  program paths), then its paths (``paths``) and toolchain (``facts``);
* ``stdin_names`` - programs that open files named on their input (``xargs
  cat``, ``--files0-from=-``) and the pipeline parts that print only
  workspace file names;
* ``options`` - the option model (short clusters, attached values, long
  options and their abbreviations, git's parse-options with negations);
* ``sed_grammar`` / ``awk_grammar`` - the small sed and awk languages proven
  read-only;
* ``rules`` - one module per family of programs, each with its table of
  cases ``CASES`` beside its rules (collected by tests/shell/test_shell_rules.py).

Everything here is pure: constants at module level, no I/O, so the Temporal
workflow sandbox can import it.
"""

from __future__ import annotations

import bashlex  # noqa: F401  (tests patch ``core.shell.bashlex.parse`` to simulate parser faults)

from core.shell.entry import MAX_COMMAND_CHARS, validate_command
from core.shell.opaque import conditions, evaluation
from core.shell.rules import CASE_MODULES as RULE_CASE_MODULES
from core.shell.rules import RULE_MODULES
from core.shell.verdict import Verdict

# Every module with a CASES table (tests/shell/test_shell_rules.py runs them all).
CASE_MODULES = (*RULE_CASE_MODULES, evaluation, conditions)

__all__ = ["CASE_MODULES", "MAX_COMMAND_CHARS", "RULE_MODULES", "Verdict", "validate_command"]
