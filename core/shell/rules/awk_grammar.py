"""awk programs judged by their tokens, not by a regular expression. Pure.

The program is tokenized the way awk reads it: strings (``"}"`` inside a
string is not a brace), regular-expression constants (``/`` starts one only
where an expression may start, after an operand it divides), numbers, names
and operators. Then:

* ``reject`` - the program runs commands or writes files: the name
  ``system``, a ``|`` / ``|&`` pipe (``print | "sh"``, ``"cmd" | getline``),
  ``@`` (gawk ``@load`` / indirect calls), or ``>`` / ``>>`` at the top level
  of a ``print`` / ``printf`` statement (output redirection);
* ``ask`` - the program reads other files or the command line (``getline``,
  ``ARGV`` / ``ARGC``, ``ENVIRON``, ``PROCINFO``, ``SYMTAB``, ``FUNCTAB``), or
  we cannot tokenize it with certainty (a ``/`` after ``++``/``--``, a bracket
  expression with ``/`` or ``\\`` in a regex, a line continuation, any
  character awk would not accept);
* ``allow`` - anything else: it reads its input files and prints.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(
    r"""(?P<space>[ \t]+)|(?P<newline>\n)|(?P<comment>\#[^\n]*)
    |(?P<string>"(?:[^"\\\n]|\\[^\n])*")
    |(?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
    |(?P<name>[A-Za-z_][A-Za-z0-9_]*)
    |(?P<op>\*\*=|\*\*|\^=|\+=|-=|\*=|%=|==|!=|<=|>=|&&|\|\||!~|\+\+|--|>>|\|&|[{}()\[\];,+\-*%^!><|?:~=$])
    |(?P<slash>/)""",
    re.VERBOSE,
)
_REGEX_BODY = re.compile(r"(?:[^/\\\n\[]|\\[^\n]|\[\^?\]?(?:\[:[a-z]+:\]|[^\]\[/\\\n])*\])*/")
_KEYWORDS_BEFORE_EXPR = frozenset("print printf return in case do else getline".split())
_ASK_NAMES = {
    "getline": "reads other files with getline",
    "ARGV": "changes or reads the command line (ARGV / ARGC: other files)",
    "ARGC": "changes or reads the command line (ARGV / ARGC: other files)",
    "ENVIRON": "reads the environment",
    "PROCINFO": "reads or changes gawk's process information",
    "SYMTAB": "reaches variables indirectly (SYMTAB)",
    "FUNCTAB": "calls functions indirectly (FUNCTAB)",
}
_DANGER = "may run commands or write files"


def _tokens(prog: str) -> list[tuple[str, str]] | str:
    """[(kind, text)] or the reason we cannot tokenize with certainty."""
    out: list[tuple[str, str]] = []
    i, n = 0, len(prog)
    while i < n:
        if prog.startswith("\\\n", i):
            return "a line continuation"
        m = _TOKEN.match(prog, i)
        if m is None:
            return f"the character {prog[i]!r}"
        kind = m.lastgroup or ""
        if kind == "slash":
            prev = next((t for t in reversed(out) if t[0] not in ("space", "comment")), None)
            operand = prev is not None and (
                prev[0] in ("number", "string", "regex")
                or (prev[0] == "name" and prev[1] not in _KEYWORDS_BEFORE_EXPR)
                or prev[1] in (")", "]", "$")
            )
            if prev is not None and prev[1] in ("++", "--"):
                return "a `/` after `++` or `--` (division or regular expression?)"
            if not operand:
                r = _REGEX_BODY.match(prog, m.end())
                if r is None:
                    return "a regular expression we cannot read the same way awk does"
                out.append(("regex", prog[i : r.end()]))
                i = r.end()
                continue
            if prog.startswith("/=", i):
                out.append(("op", "/="))
                i += 2
                continue
            out.append(("op", "/"))
            i = m.end()
            continue
        if kind not in ("space", "comment"):
            out.append((kind, m.group()))
        i = m.end()
    return out


def judge_program(prog: str) -> tuple[str, str]:
    """(``allow`` | ``ask`` | ``reject``, why) for one awk program text."""
    if "@" in prog or "|&" in prog:
        return "reject", _DANGER  # checked on the raw text: no tokenizing trick hides these
    toks = _tokens(prog)
    if isinstance(toks, str):
        if "system" in prog:
            return "reject", _DANGER
        return "ask", f"the program has {toks}, which we cannot tokenize with certainty"
    ask_why = None
    in_print, depth = False, 0
    for kind, text in toks:
        if kind == "op" and text in ("|", "|&"):
            return "reject", _DANGER
        if kind == "name" and text in _ASK_NAMES and ask_why is None:
            ask_why = _ASK_NAMES[text]
        if kind == "name" and text == "system":
            return "reject", _DANGER
        if kind == "name" and text in ("print", "printf"):
            in_print, depth = True, 0
            continue
        if not in_print:
            continue
        if text in ("(", "["):
            depth += 1
        elif text in (")", "]"):
            depth -= 1
        elif depth <= 0 and text in (">", ">>"):
            return "reject", _DANGER
        elif depth <= 0 and (kind == "newline" or text in (";", "}", "{")):
            in_print = False
    if "system" in prog:
        ask_why = ask_why or "mentions `system` (in a string or a regular expression)"
    if ask_why is not None:
        return "ask", ask_why
    return "allow", "only reads and prints"
