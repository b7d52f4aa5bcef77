"""Wrappers that only bound or tune how one program runs: ``timeout``, ``nice``,
``stdbuf``, and ``env`` with assignments. Pure.

``timeout 60 pytest -x`` runs ``pytest -x`` with a deadline, ``nice -n 10
make`` at a lower priority, ``stdbuf -oL python x.py`` with line-buffered
output, ``env NAME=VALUE -u NAME CMD`` with its environment changed. The
program they run is judged as if it were written alone (core.shell.compound
takes the wrapper's words off and judges the rest as the command); ``env``'s
assignments are judged as ``NAME=VALUE CMD`` and its ``-u NAME`` as ``unset``.
The plan keeps the wrapper's words apart (``SimpleCommand.wrapper``), so every
rule and every later check reads the inner program from ``argv``, and the
executor runs the wrapper by its absolute path with the inner program
replaced by the absolute path it resolves to.

Only the options modelled here are read; any other (an abbreviated long
option, ``env -i`` / ``-S`` / ``-C``, ``nice`` without a number), a duration
that is not a literal number, a wrapper inside a wrapper, or no program
leaves the command rejected as before.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from core.shell.environment import ENVIRONMENT_BUILTINS, NAME, assignment_problem
from core.shell.rules.rejected import lookup_only
from core.shell.verdict import H_WRAPPER, J, rej

# The wrappers unwrapped here (by name only: `/usr/bin/timeout ...` is judged
# as the wrapper rule judges it).
UNWRAPPED = frozenset(["timeout", "nice", "stdbuf", "env"])

_DURATION = re.compile(r"(?:\d+(?:\.\d*)?|\.\d+)[smhd]?")
_SIGNAL = re.compile(r"(?:SIG)?[A-Z][A-Z0-9+-]*|\d+", re.IGNORECASE)
_NICENESS = re.compile(r"[+-]?\d+")
_BUFFER_MODE = re.compile(r"L|\d+[KMGTPEZY]?B?", re.IGNORECASE)
_STDBUF_LONG = {"--input": "i", "--output": "o", "--error": "e"}


class Wrapped(NamedTuple):
    """A wrapper's words (``size`` of them, from the program name on) and
    what ``env`` sets and unsets for the program after them."""

    size: int
    assigns: tuple[tuple[str, str], ...] = ()
    unsets: tuple[str, ...] = ()


def _refused(name: str, why: str) -> J:
    return rej(f"`{name}` {why}", f"write `{_USAGE[name]}`, or {H_WRAPPER}")


_USAGE = {
    "timeout": "timeout [-s SIGNAL] [-k DURATION] DURATION PROGRAM ARGS...",
    "nice": "nice [-n N] PROGRAM ARGS...",
    "stdbuf": "stdbuf -oL PROGRAM ARGS...",
    "env": "env NAME=VALUE [-u NAME] PROGRAM ARGS...",
}


def _value(args: list[str], i: int, attached: str) -> tuple[str | None, int]:
    """An option's value: ``attached`` (``-s9``, ``--signal=9``) or the next word."""
    if attached:
        return attached, i + 1
    if i + 1 < len(args):
        return args[i + 1], i + 2
    return None, i + 1


def _long(a: str, name: str) -> bool:
    """``a`` is the long option ``name`` in full, alone or with ``=VALUE``
    (an abbreviation is not read: it stays unmodelled)."""
    return a == name or a.startswith(name + "=")


def _timeout(args: list[str]) -> int | J:
    """Where timeout's program starts in ``args`` (its own options and the duration before it)."""
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] != "-":
        a = args[i]
        if a == "--":
            i += 1
            break
        if a in ("--preserve-status", "--foreground", "-v", "--verbose"):
            i += 1
        elif a.startswith("-s") or _long(a, "--signal"):
            value, i = _value(args, i, a[2:] if a.startswith("-s") else a.partition("=")[2])
            if value is None or not _SIGNAL.fullmatch(value):
                return _refused("timeout", f"needs a signal name or number after `{a}`")
        elif a.startswith("-k") or _long(a, "--kill-after"):
            value, i = _value(args, i, a[2:] if a.startswith("-k") else a.partition("=")[2])
            if value is None or not _DURATION.fullmatch(value):
                return _refused("timeout", f"needs a literal duration after `{a}` (e.g. `5`, `10s`, `1.5m`)")
        else:
            return _refused("timeout", f"has the option `{a}`, which is not modelled")
    if i >= len(args) or not _DURATION.fullmatch(args[i]):
        return _refused("timeout", "needs a literal duration before the program (e.g. `5`, `10s`, `1.5m`, `2h`)")
    return i + 1


def _nice(args: list[str]) -> int | J:
    """Where nice's program starts in ``args``."""
    i = 0
    while i < len(args) and args[i].startswith("-"):
        a = args[i]
        if a == "--":
            return i + 1
        if a.startswith("-n") or _long(a, "--adjustment"):
            value, i = _value(args, i, a[2:] if a.startswith("-n") else a.partition("=")[2])
        elif _NICENESS.fullmatch(a):  # the old form `nice -10 make`
            value, i = a[1:], i + 1
        else:
            return _refused("nice", f"has the option `{a}`, which is not modelled")
        if value is None or not _NICENESS.fullmatch(value):
            return _refused("nice", f"needs a number after `{a}`")
    return i


def _stdbuf(args: list[str]) -> int | J:
    """Where stdbuf's program starts in ``args`` (it needs one mode at least)."""
    i, modes = 0, 0
    while i < len(args) and args[i].startswith("-"):
        a = args[i]
        if a == "--":
            i += 1
            break
        long_name, eq, attached = a.partition("=")
        if a[:2] in ("-i", "-o", "-e") and not a.startswith("--"):
            value, i = _value(args, i, a[2:])
        elif long_name in _STDBUF_LONG:
            value, i = _value(args, i, attached if eq else "")
        else:
            return _refused("stdbuf", f"has the option `{a}`, which is not modelled")
        if value is None or not _BUFFER_MODE.fullmatch(value):
            return _refused("stdbuf", f"needs a buffering mode after `{a}` (`L`, `0` or a size)")
        modes += 1
    if not modes:
        return _refused("stdbuf", "needs a buffering mode (`-oL`, `-o0`, `-eL` ...)")
    return i


def _env(args: list[str]) -> tuple[int, list[tuple[str, str]], list[str]] | None:
    """Where env's program starts in ``args``, the assignments and the names
    unset before it; None for a word not modelled (``-i``: an empty
    environment, ``-S``: words split into a command line, ``-C``: another
    folder, ``-0``, ``--``, a name that is not plain), which env's own rule
    judges: it only prints without a program, and is refused with one."""
    i, assigns, unsets = 0, [], []
    while i < len(args):
        a = args[i]
        if assigns and a.startswith("-"):
            break  # GNU env reads no option after an assignment: `-u` there is the program it runs
        if a.startswith("-u") or _long(a, "--unset"):
            value, i = _value(args, i, a[2:] if a.startswith("-u") else a.partition("=")[2])
            if value is None or not NAME.fullmatch(value):
                return None
            unsets.append(value)
        elif a.startswith("-"):
            return None
        elif "=" in a:
            name, _, value = a.partition("=")
            if not NAME.fullmatch(name):
                return None
            assigns.append((name, value))
            i += 1
        else:
            break
    return i, assigns, unsets


def unwrap(argv: tuple[str, ...] | list[str]) -> Wrapped | J | None:
    """The wrapper at the start of ``argv`` (its words, env's assignments and
    unsets), a rejection when it is one of ``UNWRAPPED`` used in a way not
    modelled, or None when ``argv`` does not start with one (``env`` without a
    program is judged by its own rule: it prints the environment)."""
    if not argv or argv[0] not in UNWRAPPED:
        return None
    name, args = argv[0], list(argv[1:])
    assigns: list[tuple[str, str]] = []
    unsets: list[str] = []
    if name == "timeout":
        got: int | J = _timeout(args)
    elif name == "nice":
        got = _nice(args)
    elif name == "stdbuf":
        got = _stdbuf(args)
    else:
        env = _env(args)
        if env is None:
            return None
        got, assigns, unsets = env
        if got >= len(args):
            return None  # no program: env prints the environment (its own rule)
    if isinstance(got, J):
        return got
    if got >= len(args):
        return _refused(name, "has no program to run")
    inner = args[got]
    if inner.startswith("-"):  # an option after the duration or a second `--`: not a program
        return _refused(name, f"has `{inner}` where its program should be")
    if inner in UNWRAPPED or inner == "time":
        return rej(f"`{name}` runs another wrapper, `{inner}`", f"write one wrapper before the program, or {H_WRAPPER}")
    return Wrapped(1 + got, tuple(assigns), tuple(unsets))


def wrapped_problem(wrapped: Wrapped, inner: tuple[str, ...], unset: J | None) -> J | None:
    """Why the program ``inner`` may not run under the wrapper: a shell builtin
    (no program a wrapper can start; ``command -v`` included), or an
    assignment or unset of ``env`` refused as ``NAME=value`` / ``unset NAME``
    are (``unset`` is their ``unset`` judgement)."""
    if lookup_only(inner) or inner[0] in ENVIRONMENT_BUILTINS:
        return rej(f"`{inner[0]}` is a shell builtin, not a program a wrapper can run", f"run `{inner[0]}` on its own")
    for var, _ in wrapped.assigns:
        problem = assignment_problem(var)
        if problem is not None:
            return problem
    return unset if unset is not None and unset.verdict == "reject" else None


def shown(wrapper: tuple[str, ...]) -> str:
    """The wrapper as the reason names it (its options and duration, at most a few words)."""
    text = " ".join(wrapper)
    return text if len(text) <= 40 else wrapper[0]



# (command, verdict, substring of the reason or None), run by tests/shell/test_shell_rules.py
CASES: list[tuple[str, str, str | None]] = [
    # the program after the wrapper is judged as if written alone
    ("timeout 5 ls", "allow", "`timeout 5` runs `ls`"),
    ("timeout 60 python -m pytest -x", "ask", "`timeout 60` runs `python`"),
    ("timeout 10s ./run.sh", "ask", "from the workspace"),
    ("timeout --signal=KILL 5 make test", "ask", "`timeout --signal=KILL 5` runs `make`"),
    ("timeout -s KILL -k 2 1.5m pytest -q", "ask", None),
    ("timeout -sINT --preserve-status --foreground -v 2h ls", "allow", None),
    ("timeout 0 ls", "allow", None),
    ("timeout 1d cat README.md | head", "allow", None),
    ("nice -n 10 make", "ask", "`nice -n 10` runs `make`"),
    ("nice -10 ls", "allow", None),
    ("nice --adjustment=5 grep -rn x src", "allow", None),
    ("nice ls", "allow", "`nice` runs `ls`"),
    ("stdbuf -oL python train.py | tee log", "ask", "`stdbuf -oL` runs `python`"),
    ("stdbuf -o0 -e L cat README.md", "allow", None),
    ("stdbuf --output=L ls", "allow", None),
    ("env PYTHONPATH=src python -m app", "ask", "`env PYTHONPATH=src` runs `python`"),
    ("env -u DEBUG pytest", "ask", "runs `pytest`"),
    ("env LANG=C sort names.txt", "allow", None),
    ("env -u LANG ls", "allow", None),  # as `unset LANG`: output or locale only
    ("env FOO=bar printenv FOO", "ask", "`FOO` set for it"),  # as `FOO=bar printenv FOO`
    ("env -u FOO ls", "ask", "`env -u FOO` removes"),
    # after an assignment env reads no option: it would run a program named `-u` found on PATH
    ("env LANG=C -u LANG ls", "reject", "where its program should be"),
    ("env LANG=C --unset=LANG ls", "reject", "where its program should be"),
    ("env -u LANG LANG=C ls", "allow", None),
    ("FOO=1 timeout 5 ls", "ask", "`FOO` set for it"),
    # what the program alone is refused or asked for, it is with the wrapper too
    ("timeout 5 rm -rf build", "ask+destructive", "`timeout 5` runs `rm`"),
    ("timeout 5 rm -rf /", "reject", "`timeout 5` runs `rm`"),
    ("timeout 5 bash -c 'id'", "reject", "`timeout 5` runs `bash`"),
    ("timeout 5 git -c core.pager=sh log", "reject", "git -c"),
    ("timeout 5 ssh host id", "reject", "network"),
    ("timeout 5 sudo ls", "reject", "privilege"),
    ("timeout 5 cat /etc/passwd", "ask", "outside the workspace"),
    ("nice python3 -m json.tool a.json", "ask", None),  # the module may be a workspace file
    ("timeout 5 cp a.txt /etc/x", "reject", "outside the workspace"),
    ("timeout 5 cat < README.md > out.txt", "ask+destructive", "overwrites"),
    ("timeout 5 python3 - <<'PY'\nprint(1)\nPY", "ask", "here-document"),
    ("timeout 5 ./cat x", "reject", "look-alike"),
    ("timeout 5 l* x", "reject", "glob in the program name"),
    ("timeout 5 'if' x", "reject", "shell keyword"),
    ("env GIT_CONFIG_GLOBAL=x git status", "reject", "`GIT_CONFIG_GLOBAL` is not allowed"),
    ("env LD_PRELOAD=x.so ls", "reject", "not allowed"),
    ("env PATH=/tmp ls", "reject", "not allowed"),
    ("env -u PATH ls", "reject", "unsetting"),
    ("env -u GIT_CONFIG_GLOBAL git status", "reject", "unsetting"),
    ("nice xargs rm", "reject", None),
    # bash's builtins are no programs a wrapper can run
    ("timeout 5 source .venv/bin/activate", "reject", "virtual environment"),
    ("timeout 5 command -v ls", "reject", "shell builtin"),
    ("timeout 5 unset CI", "reject", "shell builtin"),
    ("timeout 5 export A=1", "reject", "shell builtin"),
    ("timeout 5 cd src", "reject", "builtin"),
    # a wrapper inside a wrapper, options not modelled, no literal duration, no program
    ("timeout 5 timeout 3 ls", "reject", "another wrapper"),
    ("nice timeout 5 ls", "reject", "another wrapper"),
    ("env A=1 nice ls", "reject", "another wrapper"),
    ("timeout 5 time ls", "reject", "another wrapper"),
    ("timeout 5 nohup ls", "reject", "wrapper"),
    ("timeout x ls", "reject", "literal duration"),
    ("timeout 5m30s ls", "reject", "literal duration"),
    ("timeout -- ls", "reject", "literal duration"),
    ("timeout -- 5 ls", "allow", None),
    ("timeout 5 -- ls", "reject", "where its program should be"),
    ("nice -n 5 -- -x", "reject", "where its program should be"),
    ("timeout 5", "reject", "no program"),
    ("timeout --sig=KILL 5 ls", "reject", "not modelled"),  # an abbreviation
    ("timeout -s 5 ls", "reject", "literal duration"),  # 5 is the signal: no duration left
    ("timeout -k x 5 ls", "reject", "literal duration"),
    ("timeout -x 5 ls", "reject", "not modelled"),
    ("nice -n x ls", "reject", "number"),
    ("nice -p 1", "reject", "not modelled"),
    ("stdbuf ls", "reject", "buffering mode"),
    ("stdbuf -oX ls", "reject", "buffering mode"),
    ("stdbuf -oL", "reject", "no program"),
    ("env -i ls", "reject", "wrapper"),
    ("env -S 'ls -l'", "reject", "wrapper"),
    ("env -C src ls", "reject", "wrapper"),
    ("env -0 ls", "reject", "wrapper"),
    ("env -- ls", "reject", "wrapper"),
    ("env a-b=1 ls", "reject", "wrapper"),
    ("/usr/bin/timeout 5 ls", "reject", "wrapper"),  # by name only
    ("timeout 5 'ls'*", "reject", None),
    ("env 'FOO=[x]' ls", "ask", None),  # quoted: no pattern
    ("env FOO=* ls", "reject", "pattern"),  # bash would expand it into file names
    # in a script the validator cannot plan, with the same rule
    ("for f in *; do timeout 5 cat \"$f\"; done", "ask", "opaque"),
    ("for f in *.py; do nice -n 5 wc -l $f; done", "ask", "every part only reads"),
    ("for f in *; do timeout 5 ssh \"$f\"; done", "reject", "network"),
    ("for f in *; do timeout 5 $f; done", "reject", "cannot be known"),
    ("for f in *; do timeout $f ls; done", "reject", "cannot be known"),
    ("for f in *; do env X=$f ls; done", "reject", "cannot be known"),  # split into words by bash
    ("for f in *; do env GIT_DIR=x git log -1 $f; done", "reject", "not allowed"),
    # `time` is bash's keyword: the tool's result already reports the duration
    ("time pytest -q", "reject", "`time` is not supported"),
    ("time -p ls", "reject", "not supported"),
]
