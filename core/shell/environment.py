"""The environment a bash command sees, as the validator knows it. Pure.

The sandbox rebuilds every command's environment from scratch (nothing is
inherited from the worker), so most variables have values known before the
command runs: ``KNOWN_ENV`` is that table, and the executor's environment
(activities/sandbox/environment.py) is built from it, so what the validator
writes out at plan time is what the command would have seen. ``PWD`` and
``PATH`` depend on the workspace and the worker: they come with the
workspace facts (``WorkspaceFacts.env``).

Assignments (``VAR=value cmd``, ``export VAR=value``) are judged by name:
names that make a program load or run other code, or that change how the
shell or git behave, are refused (``assignment_problem``); names outside a
short list of harmless ones make a read-only command ask, since the program
may behave differently (``harmless_name``).
"""

from __future__ import annotations

import posixpath
import re

from core.shell.facts import SANDBOX_HOME, WorkspaceFacts
from core.shell.verdict import J, allow, ask, rej

SANDBOX_TMPDIR = "/tmp"

KNOWN_ENV: dict[str, str] = {
    "HOME": SANDBOX_HOME,
    "TMPDIR": SANDBOX_TMPDIR,
    "USER": "agent",
    "LOGNAME": "agent",
    "SHELL": "/bin/bash",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "TERM": "dumb",
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_EDITOR": "true",  # `git commit` without -m aborts instead of waiting for an editor
    "GIT_SEQUENCE_EDITOR": "true",
    "GIT_ASKPASS": "",
    # No global config: HOME is the command's own scratch folder, so a
    # ~/.gitconfig there could only have been planted by the command.
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "CI": "1",
    "NO_COLOR": "1",
    "PIP_NO_INPUT": "1",
    "DEBIAN_FRONTEND": "noninteractive",
    # No __pycache__ litter in the workspace; prints reach us at once and in
    # order with stderr (both go to one pipe).
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONUNBUFFERED": "1",
    # No user site: HOME is in the scratch /tmp that later calls share, and
    # a `.pth` file one command leaves there would run in every later Python
    # (an allowed, read-only `python3 -m json.tool` included).
    "PYTHONNOUSERSITE": "1",
}

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\+?=")

# Exact names (upper-cased) that make programs load or run code chosen by the
# value, or change how the shell, git or the network behave.
_DENIED = frozenset(
    "PATH BASH_ENV ENV IFS PS4 PS1 PROMPT_COMMAND SHELLOPTS BASHOPTS GLOBIGNORE CDPATH BASH_XTRACEFD "
    "HOME TMPDIR PWD OLDPWD SHELL BASH_CMDS BASH_ALIASES BASH_COMPAT BASH_LOADABLES_PATH "
    "PYTHONSTARTUP PYTHONINSPECT PYTHONHOME PYTHONEXECUTABLE PYTHONBREAKPOINT PYTHONNOUSERSITE PYTHONUSERBASE "
    "NODE_OPTIONS NODE_PATH PERL5OPT PERL5LIB PERLLIB PERL5DB RUBYOPT RUBYLIB "
    "JAVA_TOOL_OPTIONS _JAVA_OPTIONS JDK_JAVA_OPTIONS CLASSPATH "
    "EDITOR VISUAL PAGER MANPAGER LESSOPEN LESSCLOSE BROWSER SSH_ASKPASS SUDO_ASKPASS "
    "GCONV_PATH LOCPATH NLSPATH HOSTALIASES RESOLV_CONF TERMINFO "
    "RUSTC_WRAPPER RUSTC_WORKSPACE_WRAPPER RUSTC CC CXX LD CARGO_HOME RUSTUP_HOME "
    "PIP_INDEX_URL PIP_EXTRA_INDEX_URL NPM_CONFIG_REGISTRY".split()
)
_DENIED_PREFIXES = ("LD_", "DYLD_", "GIT_", "BASH_FUNC_", "SSH_")
_DENIED_SUFFIXES = ("_PROXY",)

# Names whose value only tunes output or locale: a read-only command stays read-only.
# Not PYTHONWARNINGS: a filter's category `module.Class` makes Python import
# that module at startup (any installed one, or an editable project's code).
_HARMLESS = frozenset(
    "LANG LANGUAGE TZ COLUMNS LINES NO_COLOR FORCE_COLOR CLICOLOR TERM CI PYTHONDONTWRITEBYTECODE "
    "PYTHONUNBUFFERED PYTHONIOENCODING PYTHONHASHSEED PYTHONUTF8 GREP_COLOR GREP_COLORS "
    "LS_COLORS".split()
)


def assignment_problem(name: str) -> J | None:
    """A rejection for setting ``name``, or None when it may be set."""
    upper = name.upper()
    if upper in _DENIED or upper.startswith(_DENIED_PREFIXES) or upper.endswith(_DENIED_SUFFIXES):
        return rej(
            f"setting the environment variable `{name}` is not allowed: it changes which code programs "
            "load or run, how the shell parses, or where they connect (the sandbox sets it)",
            "drop the assignment; pass the value as an argument or option of the program instead",
        )
    return None


def harmless_name(name: str, value: str = "") -> bool:
    """Whether setting ``name`` to ``value`` only tunes output or locale. A
    value with a `/` is a path, not a locale or zone name: gettext loads
    message catalogs, the format strings a program prints with, from
    LANGUAGE's and the locale's folders (``../../ws/x`` reaches workspace
    files), and glibc reads a TZ file from wherever it names."""
    return (name.upper() in _HARMLESS or name.startswith("LC_")) and "/" not in value


def known_value(name: str, extra: dict[str, str] | None = None) -> str | None:
    """The value ``$name`` has in every command (None: not known at plan time)."""
    if extra and name in extra:
        return extra[name]
    return KNOWN_ENV.get(name)


def judge_export(args: list[tuple[str, bool]]) -> J:
    """``export NAME=value ...`` (each word with whether it is a glob): the
    environment of the parts after it."""
    names = []
    for value, glob in args:
        name, eq, _ = value.partition("=")
        if not eq or not NAME.fullmatch(name) or glob:
            return rej(f"`export {value}`: only `export NAME=value` is allowed",
                       "write `export NAME=value && COMMAND`")
        problem = assignment_problem(name)
        if problem is not None:
            return problem
        names.append(name)
    return _for_later_parts(names, "`export` sets `{}` for", [v.partition("=")[2] for v, _ in args])


def _for_later_parts(names: list[str], change: str, values: list[str] | None = None) -> J:
    """Allowed when every name only tunes output or locale, else asked."""
    tuned = [n for n, v in zip(names, values or [""] * len(names)) if not harmless_name(n, v)]
    if tuned:
        return ask(f"{change.format(tuned[0])} the later parts, which may change what they do")
    return allow(f"{change.format(names[0])} the later parts (output or locale only)")


def unset_problem(name: str) -> J | None:
    """A rejection for unsetting ``name``, or None when it may be unset."""
    if assignment_problem(name) is None:
        return None
    return rej(
        f"unsetting the environment variable `{name}` is not allowed: the sandbox sets it so that "
        "programs load, run and connect only what it allows",
        "drop the `unset`; pass what you need as an argument or option of the program instead",
    )


def judge_unset(args: list[tuple[str, bool]]) -> J:
    """``unset [-v] NAME ...``: the variables leave the environment of the
    parts after it. A variable the sandbox sets to keep programs safe (git's
    config, the pager, HOME ...) is as fixed as it is for an assignment."""
    if args[:1] == [("-v", False)]:
        args = args[1:]
    names = []
    for value, glob in args:
        if value.startswith("-") or not NAME.fullmatch(value) or glob:
            return rej(f"`unset {value}`: only `unset NAME ...` of variables is allowed",
                       "write `unset NAME && COMMAND`")
        problem = unset_problem(value)
        if problem is not None:
            return problem
        names.append(value)
    if not names:
        return rej("`unset` without a name", "write `unset NAME && COMMAND`")
    return _for_later_parts(names, "`unset` removes `{}` for")


# The builtins that change the environment of a command's later parts, which
# the executor runs as such.
ENVIRONMENT_BUILTINS = {"export": judge_export, "unset": judge_unset}

# What the activate script of a virtual environment (`python3 -m venv`'s and
# virtualenv's bin/activate, the only ones written for bash) changes for the
# later parts. The executor applies it itself; the script, workspace code,
# is never run.
ACTIVATE_SETS = ("VIRTUAL_ENV", "VIRTUAL_ENV_PROMPT", "PATH")
ACTIVATE_UNSETS = ("PYTHONHOME",)


def activated(argv: tuple[str, ...]) -> str | None:
    """DIR of ``source DIR/bin/activate`` (or ``. DIR/bin/activate``), else None."""
    if len(argv) != 2 or argv[0] not in ("source", ".") or ".." in argv[1].split("/"):
        return None
    script = posixpath.normpath(argv[1])
    folder = posixpath.dirname(script)
    if posixpath.basename(script) != "activate" or posixpath.basename(folder) != "bin":
        return None
    return posixpath.dirname(folder) or "."


def judge_activation(folder: str, key: str, facts: WorkspaceFacts | None) -> J | None:
    """``source DIR/bin/activate`` for the later parts: allowed when the
    workspace facts show ``DIR`` (as ``key``) is a virtual environment inside
    the workspace; None (the refusal stands) without facts or when it is not."""
    if facts is None:
        return None
    if facts.venvs is None:  # the first pass: the second one has the facts and decides
        return allow(f"activates `{folder}` for the later parts (if it is a virtual environment: checked next)")
    if key not in facts.venvs:
        return None
    return allow(f"activates the virtual environment `{folder}` for the later parts (its bin first on PATH; "
                 "its activate script is not run)")


def after_activation(j: J, active: list[tuple[str, tuple[str, ...]]]) -> J:
    """A part after activations (each: DIR, its workspace programs): their bin
    comes first on PATH, so a program run by name, or one that runs another by
    name (``xargs``, ``find -exec``, git's helpers), may be one the workspace
    planted there; an allowed part then asks."""
    if j.verdict != "allow":
        return j
    for folder, programs in active:
        if programs:
            more = f" and {len(programs) - 1} more" if len(programs) > 1 else ""
            return J("ask", f"{j.reason}; but the activated `{folder}/bin`, first on PATH, holds programs from the "
                     f"workspace (`{programs[0]}`{more}) that run in place of any program of that name", None,
                     j.destructive)
    return j


CASES: list[tuple[str, str, str | None]] = [
    ("export LC_ALL=C && sort names.txt", "allow", "output or locale only"),
    ("export PYTHONPATH=src && python -m pytest -q", "ask", "sets `PYTHONPATH`"),
    ("export BASH_ENV=x && ls", "reject", "not allowed"),
    ("export FOO && ls", "reject", "only `export NAME=value`"),
    # A locale value with a `/` is a path: gettext loads message catalogs
    # (format strings the program prints with) from LANGUAGE's folders.
    ("export LANGUAGE=../../../ws/x && ls missing", "ask", "sets `LANGUAGE`"),
    ("LANGUAGE=../../../ws/x ls missing", "ask", "`LANGUAGE` set for it"),
    ("LC_MESSAGES=/w/x ls missing", "ask", "`LC_MESSAGES` set for it"),
    ("export TZ=/etc/shadow && date", "ask", "sets `TZ`"),
    ("TZ=UTC LANGUAGE=de:fr ls", "allow", None),
    ("unset CI && ls", "allow", "removes `CI`"),
    ("unset -v NO_COLOR TERM && ls", "allow", "removes `NO_COLOR`"),
    ("unset VIRTUAL_ENV && uv run pytest -q", "ask", "removes `VIRTUAL_ENV`"),
    ("unset PYTHONPATH && cat setup.py", "ask", "removes `PYTHONPATH`"),
    ("unset GIT_CONFIG_GLOBAL && git status", "reject", "unsetting the environment variable"),
    ("unset PAGER && git log", "reject", "unsetting"),
    ("unset LD_PRELOAD && ls", "reject", "unsetting"),
    # The user site stays off: a .pth file in the scratch HOME would run in this Python.
    ("unset PYTHONNOUSERSITE && python3 -m json.tool a.json", "reject", "unsetting"),
    ("PYTHONNOUSERSITE= python3 -m json.tool a.json", "reject", "not allowed"),
    ("export PYTHONUSERBASE=/tmp/u && python3 -m json.tool a.json", "reject", "not allowed"),
    ("unset -f cd && ls", "reject", "only `unset NAME"),
    ("unset 'A B' && ls", "reject", "only `unset NAME"),
    ("unset -v && ls", "reject", "without a name"),
    # In a script the validator cannot plan (a loop), the same names stay fixed.
    ("for f in *.py; do unset GIT_CONFIG_GLOBAL; git log -1 -- $f; done", "reject", "unsetting"),
    ("for f in *.py; do unset CI; wc -l $f; done", "ask", "opaque"),
    # A builtin's name written with quotes or a backslash is the same builtin:
    # the `$NAME` after it is not its value before the command.
    ("ex''port LANG=x && echo $LANG", "ask", "opaque: $LANG"),
    ('e"x"port TERM=x && echo $TERM', "ask", "opaque: $TERM"),
    # An assignment before a function's name is the environment of its body.
    ("f() { rm -rf $TERM; }; TERM=/ f", "ask+destructive", "group, $TERM"),
    ("un\\set TERM && echo $TERM", "ask", "opaque: $TERM"),
]

# Run with facts where `.venv`, `proj/.venv` and `venv` are virtual environments
# (`venv/bin` holds a workspace program, `pytest`), and `fake` is not one
# (tests/shell/test_shell_rules.py).
VENV_CASES: list[tuple[str, str, str | None]] = [
    ("source .venv/bin/activate && python --version", "allow", "activates the virtual environment `.venv`"),
    (". .venv/bin/activate && ls", "allow", None),
    ("source ./.venv/bin/activate && python -m pytest -q", "ask", None),
    ("cd proj && source .venv/bin/activate && python manage.py check", "ask", None),
    ("source venv/bin/activate && ls", "ask", "holds programs from the workspace (`pytest`)"),
    ("source venv/bin/activate && find . -exec pytest {} +", "ask", None),
    ("ls && source venv/bin/activate && pytest -q", "ask", None),
    ("source fake/bin/activate && ls", "reject", "virtual environment"),
    ("source proj/.venv/bin/activate.sh && ls", "reject", "virtual environment"),
    ("source .venv/bin/activate | cat", "reject", "virtual environment"),
    ("source .venv/bin/activate && rm -rf /", "reject", None),
    ("source .venv/bin/../bin/activate && ls", "reject", "virtual environment"),
]
