"""A small sed grammar that is provably read-only. Pure.

We do not chase GNU sed's full syntax: a script is ``allow`` only when it
parses completely under this grammar, where every construct means the same
to GNU sed, BSD sed and us:

    script  := (sep* command)* sep*           sep := ';' | newline | space
    command := address? '!'? body
    address := one (',' two)?
    one     := NUMBER ('~' NUMBER)? | '$' | /RE/ [IM]* | \\cREc [IM]*
    two     := one | '+' NUMBER | '~' NUMBER
    body    := '{' | '}' | one of = d D g G h H n N p P x z | q/Q/l [NUMBER]
             | s DELIM RE DELIM REPLACEMENT DELIM FLAGS     FLAGS from g p i I m M 0-9
             | y DELIM CHARS DELIM CHARS DELIM
    then spaces and ';', newline, '}' or the end.

A bracket expression in an RE is accepted only in a plain form (no
backslash, no delimiter, no nested '[' but POSIX classes): GNU sed skips the
delimiter inside brackets and others do not, so anything fancier could end
the RE at different places for sed and for us.

Verdicts: inside the grammar ``allow``; an ``e`` / ``w`` / ``W`` command or an
``s///e`` / ``s///w`` flag found while inside the grammar ``reject``;
``r`` / ``R`` (reads another file) and everything outside the grammar
(labels and branches, ``a``/``i``/``c`` text, ``v``, comments, unusual
delimiters...) ``ask``: sed opens ``w`` files while it parses, so a script we
cannot parse completely must not be taken for read-only.
"""

from __future__ import annotations

import re

_SIMPLE = frozenset("=dDgGhHnNpPxz")
_WITH_NUMBER = frozenset("qQl")
_DELIMS = frozenset("/|#,:@!%^_+=~.;")
_CLASS = re.compile(r"\[:[a-z]+:\]")


class _Outside(Exception):
    """The script leaves the grammar (ask)."""


class _Dangerous(Exception):
    """A command that executes or writes (reject)."""


def _regex(s: str, i: int, delim: str, brackets: bool) -> int:
    """``i`` is just after the opening delimiter; return the index after the closing one."""
    n = len(s)
    while i < n:
        c = s[i]
        if c == "\\":
            if i + 1 >= n or s[i + 1] == "\n":
                raise _Outside("a backslash at the end of a line")
            i += 2
        elif c == delim:
            return i + 1
        elif c == "\n":
            raise _Outside("a newline inside a regular expression or replacement")
        elif c == "[" and brackets:
            i = _bracket(s, i, delim)
        else:
            i += 1
    raise _Outside("an unterminated regular expression")


def _bracket(s: str, i: int, delim: str) -> int:
    j = i + 1
    if s[j : j + 1] == "^":
        j += 1
    if s[j : j + 1] == "]":
        j += 1
    while j < len(s):
        m = _CLASS.match(s, j)
        if m:
            j = m.end()
            continue
        c = s[j]
        if c == "]":
            return j + 1
        if c in "[\\\n" or c == delim:
            raise _Outside("a bracket expression we cannot read the same way sed does")
        j += 1
    raise _Outside("an unterminated bracket expression")


def _number(s: str, i: int) -> int:
    while i < len(s) and s[i].isdigit():
        i += 1
    return i


def _one(s: str, i: int) -> int:
    """Parse one address at ``i``; return ``i`` unchanged when there is none."""
    n = len(s)
    if i < n and s[i].isdigit():
        i = _number(s, i)
        if i < n and s[i] == "~":
            j = _number(s, i + 1)
            if j == i + 1:
                raise _Outside("a bad step address")
            i = j
        return i
    if i < n and s[i] == "$":
        return i + 1
    if i < n and s[i] == "/":
        i = _regex(s, i + 1, "/", True)
    elif i < n and s[i] == "\\":
        if i + 1 >= n or s[i + 1] not in _DELIMS:
            raise _Outside("an unusual address delimiter")
        i = _regex(s, i + 2, s[i + 1], True)
    else:
        return i
    while i < n and s[i] in "IM":
        i += 1
    return i


def _address(s: str, i: int) -> int:
    j = _one(s, i)
    if j == i or j >= len(s) or s[j] != ",":
        return j
    j += 1
    if j < len(s) and s[j] in "+~":
        k = _number(s, j + 1)
        if k == j + 1:
            raise _Outside("a bad address range")
        return k
    k = _one(s, j)
    if k == j:
        raise _Outside("a bad address range")
    return k


def _substitute(s: str, i: int, c: str) -> int:
    if i >= len(s) or s[i] not in _DELIMS:
        raise _Outside(f"an unusual `{c}` delimiter")
    delim = s[i]
    i = _regex(s, i + 1, delim, c == "s")
    i = _regex(s, i, delim, False)
    if c == "y":
        return i
    while i < len(s) and s[i] not in " ;\n}":
        f = s[i]
        if f == "e":
            raise _Dangerous("the `s///e` flag executes the pattern space as a command")
        if f in "wW":
            raise _Dangerous("the `s///w` flag writes a file")
        if f not in "gpiImM0123456789":
            raise _Outside(f"the `s` flag {f!r}")
        i += 1
    return i


def _check(s: str) -> None:
    n, i, depth = len(s), 0, 0
    while True:
        while i < n and s[i] in " ;\n":
            i += 1
        if i >= n:
            break
        start = i
        i = _address(s, i)
        addressed = i != start
        while i < n and s[i] == " ":
            i += 1
        if i < n and s[i] == "!":
            i += 1
            while i < n and s[i] == " ":
                i += 1
        if i >= n:
            raise _Outside("an address without a command")
        c = s[i]
        i += 1
        if c == "{":
            depth += 1
            continue
        if c == "}":
            if addressed or depth == 0:
                raise _Outside("an unbalanced `}`")
            depth -= 1
        elif c == "e":
            raise _Dangerous("the `e` command executes a shell command")
        elif c in "wW":
            raise _Dangerous(f"the `{c}` command writes a file")
        elif c in "rR":
            raise _Outside(f"the `{c}` command reads another file")
        elif c in "sy":
            i = _substitute(s, i, c)
        elif c in _WITH_NUMBER:
            while i < n and s[i] == " ":
                i += 1
            i = _number(s, i)
        elif c not in _SIMPLE:
            raise _Outside(f"the command {c!r}")
        while i < n and s[i] == " ":
            i += 1
        if i < n and s[i] not in ";\n}":
            raise _Outside(f"extra characters after the command {c!r}")
    if depth:
        raise _Outside("an unclosed `{`")


def judge_script(script: str) -> tuple[str, str]:
    """(``allow`` | ``ask`` | ``reject``, why) for one sed script (all ``-e``
    parts joined with newlines, as sed joins them)."""
    try:
        _check(script)
    except _Dangerous as exc:
        return "reject", str(exc)
    except _Outside as exc:
        return "ask", f"the script uses {exc}, outside the small sed grammar known to be read-only"
    return "allow", "the script only prints"
