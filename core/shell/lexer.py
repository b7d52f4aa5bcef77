"""Lexing: the strict subset of shell syntax, re-derived from the source text. Pure."""

from __future__ import annotations

import re

from core.shell.verdict import H_GLOB, H_PLAIN, H_SEPARATE, J, rej


BAD_CHAR = re.compile(r"[^\x20-\x7e]")
# Characters that are literal in an unquoted word in every position.
_SAFE = r"A-Za-z0-9_./:@%+,=^\]-"
# Inside quotes: printable ASCII only, so a fast-path match also proves there
# is no control or non-ASCII character anywhere.
_IN_SINGLE = r"[\x20-\x26\x28-\x7e]"  # not '
_IN_DOUBLE = r"[\x20\x21\x23\x25-\x5b\x5d-\x5f\x61-\x7e]"  # not " $ \ `
_WORD = r"(?:[" + _SAFE + r"]|'" + _IN_SINGLE + r"*'|\"" + _IN_DOUBLE + r"*\")+"
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


def slow_lex(s: str) -> list[tuple[int, int]] | J:
    """Tokenize ``s`` character by character, returning word spans or the first
    problem found (with a specific reason). Accepts slightly more than the fast
    regex: ``#`` inside a word, ``~`` not at a word start or after ``=``/``:``,
    and a lone ``[``."""
    spans: list[tuple[int, int]] = []
    n = len(s)
    i = 0
    start = -1  # start of the current word, -1 when between words
    while i < n:
        c = s[i]
        if c == " ":
            if start >= 0:
                spans.append((start, i))
                start = -1
            i += 1
            continue
        at_start = start < 0
        if at_start:
            start = i
        if c == "'":
            j = s.find("'", i + 1)
            if j < 0:
                return rej(f"unterminated single quote at position {i}", H_PLAIN)
            i = j + 1
            continue
        if c == '"':
            j = i + 1
            while j < n and s[j] not in '"$`\\':
                j += 1
            if j >= n:
                return rej(f"unterminated double quote at position {i}", H_PLAIN)
            d = s[j]
            if d == '"':
                i = j + 1
                continue
            if d == "`":
                return rej(
                    "command substitution (backticks) is not allowed, even inside double quotes",
                    "run the inner command as its own bash call and use its output literally",
                )
            if d == "\\":
                return rej(
                    "backslashes inside double quotes are not allowed",
                    "use single quotes, which keep every character literally",
                )
            return dollar_reject(s, j, quoted=True)
        if c in "|&;<>()":
            return operator_reject(s, i, c)
        if c == "$":
            return dollar_reject(s, i, quoted=False)
        if c == "`":
            return rej(
                "command substitution (backticks) is not allowed",
                "run the inner command as its own bash call and use its output literally",
            )
        if c == "\\":
            return rej(
                f"unquoted backslash at position {i} is not allowed",
                "use single quotes instead of backslash escapes (e.g. 'a b' instead of a\\ b)",
            )
        if c in "*?":
            return rej(f"unquoted glob character {c!r} at position {i} is not allowed", H_GLOB)
        if c == "[":
            end = s.find(" ", i)
            word = s[start : end if end >= 0 else n]
            if word in ("[[", "]]"):
                return rej(
                    "the shell keyword `[[` is not allowed",
                    "use the `test` program with quoted arguments, or run the check as its own command",
                )
            if not (at_start and word == "["):
                return rej(f"unquoted glob character '[' at position {i} is not allowed", H_GLOB)
            i += 1
            continue
        if c == "{" and at_start and s[i + 1 : i + 2] == "}" and s[i + 2 : i + 3] in ("", " "):
            i += 2  # a lone `{}` is literal in bash (no brace expansion)
            continue
        if c in "{}":
            return rej(
                f"unquoted {c!r} at position {i} is not allowed (brace expansion or command grouping)",
                "quote the braces (e.g. 'HEAD@{1}') or write the words out in full",
            )
        if c == "~" and (at_start or s[i - 1] in "=:"):
            return rej(
                f"tilde expansion (unquoted '~' at position {i}) is not allowed",
                "use a path relative to the workspace root (or quote the '~' if it is meant literally)",
            )
        if c == "#" and at_start:
            return rej(f"comments ('#' at position {i}) are not allowed", "remove the comment")
        if c == "!":
            return rej(
                f"unquoted '!' at position {i} is not allowed (pipeline negation / history expansion)",
                "quote it with single quotes ('!') if it is meant literally",
            )
        if not ("a" <= c <= "z" or "A" <= c <= "Z" or "0" <= c <= "9" or c in "_./:@%+,=^]-~#"):
            return rej(f"unexpected character {c!r} at position {i}", H_PLAIN)
        i += 1
    if start >= 0:
        spans.append((start, n))
    return spans


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
