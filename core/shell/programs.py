"""Program resolution: which rule judges a command, and paths outside the workspace. Pure.

Rule modules register their handlers in ``HANDLERS`` (core/shell/__init__.py
merges them); a handler takes (program name, arguments) and returns a ``J``."""

from __future__ import annotations

import re
from typing import Callable

from core.shell.verdict import H_WRAPPER, J, ask, rej

Handler = Callable[[str, list[str]], J]
# program family -> rule; filled by core/shell/__init__.py from the rule modules
HANDLERS: dict[str, Handler] = {}

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


def family(lname: str) -> str:
    if lname in HANDLERS:
        return lname
    stripped = _VERSION_SUFFIX.sub("", lname)
    if stripped in _VERSIONED:
        return stripped
    for prefix in ("mkfs", "mke2fs", "fsck", "mount.", "umount."):
        if lname.startswith(prefix):
            return prefix.rstrip(".")
    return lname


def judge(argv: tuple[str, ...]) -> tuple[str | None, J]:
    word = argv[0]
    if not word:
        return None, rej("the program name is empty", "start the command with the program to run")
    capped = False
    if "/" in word:
        comps = word.split("/")
        base = comps[-1]
        if not base:
            return base or None, rej(f"`{word}` is a folder, not a program", "name the program to run")
        if ".." in comps:
            return base, rej(
                f"`..` in the program path `{word}` is not allowed",
                "call the program by its name (e.g. `ls`) or by a path inside the workspace without `..`",
            )
        if word.startswith("/"):
            capped = word[: -len(base) - 1] not in _STD_BIN_DIRS
        elif _ENV_BIN.fullmatch(word):
            capped = True  # a project environment's tool: judged by name, never auto-allowed
        else:
            fam = family(base.lower())
            if fam in HANDLERS:
                return base, rej(
                    f"`{word}` is a relative path to a program named like the system program `{base}`: "
                    "it may be a look-alike",
                    f"call the system program by name (`{base} ...`), or rename the workspace script",
                )
            return base, ask(f"`{word}` runs a script or program from the workspace")
    else:
        base = word
    fam = family(base.lower())
    handler = HANDLERS.get(fam)
    if handler is None:
        j = ask(f"`{base}` is not on the read-only list; it may change files or run code")
    else:
        j = handler(base, list(argv[1:]))
    if j[0] == "allow":
        if capped:
            j = ask(f"{j[1]}; but `{word}` is not in a standard system folder")
        else:
            outside = outside_workspace(argv)
            if outside is not None:
                j = ask(f"{j[1]}, but `{outside}` is outside the workspace")
    return base, j


_SYSTEM_TOP = frozenset(
    "bin boot dev etc home lib lib32 lib64 libx32 media mnt opt proc root run sbin srv sys tmp usr var "
    "Users Volumes private Library System Applications nix snap".split()
)


def outside_workspace(argv: tuple[str, ...]) -> str | None:
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


def judge_inner(outer: str, rest: list[str]) -> J:
    inner = [a for a in rest]
    while inner and inner[0].startswith("-"):
        inner.pop(0)
    if not inner:
        return ask(f"`{outer}` runs a program")
    _, j = judge(tuple(inner))
    if j[0] == "reject":
        return rej(f"`{outer}` runs `{inner[0]}`, which is not allowed: {j[1]}", j[2] or H_WRAPPER)
    return ask(f"`{outer}` runs `{inner[0]}` in a project environment")
