"""Where a script has ``[[ ... ]]``, ``(( ... ))`` and ``$(( ... ))``. Pure.

bashlex (0.18) cannot read them, so ``find_spans`` reads the script as bash
does (quotes, ``$(...)``, ``${...}``, comments, here-document bodies) and
finds each one; ``stand_in`` gives the text bashlex parses: each span a run
of ``%`` of the same length (one word, every position unchanged). The judge
(judge.py) then asks bashlex's tree to account for every span: a ``[[`` or
``((`` stand-in must be a command of its own, a ``$((`` one inside a word it
reads; a span found where bash would not see one is refused, and one bash
would see that is not found here stays in the text, where bashlex fails.

Bash's own rules, followed here: ``[[`` and ``((`` are keywords only where
a command starts; ``((`` / ``$((`` is arithmetic only when its parentheses
close with ``))`` (otherwise it is ``( (`` / ``$( (``, subshells); ``[[``
ends at the first unquoted word ``]]``, and the word after ``=~`` may hold
``(``, ``)`` and ``|`` (a regular expression). Bash removes a line
continuation (backslash, newline) before it reads words: one between words
is a blank here, one joined to a word or a parenthesis is refused; and it
reads ``((`` on to its matching ``)`` through line breaks and quotes, so
these are refused there rather than guessed as a subshell.
"""

from __future__ import annotations

from typing import NamedTuple

from core.shell.opaque.text import HEREDOC, skip_bodies
from core.shell.verdict import J, rej

COND, ARITH, ARITH_COMMAND = "`[[ ]]`", "$((...))", "((...))"
# What a span is to bashlex: no name character (`$x` before it stays `$x`),
# no quote, glob or brace character.
STAND_IN = "%"


class Token(NamedTuple):
    """A word or an operator of a ``[[ ]]`` expression (positions in the script)."""

    start: int
    end: int
    word: bool


class Span(NamedTuple):
    kind: str  # COND, ARITH or ARITH_COMMAND
    start: int
    end: int  # exclusive
    tokens: tuple[Token, ...] = ()  # COND: the words and operators between `[[` and `]]`
    regex: frozenset[int] = frozenset()  # COND: the starts of the words after `=~`


class _Refused(Exception):
    def __init__(self, j: J, structural: bool = False) -> None:
        super().__init__(j.reason)
        self.j, self.structural = j, structural


H_COND = "write the test with `test` / `[ ]`, or as plain commands"
_BLANK = " \t\n"
_META = " \t\n;&|()<>"
# Words after which a command starts (`! [[`, `then ((`, `do [[`, `{ [[`).
_RESERVED = frozenset("if then else elif while until do ! { time".split())
_MAX_DEPTH = 64  # (the scan recurses once per level)
# `[[` operators that are tokens of their own (not words).
_COND_OPS = ("&&", "||", "(", ")", "<", ">")


def find_spans(s: str) -> list[Span] | J | None:
    """Every ``[[ ]]``, ``(( ))`` and ``$(( ))`` of ``s`` (nested ones too,
    outer ones first); why one cannot be read; or None when the script's
    structure itself is not understood here (an unbalanced ``)``, as in
    ``case``, which bashlex cannot read either)."""
    scanner = _Scanner(s)
    try:
        scanner.script(0, False)
    except _Refused as refused:
        return None if refused.structural else refused.j
    return sorted(scanner.spans, key=lambda sp: (sp.start, -sp.end))


def stand_in(s: str, spans: list[Span] | tuple[Span, ...], inside: Span | None = None) -> str:
    """``s`` with each span a run of ``%``: same length, so every position
    still points into ``s``. With ``inside``: that span's own text (its
    nested spans replaced), blanks elsewhere."""
    chars = list(s) if inside is None else [" "] * inside.start + list(s[inside.start : inside.end])
    chars += [" "] * (len(s) - len(chars))
    for sp in spans:
        if inside is None or (inside.start <= sp.start and sp.end <= inside.end and sp != inside):
            chars[sp.start : sp.end] = STAND_IN * (sp.end - sp.start)
    return "".join(chars)


def cond_words(s: str, spans: list[Span] | tuple[Span, ...], span: Span) -> str:
    """The text bashlex reads the words of the ``[[ ]]`` ``span`` from: the
    command ``: WORD...`` in its place (``[[``, ``]]``, operators and regular
    expressions blanked, nested spans stood in for), blanks elsewhere."""
    chars = list(stand_in(s, spans, span))
    chars[span.start : span.start + 2] = ": "
    chars[span.end - 2 : span.end] = "  "
    for token in span.tokens:
        if not token.word or token.start in span.regex:
            chars[token.start : token.end] = " " * (token.end - token.start)
    return "".join(chars)


class _Scanner:
    def __init__(self, s: str) -> None:
        self.s = s
        self.spans: list[Span] = []
        self.depth = 0  # substitutions and subshells open around the scan

    def script(self, i: int, nested: bool) -> int:
        """Commands from ``i`` to the ``)`` that closes a ``$(`` / ``(`` (when
        ``nested``) or the end; the position after it."""
        s, n = self.s, len(self.s)
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise _Refused(rej(f"more than {_MAX_DEPTH} substitutions or subshells inside one another",
                               "split the command into simpler ones"))
        command = True  # a command may start here
        pending: list[str] = []  # here-document delimiters whose bodies start after this line
        while i < n:
            c = s[i]
            if c == "\n" and pending:
                i, pending, command = skip_bodies(s, i + 1, pending), [], True
                continue
            if c in " \t":
                i += 1
                continue
            if s.startswith("\\\n", i):  # a line continuation: bash removes it before reading words
                i += 2
                continue
            if c == "#":  # at a word's start: a comment to the end of the line
                j = s.find("\n", i)
                i = n if j < 0 else j
                continue
            if c == ")":
                if nested:
                    self.depth -= 1
                    return i + 1
                raise _Refused(rej(f"an unmatched `)` at position {i}", "balance the parentheses"), True)
            if c in ";&|\n":
                i, command = i + 1, True
                continue
            if c == "(":
                _glued(s, i + 1)  # `(\<newline>(` is `((` to bash
                if command and s.startswith("((", i):
                    end = self.arith(i + 2)
                    if end is not None:
                        self.spans.append(Span(ARITH_COMMAND, i, end))
                        i, command = end, False
                        continue
                i = self.script(i + 1, True)  # a subshell (or a function's `()`)
                command = s[i - 2 : i] == "()"  # `f()` is followed by its body
                continue
            if c in "<>":
                if s.startswith(("<(", ">("), i):
                    i = self.script(i + 2, True)
                    command = False
                    continue
                if s.startswith("<<", i) and not s.startswith("<<<", i):
                    m = HEREDOC.match(s, i + 2)
                    if m is None:
                        raise _Refused(rej("a here-document without a delimiter", "name the delimiter"))
                    pending.append(m.group(2))
                    i, command = m.end(), False
                    continue
                i += 1
                while i < n and s[i] in "<>&|":
                    i += 1
                while i < n and s[i] in " \t":
                    i += 1
                # the target; after a redirection no command starts (`>f [[ x ]]` runs a program `[[`)
                i, command = self.word(i, _META), False
                continue
            if command and s.startswith("[[", i) and s[i + 2 : i + 3] in ("", *_BLANK):
                start, i = i, self.cond(i)
                if pending and "\n" in s[start:i]:  # a here-document body would start inside it
                    raise _Refused(rej("a `[[ ]]` over several lines after a here-document", H_COND))
                command = False
                continue
            start = i
            i = self.word(i, _META)
            command = s[start:i] in _RESERVED
        if nested:
            raise _Refused(rej("an unclosed `(`", "balance the parentheses"), True)
        return i

    def word(self, i: int, stops: str) -> int:
        """The end of the word at ``i`` (up to an unquoted character of ``stops``)."""
        s, n = self.s, len(self.s)
        while i < n and s[i] not in stops:
            c = s[i]
            if c == "\\":
                _glued(s, i)
                i += 2
            elif c == "'":
                j = s.find("'", i + 1)
                if j < 0:
                    raise _Refused(rej(f"unterminated single quote at position {i}", "close the quote"))
                i = j + 1
            elif c == '"':
                i = self.double(i + 1)
            elif c == "$":
                i = self.dollar(i)
            elif c == "`":
                i = self.backtick(i)
            else:
                i += 1
        return min(i, n)

    def double(self, i: int) -> int:
        """After the ``"`` that closes the double quote opened before ``i``."""
        s, n = self.s, len(self.s)
        while i < n:
            c = s[i]
            if c == "\\":
                _glued(s, i)
                i += 2
            elif c == '"':
                return i + 1
            elif c == "$":
                i = self.dollar(i)
            elif c == "`":
                i = self.backtick(i)
            else:
                i += 1
        raise _Refused(rej("unterminated double quote", "close the quote"))

    def backtick(self, i: int) -> int:
        """After the closing backtick (its inside is left to bashlex, which
        cannot read a `[[` or `$((` there: refused)."""
        s, j = self.s, i + 1
        while j < len(s) and s[j] != "`":
            if s[j] == "\\":
                _glued(s, j)
            j += 2 if s[j] == "\\" else 1
        if j >= len(s):
            raise _Refused(rej("an unclosed backtick", "use $(...) and close it"))
        return j + 1

    def dollar(self, i: int) -> int:
        """After the expansion that starts with the ``$`` at ``i``."""
        s = self.s
        if s.startswith("$$", i):  # the shell's process id
            return i + 2
        if s.startswith("$((", i):
            end = self.arith(i + 3)
            if end is not None:
                self.spans.append(Span(ARITH, i, end))
                return end
        if s.startswith("$(", i):
            _glued(s, i + 2)  # `$(\<newline>(` is `$((` to bash
            return self.script(i + 2, True)
        if s.startswith("${", i):
            depth, j = 0, i + 1
            while j < len(s):
                if s.startswith("$((", j) or s.startswith("$(", j) or s[j] == "`":
                    # what the scanner would have to read inside a parameter expansion: refused
                    raise _Refused(rej(f"a substitution inside `{s[i:j + 3]}...` cannot be checked",
                                       "compute the default in a separate step"))
                depth += {"{": 1, "}": -1}.get(s[j], 0)
                if s[j] == "\\":
                    _glued(s, j)
                j += 2 if s[j] == "\\" else 1
                if depth == 0:
                    return j
            raise _Refused(rej("an unclosed `${`", "close the parameter expansion"))
        return i + 1

    def arith(self, i: int) -> int | None:
        """After the ``))`` closing the arithmetic whose text starts at ``i``,
        or None when the parentheses close otherwise (bash reads ``((ls) )``
        and ``$((ls) )`` as subshells). Quoting of any kind inside is refused:
        then the end could be told only by bash's own rules."""
        s, n, depth, j = self.s, len(self.s), 0, i
        while j < n:
            c = s[j]
            if c in "'\"\\`" or s.startswith("$(", j) or c == "\n":
                # bash reads on to the matching `)` through quotes, substitutions, line breaks and
                # line continuations, and only then tells arithmetic from a subshell: not guessed here
                raise _Refused(rej("quotes, backslashes, substitutions or line breaks inside "
                                   f"`{s[i - 2 : j + 1]}...` are not allowed in arithmetic (nor in a "
                                   "subshell opened as `((`)", "use literal numbers and variables only, "
                                   "or `expr`; write a subshell in a subshell as `( (`"))
            if c == "(":
                depth += 1
            elif c == ")":
                if depth:
                    depth -= 1
                else:
                    _glued(s, j + 1)  # `)\<newline>)` closes arithmetic to bash
                    return j + 2 if s[j + 1 : j + 2] == ")" else None
            j += 1
        return None

    def cond(self, i: int) -> int:
        """Reads ``[[ ... ]]`` from the ``[[`` at ``i``; the position after ``]]``."""
        s, n = self.s, len(self.s)
        tokens: list[Token] = []
        regex: set[int] = set()
        j = i + 2
        while True:
            while j < n and (s[j] in _BLANK or s.startswith("\\\n", j)):
                j += 2 if s[j] == "\\" else 1
            if j >= n:
                raise _Refused(rej("`[[` without its closing `]]`", H_COND))
            op = next((o for o in _COND_OPS if s.startswith(o, j)), None)
            if op is not None:
                tokens.append(Token(j, j + len(op), False))
                j += len(op)
                continue
            if s[j] in ";&|":
                raise _Refused(rej(f"`{s[j]}` inside `[[ ]]` is not a test", H_COND))
            if tokens and tokens[-1].word and s[tokens[-1].start : tokens[-1].end] == "=~":
                end = self.regex(j)
                regex.add(j)
            else:
                end = self.word(j, _META)
            if s[j:end] == "]]":
                self.spans.append(Span(COND, i, end, tuple(tokens), frozenset(regex)))
                return end
            tokens.append(Token(j, end, True))
            j = end

    def regex(self, i: int) -> int:
        """The end of the regular expression after ``=~``: a word in which
        ``(``, ``)`` and ``|`` are literal while the parentheses balance."""
        s, n, depth = self.s, len(self.s), 0
        while i < n:
            c = s[i]
            if depth == 0 and (c in _BLANK or c in ";&<>" or c == ")" or s.startswith("||", i)):
                return i
            if c == "\\":
                _glued(s, i)
            if c in "'\"\\$`":
                i = self.word(i, _META + "|") if c != "\\" else i + 2
                continue
            depth += {"(": 1, ")": -1}.get(c, 0)
            i += 1
        return i


def _glued(s: str, i: int) -> None:
    """Refuses the backslash at ``i`` when it continues the line inside a word
    (``th\\<newline>en``, ``$\\<newline>((``): bash joins the two lines
    into one word before reading it, which is not followed here."""
    if s.startswith("\\\n", i):
        raise _Refused(rej("a line continuation (backslash, newline) joined to a word or parenthesis "
                           f"at position {i}",
                           "break lines only between words (after a blank)"))
