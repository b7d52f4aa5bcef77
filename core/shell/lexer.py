"""Lexing helpers: the fast path for a plain single command, and the rejections
(with a reason naming the construct) that tokens.py returns for what the accepted
subset leaves out. Pure."""

from __future__ import annotations

import re

from core.shell.verdict import H_SEPARATE, J, rej


# Characters that are literal in an unquoted word in every position.
_SAFE = r"A-Za-z0-9_./:@%+,=^\]-"
# Inside quotes: printable ASCII only, so a fast-path match also proves there
# is no control or non-ASCII character anywhere.
_IN_SINGLE = r"[\x20-\x26\x28-\x7e]"  # not '
_IN_DOUBLE = r"[\x20\x21\x23\x25-\x5b\x5d-\x5f\x61-\x7e]"  # not " $ \ `
# `[...]++` inside the repetition: a run of safe characters is one step of the
# regex engine's single-character loop, not one pass through the alternation
# (and its backtracking bookkeeping) per character. Possessive, so a failing
# match never tries the ways of splitting a run (exponential); a run is always
# followed by a quote, a space or the end, so the language is the same.
_WORD = r"(?:[" + _SAFE + r"]++|'" + _IN_SINGLE + r"*'|\"" + _IN_DOUBLE + r"*\")+"
FAST_COMMAND = re.compile(_WORD + r"(?: +" + _WORD + r")*")
FAST_WORD = re.compile(_WORD)
RESERVED = frozenset(
    "if then else elif fi case esac for select while until do done in function time coproc "
    "{ } ! [[ ]]".split()
)


def char_reject(s: str, m: re.Match[str]) -> J:
    ch = m.group()
    code = f"U+{ord(ch):04X}"
    if ch == "\n" or ch == "\r":
        return rej(
            f"newlines are not allowed (found {code} at position {m.start()}): "
            "a command must be one line, one statement",
            "run one command per bash call; put multi-line text in a file with the write_file tool",
        )
    if ord(ch) < 0x20 or ord(ch) == 0x7F:
        return rej(
            f"control character {code} at position {m.start()} is not allowed",
            "remove control characters; put such text in a file with the write_file tool",
        )
    return rej(
        f"non-ASCII character {code} ({ch!r}) at position {m.start()} is not allowed "
        "(Unicode look-alikes such as U+2010 for '-' or Cyrillic letters are not what they seem)",
        "use plain ASCII in commands; put non-ASCII text in a file with the write_file tool "
        "and pass the file name",
    )


def operator_reject(s: str, i: int, c: str) -> J:
    nxt = s[i + 1 : i + 2]
    if c == "|":
        if nxt == "|":
            return rej("command lists (`||`) are not allowed", H_SEPARATE)
        return rej(
            "pipes (`|`) are not allowed",
            "run the first command on its own and read its output (the tool returns it to you), "
            "or use the grep / read_file tools to filter",
        )
    if c == "&":
        if nxt == "&":
            return rej("command lists (`&&`) are not allowed", H_SEPARATE)
        if nxt == ">":
            return rej(
                "output redirection (`&>`) is not allowed",
                "output is returned to you automatically; to save text use the write_file tool",
            )
        return rej(
            "background jobs (`&`) are not allowed",
            "run the command in the foreground; the tool applies a timeout",
        )
    if c == ";":
        return rej("command lists (`;`) are not allowed", H_SEPARATE)
    if c == "<":
        if nxt == "<":
            return rej(
                "here-documents and here-strings (`<<`) are not allowed",
                "write the text to a file with the write_file tool and pass the file name as an argument",
            )
        if nxt == "(":
            return rej(
                "process substitution (`<(...)`) is not allowed",
                "run the inner command as its own bash call",
            )
        return rej(
            "input redirection (`<`) is not allowed",
            "pass the file name as an argument instead (stdin is empty)",
        )
    if c == ">":
        if nxt == "(":
            return rej(
                "process substitution (`>(...)`) is not allowed",
                "run the inner command as its own bash call",
            )
        return rej(
            "output redirection (`>`) is not allowed",
            "output is returned to you automatically; to save text to a file use the write_file tool",
        )
    if c == "(":
        if s[i + 1 :].lstrip(" ").startswith(")"):
            return rej(
                "function definitions are not allowed",
                "write a script file with the write_file tool and run it",
            )
        return rej(
            "subshells and grouping (`(`) are not allowed",
            "run the command directly, without parentheses (quote a literal '(')",
        )
    return rej(
        "unbalanced `)` (subshell syntax) is not allowed",
        "run the command directly, without parentheses (quote a literal ')')",
    )


def dollar_reject(s: str, i: int, quoted: bool) -> J:
    rest = s[i + 1 : i + 3]
    where = " (even inside double quotes)" if quoted else ""
    if rest.startswith("(("):
        return rej(
            f"arithmetic expansion (`$((...))`) is not allowed{where}",
            "compute the value yourself and write the literal number",
        )
    if rest.startswith("("):
        return rej(
            f"command substitution (`$(...)`) is not allowed{where}",
            "run the inner command as its own bash call and use its output literally",
        )
    if rest.startswith("'") and not quoted:
        return rej(
            "ANSI-C quoting (`$'...'`) is not allowed",
            "use plain single quotes; put special characters in a file with the write_file tool",
        )
    if rest.startswith("[") and not quoted:
        return rej(
            "arithmetic expansion (`$[...]`) is not allowed",
            "compute the value yourself and write the literal number",
        )
    return rej(
        f"parameter expansion (`$`) is not allowed{where}",
        "variables are not expanded (there is no shell, and the environment is scrubbed): write "
        "the literal value, or use single quotes for a literal '$'",
    )


# Quote removal (a word's value as the program receives it).
_QUOTE_PART = re.compile(r"'([^']*)'|\"([^\"]*)\"|([^'\"]+)")


def unquote(raw: str) -> str:
    if "'" not in raw and '"' not in raw:
        return raw
    return "".join(a or b or c for a, b, c in _QUOTE_PART.findall(raw))
