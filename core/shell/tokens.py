"""Tokenizing a compound command: words, list and pipe operators, redirections,
quoted here-documents. Pure.

The accepted subset: plain words (single quotes, double quotes
without ``$``/backtick/backslash), globs ``* ? [`` in unquoted words, the
operators ``&& || ; |`` and newlines, the redirections ``N>&M``, ``N> FILE``,
``N>> FILE``, ``&> FILE``, ``< FILE`` and here-documents with a quoted
delimiter (``<<'EOF'``, body taken literally), and the commit-message idiom
``"$(cat <<'EOF' ... EOF)"``, which becomes that literal text (trailing
newlines removed, as command substitution does). Everything else is
rejected with a reason naming the construct (helpers in lexer.py).

Besides the tokens, ``tokenize`` returns a *skeleton* of the command: the
same text with here-document bodies blanked and the ``$(cat ...)`` idiom
replaced by a same-length single-quoted filler, so bashlex (which cannot read
quoted here-document delimiters) can cross-check every other position.
"""

from __future__ import annotations

import re
import unicodedata
from functools import partial
from typing import NamedTuple

from core.shell.facts import SANDBOX_HOME
from core.shell.lexer import FAST_WORD, char_reject, dollar_reject, operator_reject, unquote
from core.shell.verdict import H_GLOB, H_PLAIN, J, rej


class Word(NamedTuple):
    start: int
    end: int
    value: str  # after quote removal
    glob: bool  # unquoted * ? [ : the executor expands it


class Op(NamedTuple):
    start: int
    end: int
    op: str  # "&&" "||" ";" "|" or "\n"


class Redir(NamedTuple):
    start: int
    end: int
    fd: int  # 0, 1, 2; -1 for `&>` (stdout and stderr)
    op: str  # "<" ">" ">>" ">&" "<<"
    target: str  # a path, a descriptor number for ">&", the body for "<<"


class Assign(NamedTuple):
    """``NAME=value`` before a command's program: its environment."""

    start: int
    end: int
    name: str
    value: str  # after quote removal (and known variables written out)


Token = Word | Op | Redir | Assign
# Constructors that skip NamedTuple's Python-level __new__ (the tokenizer's hot path).
word_new = partial(tuple.__new__, Word)
_op_new = partial(tuple.__new__, Op)

_WORD_CHARS = re.compile(r"[A-Za-z0-9_./:@%+,=^\]-]+")
# A plain word (safe characters and simple quotes, as lexer.FAST_WORD) that ends
# where a token ends (not digits right before < or >: a descriptor), the list
# and pipe operators, each with the spaces before it (one match per token, not
# two); spaces before anything else match alone, so a long run of them is read
# once. Newlines take the slow path (here-documents).
_END = r"(?=[ \n;|&<>]|$)"
_SIMPLE = re.compile(
    r" *+(?:(?P<word>" + FAST_WORD.pattern + r")" + _END + r"(?<!\d(?=[<>]))"
    r"|(?P<op>&&|\|\||\|(?!&)|;(?![;&]))"
    r"|(?P<dup>(?P<dupfd>[12])?>&(?P<dupto>[12]))(?=[ \n;|&]|$)"
    r"|(?P<null>(?P<nullfd>[12]|&)?>/dev/null)(?=[ \n;|&]|$)"
    r"|(?P<glob>(?!-)[A-Za-z0-9_./:@%+,=^-]*[*?][A-Za-z0-9_./:@%+,=^*?-]*)" + _END  # `-*`: slow path
    + r")|(?P<space> +)"
)
_FD_PREFIX = re.compile(r"(\d+)(?=[<>])")
# the delimiter must end the word (bash reads `<<'EOF'x` as the delimiter EOFx)
_HEREDOC_DELIM = re.compile(r"(-?) *(['\"])([A-Za-z0-9_.-]+)\2(?=[ \n;|&<>]|$)")
_CAT_LITERAL = re.compile(r"\"\$\(cat <<-? *(['\"])([A-Za-z0-9_]+)\1\n((?:[^\n]*\n)*?)\2\n *\)\"")
# control characters, and characters a terminal does not show (zero-width, soft
# hyphen, bidirectional overrides that reorder what the approver reads)
_BAD_BODY = re.compile(
    r"[\x00-\x08\x0b-\x1f\x7f-\x9f\xad\u034f\u180e\u200b\u200c\u200e\u200f\u202a-\u202e"
    r"\u2060-\u2064\u2066-\u2069\ufeff]"
)
_BAD_QUOTED_ASCII = re.compile(r"[\r\t]")
_ANY = re.compile(r".", re.S)
_GLOB_CHARS = re.compile(r"[*?\[]")
# Bracket expressions the executor's glob (Python's fnmatch) reads otherwise
# than bash: `[^a]` is a negation to bash and the set {^, a} to fnmatch;
# `[[:upper:]]`, `[[=a=]]`, `[[.a.]]` are classes to bash and sets of
# characters to fnmatch. Such a word is never planned (it would be expanded
# to other files than bash would give the program).
BASH_ONLY_BRACKET = re.compile(r"\[\^|\[([:=.])[^\]]*\1\]")
# `{0}` in `stash@{0}`: no comma and no `..`, so bash does not brace-expand it
_LITERAL_BRACES = re.compile(r"\{(?![^}]*(?:,|\.\.))[A-Za-z0-9_.:@%+=^/-]+\}")
# `{}` anywhere in a word (xargs -I{}, {}.bak) is literal to bash when only plain
# characters follow it to the word's end: no `,`, `..` or `}` that would make its
# `{` open an expansion (`a{},b}` expands to `a}` and `ab`).
_EMPTY_BRACES = re.compile(r"\{\}(?=[A-Za-z0-9_./:@%+=^-]*(?:$|[ \t\n;|&<>)]))")


def _quoted_problem(s: str, a: int, b: int) -> J | None:
    """Quoted text may hold newlines and printable Unicode (it is data), but no
    control or invisible characters (they hide text from the approver)."""
    m = _BAD_BODY.search(s, a, b)
    if m is None:
        m = _BAD_QUOTED_ASCII.search(s, a, b)
    return None if m is None else char_reject(s, m)
_BACKTICK = (
    "command substitution (backticks) is not allowed",
    "run the inner command as its own bash call and use its output literally",
)


def _body_problem(text: str, where: int) -> J | None:
    m = _BAD_BODY.search(text)
    if m is None:
        return None
    return rej(
        f"control or invisible character U+{ord(m.group()):04X} in the here-document text "
        f"(near position {where + m.start()}) is not allowed",
        "remove control and invisible characters; put such text in a file with the write_file tool",
    )


_KNOWN_REF = re.compile(r"\$(?:([A-Za-z_][A-Za-z0-9_]*)|\{([A-Za-z_][A-Za-z0-9_]*)\})")
_LITERAL_VALUE = re.compile(r"[A-Za-z0-9_./:@%+,=^-]*")


def _known(s: str, i: int, env: dict[str, str] | None, quoted: bool) -> tuple[int, str] | None:
    """``$NAME`` / ``${NAME}`` at ``i`` whose value the sandbox fixes: (end, value).
    Unquoted, only a value that bash would neither split nor glob."""
    if not env:
        return None
    m = _KNOWN_REF.match(s, i)
    if m is None:
        return None
    value = env.get(m.group(1) or m.group(2))
    if value is None or m.group(1) and s[m.end() : m.end() + 1] == "[":
        return None
    if not quoted and not _LITERAL_VALUE.fullmatch(value) or not quoted and not value:
        # bash splits and globs an unquoted value, and drops a word that comes
        # out empty (`printf %s $EMPTY x` passes one argument): left unknown
        return None
    return m.end(), value


def _word(
    s: str, i: int, patches: list[tuple[int, int, str]], env: dict[str, str] | None = None
) -> tuple[int, str, bool] | J:
    """Read the word starting at ``i``: (end, value, glob) or a rejection.
    ``env``: variables written out as their known values."""
    n, start = len(s), i
    parts: list[str] = []
    glob = quoted = False  # quoted: a quoted part holds a glob character
    while i < n:
        m = _WORD_CHARS.match(s, i)
        if m is not None:
            parts.append(m.group())
            i = m.end()
            continue
        c = s[i]
        if c in " \n|&;<>()":
            break
        if c == "'":
            j = s.find("'", i + 1)
            if j < 0:
                return rej(f"unterminated single quote at position {i}", H_PLAIN)
            problem = _quoted_problem(s, i + 1, j)
            if problem is not None:
                return problem
            parts.append(s[i + 1 : j])
            quoted, i = quoted or _GLOB_CHARS.search(parts[-1]) is not None, j + 1
            continue
        if c == '"':
            lit = _CAT_LITERAL.match(s, i)
            if lit is not None:
                body, delim = lit.group(3), lit.group(2)
                strip = s[i : lit.start(1)].endswith("-") or "<<-" in s[i : lit.start(1)]
                lines = [line.lstrip("\t") if strip else line for line in body.split("\n")]
                if delim in lines:
                    # bash ends the here-document at the first `EOF` line: what follows it
                    # would run inside the $(...) -- never a literal
                    return rej(
                        f"the here-document inside \"$(cat <<'{delim}' ...)\" has a `{delim}` line before its end",
                        f"use a delimiter that does not appear in the text (e.g. <<'END_{delim}')",
                    )
                problem = _body_problem(body, lit.start(3))
                if problem is not None:
                    return problem
                parts.append("\n".join(lines).rstrip("\n"))
                patches.append((i, lit.end(), "'" + "x" * (lit.end() - i - 2) + "'"))
                quoted, i = quoted or _GLOB_CHARS.search(parts[-1]) is not None, lit.end()
                continue
            j, seg = i + 1, []
            while j < n and s[j] != '"':
                d = s[j]
                if d == "`":
                    return rej(_BACKTICK[0] + ", even inside double quotes", _BACKTICK[1])
                if d == "$" and s[j + 1 : j + 2] == '"':
                    seg.append(d)  # `"^\.$"`: a `$` that starts no expansion is literal
                    patches.append((j, j + 1, "x"))  # (bashlex takes it for an expansion)
                    j += 1
                    continue
                if d == "$":
                    known = _known(s, j, env, True)
                    if known is None:
                        return dollar_reject(s, j, quoted=True)
                    patches.append((j, known[0], "x" * (known[0] - j)))
                    seg.append(known[1])
                    j = known[0]
                    continue
                if d == "\\":
                    nxt = s[j + 1 : j + 2]
                    if nxt in ("$", "`", '"', "\\"):
                        seg.append(nxt)
                    elif nxt != "\n":  # backslash-newline: a line continuation, removed
                        seg.append("\\" + nxt)
                    j += 2
                    continue
                seg.append(d)
                j += 1
            if j >= n:
                return rej(f"unterminated double quote at position {i}", H_PLAIN)
            text = "".join(seg)
            problem = _quoted_problem(s, i + 1, j)
            if problem is not None:
                return problem
            parts.append(text)
            quoted, i = quoted or _GLOB_CHARS.search(parts[-1]) is not None, j + 1
            continue
        at_start = i == start
        if c == "$":
            known = _known(s, i, env, False)
            if known is None:
                return dollar_reject(s, i, quoted=False)
            patches.append((i, known[0], "x" * (known[0] - i)))
            parts.append(known[1])
            i = known[0]
            continue
        if c == "`":
            return rej(*_BACKTICK)
        if c == "\\":
            nxt = s[i + 1 : i + 2]
            if nxt == "\n":
                i += 2  # a line continuation inside a word
                continue
            if not nxt or not (" " <= nxt <= "~"):
                return rej(f"a backslash before {nxt!r} at position {i} is not allowed", "use single quotes")
            parts.append(nxt)  # an escaped character is literal (and never a glob)
            quoted, i = quoted or _GLOB_CHARS.search(parts[-1]) is not None, i + 2
            continue
        if c in "*?[":
            glob = True
        elif c == "{" and _EMPTY_BRACES.match(s, i):
            parts.append("{}")  # literal in bash (no brace expansion)
            i += 2
            continue
        elif c == "{" and _LITERAL_BRACES.match(s, i):
            m2 = _LITERAL_BRACES.match(s, i)
            parts.append(m2.group())  # type: ignore[union-attr]
            i = m2.end()  # type: ignore[union-attr]
            continue
        elif c in "{}":
            return rej(
                f"unquoted {c!r} at position {i} is not allowed (brace expansion or command grouping)",
                "quote the braces (e.g. 'HEAD@{1}') or write the words out in full",
            )
        elif c == "~" and at_start and s[i + 1 : i + 2] in ("", "/", " ", "\t", "\n", ";", "|", "&", "<", ">", ")"):
            # `~` and `~/...`: bash's tilde expansion to $HOME, which for every
            # command is the sandbox's private, empty home. Written out here, so
            # the plan holds the literal path and paths under it are judged as
            # what they are: outside the workspace. (`~user`, and `~` after
            # `=` or `:`, stay rejected below.)
            parts.append(SANDBOX_HOME)
            patches.append((i, i + 1, "h"))  # bashlex sees a plain word in its place
            i += 1
            continue
        elif c == "~" and (at_start or s[i - 1] in "=:"):
            return rej(
                f"tilde expansion (unquoted '~' at position {i}) is not allowed",
                "use a path relative to the workspace root (or quote the '~' if it is meant literally)",
            )
        elif c == "#" and at_start:
            return rej(f"comments ('#' at position {i}) are not allowed", "remove the comment")
        elif c == "!" and at_start and s[i + 1 : i + 2] in ("", " ", "\n", ";", "|", "&", "=") and (
            s[i + 1 : i + 2] != "=" or s[i + 2 : i + 3] in ("", " ", "\n")
        ):
            # a lone `!` (find's negation) or `!=` (test's): literal words; history expansion
            # is off in a non-interactive shell and negation needs the command position
            # (a `!` program is the keyword, rejected by split_tokens)
            parts.append(c)
            i += 1
            continue
        elif c == "!":
            return rej(
                f"unquoted '!' at position {i} is not allowed (pipeline negation / history expansion)",
                "quote it with single quotes ('!') if it is meant literally",
            )
        elif c not in "~#":
            if " " <= c <= "~":
                return rej(f"unexpected character {c!r} at position {i}", H_PLAIN)
            if unicodedata.category(c)[0] != "L":
                return char_reject(s, _ANY.match(s, i))  # type: ignore[arg-type]
            # A letter of another script (`docs/数据.md`, `café`): a word
            # character to bash as to us, as it is in quotes. Dashes, spaces,
            # marks and invisible characters that only look like ASCII stay
            # refused, and so does a program name that is not plain ASCII
            # (compound: a look-alike `саt` is another program).
        parts.append(c)
        i += 1
    raw = s[start:i]
    if raw in ("[[", "]]"):
        return rej(
            "the shell keyword `[[` is not allowed",
            "use the `test` program with quoted arguments, or run the check as its own command",
        )
    if raw == "[":
        glob = False  # the `test` program
    if glob and raw[:1] == "-" and "=" not in raw[: min(raw.find(c) % (len(raw) + 1) for c in "*?[")]:
        return rej(
            f"the glob {raw!r} could expand to option words chosen by file names (e.g. `--pre=./x`)",
            "put the glob after a fixed prefix (e.g. ./*.py) or quote it if the program takes a pattern",
        )
    if glob and BASH_ONLY_BRACKET.search(raw):
        return rej(
            f"the glob {raw!r} uses a bracket expression (`[^...]`, `[[:class:]]`) that is not expanded here",
            "write the negation as `[!...]` and list the characters (e.g. `[A-Z]` for `[[:upper:]]`)",
        )
    if glob and quoted:
        return rej(
            f"the word {raw!r} has glob characters both quoted and unquoted, which cannot be expanded exactly",
            "quote the whole pattern if the program takes it (e.g. '*.py'), or leave the glob unquoted",
        )
    return i, "".join(parts), glob


def _redirect(
    s: str, i: int, fd: int | None, patches: list, pending: list, env: dict[str, str] | None = None
) -> tuple[int, Redir] | J:
    """Read a redirection whose operator starts at ``i`` (after any fd digits)."""
    start = i - (len(str(fd)) if fd is not None else 0)
    two, three = s[i : i + 2], s[i : i + 3]
    if three == "<<<":
        return rej("here-strings (`<<<`) are not allowed",
                   "use a quoted here-document (<<'EOF' ... EOF) or pass the text as an argument")
    if two == "<<":
        m = _HEREDOC_DELIM.match(s, i + 2)
        if m is None:
            return rej(
                "a here-document needs a quoted delimiter (<<'EOF'): with a bare one the shell expands "
                "the body",
                "quote the delimiter: python3 - <<'PY' ... PY",
            )
        end = m.end()
        patches.append((i, end, "<" + " " * (end - i - 2) + "x"))
        redir = Redir(start, end, 0 if fd is None else fd, "<<", "")
        pending.append((redir, m.group(3), m.group(1) == "-"))
        return end, redir
    if s[i] == "&":  # &> FILE
        if three == "&>>":
            return rej("`&>>` is not allowed", "use `>> FILE 2>&1`")
        op, j, fd_ = ">", i + 2, -1
    elif two in ("<(", ">("):
        return operator_reject(s, i, s[i])
    elif two in (">|", "<>", "<&"):
        return rej(f"the redirection `{two}` is not allowed", "use `>`, `>>`, `<` or `2>&1`")
    elif two == ">&":
        op, j, fd_ = ">&", i + 2, 1 if fd is None else fd
    elif two == ">>":
        op, j, fd_ = ">>", i + 2, 1 if fd is None else fd
    else:
        op, j, fd_ = s[i], i + 1, (0 if s[i] == "<" else 1) if fd is None else fd
    while j < len(s) and s[j] == " ":
        j += 1
    word = _word(s, j, patches, env)
    if isinstance(word, J):
        return word
    end, target, glob = word
    if end == j:
        return rej(f"a redirection at position {start} has no target", "write the target after the operator")
    if glob:
        return rej(f"a glob in the redirection target `{s[j:end]}` is not allowed", H_GLOB)
    if op == ">&" and not target.isdigit():
        return rej(f"the redirection `>&{target}` is not allowed", "use `> FILE 2>&1` to send both outputs to a file")
    return end, Redir(start, end, fd_, op, target)


def _bodies(s: str, i: int, pending: list, out: list[Token], patches: list) -> int | J:
    """Read the bodies of the pending here-documents, starting at ``i`` (just
    after the newline that ended their command line)."""
    n = len(s)
    for redir, delim, strip_tabs in pending:
        body_start, lines = i, []
        while True:
            if i >= n:
                return rej(f"the here-document `{delim}` has no closing `{delim}` line",
                           f"end the here-document with a line that is exactly {delim}")
            nl = s.find("\n", i)
            nl = n if nl < 0 else nl
            line = s[i:nl]
            if strip_tabs:
                line = line.lstrip("\t")
            if line == delim:
                break
            lines.append(line + "\n")
            i = nl + 1
        body = "".join(lines)
        problem = _body_problem(body, body_start)
        if problem is not None:
            return problem
        out[out.index(redir)] = redir._replace(target=body)
        patches.append((body_start, nl, " " * (nl - body_start)))
        i = nl + 1 if nl < n else n
    pending.clear()
    return i


def _simple_tokens(s: str) -> list[Token] | None:
    """Tokens of a command made only of the common tokens (one regex match each), or
    None when something else appears (the general loop takes over)."""
    out: list[Token] = []
    end, n, match = 0, len(s), _SIMPLE.match
    while end < n:
        # each token where the last one ended (finditer would search on past an
        # unknown token, once per later position: quadratic on a long word)
        m = match(s, end)
        if m is None:
            return None
        end = b = m.end()
        kind = m.lastgroup
        if kind == "space":
            continue
        a = m.start(kind)  # after the spaces the match began with
        if kind == "word":
            out.append(word_new((a, b, unquote(m.group(kind)), False)))
        elif kind == "op":
            out.append(_op_new((a, b, m.group(kind))))
        elif kind == "glob":
            out.append(word_new((a, b, m.group(kind), True)))
        elif kind == "dup":
            out.append(Redir(a, b, int(m.group("dupfd") or 1), ">&", m.group("dupto")))
        else:
            fd = m.group("nullfd")
            out.append(Redir(a, b, -1 if fd == "&" else int(fd or 1), ">", "/dev/null"))
    return out


def tokenize(s: str, env: dict[str, str] | None = None) -> tuple[list[Token], str] | J:
    """(tokens, skeleton for bashlex) or the first construct we reject.
    ``env``: the variables whose values are known (written out in place)."""
    out: list[Token] = []
    patches: list[tuple[int, int, str]] = []
    pending: list = []
    n, i = len(s), 0
    simple = _simple_tokens(s)
    if simple is not None:
        return simple, s
    while i < n:
        m = _SIMPLE.match(s, i)  # the common tokens, without the character-by-character path
        if m is not None:
            kind = m.lastgroup
            if kind != "space":
                i = m.start(kind)  # after the spaces the match began with
            if kind == "word":
                out.append(Word(i, m.end(), unquote(m.group(kind)), False))
            elif kind == "op":
                out.append(Op(i, m.end(), m.group(kind)))
            elif kind == "glob":
                out.append(Word(i, m.end(), m.group(kind), True))
            elif kind == "dup":
                out.append(Redir(i, m.end(), int(m.group("dupfd") or 1), ">&", m.group("dupto")))
            elif kind == "null":
                fd = m.group("nullfd")
                out.append(Redir(i, m.end(), -1 if fd == "&" else int(fd or 1), ">", "/dev/null"))
            i = m.end()
            continue
        c = s[i]
        if c == " ":
            i += 1
            continue
        if c == "\\" and s[i + 1 : i + 2] == "\n":
            i += 2  # a line continuation between words
            continue
        if c == "#":
            end = s.find("\n", i)
            end = n if end < 0 else end
            patches.append((i, end, " " * (end - i)))  # a comment: bash ignores the rest of the line
            i = end
            continue
        if c == "\n":
            out.append(Op(i, i + 1, "\n"))
            i += 1
            if pending:
                got = _bodies(s, i, pending, out, patches)
                if not isinstance(got, int):
                    return got
                i = got
            continue
        two = s[i : i + 2]
        if two in ("&&", "||"):
            out.append(Op(i, i + 2, two))
            i += 2
            continue
        if c == "|":
            if two == "|&":
                return rej("`|&` is not allowed", "use `2>&1 |`")
            out.append(Op(i, i + 1, "|"))
            i += 1
            continue
        if c == ";":
            if two in (";;", ";&"):
                return rej(f"`{two}` (case syntax) is not allowed", "write one command per part")
            out.append(Op(i, i + 1, ";"))
            i += 1
            continue
        fd = None
        m = _FD_PREFIX.match(s, i)
        if m is not None:
            fd = int(m.group(1))
            if m.group(1) not in ("0", "1", "2"):
                return rej(f"redirecting descriptor {m.group(1)} is not allowed", "only 0, 1 and 2 can be redirected")
            i = m.end()
            c = s[i]
        if c in "<>" or two == "&>":
            got = _redirect(s, i, fd, patches, pending, env)
            if isinstance(got, J):
                return got
            i, redir = got
            out.append(redir)
            continue
        if c in "&()":
            return operator_reject(s, i, c)
        word = _word(s, i, patches, env)
        if isinstance(word, J):
            return word
        end, value, glob = word
        out.append(Word(i, end, value, glob))
        i = end
    if pending:
        redir, delim, _ = pending[0]
        return rej(f"the here-document `{delim}` has no body", f"put the body on the next lines and end it with {delim}")
    skeleton = s
    for a, b, text in sorted(patches, reverse=True):
        skeleton = skeleton[:a] + text + skeleton[b:]
    return out, skeleton
