"""Opaque commands: what the plain subset cannot prove (loops, conditions,
functions, unknown variables, substitutions, a script's own state), judged
part by part and run captured as the script they are. Pure.

- judge.py: bashlex reads the script; every simple command in it is judged
  by the ordinary rules; the verdict is at best ``ask`` (``opaque=True``).
- text.py: the text-level checks before and around bashlex (here-documents,
  quoting it cannot cross-check, brace expansion).
- evaluation.py: where bash would evaluate a value as code (arithmetic
  subscripts, indirection, prompt expansion, ``let``, ``declare -i``).
- spans.py: where the script has ``[[ ]]``, ``(( ))`` and ``$(( ))``, which
  bashlex cannot read (found as bash finds them, stood in for in its text).
- conditions.py: what those may hold: tests, and arithmetic of literal
  numbers and integer variables only.
"""

from __future__ import annotations

from core.shell.opaque.judge import OPAQUE, READS_ONLY, SCRIPT_STATE, judge_opaque

__all__ = ["OPAQUE", "READS_ONLY", "SCRIPT_STATE", "judge_opaque"]
