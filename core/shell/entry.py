"""The entry point: one command string in, one Verdict out. Pure.

Lexing (tokens.py; a plain single command takes a regular-expression fast
path), the bashlex cross-check (parser_check.py), then the parts are judged
(compound.py -> programs.judge -> the rule modules).
"""

from __future__ import annotations

import re

from core.shell.compound import GLOB_AFTER_CHANGE, judge_tokens, split_tokens
from core.shell.environment import ACTIVATE_SETS, ACTIVATE_UNSETS, KNOWN_ENV, NAME
from core.shell.facts import WorkspaceFacts
from core.shell.lexer import FAST_COMMAND, FAST_WORD, unquote
from core.shell.opaque import SCRIPT_STATE, judge_opaque
from core.shell.parser_check import bashlex_check, bashlex_check_plain, bashlex_trap
from core.shell.tokens import Redir, Token, Word, tokenize, word_new
from core.shell.verdict import H_PLAIN, J, Verdict

MAX_COMMAND_CHARS = 10_000
MAX_TOKENS = 500


def validate_command(command: str, facts: WorkspaceFacts | None = None) -> Verdict:
    """Judge ``command``. ``facts`` (from activities/bash/facts.py) lets paths be
    judged by their realpath and toolchain configuration files be seen; without
    them paths are judged lexically and toolchains are assumed configured.

    What the plain subset cannot prove (loops, conditions, functions, unknown
    variables, command substitution, subshells, groups) is judged again as an
    opaque script (core.shell.opaque): every simple command inside is judged, and the
    whole is at best ``ask`` with ``opaque=True``."""
    verdict, final = _validate(command, facts)
    if final or verdict.verdict != "reject" or not isinstance(command, str):
        return verdict
    s = command.strip(" \t\n")
    if not s or len(s) > MAX_COMMAND_CHARS or len(s.split()) > MAX_TOKENS:
        return verdict
    return judge_opaque(s, facts, _env(s, facts), verdict.reason) or verdict


def _env(s: str, facts: WorkspaceFacts | None) -> dict[str, str]:
    env = dict(KNOWN_ENV)
    # Read without quotes and backslashes: `ex''port`, `e"x"port`, `un\\set`
    # and `c''d` are the same builtins to bash (and to the validator's words).
    plain = s.translate(_QUOTING)
    if facts is not None:
        env.update(facts.env)
        if "cd" in plain:
            env.pop("PWD", None)  # the folder changes during the command
    if "activate" in plain:  # `source DIR/bin/activate` sets these for the parts after it
        for name in (*ACTIVATE_SETS, *ACTIVATE_UNSETS):
            env.pop(name, None)
    if "(" in plain or "function" in plain:
        # `NAME=value f` sets it for a function's body, which the opaque
        # reading judges where the function is defined: not known there.
        for name in _ASSIGNED.findall(plain):
            env.pop(name, None)
    if "export" in plain or "unset" in plain:
        # A variable the command exports or unsets has another value in the
        # parts after it: its `$NAME` is not known before the command runs.
        for span in _ENV_CHANGES.finditer(plain):
            for name in NAME.findall(span.group(1)):
                env.pop(name, None)
    return env


_QUOTING = str.maketrans("", "", "'\"\\\\")
_ASSIGNED = re.compile(r"(?<![\w$-])([A-Za-z_][A-Za-z0-9_]*)\+?=")
_ENV_CHANGES = re.compile(r"\b(?:export|unset)\b([^;&|\n)]*)")


def _validate(command: str, facts: WorkspaceFacts | None) -> tuple[Verdict, bool]:
    """The plain subset's verdict, and whether it is final (no opaque reading)."""
    if not isinstance(command, str):
        return Verdict("reject", "the command must be a string", H_PLAIN), True
    s = command.strip(" \t\n")
    if not s:
        return Verdict("reject", "empty command", "give the command to run, e.g. `ls -la src`"), True
    if len(s) > MAX_COMMAND_CHARS:
        return Verdict(
            "reject",
            f"the command is too long ({len(s)} characters, at most {MAX_COMMAND_CHARS})",
            "put long content in a file with the write_file tool and pass the file name",
        ), True
    tokens: list[Token]
    if FAST_COMMAND.fullmatch(s):
        skeleton = s
        if "'" in s or '"' in s:
            tokens = [word_new((m.start(), m.end(), unquote(m.group()), False)) for m in FAST_WORD.finditer(s)]
        else:
            tokens = _unquoted_words(s)
        plain = True  # one command of words
    else:
        lexed = tokenize(s, _env(s, facts) if "$" in s else None)
        if isinstance(lexed, J):
            return _rejected(lexed), False
        tokens, skeleton = lexed
        plain = skeleton is s and not any(type(t) is not Word for t in tokens)  # one command of words
    if len(tokens) > MAX_TOKENS:
        # bashlex takes about a quarter millisecond per word: bound the time a
        # validation may take (it also runs inside workflow tasks)
        return Verdict(
            "reject",
            f"the command has too many words and operators ({len(tokens)}, at most {MAX_TOKENS})",
            "split it into several bash calls, or pass long lists through a file",
        ), True
    words = tokens if plain else [t for t in tokens if type(t) is Word]
    if "$" in skeleton or "`" in skeleton or "(" in skeleton:
        spans = [(w.start, w.end) for w in words]  # type: ignore[union-attr]
        if not plain:  # redirection targets are words to bashlex too
            spans += [_target_span(skeleton, t) for t in tokens if type(t) is Redir and t.op != "<<"]
        problem = bashlex_trap(skeleton, spans)
        if problem is not None:
            return _rejected(problem, words), False  # type: ignore[arg-type]
    split = split_tokens(tokens, s)
    if isinstance(split, J):
        return _rejected(split, words), False  # type: ignore[arg-type]
    problem = bashlex_check_plain(skeleton, words) if plain else bashlex_check(skeleton, tokens)  # type: ignore[arg-type]
    if problem is not None:
        return _rejected(problem, words), False  # type: ignore[arg-type]
    judged = judge_tokens(split, s, facts)
    # Every part parsed as a plain command: a rule's rejection is final, there is
    # no opaque construct to look for (and no second bashlex parse for it).
    # Except a builtin that only changes the shell's own state (SCRIPT_STATE),
    # or a glob after a part that may change files (bash expands it when its
    # turn comes): the same text is read again as a script (every part judged
    # as usual, the whole at best ask, run captured).
    return judged, ("variable assignment" not in judged.reason and judged.program not in SCRIPT_STATE
                    and GLOB_AFTER_CHANGE not in judged.reason)


def _unquoted_words(s: str) -> list[Token]:
    """The words of a fast-path command without quotes: runs of safe characters
    between spaces, each its own value (half the cost of a regex pass)."""
    tokens: list[Token] = []
    start = 0
    for part in s.split(" "):
        if part:
            end = start + len(part)
            tokens.append(word_new((start, end, part, False)))
            start = end + 1
        else:
            start += 1  # one of several spaces in a row
    return tokens


def _target_span(s: str, r: Redir) -> tuple[int, int]:
    """The target word of a redirection (after its descriptor, operator and blanks)."""
    i = r.start
    while i < r.end and s[i] in "0123456789&<> ":
        i += 1
    return (i, r.end) if i < r.end else (r.start, r.end)


def _rejected(j: J, words: list[Word] | None = None) -> Verdict:
    argv = tuple(w.value for w in words or ())
    program = argv[0].rsplit("/", 1)[-1] if argv else None
    return Verdict("reject", j.reason, j.hint, program, argv)
