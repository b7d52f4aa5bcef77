"""Text-level helpers of the opaque judge (opaque.py). Pure.

What bashlex (0.18) does not check or cannot read, handled on the text
itself: hidden characters, look-alikes, ANSI-C quoting, background jobs and
the single-quoted ``$`` it misreads (``scan``); quoted here-document
delimiters it cannot parse (``skeleton``); the substitutions bash runs inside
an unquoted here-document body (``substitutions``); whether its tree accounts
for every character (``anchored``); brace expansion (``alternatives``).
"""

from __future__ import annotations

import re

from core.shell.tokens import _BAD_BODY
from core.shell.verdict import J, rej

# Where a single-quoted word may start and end for bashlex to read it as
# literal (not `<`, `>` or `(`: bashlex glues `<(ls)'x'` into one word).
_BEFORE = frozenset(" \t\n;|&")
_AFTER = frozenset(" \t\n;|&)")



def scan(s: str, literal: set[int] | None = None) -> J | None:
    """Character-level checks bashlex does not make: hidden characters,
    look-alikes outside quotes, ANSI-C quoting, background jobs, and the
    single-quoted ``$`` that bashlex 0.18 misreads (or loops on). Here-document
    bodies are skipped; ``literal`` receives the position of each ``<<`` whose
    delimiter is quoted (its body is literal text, see ``_skeleton``)."""
    m = _BAD_BODY.search(s)
    if m is not None:
        return rej(f"control or invisible character U+{ord(m.group()):04X} at position {m.start()} is not allowed",
                   "remove control and invisible characters")
    stack = ["u"]  # u: unquoted, d: inside double quotes ("$(" inside pushes u again)
    i, n = 0, len(s)
    pending: list[str] = []  # here-document delimiters whose bodies start after this line
    backtick = False
    while i < n:
        c, state = s[i], stack[-1]
        if state == "u" and c == "\n" and pending:
            end = skip_bodies(s, i + 1, pending)
            if "${" in s[i:end] and "'" in s[i:end]:
                # bashlex may read a body as words (a `<<` it does not take for a
                # here-document) and misread the quotes around the `${`: see unclosed_brace
                return rej("a here-document body with both `${` and single quotes cannot be checked here",
                           "write the text to a file first, or quote the delimiter in a plain command")
            i, pending = end, []
            continue
        if c == "`" and (i == 0 or s[i - 1] != "\\") and state != "s":
            backtick = not backtick
        if state == "u" and s.startswith("<<", i) and not s.startswith("<<<", i):
            if len(stack) > 1 or backtick:
                # bashlex loses the lines after such a body's first delimiter line (bash runs them)
                return rej("a here-document inside a command substitution cannot be checked here",
                           "write the text to a file first (or use the plain \"$(cat <<'EOF' ... EOF)\" "
                           "message idiom on its own)")
            m = HEREDOC.match(s, i + 2)
            if m is not None:
                pending.append(m.group(2))
                if m.group(1) and literal is not None:
                    literal.add(i)
                i = m.end()
                continue
        if state == "u":
            if c == "'":
                j = s.find("'", i + 1)
                if j < 0:
                    return rej(f"unterminated single quote at position {i}", "close the quote")
                body = s[i + 1 : j]
                if any(x in body for x in ("$", "`", "<(", ">(")) and not (
                    (i == 0 or s[i - 1] in _BEFORE) and (j + 1 == n or s[j + 1] in _AFTER)
                ):
                    return rej(
                        f"'$', '`' or '<(' inside single quotes that do not span the whole word at position {i} "
                        "cannot be checked safely",
                        "quote the whole word from its first character to its last, e.g. '--opt=$x'",
                    )
                i = j + 1
                continue
            if c == "\\":
                i += 2
                continue
            if c == '"':
                stack.append("d")
            elif c == "$" and s[i + 1 : i + 2] == "'":
                return rej("ANSI-C quoting (`$'...'`) is not allowed", "use plain single quotes")
            elif c == "$" and s[i + 1 : i + 2] == "(":
                stack.append("u")
                i += 2
                continue
            elif c == ")" and len(stack) > 1:
                stack.pop()
            elif c == "&" and s[i + 1 : i + 2] not in ("&", ">") and s[i - 1 : i] not in ("&", ">", "<", "|"):
                return rej("background jobs (`&`) are not allowed",
                           "run the command in the foreground; the tool applies a timeout")
            elif c == "#" and (i == 0 or s[i - 1] in " \t\n;|&("):
                j = s.find("\n", i)
                i = n if j < 0 else j
                continue
            elif not c.isascii():
                return rej(f"non-ASCII character U+{ord(c):04X} at position {i} outside quotes is not allowed "
                           "(Unicode look-alikes are not what they seem)", "use plain ASCII outside quotes")
        else:
            if c == "\\":
                i += 2
                continue
            if c == '"':
                stack.pop()
            elif c == "$" and s[i + 1 : i + 2] == "(":
                stack.append("u")
                i += 2
                continue
        i += 1
    return None


HEREDOC = re.compile(r"-?[ \t]*(['\"]?)([A-Za-z_][A-Za-z0-9_.-]*)\1")


def substitutions(body: str) -> list[str] | J:
    """The text inside each ``$(...)`` and backtick pair of ``body``; a
    backslash before ``$`` or a backtick keeps it literal, as bash does."""
    out, i, n = [], 0, len(body)
    while i < n:
        c = body[i]
        if c == "\\":
            i += 2
            continue
        if c == "`":
            j = body.find("`", i + 1)
            if j < 0:
                return rej("an unclosed backtick in a here-document body", "quote the delimiter (<<'EOF')")
            out.append(body[i + 1 : j])
            i = j + 1
            continue
        if body.startswith("$(", i):
            depth, j = 1, i + 2
            while j < n and depth:
                depth += {"(": 1, ")": -1}.get(body[j], 0)
                j += 1
            if depth:
                return rej("an unclosed `$(` in a here-document body", "quote the delimiter (<<'EOF')")
            out.append(body[i + 2 : j - 1])
            i = j
            continue
        i += 1
    return out


def skeleton(s: str, literal: set[int]) -> str:
    """``s`` with the quotes around each quoted here-document delimiter blanked:
    bashlex (0.18) cannot read ``<<'EOF'``. Same length, so every position
    still points into ``s``; those bodies are taken literally (``literal``)."""
    chars = list(s)
    for i in literal:
        m = HEREDOC.match(s, i + 2)
        if m is not None and m.group(1):
            chars[m.start(1)] = " "
            chars[m.end() - 1] = " "
    return "".join(chars)


def skip_bodies(s: str, i: int, delims: list[str]) -> int:
    """Past the bodies of the here-documents ``delims``, starting at line ``i``."""
    for delim in delims:
        while i < len(s):
            nl = s.find("\n", i)
            nl = len(s) if nl < 0 else nl
            line = s[i:nl]
            i = nl + 1
            if line.lstrip("\t") == delim:
                break
    return i


BRACE = re.compile(r"\{([^{}'\"\s$`]*,[^{}'\"\s$`]*|-?\w+\.\.-?\w+(?:\.\.-?\d+)?)\}")
_MAX_ALTERNATIVES = 16


def alternatives(value: str, starts: list[int]) -> list[str]:
    """What bash's brace expansion makes of ``value`` (groups at ``starts``;
    a range by its two ends), at most ``_MAX_ALTERNATIVES``."""
    out = [value]
    for start in reversed(starts):
        nxt = []
        for text in out:
            m = BRACE.match(text, start)
            if m is None:
                nxt.append(text)
                continue
            inner = m.group(1)
            parts = inner.split("..")[:2] if ".." in inner and "," not in inner else inner.split(",")
            nxt += [text[:start] + p + text[m.end():] for p in parts]
        out = nxt[:_MAX_ALTERNATIVES]
    return out


_LEAVES = frozenset(["word", "assignment", "reservedword", "operator", "pipe", "redirect", "heredoc"])


def anchored(trees: list, s: str, lo: int = 0, hi: int | None = None) -> bool:
    """bashlex's tree accounts for every character of ``s[lo:hi]``: each
    reserved word and operator sits where the text has it, and whatever no
    node covers is blank space or a comment. The script that runs is ``s``
    itself, so a command the parser skipped would run unjudged."""
    covered = bytearray(len(s) + 1)
    stack = list(trees)
    while stack:
        node = stack.pop()
        kind = getattr(node, "kind", None)
        pos = getattr(node, "pos", None)
        if kind in _LEAVES and pos is not None:
            a, b = pos
            if not (0 <= a <= b <= len(s)):
                return False
            if kind == "reservedword" and s[a:b] != node.word:
                return False
            if kind == "operator" and node.op == "\n":
                if s[a : a + 1] != "\n":
                    return False
                b = a + 1  # (bashlex stretches it over here-document bodies, which their own nodes cover)
            elif kind == "operator" and s[a:b] != node.op:
                return False
            if kind == "pipe" and s[a:b] != node.pipe:
                return False
            covered[a:b] = b"\x01" * (b - a)
        for attr in ("parts", "list", "redirects"):
            stack.extend(getattr(node, attr, None) or ())
        for attr in ("command", "heredoc", "output"):
            child = getattr(node, attr, None)
            if child is not None and hasattr(child, "kind"):
                stack.append(child)
    i, n = lo, len(s) if hi is None else hi
    while i < n:
        if covered[i] or s[i] in " \t\n;":
            i += 1
        elif s[i] == "#":
            j = s.find("\n", i)
            i = n if j < 0 else j
        elif s[i] == "\\" and s[i + 1 : i + 2] == "\n":
            i += 2
        else:
            return False
    return True


def unclosed_brace(s: str) -> bool:
    """A ``${`` without a ``}`` after it, wherever it is (quoted or not, in a
    here-document body or not): bashlex 0.18 searches for its end forever
    when it misreads the quoting around one (``x'${'``, ``'${'x``), and a pure
    function cannot time it out. Counted on the raw text, so no quoting rule
    can hide one."""
    depth = 0
    i = s.find("${")
    if i < 0:
        return False
    for k in range(i, len(s)):
        if s.startswith("${", k):
            depth += 1
        elif s[k] == "}" and depth:
            depth -= 1
    return depth > 0

