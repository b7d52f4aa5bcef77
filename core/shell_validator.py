"""Fail-closed validation of bash commands (DESIGN.md section 4, "intent fence").

``validate_command`` turns one command string into a :class:`Verdict`:

* ``allow``  - a known read-only program with known options: may run in parallel
  with other read-only calls and needs no approval;
* ``ask``    - a plain command that may change things (tests, builds, git commits,
  unknown programs): a human approves it first;
* ``reject`` - never runs; ``reason`` says what was found and ``hint`` what the
  model should do instead.

The executor runs ``Verdict.argv`` with execve, without any shell, so ``argv``
must be exactly the words bash would have passed after quote removal. The
validator therefore accepts only a strict subset of the shell language - plain
words built from safe characters, single quotes, and double quotes that contain
no ``$``, backtick or backslash - and derives every word itself from the source
text. bashlex must independently parse the same text into one plain command
whose words sit at exactly the same positions; any disagreement, any bashlex
exception, any other node kind is a rejection.

Decisions where the issue left room (each one is also asserted by the tests):

* Leading/trailing spaces, tabs and newlines are trimmed; any other control
  character (interior newline and tab included) is rejected. Commands longer
  than ``MAX_COMMAND_CHARS`` are rejected (bashlex is slow on huge inputs).
* Unquoted ``~`` is rejected where bash could expand it (start of a word, or
  after ``=`` / ``:``); ``HEAD~1`` stays allowed. Unquoted ``{`` ``}`` ``!`` are
  rejected everywhere (brace expansion, grouping, negation) except a lone
  ``{}`` word, which bash keeps literally; ``#`` only where
  it starts a comment (start of a word); a lone ``[`` (the ``test`` program) is
  allowed, any other unquoted ``[`` ``*`` ``?`` is a glob and rejected.
* A program given by absolute path is judged by its basename, but an ``allow``
  is lowered to ``ask`` unless it lives in a standard system bin folder. A
  relative path is a workspace script (``ask``) unless its name shadows a
  known program (reject: ``./cat``); a project environment's tool
  (``.venv/bin/python``, ``node_modules/.bin/jest``) is judged by its name
  but never auto-allowed.
* ``allow`` means "no approval", so a read-only command whose arguments name
  something outside the workspace (``/``, ``/etc/...``, ``/home/...``, any
  ``..`` component, also after ``--opt=``) is lowered to ``ask``, as the
  file tools refuse such paths (DESIGN section 4).
* bashlex 0.18 expands ``$`` / backticks inside a single-quoted part of a word
  unless the word starts and ends with ``'`` (and loops forever on
  ``'${'+``), so such words are rejected before bashlex sees them, with a
  hint to quote the whole word.
* ``cat`` with no file reads stdin, which the executor wires to /dev/null:
  it ends at once, so it is allowed.
* git: network subcommands (clone/fetch/pull/push/ls-remote, ``remote update``)
  are ``ask`` - syncing is a normal developer action a human can approve, and
  the OS sandbox has no network anyway - but their program-running options
  (``--upload-pack``, ``--receive-pack``, ``--exec``, ``-u`` for clone /
  ls-remote, ``clone -c/--config``, ``--template``) and ``<transport>::``
  remote-helper URLs are rejected. Unknown git subcommands and unknown global
  options are rejected: they may be aliases (``alias.x = !sh``) or ``git-*``
  programs from PATH. ``git fetch -u`` is ``--update-head-ok`` (ask), unlike
  ``clone`` / ``ls-remote -u`` (``--upload-pack``: reject). ``git -C <relative
  path>`` keeps its verdict; ``--git-dir`` / ``--work-tree`` / ``-C`` outside
  the workspace lower it to ``ask``. ``git clean`` without ``-n`` is rejected as destructive; interactive
  modes (``add -p``, ``rebase -i``, ``commit -e`` ...) are rejected (no terminal).
  Note: git may still run programs configured in the repository's own
  ``.git/config`` / ``.gitattributes``, which text validation cannot see. The
  executor overrides the dangerous ones from the environment (fsmonitor,
  hooks, pager, ``ext::``; activities/bash.py); the rest (``diff.external``,
  textconv) is the OS sandbox's job.
* ``git config``: reading is allowed; setting a key is ``ask`` only for a list
  of plain preference keys, any other key is rejected (``alias.*``,
  ``core.pager``, ``core.sshCommand``, ``core.hooksPath``, filters ... run
  programs, and unknown keys cannot be vetted).
* ``sed`` with a script we can fully parse and that has no ``e`` / ``w`` / ``W``
  command or ``s///e`` / ``s///w`` flag is allowed (read-only), ``-i`` is ask,
  a script we cannot parse or given by ``-f`` is reject / ask respectively.
* ``awk`` with only ``-F`` / ``-v`` and a program without ``system``, ``|``,
  ``@`` (gawk ``@load`` / indirect calls), ``/inet`` or a ``print ... >``
  redirection is allowed; ``-f progfile`` or ``getline`` (reads other files)
  is ask. sed ``r`` / ``R`` (reads another file) is ask too. Long options of
  sed / gawk / tar / git are matched by prefix too (getopt_long accepts
  abbreviations: ``sed --e='1e id'`` is ``--expression``).
* ``sleep`` is ask (``sleep infinity`` rejects); unknown programs are ask.
* Environment runners (``uv run``, ``poetry run``, ``pipenv run``, ``pdm run``,
  ``hatch run``, ``conda run``, ``rye run``, ``bundle exec``) are judged by the
  program they run: a rejected inner program rejects, anything else is ask.
  Generic wrappers (``env``, ``xargs``, ``timeout``, ``nice``, ...) always reject.
* All ``kill`` / ``pkill`` / ``killall`` calls are rejected (the timeout is the
  tool's job; other processes are not the model's). ``rmdir`` is ask, ``rm``
  / ``unlink`` / ``truncate`` / ``shred`` are rejected. ``chmod/chown/chgrp``
  recursive on an absolute path or a path with ``..`` is rejected, else ask.
* Program names are compared lower-cased (case-insensitive file systems), and
  versioned interpreter names (``python3.12``, ``perl5.36``, ``pip3``) or
  ``mkfs.ext4``-style names map onto their family.

Everything here is pure: only constants at module level, no I/O, so the
Temporal workflow sandbox can import it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Literal

import bashlex

MAX_COMMAND_CHARS = 10_000


@dataclass(frozen=True)
class Verdict:
    verdict: Literal["allow", "ask", "reject"]
    reason: str  # always set, written for a model to read
    hint: str | None = None  # for reject: what the model should do instead
    program: str | None = None  # basename of the program, when known
    argv: tuple[str, ...] = ()  # words after quote removal; for allow/ask exactly what is exec'd


# A judgement before it becomes a Verdict: (verdict, reason, hint).
_J = tuple[str, str, "str | None"]


def _allow(reason: str) -> _J:
    return ("allow", reason, None)


def _ask(reason: str) -> _J:
    return ("ask", reason, None)


def _rej(reason: str, hint: str) -> _J:
    return ("reject", reason, hint)


# ---------------------------------------------------------------------------
# Hints shared by many rejections
# ---------------------------------------------------------------------------

H_SEPARATE = "run these as separate bash calls, one plain command per call"
H_PLAIN = (
    "write one program with plain arguments; quote arguments with single quotes "
    "(e.g. grep -rn 'a b' src)"
)
H_SCRIPT = "write the code to a file with the write_file tool, then run that file (e.g. `python3 script.py`)"
H_WRAPPER = (
    "run the inner program directly as its own bash call (the tool already applies a timeout "
    "and a clean environment)"
)
H_DELETE = (
    "deleting or overwriting data is not allowed from bash; tell the user which files to remove, "
    "or change file content with the write_file / edit_file tools"
)
H_SYSTEM = "this changes the machine, not the workspace; if it is really needed, tell the user the exact command"
H_PRIV = "run the command without elevated privileges; if it really needs them, ask the user to run it"
H_KILL = (
    "the bash tool already stops commands that exceed their timeout; other processes are not "
    "yours to stop - ask the user"
)
H_NETWORK = (
    "bash has no network access; use the files already in the workspace, or tell the user "
    "what should be fetched"
)
H_INTERACTIVE = (
    "there is no terminal: use the read_file tool to view files, the edit_file tool to change them, "
    "and non-interactive options (e.g. `ps aux` instead of `top`, `--help` instead of `man`)"
)
H_BUILTIN_STATE = (
    "each bash call runs the program directly in the workspace root, with no shell and no state "
    "kept between calls: pass paths and values as arguments instead (e.g. `ls src`, "
    "`make -C sub`, `git -C sub status`)"
)
H_GLOB = (
    "there is no shell to expand patterns: quote the pattern (e.g. '*.py') if the program itself "
    "takes a pattern, or list the files with the glob tool and pass them explicitly"
)
H_GIT_STD = "use a standard git subcommand with its plain options (aliases and git-* extensions are not allowed)"

# ---------------------------------------------------------------------------
# Lexing: the strict subset of shell syntax, re-derived from the source text
# ---------------------------------------------------------------------------

_BAD_CHAR = re.compile(r"[^\x20-\x7e]")
# Characters that are literal in an unquoted word in every position.
_SAFE = r"A-Za-z0-9_./:@%+,=^\]-"
# Inside quotes: printable ASCII only, so a fast-path match also proves there
# is no control or non-ASCII character anywhere.
_IN_SINGLE = r"[\x20-\x26\x28-\x7e]"  # not '
_IN_DOUBLE = r"[\x20\x21\x23\x25-\x5b\x5d-\x5f\x61-\x7e]"  # not " $ \ `
_WORD = r"(?:[" + _SAFE + r"]|'" + _IN_SINGLE + r"*'|\"" + _IN_DOUBLE + r"*\")+"
_FAST_COMMAND = re.compile(_WORD + r"(?: +" + _WORD + r")*")
_FAST_WORD = re.compile(_WORD)
_QUOTE_PART = re.compile(r"'([^']*)'|\"([^\"]*)\"|([^'\"]+)")
_RESERVED = frozenset(
    "if then else elif fi case esac for select while until do done in function time coproc "
    "{ } ! [[ ]]".split()
)


def _unquote(raw: str) -> str:
    if "'" not in raw and '"' not in raw:
        return raw
    return "".join(a or b or c for a, b, c in _QUOTE_PART.findall(raw))


def _char_reject(s: str, m: re.Match[str]) -> _J:
    ch = m.group()
    code = f"U+{ord(ch):04X}"
    if ch == "\n" or ch == "\r":
        return _rej(
            f"newlines are not allowed (found {code} at position {m.start()}): "
            "a command must be one line, one statement",
            "run one command per bash call; put multi-line text in a file with the write_file tool",
        )
    if ord(ch) < 0x20 or ord(ch) == 0x7F:
        return _rej(
            f"control character {code} at position {m.start()} is not allowed",
            "remove control characters; put such text in a file with the write_file tool",
        )
    return _rej(
        f"non-ASCII character {code} ({ch!r}) at position {m.start()} is not allowed "
        "(Unicode look-alikes such as U+2010 for '-' or Cyrillic letters are not what they seem)",
        "use plain ASCII in commands; put non-ASCII text in a file with the write_file tool "
        "and pass the file name",
    )


def _slow_lex(s: str) -> list[tuple[int, int]] | _J:
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
                return _rej(f"unterminated single quote at position {i}", H_PLAIN)
            i = j + 1
            continue
        if c == '"':
            j = i + 1
            while j < n and s[j] not in '"$`\\':
                j += 1
            if j >= n:
                return _rej(f"unterminated double quote at position {i}", H_PLAIN)
            d = s[j]
            if d == '"':
                i = j + 1
                continue
            if d == "`":
                return _rej(
                    "command substitution (backticks) is not allowed, even inside double quotes",
                    "run the inner command as its own bash call and use its output literally",
                )
            if d == "\\":
                return _rej(
                    "backslashes inside double quotes are not allowed",
                    "use single quotes, which keep every character literally",
                )
            return _dollar_reject(s, j, quoted=True)
        if c in "|&;<>()":
            return _operator_reject(s, i, c)
        if c == "$":
            return _dollar_reject(s, i, quoted=False)
        if c == "`":
            return _rej(
                "command substitution (backticks) is not allowed",
                "run the inner command as its own bash call and use its output literally",
            )
        if c == "\\":
            return _rej(
                f"unquoted backslash at position {i} is not allowed",
                "use single quotes instead of backslash escapes (e.g. 'a b' instead of a\\ b)",
            )
        if c in "*?":
            return _rej(f"unquoted glob character {c!r} at position {i} is not allowed", H_GLOB)
        if c == "[":
            end = s.find(" ", i)
            word = s[start : end if end >= 0 else n]
            if word in ("[[", "]]"):
                return _rej(
                    "the shell keyword `[[` is not allowed",
                    "use the `test` program with quoted arguments, or run the check as its own command",
                )
            if not (at_start and word == "["):
                return _rej(f"unquoted glob character '[' at position {i} is not allowed", H_GLOB)
            i += 1
            continue
        if c == "{" and at_start and s[i + 1 : i + 2] == "}" and s[i + 2 : i + 3] in ("", " "):
            i += 2  # a lone `{}` is literal in bash (no brace expansion)
            continue
        if c in "{}":
            return _rej(
                f"unquoted {c!r} at position {i} is not allowed (brace expansion or command grouping)",
                "quote the braces (e.g. 'HEAD@{1}') or write the words out in full",
            )
        if c == "~" and (at_start or s[i - 1] in "=:"):
            return _rej(
                f"tilde expansion (unquoted '~' at position {i}) is not allowed",
                "use a path relative to the workspace root (or quote the '~' if it is meant literally)",
            )
        if c == "#" and at_start:
            return _rej(f"comments ('#' at position {i}) are not allowed", "remove the comment")
        if c == "!":
            return _rej(
                f"unquoted '!' at position {i} is not allowed (pipeline negation / history expansion)",
                "quote it with single quotes ('!') if it is meant literally",
            )
        if not ("a" <= c <= "z" or "A" <= c <= "Z" or "0" <= c <= "9" or c in "_./:@%+,=^]-~#"):
            return _rej(f"unexpected character {c!r} at position {i}", H_PLAIN)
        i += 1
    if start >= 0:
        spans.append((start, n))
    return spans


def _operator_reject(s: str, i: int, c: str) -> _J:
    nxt = s[i + 1 : i + 2]
    if c == "|":
        if nxt == "|":
            return _rej("command lists (`||`) are not allowed", H_SEPARATE)
        return _rej(
            "pipes (`|`) are not allowed",
            "run the first command on its own and read its output (the tool returns it to you), "
            "or use the grep / read_file tools to filter",
        )
    if c == "&":
        if nxt == "&":
            return _rej("command lists (`&&`) are not allowed", H_SEPARATE)
        if nxt == ">":
            return _rej(
                "output redirection (`&>`) is not allowed",
                "output is returned to you automatically; to save text use the write_file tool",
            )
        return _rej(
            "background jobs (`&`) are not allowed",
            "run the command in the foreground; the tool applies a timeout",
        )
    if c == ";":
        return _rej("command lists (`;`) are not allowed", H_SEPARATE)
    if c == "<":
        if nxt == "<":
            return _rej(
                "here-documents and here-strings (`<<`) are not allowed",
                "write the text to a file with the write_file tool and pass the file name as an argument",
            )
        if nxt == "(":
            return _rej(
                "process substitution (`<(...)`) is not allowed",
                "run the inner command as its own bash call",
            )
        return _rej(
            "input redirection (`<`) is not allowed",
            "pass the file name as an argument instead (stdin is empty)",
        )
    if c == ">":
        if nxt == "(":
            return _rej(
                "process substitution (`>(...)`) is not allowed",
                "run the inner command as its own bash call",
            )
        return _rej(
            "output redirection (`>`) is not allowed",
            "output is returned to you automatically; to save text to a file use the write_file tool",
        )
    if c == "(":
        if s[i + 1 :].lstrip(" ").startswith(")"):
            return _rej(
                "function definitions are not allowed",
                "write a script file with the write_file tool and run it",
            )
        return _rej(
            "subshells and grouping (`(`) are not allowed",
            "run the command directly, without parentheses (quote a literal '(')",
        )
    return _rej(
        "unbalanced `)` (subshell syntax) is not allowed",
        "run the command directly, without parentheses (quote a literal ')')",
    )


def _dollar_reject(s: str, i: int, quoted: bool) -> _J:
    rest = s[i + 1 : i + 3]
    where = " (even inside double quotes)" if quoted else ""
    if rest.startswith("(("):
        return _rej(
            f"arithmetic expansion (`$((...))`) is not allowed{where}",
            "compute the value yourself and write the literal number",
        )
    if rest.startswith("("):
        return _rej(
            f"command substitution (`$(...)`) is not allowed{where}",
            "run the inner command as its own bash call and use its output literally",
        )
    if rest.startswith("'") and not quoted:
        return _rej(
            "ANSI-C quoting (`$'...'`) is not allowed",
            "use plain single quotes; put special characters in a file with the write_file tool",
        )
    if rest.startswith("[") and not quoted:
        return _rej(
            "arithmetic expansion (`$[...]`) is not allowed",
            "compute the value yourself and write the literal number",
        )
    return _rej(
        f"parameter expansion (`$`) is not allowed{where}",
        "variables are not expanded (there is no shell, and the environment is scrubbed): write "
        "the literal value, or use single quotes for a literal '$'",
    )


_BASHLEX_TRAP = re.compile(r"[$`]|[<>]\(")


def _bashlex_trap(s: str, spans: list[tuple[int, int]]) -> _J | None:
    """bashlex (0.18) mishandles a single-quoted part of a word unless the word
    both starts and ends with a single quote: ``string.find("'", i)`` finds the
    opening quote itself, so the quoted text is expanded as if unquoted. With
    ``$`` that yields phantom expansions, and ``'${'+`` makes it loop forever.
    Such words never reach bashlex: a pure function cannot time it out."""
    for a, b in spans:
        if s[a] == "'" and s[b - 1] == "'" and b - a > 1:
            continue  # bashlex takes a word that starts and ends with ' as literal
        word = s[a:b]
        if _BASHLEX_TRAP.search(word):
            return _rej(
                f"'$', '`' or '<(' inside quotes that do not span the whole word {word!r} "
                "cannot be checked safely",
                "quote the whole word from its first character to its last, e.g. '--opt=$x' "
                "instead of --opt='$x'",
            )
    return None


def _bashlex_check(s: str, spans: list[tuple[int, int]]) -> _J | None:
    try:
        trees = bashlex.parse(s)
    except Exception as exc:  # bashlex raises many exception types: fail closed on all
        return _rej(
            f"the command could not be parsed safely ({type(exc).__name__}: {str(exc)[:120]})",
            H_PLAIN,
        )
    if len(trees) != 1:
        return _rej("more than one statement found", H_SEPARATE)
    tree = trees[0]
    if tree.kind != "command":
        return _rej(f"only a plain command is allowed, found a {tree.kind}", H_PLAIN)
    parts = tree.parts
    if len(parts) != len(spans):
        return _rej("the parser and the validator disagree about the words of this command", H_PLAIN)
    for node, span in zip(parts, spans):
        if node.kind != "word":
            return _rej(f"only plain words are allowed, found a {node.kind}", H_PLAIN)
        if getattr(node, "parts", None):
            # bashlex expands `$`/backticks inside a single-quoted part that does not
            # start the word (--eval='$x'); bash would not, but fail closed.
            word = s[span[0] : span[1]]
            return _rej(
                f"the parser sees an expansion in the word {word!r} ('$' or '`' inside quotes "
                "that do not span the whole word)",
                "quote the whole word from its first character, e.g. '--opt=$x' instead of --opt='$x'",
            )
        if tuple(node.pos) != span:
            return _rej("the parser and the validator disagree about the words of this command", H_PLAIN)
    return None


# ---------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------


def validate_command(command: str) -> Verdict:
    if not isinstance(command, str):
        return Verdict("reject", "the command must be a string", H_PLAIN)
    s = command.strip(" \t\n")
    if not s:
        return Verdict("reject", "empty command", "give the command to run, e.g. `ls -la src`")
    if len(s) > MAX_COMMAND_CHARS:
        return Verdict(
            "reject",
            f"the command is too long ({len(s)} characters, at most {MAX_COMMAND_CHARS})",
            "put long content in a file with the write_file tool and pass the file name",
        )
    if _FAST_COMMAND.fullmatch(s):
        spans = [m.span() for m in _FAST_WORD.finditer(s)]
    else:
        m = _BAD_CHAR.search(s)
        if m is not None:
            return Verdict(*_char_reject(s, m))
        lexed = _slow_lex(s)
        if isinstance(lexed, tuple):
            return Verdict(*lexed)
        spans = lexed
    argv = tuple(_unquote(s[a:b]) for a, b in spans)
    first_raw = s[spans[0][0] : spans[0][1]]
    if first_raw in _RESERVED or argv[0] in _RESERVED:
        return Verdict(
            "reject",
            f"the shell keyword `{argv[0]}` is not allowed (no compound commands)",
            "write a script file with the write_file tool and run it (e.g. `bash script.sh`)",
            argv=argv,
        )
    if "=" in argv[0]:
        return Verdict(
            "reject",
            f"variable assignments (`{argv[0]}`) are not allowed",
            "environment variables cannot be set here; pass the value as an argument or option",
            argv=argv,
        )
    if "$" in s or "`" in s or "(" in s:
        problem = _bashlex_trap(s, spans)
        if problem is not None:
            return Verdict(*problem, argv=argv)
    problem = _bashlex_check(s, spans)
    if problem is not None:
        return Verdict(*problem, argv=argv)
    program, (verdict, reason, hint) = _judge(argv)
    return Verdict(verdict, reason, hint, program, argv)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------
# Program resolution
# ---------------------------------------------------------------------------

_STD_BIN_DIRS = frozenset(
    ["/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin", "/usr/local/sbin", "/opt/homebrew/bin"]
)
_ENV_BIN = re.compile(
    r"(?:\./)?(?:(?:\.venv|venv|\.env|env|\.tox/[A-Za-z0-9_.-]+)/bin|node_modules/\.bin)/[A-Za-z0-9_.+-]+"
)
_VERSION_SUFFIX = re.compile(r"[-.]?\d+(?:\.\d+)*[a-z]?$")
_VERSIONED = frozenset(
    "python pypy pypy3 perl ruby php lua luajit node nodejs pip tclsh wish gawk "
    "irb ipython bash zsh ksh mksh".split()
)


def _family(lname: str) -> str:
    if lname in _HANDLERS:
        return lname
    stripped = _VERSION_SUFFIX.sub("", lname)
    if stripped in _VERSIONED:
        return stripped
    for prefix in ("mkfs", "mke2fs", "fsck", "mount.", "umount."):
        if lname.startswith(prefix):
            return prefix.rstrip(".")
    return lname


def _judge(argv: tuple[str, ...]) -> tuple[str | None, _J]:
    word = argv[0]
    if not word:
        return None, _rej("the program name is empty", "start the command with the program to run")
    capped = False
    if "/" in word:
        comps = word.split("/")
        base = comps[-1]
        if not base:
            return base or None, _rej(f"`{word}` is a folder, not a program", "name the program to run")
        if ".." in comps:
            return base, _rej(
                f"`..` in the program path `{word}` is not allowed",
                "call the program by its name (e.g. `ls`) or by a path inside the workspace without `..`",
            )
        if word.startswith("/"):
            capped = word[: -len(base) - 1] not in _STD_BIN_DIRS
        elif _ENV_BIN.fullmatch(word):
            capped = True  # a project environment's tool: judged by name, never auto-allowed
        else:
            fam = _family(base.lower())
            if fam in _KNOWN:
                return base, _rej(
                    f"`{word}` is a relative path to a program named like the system program `{base}`: "
                    "it may be a look-alike",
                    f"call the system program by name (`{base} ...`), or rename the workspace script",
                )
            return base, _ask(f"`{word}` runs a script or program from the workspace")
    else:
        base = word
    fam = _family(base.lower())
    handler = _HANDLERS.get(fam)
    if handler is None:
        j = _ask(f"`{base}` is not on the read-only list; it may change files or run code")
    else:
        j = handler(base, list(argv[1:]))
    if j[0] == "allow":
        if capped:
            j = _ask(f"{j[1]}; but `{word}` is not in a standard system folder")
        else:
            outside = _outside_workspace(argv)
            if outside is not None:
                j = _ask(f"{j[1]}, but `{outside}` is outside the workspace")
    return base, j


_SYSTEM_TOP = frozenset(
    "bin boot dev etc home lib lib32 lib64 libx32 media mnt opt proc root run sbin srv sys tmp usr var "
    "Users Volumes private Library System Applications nix snap".split()
)


def _outside_workspace(argv: tuple[str, ...]) -> str | None:
    """An argument that names a path outside the workspace: `/`, a top-level
    system folder, or any path with a `..` component (also after `--opt=`)."""
    for arg in argv[1:]:
        for cand in (arg, arg.partition("=")[2]):
            if not cand:
                continue
            if cand[0] == "/":
                top = cand[1:].split("/", 1)[0]
                if not top or top in _SYSTEM_TOP:
                    return arg
            if ".." in cand and ".." in cand.split("/"):
                return arg
    return None


# ---------------------------------------------------------------------------
# Option scanning helpers
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Opts:
    short: frozenset[str]  # flags
    short_arg: frozenset[str]  # take a value (attached or the next word)
    short_opt: frozenset[str]  # take an optional attached value only
    long: frozenset[str]  # flags or optional `=value`
    long_arg: frozenset[str]  # take a value (`=value` or the next word)
    numeric: bool  # `-5` style counts


def _o(short: str = "", short_arg: str = "", long: str = "", long_arg: str = "", short_opt: str = "",
       numeric: bool = False) -> _Opts:
    return _Opts(
        frozenset(short), frozenset(short_arg), frozenset(short_opt),
        frozenset(long.split()) | {"help", "version"}, frozenset(long_arg.split()), numeric,
    )


def _scan(args: list[str], spec: _Opts) -> tuple[str | None, list[str]]:
    """GNU-style option scan. Returns (first unknown option or None, positionals)."""
    pos: list[str] = []
    i, n = 0, len(args)
    while i < n:
        a = args[i]
        i += 1
        if a == "--":
            pos.extend(args[i:])
            break
        if a.startswith("--"):
            name, eq, _ = a[2:].partition("=")
            if name in spec.long_arg:
                if not eq:
                    i += 1
                continue
            if name in spec.long:
                continue
            return a, pos
        if len(a) > 1 and a[0] == "-":
            if spec.numeric and a[1:].isdigit():
                continue
            j, m = 1, len(a)
            while j < m:
                c = a[j]
                if c in spec.short:
                    j += 1
                    continue
                if c in spec.short_arg:
                    if j == m - 1:
                        i += 1
                    break
                if c in spec.short_opt:
                    break
                return a, pos
            continue
        pos.append(a)
    return None, pos


def _long_hit(arg: str, names: tuple[str, ...], exact_ok: frozenset[str] = frozenset()) -> str | None:
    """If ``arg`` is ``--name`` or an unambiguous-looking abbreviation of one of
    ``names`` (getopt_long accepts prefixes), return the full name."""
    if not arg.startswith("--") or len(arg) < 3:
        return None
    given = arg[2:].split("=", 1)[0]
    if given in exact_ok:
        return None
    for name in names:
        if name.startswith(given):
            return name
    return None


def _short_hit(arg: str, letters: str, stop: str = "") -> str | None:
    """If the short-option cluster ``arg`` contains one of ``letters`` (before a
    letter of ``stop`` that takes the rest as its value), return that letter."""
    if len(arg) < 2 or arg[0] != "-" or arg[1] == "-":
        return None
    for c in arg[1:]:
        if c in letters:
            return c
        if c in stop:
            return None
    return None


def _generic_allow(name: str, args: list[str], spec: _Opts, what: str) -> _J:
    bad, _ = _scan(args, spec)
    if bad is not None:
        return _ask(f"`{name}` with option `{bad}`, which is not on the known read-only option list")
    return _allow(f"`{name}` {what}")


def _is_version_query(args: list[str]) -> bool:
    return len(args) == 1 and args[0] in ("--version", "-V", "version", "-v")


# ---------------------------------------------------------------------------
# Read-only programs
# ---------------------------------------------------------------------------

_READONLY_OPTS: dict[str, _Opts] = {
    "ls": _o(
        "aAbBcCdDfFgGhHiklLmnNopqQrRsStuUvwxXZ1", "ITw",
        "all almost-all author escape ignore-backups classify file-type full-time "
        "group-directories-first no-group human-readable si dereference-command-line "
        "dereference-command-line-symlink-to-dir hyperlink inode kibibytes literal numeric-uid-gid "
        "quote-name reverse recursive size context zero color dereference directory indicator-style "
        "quoting-style sort time time-style format width tabsize block-size hide ignore",
        "block-size hide ignore indicator-style quoting-style sort time time-style format width tabsize",
    ),
    "cat": _o(
        "AbeEnstTuv", "",
        "show-all number-nonblank show-ends number squeeze-blank show-tabs show-nonprinting",
    ),
    "head": _o("qvz", "cn", "quiet silent verbose zero-terminated", "bytes lines", numeric=True),
    "tail": _o(
        "qvz", "cns", "quiet silent verbose zero-terminated retry",
        "bytes lines sleep-interval pid max-unchanged-stats", numeric=True,
    ),
    "wc": _o("clmwL", "", "bytes chars lines words max-line-length total zero-terminated", "files0-from"),
    "pwd": _o("LP", "", "logical physical"),
    "stat": _o("LftZ", "c", "dereference file-system terse cached", "format printf"),
    "file": _o(
        "bcdEhiklLNnrsS0v", "mefFP",
        "brief checking-printout debug dereference no-dereference mime mime-type mime-encoding "
        "keep-going list no-pad no-buffer raw special-files extension apple print0",
        "separator exclude exclude-quiet files-from magic-file parameter",
    ),
    "du": _o(
        "0abcDhHklLmsSxP", "BdtX",
        "null all apparent-size bytes total dereference-args human-readable inodes dereference "
        "count-links no-dereference separate-dirs si summarize one-file-system time",
        "block-size max-depth threshold exclude-from exclude files0-from time-style",
    ),
    "df": _o(
        "ahHiklPTv", "Btx",
        "all human-readable inodes local no-sync portability print-type sync total si output",
        "block-size type exclude-type",
    ),
    "tree": _o(
        "adlfxpugshDFqNQrtcvUnCASiJX", "LPIHT",
        "gitignore noreport prune dirsfirst filesfirst du si inodes device fromfile matchdirs "
        "ignore-case metafirst info",
        "filelimit timefmt sort charset gitfile infofile hintro houtro",
    ),
    "diff": _o(
        "abBcdeEfinNpqrstTuwyZ", "DFIxXSW",
        "normal brief report-identical-files context unified ed rcs side-by-side expand-tabs "
        "initial-tab suppress-common-lines show-c-function new-file unidirectional-new-file "
        "ignore-case ignore-file-name-case no-ignore-file-name-case ignore-tab-expansion "
        "ignore-trailing-space ignore-space-change ignore-all-space ignore-blank-lines text "
        "strip-trailing-cr recursive minimal speed-large-files color no-dereference left-column "
        "suppress-blank-empty",
        "width show-function-line label exclude exclude-from starting-file from-file to-file "
        "horizon-lines palette ignore-matching-lines line-format old-line-format new-line-format "
        "unchanged-line-format old-group-format new-group-format changed-group-format "
        "unchanged-group-format tabsize ifdef",
        short_opt="CU",
    ),
    "cmp": _o("bls", "in", "print-bytes verbose quiet silent", "ignore-initial bytes"),
    "which": _o("as", "", "all skip-dot skip-tilde show-dot show-tilde"),
    "uname": _o(
        "asnrvmpio", "",
        "all kernel-name nodename kernel-release kernel-version machine processor "
        "hardware-platform operating-system",
    ),
    "whoami": _o(),
    "id": _o("agGnruzZ", "", "context group groups name real user zero"),
    "groups": _o(),
    "nproc": _o("", "", "all", "ignore"),
    "arch": _o(),
    "true": _o(),
    "false": _o(),
    "basename": _o("az", "s", "multiple zero", "suffix"),
    "dirname": _o("z", "", "zero"),
    "realpath": _o(
        "eLmPqsz", "",
        "canonicalize-existing canonicalize-missing logical physical quiet strip no-symlinks zero",
        "relative-to relative-base",
    ),
    "readlink": _o(
        "efmnqsvz", "",
        "canonicalize canonicalize-existing canonicalize-missing no-newline quiet silent verbose zero",
    ),
    "grep": _o(
        "abcEFGhHiIlLnoPqrRsTUvVwxyzZ", "ABCdDefm",
        "basic-regexp extended-regexp fixed-strings perl-regexp ignore-case no-ignore-case "
        "word-regexp line-regexp null-data no-messages invert-match byte-offset line-number "
        "line-buffered with-filename no-filename only-matching quiet silent text recursive "
        "dereference-recursive files-without-match files-with-matches count initial-tab null "
        "color colour binary",
        "after-context before-context context regexp file max-count label binary-files directories "
        "devices include exclude exclude-from exclude-dir",
        numeric=True,
    ),
    "rg": _o(
        "iSswxvnNlcuFoLUPaHIbpqhVz0.", "ABCegtTfjmMrEd",
        "hidden no-ignore files files-with-matches files-without-match count count-matches follow "
        "json vimgrep heading no-heading column no-column line-number no-line-number smart-case "
        "ignore-case case-sensitive fixed-strings word-regexp line-regexp invert-match multiline "
        "multiline-dotall pcre2 only-matching passthru passthrough stats trim null no-messages quiet "
        "no-ignore-vcs no-ignore-parent no-ignore-dot no-ignore-global no-ignore-exclude "
        "no-ignore-files no-ignore-messages text binary crlf debug trace no-config "
        "with-filename no-filename byte-offset unrestricted one-file-system "
        "glob-case-insensitive no-unicode pretty mmap no-mmap unicode no-require-git line-buffered "
        "block-buffered type-list no-pcre2-unicode auto-hybrid-regex max-columns-preview "
        "no-crlf no-multiline no-text no-binary no-follow no-hidden sort-files files0 "
        "include-zero no-include-zero invert-match no-invert-match no-stats no-trim null-data "
        "search-zip no-search-zip no-context-separator no-pre",
        "after-context before-context context regexp glob iglob type type-not type-add type-clear "
        "file max-count max-depth maxdepth max-filesize threads color colors encoding engine replace "
        "sort sortr path-separator max-columns ignore-file field-match-separator "
        "field-context-separator context-separator dfa-size-limit regex-size-limit pre-glob "
        "generate",
    ),
    "sort": _o(
        "bdfgiMhnRrVcCsuzm", "kotTS",
        "ignore-leading-blanks dictionary-order ignore-case general-numeric-sort ignore-nonprinting "
        "month-sort human-numeric-sort numeric-sort random-sort reverse version-sort check merge "
        "stable unique zero-terminated debug parallel batch-size random-source sort",
        "key field-separator buffer-size temporary-directory files0-from output",
    ),
    "uniq": _o("cdDiuz", "fsw", "count repeated all-repeated ignore-case unique zero-terminated group",
               "skip-fields skip-chars check-chars"),
    "date": _o("uR", "dfrI", "utc universal rfc-2822 rfc-email debug iso-8601 rfc-3339 resolution",
               "date file reference"),
    "cut": _o("nszw", "bcdf", "complement only-delimited zero-terminated",
              "bytes characters delimiter fields output-delimiter"),
    "sha256sum": _o("bctwz", "", "binary check tag text zero ignore-missing quiet status strict warn"),
    "printenv": _o("0", "", "null"),
    "od": _o("bcdfilosvx", "AjNtwS", "output-duplicates traditional endian",
             "address-radix skip-bytes read-bytes format strings width"),
    "hexdump": _o("bcCdovx", "efns"),
    "strings": _o("afw", "nteTo", "all print-file-name include-all-whitespace",
                  "bytes radix encoding target output-separator unicode"),
    "tac": _o("br", "s", "before regex", "separator"),
    "rev": _o(),
    "nl": _o("p", "bdfhilnsvw",
             "no-renumber", "body-numbering section-delimiter footer-numbering header-numbering "
             "line-increment join-blank-lines number-format number-separator starting-line-number "
             "number-width"),
}
_READONLY_OPTS.update(
    dict.fromkeys(("md5sum", "sha1sum", "sha224sum", "sha384sum", "sha512sum", "b2sum"), _READONLY_OPTS["sha256sum"])
)
_READONLY_OPTS.update(dict.fromkeys(("egrep", "fgrep"), _READONLY_OPTS["grep"]))

_READONLY_WHAT = "only reads (read-only list)"


def _h_readonly(name: str, args: list[str]) -> _J:
    return _generic_allow(name, args, _READONLY_OPTS[_family(name.lower())], _READONLY_WHAT)


def _h_echo(name: str, args: list[str]) -> _J:
    return _allow(f"`{name}` only prints its arguments")


def _h_printf(name: str, args: list[str]) -> _J:
    if args and (args[0] == "-v" or args[0].startswith("-v")):
        return _rej(
            "`printf -v` assigns a shell variable (and evaluates array subscripts)",
            "print the value instead (`printf '%s' VALUE`); variables do not persist between calls",
        )
    return _allow(f"`{name}` only prints its arguments")


def _h_test(name: str, args: list[str]) -> _J:
    for a in args:
        if a in ("-v", "-R"):
            return _rej(
                f"`{name} {a}` tests shell variables and evaluates array subscripts (code hidden in words)",
                "there are no shell variables here; test files directly (e.g. `test -f path`)",
            )
    if name == "[" and (not args or args[-1] != "]"):
        return _ask("`[` without a closing `]`")
    return _allow(f"`{name}` only checks a condition")


def _h_cat(name: str, args: list[str]) -> _J:
    # No file: reads stdin, which the executor connects to /dev/null -> ends at once.
    return _generic_allow(name, args, _READONLY_OPTS["cat"], _READONLY_WHAT)


def _h_tail(name: str, args: list[str]) -> _J:
    for a in args:
        if (
            _long_hit(a, ("follow",))
            or _short_hit(a, "fF", "cns")
            or (a[:1] in "-+" and a[1:2].isdigit() and a.rstrip("bcl").endswith("f"))
        ):
            return _rej(
                f"`tail {a}` follows the file and never ends",
                "read the end once with `tail -n 100 FILE`, or use the read_file tool with an offset",
            )
    return _h_readonly(name, args)


def _h_sort(name: str, args: list[str]) -> _J:
    for a in args:
        if _long_hit(a, ("compress-program",)):
            return _rej(
                "`sort --compress-program` runs another program",
                "drop --compress-program",
            )
    for a in args:
        if _long_hit(a, ("output",)) or _short_hit(a, "o", "ktTS"):
            return _ask("`sort -o` writes a file")
    return _h_readonly(name, args)


def _h_uniq(name: str, args: list[str]) -> _J:
    bad, pos = _scan(args, _READONLY_OPTS["uniq"])
    if bad is None and len(pos) > 1:
        return _ask("`uniq INPUT OUTPUT` writes the output file")
    return _h_readonly(name, args)


def _h_date(name: str, args: list[str]) -> _J:
    for a in args:
        if _long_hit(a, ("set",)) or _short_hit(a, "s", "dfrI"):
            return _rej("`date -s/--set` changes the system clock", H_SYSTEM)
    bad, pos = _scan(args, _READONLY_OPTS["date"])
    if bad is None and any(not p.startswith("+") for p in pos):
        return _ask("`date` with an argument that is not a +FORMAT may set the clock")
    return _h_readonly(name, args)


def _h_rg(name: str, args: list[str]) -> _J:
    for a in args:
        hit = _long_hit(a, ("pre", "hostname-bin"))
        if hit:
            return _rej(f"`rg --{hit}` runs another program", "drop the option; rg can search plain files itself")
    for a in args:
        if _long_hit(a, ("search-zip",)) or _short_hit(a, "z", "ABCegtTfjmMrEd"):
            return _ask("`rg --search-zip` runs decompression programs")
    return _h_readonly(name, args)


_FIND_REJECT = frozenset(
    "-exec -execdir -ok -okdir -delete -fprint -fprint0 -fprintf -fls".split()
)
_FIND_FLAGS = frozenset(
    "-print -print0 -ls -prune -quit -true -false -empty -readable -writable -executable -nouser "
    "-nogroup -depth -mount -xdev -noleaf -daystart -follow -ignore_readdir_race "
    "-noignore_readdir_race -not -a -o -and -or ! ( ) , -L -H -P -warn -nowarn -O0 -O1 -O2 -O3".split()
)
_FIND_ARG = frozenset(
    "-name -iname -path -ipath -wholename -iwholename -regex -iregex -regextype -lname -ilname "
    "-type -xtype -maxdepth -mindepth -mtime -mmin -atime -amin -ctime -cmin -size -newer -anewer "
    "-cnewer -perm -user -group -uid -gid -links -inum -samefile -fstype -used -printf "
    "-files0-from -D -context".split()
)
_FIND_NEWERXY = re.compile(r"-newer[aBcmt][aBcmt]")


def _h_find(name: str, args: list[str]) -> _J:
    for a in args:
        if a in _FIND_REJECT:
            if a == "-delete":
                return _rej("`find -delete` deletes files", H_DELETE)
            if a.startswith("-f"):
                return _rej(f"`find {a}` writes a file", "let find print to its output (`-print`), which is returned to you")
            return _rej(
                f"`find {a}` runs another program for each file",
                "run find alone to list the files, then act on them in separate bash calls "
                "(or use the glob / grep tools)",
            )
    i, n = 0, len(args)
    while i < n:
        a = args[i]
        i += 1
        if a in _FIND_ARG or _FIND_NEWERXY.fullmatch(a):
            i += 1
        elif a in _FIND_FLAGS or not a.startswith("-"):
            continue
        else:
            return _ask(f"`find` with `{a}`, which is not on the known read-only predicate list")
    return _allow("`find` only lists files")


# ---------------------------------------------------------------------------
# sed and awk: inspect the program text
# ---------------------------------------------------------------------------

_SED_SIMPLE = frozenset("=dDgGhHnNpPxzFlLqQ")
_SED_READS = "reads another file"  # not a rejection: lowers allow to ask


def _sed_script_problem(script: str) -> str | None:
    """Return None if the sed script is understood and neither executes nor
    writes, else a description of the problem."""
    s, n, i = script, len(script), 0

    def skip_regex(i: int, delim: str) -> int:
        # i points just after the opening delimiter; return index after closing one
        while i < n:
            c = s[i]
            if c == "\\":
                i += 2
                continue
            if c == delim:
                return i + 1
            if c == "\n":
                return -1
            i += 1
        return -1

    def skip_addr(i: int) -> int:
        if i < n and s[i].isdigit():
            while i < n and (s[i].isdigit() or s[i] == "~"):
                i += 1
            return i
        if i < n and s[i] == "$":
            return i + 1
        if i < n and s[i] == "/":
            return skip_regex(i + 1, "/")
        if i < n and s[i] == "\\" and i + 1 < n:
            return skip_regex(i + 2, s[i + 1])
        return i

    while i < n:
        while i < n and s[i] in " ;\t":
            i += 1
        if i >= n:
            break
        j = skip_addr(i)
        if j < 0:
            return "unterminated address"
        if j != i:
            while j < n and s[j] in "IM":
                j += 1
            if j < n and s[j] == ",":
                j += 1
                if j < n and s[j] in "+~":
                    j += 1
                    while j < n and s[j].isdigit():
                        j += 1
                else:
                    k = skip_addr(j)
                    if k < 0 or k == j:
                        return "bad address range"
                    j = k
                    while j < n and s[j] in "IM":
                        j += 1
        i = j
        while i < n and s[i] == " ":
            i += 1
        if i < n and s[i] == "!":
            i += 1
            while i < n and s[i] == " ":
                i += 1
        if i >= n:
            return "address without a command"
        c = s[i]
        i += 1
        if c in "{}":
            continue
        if c == "e":
            return "the `e` command executes a shell command"
        if c in "wW":
            return f"the `{c}` command writes a file"
        if c == "s" or c == "y":
            if i >= n or s[i] in "\\\n ":
                return f"bad `{c}` command"
            delim = s[i]
            i = skip_regex(i + 1, delim)
            if i < 0:
                return f"unterminated `{c}` command"
            i = skip_regex(i, delim)
            if i < 0:
                return f"unterminated `{c}` command"
            if c == "s":
                while i < n and s[i] not in "; }":
                    f = s[i]
                    if f == "e":
                        return "the `s///e` flag executes the pattern space as a command"
                    if f in "wW":
                        return "the `s///w` flag writes a file"
                    if f not in "gpiImM0123456789":
                        return f"unknown `s` flag {f!r}"
                    i += 1
            continue
        if c in _SED_SIMPLE:
            while i < n and s[i].isdigit():
                i += 1
            continue
        if c in "btT:":
            while i < n and s[i] not in ";}":
                i += 1
            continue
        if c in "aic":
            return None  # GNU one-liner text runs to the end of the script
        if c in "rR":
            return _SED_READS  # reads another file; its name runs to the end of the script
        if c == "#":
            return None
        if c == "v":
            while i < n and s[i] not in ";}":
                i += 1
            continue
        return f"unknown command {c!r}"
    return None


_SED_LONG = (
    "expression", "file", "in-place", "line-length", "quiet", "silent", "regexp-extended", "separate",
    "unbuffered", "null-data", "zero-terminated", "posix", "debug", "sandbox", "follow-symlinks", "help",
    "version", "binary",
)
_AWK_LONG = (
    "source", "load", "file", "include", "exec", "field-separator", "assign", "version", "help", "posix",
    "traditional", "characters-as-bytes", "sandbox", "re-interval", "lint", "bignum", "no-optimize",
    "optimize", "dump-variables", "profile", "pretty-print", "debug", "gen-pot", "non-decimal-data",
    "use-lc-numeric", "copyright", "csv",
)
_AWK_HARMLESS = frozenset(
    "version help posix traditional characters-as-bytes sandbox re-interval lint bignum no-optimize "
    "optimize non-decimal-data use-lc-numeric copyright csv".split()
)


def _prefix_matches(given: str, names: tuple[str, ...]) -> tuple[str, ...]:
    """The long options that ``--given`` may stand for (exact match wins)."""
    if given in names:
        return (given,)
    if not given:
        return ()
    return tuple(n for n in names if n.startswith(given))


def _h_sed(name: str, args: list[str]) -> _J:
    scripts: list[str] = []
    files: list[str] = []
    in_place = from_file = False
    i, n = 0, len(args)
    while i < n:
        a = args[i]
        i += 1
        if a == "--":
            files.extend(args[i:])
            break
        if a.startswith("--"):
            nm, eq, val = a[2:].partition("=")
            names = _prefix_matches(nm, _SED_LONG)  # getopt_long takes abbreviations
            if "expression" in names:
                if eq:
                    scripts.append(val)
                elif i < n:
                    scripts.append(args[i])
                    i += 1
            elif "file" in names:
                from_file = True
                if not eq:
                    i += 1
            elif "in-place" in names:
                in_place = True
            elif names == ("line-length",):
                if not eq:
                    i += 1
            elif not names:
                return _ask(f"`sed` with option `{a}`, which is not on the known option list")
            continue
        if len(a) > 1 and a[0] == "-":
            j = 1
            while j < len(a):
                c = a[j]
                if c in "nErsuz":
                    j += 1
                    continue
                if c == "i":
                    in_place = True
                    break
                if c in "ef":
                    val = a[j + 1 :]
                    if not val:
                        val = args[i] if i < n else ""
                        i += 1
                    if c == "e":
                        scripts.append(val)
                    else:
                        from_file = True
                    break
                if c == "l":
                    if j == len(a) - 1:
                        i += 1
                    break
                return _ask(f"`sed` with option `{a}`, which is not on the known option list")
            continue
        files.append(a)
    if not scripts and not from_file:
        if not files:
            return _ask("`sed` without a script")
        scripts.append(files.pop(0))
    reads = False
    for script in scripts:
        problem = _sed_script_problem(script)
        if problem is _SED_READS:
            reads = True
        elif problem is not None:
            return _rej(
                f"sed script {script!r} is not allowed: {problem}",
                "use a plain substitution script (e.g. sed -n 's/a/b/p' FILE) and the edit_file tool "
                "to change files",
            )
    if in_place:
        return _ask("`sed -i` edits files in place")
    if from_file:
        return _ask("`sed -f` runs a script file that was not inspected")
    if reads:
        return _ask("the sed script reads another file (`r` / `R`)")
    return _allow("`sed` only prints a transformed copy")


_AWK_BAD = re.compile(r"system|@|/inet|\bprintf?\b[^;{}]*>")


def _h_awk(name: str, args: list[str]) -> _J:
    programs: list[str] = []
    from_file = False
    i, n = 0, len(args)
    positional: list[str] = []
    while i < n:
        a = args[i]
        i += 1
        if a == "--":
            positional.extend(args[i:])
            break
        if a.startswith("--"):
            nm, eq, val = a[2:].partition("=")
            names = _prefix_matches(nm, _AWK_LONG)  # gawk uses getopt_long: abbreviations work
            if "load" in names:
                return _rej("`awk --load` loads a shared library (native code)", H_SCRIPT)
            if "source" in names:
                programs.append(val if eq else (args[i] if i < n else ""))
                i += 0 if eq else 1
            elif any(x in names for x in ("file", "include", "exec")):
                from_file = True
                i += 0 if eq else 1
            elif any(x in names for x in ("field-separator", "assign")):
                i += 0 if eq else 1
            elif not names or not all(x in _AWK_HARMLESS for x in names):
                return _ask(f"`{name}` with option `{a}`, which is not on the known read-only option list")
            continue
        if len(a) > 1 and a[0] == "-":
            c, rest = a[1], a[2:]
            if c == "l":
                return _rej("`awk -l` loads a shared library (native code)", H_SCRIPT)
            if c in "Fv":
                if not rest:
                    i += 1
                continue
            if c in "fEi":
                from_file = True
                if not rest:
                    i += 1
                continue
            if c == "e":
                programs.append(rest or (args[i] if i < n else ""))
                if not rest:
                    i += 1
                continue
            if c in "S" and not rest:
                continue
            return _ask(f"`{name}` with option `{a}`, which is not on the known read-only option list")
        positional.append(a)
    if not programs and not from_file:
        if not positional:
            return _ask(f"`{name}` without a program")
        programs.append(positional.pop(0))
    for prog in programs:
        if _AWK_BAD.search(prog) or "|" in prog.replace("||", ""):
            return _rej(
                f"awk program {prog!r} may run commands or write files (system, pipes, getline from a "
                "command, `print >` redirection, @load / indirect calls)",
                "keep the awk program to reading and printing (e.g. awk '{print $1}' FILE); write files "
                "with the write_file tool",
            )
    if from_file:
        return _ask(f"`{name} -f` runs a program file that was not inspected")
    if any("getline" in prog for prog in programs):
        return _ask(f"the `{name}` program reads other files with getline")
    return _allow(f"`{name}` program only reads and prints")


# ---------------------------------------------------------------------------
# Interpreters
# ---------------------------------------------------------------------------

_INTERACTIVE_INTERP = "starts an interactive interpreter (there is no terminal)"


def _h_python(name: str, args: list[str]) -> _J:
    if not args:
        return _rej(f"`{name}` without a script {_INTERACTIVE_INTERP}", H_SCRIPT)
    if args in (["--version"], ["-V"], ["-VV"], ["--help"], ["-h"]):
        return _allow(f"`{name} {args[0]}` only prints information")
    i, n = 0, len(args)
    while i < n:
        a = args[i]
        i += 1
        if a == "-":
            return _rej(f"`{name} -` reads a program from stdin (inline code)", H_SCRIPT)
        if a == "--":
            break
        if a.startswith("--"):
            if a in ("--check-hash-based-pycs",):
                i += 1
                continue
            if a.startswith("--check-hash-based-pycs=") or a in ("--version", "--help", "--help-env",
                                                                  "--help-xoptions", "--help-all"):
                continue
            return _ask(f"`{name}` with option `{a}`")
        if a.startswith("-") and len(a) > 1:
            j = 1
            while j < len(a):
                c = a[j]
                if c == "c":
                    return _rej(f"`{name} -c` runs inline code", H_SCRIPT)
                if c in "WX":
                    if j == len(a) - 1:
                        i += 1
                    break
                if c == "m":
                    mod = a[j + 1 :] or (args[i] if i < n else "")
                    return _python_module(name, mod)
                if c in "bBdEhiIOPqsSuvVxR":
                    j += 1
                    continue
                return _ask(f"`{name}` with option `{a}`")
            continue
        return _ask(f"`{name} {a}` runs a Python program")
    if i < n:
        return _ask(f"`{name} {args[i]}` runs a Python program")
    return _rej(f"`{name}` without a script {_INTERACTIVE_INTERP}", H_SCRIPT)


_PY_MODULE_REASONS = {
    "pytest": "runs the test suite (project code) and may change files",
    "unittest": "runs the test suite (project code) and may change files",
    "pip": "installs or changes packages",
    "venv": "creates a virtual environment",
    "http.server": "starts a web server that runs until the timeout",
}


def _python_module(name: str, mod: str) -> _J:
    if not mod:
        return _rej(f"`{name} -m` without a module", "name the module to run (e.g. `python3 -m pytest`)")
    why = _PY_MODULE_REASONS.get(mod, "runs a Python module")
    return _ask(f"`{name} -m {mod}` {why}")


def _cluster_scan(name: str, args: list[str], code: str, stop: str, what: str) -> _J | None:
    """Reject if any short-option cluster (before the first non-option word)
    contains a letter of ``code`` before a value-taking letter of ``stop``."""
    for a in args:
        if a == "--" or not a.startswith("-") or a == "-":
            break
        if a.startswith("--"):
            continue
        for c in a[1:]:
            if c in code:
                return _rej(f"`{name} -{c}` runs inline code ({what})", H_SCRIPT)
            if c in stop:
                break
    return None


def _first_operand(args: list[str], value_opts: frozenset[str] = frozenset()) -> str | None:
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            return args[i + 1] if i + 1 < len(args) else None
        if a.startswith("-") and a != "-":
            i += 2 if a in value_opts else 1
            continue
        return a
    return None


def _h_perl(name: str, args: list[str]) -> _J:
    if _is_version_query(args) and args[0] != "-V":
        return _allow(f"`{name} {args[0]}` only prints its version")
    bad = _cluster_scan(name, args, "eEMmd", "iIxlF0CD", "perl")
    if bad:
        return bad
    if any(a.startswith(("--eval",)) for a in args):
        return _rej(f"`{name}` runs inline code", H_SCRIPT)
    op = _first_operand(args)
    if op is None or op == "-":
        return _rej(f"`{name}` without a script reads the program from stdin {_INTERACTIVE_INTERP}", H_SCRIPT)
    return _ask(f"`{name} {op}` runs a Perl program")


def _h_ruby(name: str, args: list[str]) -> _J:
    if _is_version_query(args):
        return _allow(f"`{name} {args[0]}` only prints its version")
    bad = _cluster_scan(name, args, "e", "rICEFKTWx0", "ruby")
    if bad:
        return bad
    op = _first_operand(args, frozenset(["-r", "-I", "-C", "-E"]))
    if op is None or op == "-":
        return _rej(f"`{name}` without a script {_INTERACTIVE_INTERP}", H_SCRIPT)
    return _ask(f"`{name} {op}` runs a Ruby program")


_NODE_CODE_LONG = ("eval", "print")


def _h_node(name: str, args: list[str]) -> _J:
    if args in (["--version"], ["-v"], ["--help"], ["-h"]):
        return _allow(f"`{name} {args[0]}` only prints information")
    for k, a in enumerate(args):
        if a == "--" or not a.startswith("-"):
            break
        if a.startswith("--"):
            nm = a[2:].split("=", 1)[0]
            if nm in _NODE_CODE_LONG:
                return _rej(f"`{name} --{nm}` runs inline code", H_SCRIPT)
            if nm in ("interactive",):
                return _rej(f"`{name} -i` {_INTERACTIVE_INTERP}", H_SCRIPT)
            if nm in ("require", "import", "loader", "experimental-loader"):
                val = a.split("=", 1)[1] if "=" in a else (args[k + 1] if k + 1 < len(args) else "")
                if ":" in val:
                    return _rej(f"`{name} --{nm} {val}` loads code from a URL (inline code)", H_SCRIPT)
            continue
        if any(c in "ep" for c in a[1:]):
            return _rej(f"`{name} {a}` runs inline code", H_SCRIPT)
        if a == "-i":
            return _rej(f"`{name} -i` {_INTERACTIVE_INTERP}", H_SCRIPT)
        if a == "-r" and k + 1 < len(args) and ":" in args[k + 1]:
            return _rej(f"`{name} -r {args[k + 1]}` loads code from a URL (inline code)", H_SCRIPT)
    op = _first_operand(args, frozenset(["-r", "--require", "--import", "--loader", "-C", "--conditions"]))
    if op is None or op == "-":
        return _rej(f"`{name}` without a script {_INTERACTIVE_INTERP}", H_SCRIPT)
    return _ask(f"`{name} {op}` runs a JavaScript program")


def _h_deno(name: str, args: list[str]) -> _J:
    if _is_version_query(args) or args == ["version"]:
        return _allow(f"`{name} {args[0]}` only prints its version")
    sub = next((a for a in args if not a.startswith("-")), None)
    if sub is None or sub == "repl":
        return _rej(f"`{name}` without a subcommand {_INTERACTIVE_INTERP}", H_SCRIPT)
    if sub == "eval":
        return _rej(f"`{name} eval` runs inline code", H_SCRIPT)
    if any(a.startswith(("data:", "http:", "https:")) for a in args):
        return _rej(f"`{name}` with a URL runs code fetched from the network or inline", H_NETWORK)
    return _ask(f"`{name} {sub}` runs project code")


def _h_bun(name: str, args: list[str]) -> _J:
    if _is_version_query(args):
        return _allow(f"`{name} {args[0]}` only prints its version")
    for a in args:
        if a in ("-e", "-p", "--eval", "--print") or a.startswith(("--eval=", "--print=")):
            return _rej(f"`{name} {a}` runs inline code", H_SCRIPT)
    if not args or args[0] == "repl":
        return _rej(f"`{name}` without a script {_INTERACTIVE_INTERP}", H_SCRIPT)
    if args[0] in ("x",):
        return _judge_inner(name + " x", args[1:])
    return _ask(f"`{name} {args[0]}` runs project code or installs packages")


def _h_php(name: str, args: list[str]) -> _J:
    if _is_version_query(args):
        return _allow(f"`{name} {args[0]}` only prints its version")
    bad = _cluster_scan(name, args, "rRBEa", "dcfnzFtS", "php")
    if bad:
        return bad
    op = _first_operand(args, frozenset(["-d", "-c", "-f", "-z", "-t", "-S"]))
    if op is None and "-S" not in args and "-f" not in args:
        return _rej(f"`{name}` without a script {_INTERACTIVE_INTERP}", H_SCRIPT)
    return _ask(f"`{name}` runs a PHP program")


def _h_lua(name: str, args: list[str]) -> _J:
    if _is_version_query(args):
        return _allow(f"`{name} {args[0]}` only prints its version")
    bad = _cluster_scan(name, args, "ei", "l", "lua")
    if bad:
        return bad
    op = _first_operand(args, frozenset(["-l"]))
    if op is None or op == "-":
        return _rej(f"`{name}` without a script {_INTERACTIVE_INTERP}", H_SCRIPT)
    return _ask(f"`{name} {op}` runs a Lua program")


def _h_rscript(name: str, args: list[str]) -> _J:
    for a in args:
        if a == "-e" or a.startswith(("--expr", "-e")):
            return _rej(f"`{name} -e` runs inline code", H_SCRIPT)
    if name.lower() == "r" and not any(not a.startswith("-") for a in args):
        return _rej(f"`{name}` {_INTERACTIVE_INTERP}", H_SCRIPT)
    return _ask(f"`{name}` runs an R program")


def _h_osascript(name: str, args: list[str]) -> _J:
    return _rej(f"`{name}` runs AppleScript / JavaScript code, often inline", H_SCRIPT)


def _h_shell(name: str, args: list[str]) -> _J:
    if not args:
        return _rej(f"`{name}` without a script starts an interactive shell", "run the command directly, without a shell")
    first = args[0]
    if first.startswith(("-", "+")):
        if first == "--version" and len(args) == 1:
            return _allow(f"`{name} --version` only prints its version")
        return _rej(
            f"`{name} {first}`: a shell with options (such as -c) runs inline code",
            "run the command directly as its own bash call, or write a script with write_file and "
            f"run `{name} script.sh`",
        )
    return _ask(f"`{name} {first}` runs a shell script")


def _h_tclsh(name: str, args: list[str]) -> _J:
    if not args:
        return _rej(f"`{name}` {_INTERACTIVE_INTERP}", H_SCRIPT)
    if args[0].startswith("-"):
        return _rej(f"`{name} {args[0]}`: interpreter options may run inline code", H_SCRIPT)
    return _ask(f"`{name} {args[0]}` runs a Tcl program")


def _h_sqlite(name: str, args: list[str]) -> _J:
    for a in args:
        if a.startswith(("-cmd", "--cmd")):
            return _rej(f"`{name} -cmd` runs dot-commands, which can start shell commands", H_SCRIPT)
    pos = [a for a in args if not a.startswith("-")]
    if any(p.lstrip().startswith(".") for p in pos[1:]):
        return _rej(
            f"`{name}` dot-commands (e.g. .shell, .system, .output) can run programs or write files",
            "pass plain SQL only",
        )
    if len(pos) <= 1:
        return _rej(f"`{name}` without SQL {_INTERACTIVE_INTERP}", "pass the database file and the SQL as arguments")
    return _ask(f"`{name}` runs SQL that may change the database")


# ---------------------------------------------------------------------------
# Families that always reject
# ---------------------------------------------------------------------------

_PRIVILEGE = frozenset(
    "sudo su doas pkexec runuser chroot unshare nsenter capsh setpriv sudoedit visudo setcap gksudo "
    "gksu kdesu kdesudo run0 machinectl newuidmap newgidmap chcon setenforce".split()
)
_DESTROY = frozenset(
    "rm unlink shred dd wipefs fdisk sfdisk cfdisk gdisk sgdisk cgdisk parted mkswap truncate srm "
    "blkdiscard mkfs mke2fs fsck e2fsck tune2fs debugfs resize2fs badblocks lvremove vgremove "
    "pvremove mdadm cryptsetup zpool hdparm sg_format flashrom".split()
)
_SYSTEM = frozenset(
    "shutdown reboot halt poweroff init telinit systemctl service mount umount swapon swapoff losetup "
    "sysctl modprobe insmod rmmod iptables ip6tables nft ufw firewall-cmd crontab at batch atrm "
    "useradd userdel usermod groupadd groupdel groupmod passwd chpasswd chsh chfn hostnamectl "
    "timedatectl localectl update-alternatives ldconfig launchctl chattr wall".split()
)
_KILL = frozenset("kill pkill killall killall5 skill xkill".split())
_WRAPPERS = frozenset(
    "env xargs timeout nice renice ionice nohup setsid stdbuf time watch strace ltrace gdb lldb "
    "valgrind command builtin exec eval source . trap alias unalias script expect parallel flock "
    "chrt taskset sg newgrp busybox toybox unbuffer fakeroot proot firejail bwrap sshpass rlwrap "
    "catchsegv entr watchexec nodemon hyperfine chpst daemonize start-stop-daemon runcon cpulimit "
    "numactl prlimit xdg-open open run-parts dbus-run-session dbus-launch xvfb-run ssh-agent "
    "systemd-run torsocks proxychains proxychains4 with-contenv s6-setuidgid su-exec gosu "
    "tini dumb-init faketime nix-shell perf".split()
)
_NETWORK = frozenset(
    "curl wget nc ncat netcat socat telnet ssh scp sftp rsync ftp tftp lftp aria2c axel lynx links "
    "elinks w3m http https httpie xh curlie mosh ping ping6 traceroute tracepath mtr dig nslookup "
    "host whois nmap ssh-copy-id ssh-keyscan smbclient websocat wscat grpcurl tor mysql psql "
    "mongo mongosh redis-cli".split()
)
_BUILTINS = frozenset(
    "cd pushd popd dirs read declare typeset let local export readonly set shopt ulimit mapfile "
    "readarray hash enable unset shift return exit break continue wait jobs fg bg disown suspend "
    "logout times umask complete compgen compopt caller history fc bind help getopts type :".split()
)
_INTERACTIVE = frozenset(
    "yes top htop btop atop less more most vi vim nvim view vimdiff nano emacs emacsclient pico joe "
    "ed ex mc man info tmux screen irb ipython bpython ptpython pry ghci jshell iex erl ".split()
)
_WRAPPER_HINTS = {
    "xargs": "list the inputs first (e.g. with the glob or grep tool), then run the command with "
    "explicit arguments",
    "parallel": "run the commands one by one as separate bash calls",
    "eval": "run the command itself directly, one plain command per call",
    "source": "there is no shell to load a file into; run the script as a program (e.g. `bash script.sh`)",
    ".": "there is no shell to load a file into; run the script as a program (e.g. `bash script.sh`)",
    "alias": "aliases do not exist here; run the program by its real name",
    "unalias": "aliases do not exist here; run the program by its real name",
    "trap": "there is no shell to trap signals in; run the command directly",
    "xdg-open": "tell the user which file or URL to open",
    "open": "tell the user which file or URL to open",
}


def _h_privilege(name: str, args: list[str]) -> _J:
    return _rej(f"`{name}` changes privileges or isolation (privilege escalation is not allowed)", H_PRIV)


def _h_destroy(name: str, args: list[str]) -> _J:
    return _rej(f"`{name}` deletes or overwrites data (destructive)", H_DELETE)


def _h_system(name: str, args: list[str]) -> _J:
    return _rej(f"`{name}` changes system state (services, mounts, users, schedules, kernel)", H_SYSTEM)


def _h_kill(name: str, args: list[str]) -> _J:
    return _rej(f"`{name}` kills processes", H_KILL)


def _h_wrapper(name: str, args: list[str]) -> _J:
    return _rej(
        f"`{name}` is a wrapper that runs another program or shell code",
        _WRAPPER_HINTS.get(name.lower(), H_WRAPPER),
    )


def _h_network(name: str, args: list[str]) -> _J:
    return _rej(f"`{name}` talks to the network", H_NETWORK)


def _h_builtin(name: str, args: list[str]) -> _J:
    lname = name.lower()
    if lname in ("cd", "pushd", "popd", "dirs"):
        hint = H_BUILTIN_STATE
    elif lname in ("type", "hash"):
        hint = "use `which PROGRAM` to find a program"
    elif lname == "ulimit":
        hint = "resource limits are set by the bash tool itself"
    elif lname == "help":
        hint = "use `PROGRAM --help`"
    else:
        hint = (
            "there is no shell and no state between calls: variables and options cannot be set; "
            "pass values as arguments instead"
        )
    return _rej(f"`{name}` is a shell builtin and has no effect without a shell (or evaluates code hidden in words)", hint)


def _h_interactive(name: str, args: list[str]) -> _J:
    if name.lower() == "yes":
        return _rej("`yes` never ends", "pass non-interactive flags such as --yes / -y to the program instead")
    return _rej(f"`{name}` is interactive (needs a terminal) or never ends", H_INTERACTIVE)


def _h_sleep(name: str, args: list[str]) -> _J:
    if any(a.lower().startswith("inf") for a in args):
        return _rej("`sleep infinity` never ends", "do not wait; run the next command directly")
    return _ask("`sleep` only waits")


# ---------------------------------------------------------------------------
# Everyday programs that change things (ask), with their dangerous options
# ---------------------------------------------------------------------------

_ASK_REASONS = {
    "pytest": "runs the test suite (project code) and may change files",
    "py.test": "runs the test suite (project code) and may change files",
    "tox": "runs test environments (project code)",
    "nox": "runs test sessions (project code)",
    "make": "runs build recipes (arbitrary commands from the Makefile)",
    "cmake": "configures or runs a build",
    "ninja": "runs a build",
    "meson": "configures or runs a build",
    "bazel": "runs a build",
    "gradle": "runs a build",
    "mvn": "runs a build",
    "cargo": "builds or runs Rust code",
    "rustc": "compiles code",
    "gcc": "compiles code",
    "g++": "compiles code",
    "cc": "compiles code",
    "clang": "compiles code",
    "clang++": "compiles code",
    "javac": "compiles code",
    "java": "runs a Java program",
    "tsc": "compiles TypeScript",
    "npm": "runs package scripts or installs packages",
    "yarn": "runs package scripts or installs packages",
    "pnpm": "runs package scripts or installs packages",
    "npx": "runs a package binary (possibly downloaded)",
    "bunx": "runs a package binary (possibly downloaded)",
    "pip": "installs or changes Python packages",
    "pip3": "installs or changes Python packages",
    "pipx": "installs or runs Python applications",
    "uv": "manages Python environments and packages",
    "poetry": "manages a Python project",
    "pipenv": "manages a Python environment",
    "pdm": "manages a Python project",
    "hatch": "manages a Python project",
    "rye": "manages a Python project",
    "conda": "manages environments and packages",
    "bundle": "manages Ruby gems",
    "gem": "installs Ruby gems",
    "black": "may reformat files",
    "ruff": "may change files (fix / format)",
    "mypy": "runs a type checker (writes a cache)",
    "pyright": "runs a type checker",
    "flake8": "runs a linter",
    "pylint": "runs a linter",
    "isort": "may reorder imports in files",
    "eslint": "runs a linter (may fix files)",
    "prettier": "may reformat files",
    "gofmt": "may reformat files",
    "mkdir": "creates folders",
    "touch": "creates files or changes their timestamps",
    "cp": "copies files (may overwrite)",
    "mv": "moves or renames files (may overwrite)",
    "ln": "creates links",
    "rmdir": "removes empty folders",
    "install": "copies files and sets their modes",
    "patch": "changes files",
    "tee": "writes files",
    "split": "writes files",
    "tar": "creates or extracts archives",
    "zip": "creates archives",
    "unzip": "extracts archives (may overwrite)",
    "gzip": "compresses files (replaces them)",
    "gunzip": "decompresses files (replaces them)",
    "xz": "compresses files (replaces them)",
    "bzip2": "compresses files (replaces them)",
    "zstd": "compresses files",
    "docker": "controls containers",
    "podman": "controls containers",
    "kubectl": "controls a cluster",
}
_VERSION_OK = frozenset(
    "make cmake ninja meson gcc g++ cc clang clang++ javac java tsc npm yarn pnpm npx pip pip3 pipx "
    "uv poetry pipenv pdm hatch rye conda bundle gem black ruff mypy pyright flake8 pylint isort "
    "eslint prettier rustc cargo tar zip unzip gzip xz bzip2 zstd docker podman".split()
)
_ENV_RUNNERS = {
    "uv": ("run",),
    "poetry": ("run",),
    "pipenv": ("run",),
    "pdm": ("run",),
    "hatch": ("run",),
    "rye": ("run",),
    "conda": ("run",),
    "bundle": ("exec",),
    "pipx": ("run",),
}


def _judge_inner(outer: str, rest: list[str]) -> _J:
    inner = [a for a in rest]
    while inner and inner[0].startswith("-"):
        inner.pop(0)
    if not inner:
        return _ask(f"`{outer}` runs a program")
    _, j = _judge(tuple(inner))
    if j[0] == "reject":
        return _rej(f"`{outer}` runs `{inner[0]}`, which is not allowed: {j[1]}", j[2] or H_WRAPPER)
    return _ask(f"`{outer}` runs `{inner[0]}` in a project environment")


def _h_ask(name: str, args: list[str]) -> _J:
    lname = name.lower()
    if _is_version_query(args) and lname in _VERSION_OK:
        return _allow(f"`{name} {args[0]}` only prints its version")
    runners = _ENV_RUNNERS.get(lname)
    if runners and args and args[0] in runners:
        return _judge_inner(f"{name} {args[0]}", args[1:])
    return _ask(f"`{name}` {_ASK_REASONS.get(lname, 'may change files or run code')}")


def _h_make(name: str, args: list[str]) -> _J:
    for a in args:
        if _long_hit(a, ("eval",)) or a.startswith("-E") or _short_hit(a, "E", "CfIjlowW"):
            return _rej("`make --eval` runs inline make code", H_SCRIPT)
    return _h_ask(name, args)


def _h_cargo(name: str, args: list[str]) -> _J:
    for a in args:
        if a == "--config" or a.startswith("--config="):
            return _rej("`cargo --config` can set a runner or linker that runs programs",
                        "drop --config; put settings in the project's .cargo/config.toml if needed")
    if args in (["--list"],):
        return _allow("`cargo --list` only prints information")
    return _h_ask(name, args)


def _h_npm(name: str, args: list[str]) -> _J:
    for a in args:
        if a in ("-c", "--call") or a.startswith("--call="):
            return _rej(f"`{name} {a}` runs an inline shell command", H_SEPARATE)
    return _h_ask(name, args)


def _h_go(name: str, args: list[str]) -> _J:
    for a in args:
        nm = a.lstrip("-").split("=", 1)[0]
        if a.startswith("-") and nm in ("exec", "toolexec", "vettool"):
            return _rej(f"`go -{nm}` runs another program", "drop the option")
    if not args:
        return _allow("`go` only prints usage")
    sub = args[0]
    if sub in ("version", "help") or (sub == "env" and not any(a in ("-w", "-u") for a in args)):
        return _allow(f"`go {sub}` only prints information")
    why = {
        "test": "runs the tests (project code)",
        "run": "compiles and runs a program",
        "build": "compiles the project",
        "generate": "runs commands written in source comments",
        "get": "downloads and installs modules",
        "install": "compiles and installs",
        "mod": "manages modules (may download)",
    }.get(sub, "may change files or run code")
    return _ask(f"`go {sub}` {why}")


def _h_rustc(name: str, args: list[str]) -> _J:
    return _h_ask(name, args)


def _h_tar(name: str, args: list[str]) -> _J:
    danger = ("to-command", "checkpoint-action", "use-compress-program", "rsh-command", "info-script",
              "new-volume-script", "rmt-command")
    safe = frozenset(["checkpoint", "to-stdout"])
    for k, a in enumerate(args):
        hit = _long_hit(a, danger, safe)
        if hit:
            return _rej(f"`tar --{hit}` runs another program", "drop the option; tar compresses with -z / -j / -J itself")
        if a.startswith("-") and not a.startswith("--"):
            letters = a[1:]
        elif k == 0 and not a.startswith("-"):
            letters = a  # old-style option cluster: `tar xIf ...`
        else:
            continue
        for c in letters:
            if c in "IF":
                return _rej(f"`tar -{c}` runs another program", "drop the option; tar compresses with -z / -j / -J itself")
            if c in "fCbgKLNTVX":
                break
    for a in args:
        if a.startswith("--file="):
            a = a[7:]
        if ":" in a and not a.startswith("-") and "--force-local" not in args:
            return _rej(f"`tar` archive `{a}` names a remote host (runs rsh/ssh)",
                        "use a local archive path without ':' (or add --force-local)")
    return _h_ask(name, args)


def _h_zip(name: str, args: list[str]) -> _J:
    for a in args:
        if (a.startswith("-") and not a.startswith("--") and "TT" in a) or _long_hit(a, ("unzip-command",)):
            return _rej("`zip -TT / --unzip-command` runs another program", "drop the option")
    return _h_ask(name, args)


def _h_chmod(name: str, args: list[str]) -> _J:
    recursive = any(a in ("-R", "--recursive") or _short_hit(a, "R") for a in args)
    if recursive:
        for a in args:
            if not a.startswith("-") and (a.startswith("/") or ".." in a.split("/")):
                return _rej(
                    f"`{name} -R` on `{a}` (outside the workspace) is not allowed",
                    "change permissions only on paths inside the workspace (relative, without `..`)",
                )
    return _ask(f"`{name}` changes file permissions or owners")


# ---------------------------------------------------------------------------
# git
# ---------------------------------------------------------------------------

_GIT_GLOBAL_FLAGS = frozenset(
    "--no-pager -P --no-replace-objects --literal-pathspecs --glob-pathspecs --noglob-pathspecs "
    "--icase-pathspecs --no-optional-locks --no-lazy-fetch --no-advice --bare".split()
)
_GIT_GLOBAL_INFO = frozenset("--version -v --html-path --man-path --info-path".split())

_LOG_DIFF_FLAGS = (
    "oneline stat shortstat numstat name-only name-status graph decorate no-decorate all patch "
    "no-patch follow reverse first-parent merges no-merges abbrev-commit no-abbrev-commit cached "
    "staged color no-color word-diff color-words ignore-space-change ignore-all-space "
    "ignore-blank-lines ignore-space-at-eol ignore-cr-at-eol summary raw function-context "
    "find-renames find-copies find-copies-harder relative no-relative no-renames check exit-code "
    "quiet pickaxe-all pickaxe-regex left-right cherry-pick cherry-mark cherry boundary topo-order "
    "date-order author-date-order no-walk simplify-by-decoration source histogram patience minimal "
    "dirstat compact-summary full-index binary abbrev no-abbrev no-ext-diff no-textconv "
    "irreversible-delete text ita-invisible-in-index ita-visible-in-index merge-base no-index "
    "branches tags remotes glob exclude not full-history dense sparse show-linear-break parents "
    "children log-size use-mailmap mailmap notes no-notes show-notes standard-notes "
    "no-standard-notes expand-tabs no-expand-tabs pretty format date encoding "
    "stat-width stat-name-width stat-count stat-graph-width dirstat-by-file cumulative "
    "unified inter-hunk-context diff-algorithm anchored diff-filter find-object break-rewrites "
    "src-prefix dst-prefix no-prefix default-prefix line-prefix indent-heuristic "
    "no-indent-heuristic color-moved no-color-moved color-moved-ws word-diff-regex ws-error-highlight "
    "submodule ignore-submodules rename-empty no-rename-empty remerge-diff diff-merges no-diff-merges "
    "combined-all-paths cc walk-reflogs show-pulls ancestry-path bisect "
    "since after until before author committer grep all-match invert-grep regexp-ignore-case "
    "basic-regexp extended-regexp fixed-strings perl-regexp max-count skip min-parents max-parents "
    "no-min-parents no-max-parents max-age min-age "
    "oneline-abbrev ignore-missing single-worktree reflog stdin alternate-refs remove-empty "
    "clear-decorations decorate-refs decorate-refs-exclude relative-date no-show-signature "
    "summary-only committer-date-order numbered"
)
_LOG_DIFF_ARG = (
    "max-count skip since after until before author committer grep format pretty date encoding "
    "decorate-refs decorate-refs-exclude diff-filter find-object stat-width stat-name-width "
    "stat-count stat-graph-width unified inter-hunk-context diff-algorithm anchored src-prefix "
    "dst-prefix line-prefix color-moved-ws word-diff-regex ws-error-highlight glob exclude "
    "branches tags remotes"
)
_GIT_OPTS: dict[str, _Opts] = {
    "log": _o("pusrzRaDtcmwbWiEFPgq", "nSGL", _LOG_DIFF_FLAGS, _LOG_DIFF_ARG, short_opt="UMCBlOX", numeric=True),
    "status": _o(
        "sbvz", "", "short branch show-stash porcelain long verbose untracked-files ignore-submodules "
        "ignored column no-column ahead-behind no-ahead-behind renames no-renames find-renames", "",
        short_opt="u",
    ),
    "branch": _o(
        "arvlic", "", "all remotes verbose list show-current color no-color column no-column "
        "ignore-case abbrev no-abbrev omit-empty",
        "sort format points-at merged no-merged contains no-contains",
    ),
    "rev-parse": _o(
        "q", "", "abbrev-ref short verify quiet show-toplevel show-prefix show-cdup git-dir "
        "git-common-dir absolute-git-dir is-inside-work-tree is-inside-git-dir is-bare-repository "
        "is-shallow-repository symbolic symbolic-full-name all branches tags remotes sq sq-quote "
        "default show-object-format path-format local-env-vars since until not revs-only no-revs "
        "flags no-flags shared-index-path show-superproject-working-tree disambiguate glob exclude "
        "show-ref-format after before",
        "git-path resolve-git-dir default",
    ),
    "ls-files": _o(
        "cdmoiskuztvf", "xX", "cached deleted modified others ignored stage unmerged killed directory "
        "no-empty-directory eol exclude-standard error-unmatch full-name recurse-submodules abbrev "
        "debug deduplicate sparse resolve-undo exclude exclude-from exclude-per-directory with-tree "
        "format",
        "exclude exclude-from exclude-per-directory with-tree format",
    ),
    "blame": _o(
        "bltpcefsnwh", "LS", "root show-stats reverse first-parent porcelain line-porcelain "
        "incremental encoding date progress no-progress color-lines color-by-age abbrev show-email "
        "show-number show-name score-debug minimal",
        "contents ignore-rev ignore-revs-file", short_opt="MC",
    ),
}
_GIT_OPTS["diff"] = _GIT_OPTS["log"]
_GIT_OPTS["show"] = _GIT_OPTS["log"]
_GIT_OPTS["whatchanged"] = _GIT_OPTS["log"]
_GIT_OPTS["shortlog"] = _o("nsec", "w", "numbered summary email committer group format " + _LOG_DIFF_FLAGS,
                           _LOG_DIFF_ARG, short_opt="w", numeric=True)
_GIT_OPTS["annotate"] = _GIT_OPTS["blame"]

# read-only subcommands without an option table: allowed with any option that
# is not on the ask/reject lists below
_GIT_READ_ANY = frozenset(
    "describe rev-list ls-tree show-ref for-each-ref merge-base name-rev count-objects range-diff "
    "version var check-ignore check-attr diff-tree diff-files diff-index show-branch cherry "
    "check-ref-format verify-pack grep cat-file".split()
)
_GIT_ASK = frozenset(
    "add commit checkout switch restore reset stash merge rebase cherry-pick revert tag mv rm init "
    "apply am format-patch bundle gc prune repack fsck notes worktree sparse-checkout "
    "update-index update-ref symbolic-ref write-tree commit-tree hash-object mktree read-tree "
    "checkout-index fast-import fast-export mailinfo mailsplit replace pack-refs reflog bisect "
    "submodule remote config branch citool gui maintenance rerere request-pull "
    "stripspace interpret-trailers column fmt-merge-msg multi-pack-index commit-graph "
    "unpack-objects pack-objects index-pack prune-packed merge-file merge-tree "
    "show-index get-tar-commit-id backfill help verify-commit verify-tag diagnose bugreport refs".split()
)
_GIT_ASK_REASONS = {
    "help": "may start a manual viewer or a web browser",
    "verify-commit": "runs gpg to check signatures",
    "verify-tag": "runs gpg to check signatures",
    "fsck": "may write recovered objects (--lost-found)",
    "diagnose": "writes a diagnostics archive",
    "bugreport": "writes a report file",
    "format-patch": "writes patch files",
    "bisect": "moves HEAD between commits",
}
_GIT_NETWORK = frozenset("clone fetch pull push ls-remote archive".split())
_GIT_REJECT = {
    "difftool": "runs a configured external diff program",
    "mergetool": "runs a configured external merge program",
    "instaweb": "starts a web server and a browser",
    "daemon": "starts a git server",
    "send-email": "sends e-mail (network) and can run a configured program",
    "imap-send": "talks to an IMAP server",
    "filter-branch": "runs shell code given as arguments",
    "credential": "reads or stores credentials",
    "credential-cache": "reads or stores credentials",
    "credential-store": "reads or stores credentials",
    "upload-pack": "is a server-side transport program",
    "receive-pack": "is a server-side transport program",
    "upload-archive": "is a server-side transport program",
    "shell": "is a restricted login shell",
    "http-backend": "is a server program",
    "remote-ext": "runs an arbitrary program as a transport",
    "remote-fd": "is a raw transport helper",
    "hook": "runs repository hooks",
    "web--browse": "starts a web browser",
    "p4": "talks to a Perforce server",
    "svn": "talks to a Subversion server",
    "cvsimport": "talks to a CVS server",
    "cvsserver": "is a server program",
    "cvsexportcommit": "talks to a CVS checkout",
    "quiltimport": "imports patches via external tools",
    "merge-index": "runs a merge program for each file",
    "merge-one-file": "is a helper script run by merge programs",
}
_GIT_INTERACTIVE = {
    "add": ("-i", "--interactive", "-p", "--patch", "-e", "--edit"),
    "commit": ("--interactive", "-p", "--patch", "-e", "--edit"),
    "rebase": ("-i", "--interactive"),
    "checkout": ("-p", "--patch"),
    "reset": ("-p", "--patch"),
    "restore": ("-p", "--patch"),
    "stash": ("-p", "--patch"),
    "clean": ("-i", "--interactive"),
    "tag": ("-e", "--edit"),
    "merge": ("-e", "--edit"),
}
_GIT_ASK_OPTS = ("output", "ext-diff", "textconv", "show-signature", "filters")
_GIT_ASK_EXACT = frozenset(["text"])
_GIT_TRANSPORT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*::")
_GIT_CONFIG_SAFE = re.compile(
    r"(user\.(name|email)|core\.(autocrlf|filemode|ignorecase|eol|quotepath|whitespace|safecrlf|"
    r"longpaths|symlinks|precomposeunicode)|init\.defaultbranch|pull\.(rebase|ff)|"
    r"push\.(default|autosetupremote)|merge\.(ff|conflictstyle)|rebase\.(autostash|autosquash)|"
    r"fetch\.prune|color\.[a-z.]+|advice\.[a-z]+|log\.(date|decorate|abbrevcommit)|"
    r"diff\.(renames|algorithm|colormoved|mnemonicprefix)|status\.[a-z]+|"
    r"branch\.autosetup(merge|rebase)|branch\.[A-Za-z0-9._/-]+\.(merge|remote|rebase)|"
    r"remote\.[A-Za-z0-9._-]+\.(url|pushurl|fetch|prune)|commit\.verbose|rerere\.enabled|"
    r"gc\.auto|pager\.none-never)",
    re.IGNORECASE,
)


def _git_config(args: list[str]) -> _J:
    setters = ("--add", "--replace-all", "--unset", "--unset-all", "--rename-section", "--remove-section")
    readers = ("--get", "--get-all", "--get-regexp", "--get-urlmatch", "-l", "--list", "--get-color",
               "--get-colorbool")
    file_opts = ("--file", "-f", "--blob", "--type", "--default", "--comment")
    if any(a in ("-e", "--edit", "edit") for a in args):
        return _rej("`git config --edit` opens an editor", "read settings with `git config --list`")
    pos: list[str] = []
    i = 0
    mode = None
    while i < len(args):
        a = args[i]
        i += 1
        if a in file_opts:
            i += 1
            continue
        if a in setters:
            mode = "set"
            continue
        if a in readers:
            mode = mode or "get"
            continue
        if a.startswith("-"):
            continue
        pos.append(a)
    if pos and pos[0] in ("list", "get"):
        return _allow("`git config` only reads settings")
    if pos and pos[0] in ("set", "unset", "rename-section", "remove-section"):
        mode = "set"
        pos = pos[1:]
    if mode is None:
        mode = "set" if len(pos) >= 2 else "get"
    if mode == "get":
        return _allow("`git config` only reads settings")
    if not pos:
        return _ask("`git config` changes repository settings")
    key = pos[0]
    if not _GIT_CONFIG_SAFE.fullmatch(key):
        return _rej(
            f"`git config {key}` is not on the list of plain preference keys; keys such as alias.*, "
            "core.pager, core.sshCommand, core.hooksPath, filters and credential helpers run programs",
            "tell the user which setting you need; they can set it themselves",
        )
    if any(_GIT_TRANSPORT.match(v) for v in pos[1:]):
        return _rej("a `<transport>::` remote-helper URL runs an arbitrary program", H_GIT_STD)
    return _ask(f"`git config {key}` changes repository settings")


def _h_git(name: str, args: list[str]) -> _J:
    i, n = 0, len(args)
    cap = None
    while i < n and args[i].startswith("-"):
        a = args[i]
        i += 1
        if a == "-c" or a.startswith("-c") or a.startswith("--config-env"):
            return _rej(
                f"`git {a}` sets configuration that can run programs (core.pager, alias.*, core.sshCommand ...)",
                "drop the -c / --config-env option; run plain `git SUBCOMMAND ...`",
            )
        if a.startswith("--exec-path"):
            return _rej("`git --exec-path` changes where git finds the programs it runs", "drop the option")
        if a in ("-p", "--paginate"):
            return _rej("`git -p/--paginate` runs a pager program", "drop the option; output is returned to you")
        if a in _GIT_GLOBAL_FLAGS:
            continue
        if a in _GIT_GLOBAL_INFO:
            if i == n:
                return _allow(f"`git {a}` only prints information")
            continue
        if a == "-C" or a.startswith(("--git-dir", "--work-tree", "--namespace")):
            val = a.split("=", 1)[1] if "=" in a else (args[i] if i < n else "")
            if "=" not in a:
                i += 1
            if a != "-C" or val.startswith("/") or ".." in val.split("/") or not val:
                cap = f"`git {a}` points git at another repository or folder"
            continue
        if a in ("-h", "--help"):
            return _ask("`git --help` may start a manual viewer")
        return _rej(f"unknown git option `{a}` before the subcommand", H_GIT_STD)
    if i >= n:
        return _allow("`git` without a subcommand only prints usage")
    sub = args[i]
    rest = args[i + 1 :]
    j = _git_sub(sub, rest)
    if cap and j[0] == "allow":
        return _ask(cap)
    return j


def _git_sub(sub: str, rest: list[str]) -> _J:
    if sub in _GIT_REJECT:
        return _rej(f"`git {sub}` {_GIT_REJECT[sub]}", H_GIT_STD)
    interactive = _GIT_INTERACTIVE.get(sub, ())
    if sub == "stash" and rest[:1] and rest[0] in ("show", "list", "pop", "apply", "drop", "branch", "clear",
                                                    "create", "store"):
        interactive = ()  # `stash show -p` prints a patch
    for opt in interactive:
        for a in rest:
            if a == opt or (opt.startswith("--") and a.startswith(opt + "=")):
                return _rej(
                    f"`git {sub} {a}` is interactive (needs a terminal / editor)",
                    "use the non-interactive form (e.g. `git add FILE`, `git commit -m MESSAGE`)",
                )
    for a in rest:
        hit = _long_hit(a, ("upload-pack", "receive-pack", "exec", "template"))
        if hit and (hit != "exec" or sub in ("push", "ls-remote", "archive", "fetch", "pull", "clone", "rebase")):
            return _rej(f"`git {sub} --{hit}` runs another program", H_GIT_STD)
        if _long_hit(a, ("open-files-in-pager",)) or (sub == "grep" and a.startswith("-O")):
            return _rej("`git grep -O` opens files in a pager program", "drop -O; the matches are returned to you")
    if sub == "rebase" and any(a == "-x" or a.startswith("-x") for a in rest):
        return _rej("`git rebase -x/--exec` runs shell commands", H_GIT_STD)
    if sub == "bisect" and rest[:1] == ["run"]:
        return _rej("`git bisect run` runs a command for each step", "run the bisect steps one by one")
    if sub == "submodule" and "foreach" in rest:
        return _rej("`git submodule foreach` runs a shell command in each submodule", H_SEPARATE)
    if sub in ("clone", "ls-remote") and any(a == "-u" or _short_hit(a, "u") for a in rest):
        return _rej(f"`git {sub} -u` (--upload-pack) runs another program", H_GIT_STD)
    if sub == "clone" and any(a in ("-c", "--config") or a.startswith(("--config=", "-c")) for a in rest):
        return _rej("`git clone -c/--config` sets configuration that can run programs", H_GIT_STD)
    if sub in _GIT_NETWORK or sub in ("remote", "submodule"):
        for a in rest:
            if _GIT_TRANSPORT.match(a):
                return _rej(f"`{a}`: a `<transport>::` remote-helper URL runs an arbitrary program", H_GIT_STD)
    if sub == "maintenance" and rest[:1] in (["start"], ["register"]):
        return _rej("`git maintenance start/register` schedules background jobs on the machine", H_SYSTEM)
    if sub == "clean":
        if any(a in ("-n", "--dry-run") or _short_hit(a, "n") for a in rest):
            return _allow("`git clean -n` only lists what would be deleted")
        return _rej("`git clean` deletes untracked files permanently", H_DELETE)
    if sub == "config":
        return _git_config(rest)
    if sub in _GIT_NETWORK:
        if sub == "archive" and not any(a.startswith("--remote") for a in rest):
            return _ask("`git archive` writes an archive")
        return _ask(f"`git {sub}` contacts the network")
    # read-only candidates
    ask_reason = None
    for a in rest:
        hit = _long_hit(a, _GIT_ASK_OPTS, _GIT_ASK_EXACT)
        if hit:
            ask_reason = f"`git {sub} --{hit}` writes a file or runs a configured program"
            break
    spec = _GIT_OPTS.get(sub)
    if spec is not None:
        if ask_reason:
            return _ask(ask_reason)
        bad, pos = _scan(rest, spec)
        if bad is not None:
            return _ask(f"`git {sub}` with option `{bad}`, which is not on the known read-only option list")
        if sub == "branch" and pos and not any(a in ("-l", "--list") or _short_hit(a, "l") for a in rest):
            return _ask("`git branch NAME` creates a branch")
        if sub == "branch":
            for a in rest:
                if a in ("-d", "-D", "-m", "-M", "-c", "-C", "-f", "-u", "--delete", "--move", "--copy",
                         "--force", "--set-upstream-to", "--unset-upstream", "--edit-description", "--track"):
                    return _ask(f"`git branch {a}` changes branches")
        return _allow(f"`git {sub}` only reads the repository")
    if sub in _GIT_READ_ANY:
        if ask_reason:
            return _ask(ask_reason)
        return _allow(f"`git {sub}` only reads the repository")
    listing = {
        "stash": ("list", "show"),
        "remote": ("", "-v", "--verbose", "get-url"),
        "worktree": ("list",),
        "reflog": ("", "show", "list"),
        "notes": ("list", "show"),
        "submodule": ("status", "summary"),
        "tag": ("", "-l", "--list", "-n"),
    }.get(sub)
    if listing is not None and (rest[:1] or [""])[0] in listing and not ask_reason:
        if sub == "tag" and any(a in ("-d", "-a", "-s", "-f", "-m", "-F", "-u", "--delete") for a in rest):
            return _ask(f"`git {sub}` changes tags")
        if sub in ("remote",) and len(rest) > 1 and rest[0] != "get-url":
            return _ask(f"`git {sub}` may change remotes")
        return _allow(f"`git {sub}` only lists")
    if sub in _GIT_ASK or sub in _GIT_OPTS or sub in _GIT_READ_ANY:
        return _ask(f"`git {sub}` {_GIT_ASK_REASONS.get(sub, 'changes the repository or working tree')}")
    return _rej(
        f"unknown git subcommand `{sub}` (it could be an alias or a git-* program that runs anything)",
        H_GIT_STD,
    )


# ---------------------------------------------------------------------------
# The dispatch table
# ---------------------------------------------------------------------------

_Handler = Callable[[str, list[str]], _J]


def _build_handlers() -> dict[str, _Handler]:
    h: dict[str, _Handler] = {}
    for names, fn in (
        (_PRIVILEGE, _h_privilege),
        (_DESTROY, _h_destroy),
        (_SYSTEM, _h_system),
        (_KILL, _h_kill),
        (_WRAPPERS, _h_wrapper),
        (_NETWORK, _h_network),
        (_BUILTINS, _h_builtin),
        (_INTERACTIVE, _h_interactive),
    ):
        for nm in names:
            h[nm] = fn
    for nm in _ASK_REASONS:
        h[nm] = _h_ask
    for nm in _READONLY_OPTS:
        h[nm] = _h_readonly
    h.update(
        {
            "echo": _h_echo,
            "printf": _h_printf,
            "test": _h_test,
            "[": _h_test,
            "cat": _h_cat,
            "tail": _h_tail,
            "sort": _h_sort,
            "uniq": _h_uniq,
            "date": _h_date,
            "rg": _h_rg,
            "find": _h_find,
            "sed": _h_sed,
            "gsed": _h_sed,
            "awk": _h_awk,
            "gawk": _h_awk,
            "mawk": _h_awk,
            "nawk": _h_awk,
            "original-awk": _h_awk,
            "python": _h_python,
            "pypy": _h_python,
            "pypy3": _h_python,
            "perl": _h_perl,
            "ruby": _h_ruby,
            "node": _h_node,
            "nodejs": _h_node,
            "deno": _h_deno,
            "bun": _h_bun,
            "php": _h_php,
            "lua": _h_lua,
            "luajit": _h_lua,
            "rscript": _h_rscript,
            "r": _h_rscript,
            "osascript": _h_osascript,
            "tclsh": _h_tclsh,
            "wish": _h_tclsh,
            "sqlite3": _h_sqlite,
            "sleep": _h_sleep,
            "make": _h_make,
            "gmake": _h_make,
            "cargo": _h_cargo,
            "npm": _h_npm,
            "npx": _h_npm,
            "pnpm": _h_npm,
            "yarn": _h_npm,
            "go": _h_go,
            "tar": _h_tar,
            "zip": _h_zip,
            "chmod": _h_chmod,
            "chown": _h_chmod,
            "chgrp": _h_chmod,
            "git": _h_git,
        }
    )
    for nm in "sh bash zsh dash ksh mksh fish csh tcsh ash rbash yash posh pwsh powershell xonsh elvish nu".split():
        h[nm] = _h_shell
    return h


_HANDLERS: dict[str, _Handler] = _build_handlers()
_KNOWN = frozenset(_HANDLERS)
