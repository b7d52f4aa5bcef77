"""The validator's result types and the hints shared by many rules. Pure.

A rule returns a :class:`J` (a judgement: verdict, reason, hint, destructive);
the entry point turns the judgements of a command's parts into one
:class:`Verdict`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Literal, NamedTuple


from core.shell.command_plan import CommandList

VerdictName = Literal["allow", "ask", "reject"]
RANK: dict[str, int] = {"allow": 0, "ask": 1, "reject": 2}


@dataclass(frozen=True)
class Verdict:
    verdict: VerdictName
    reason: str  # always set, written for a model to read
    hint: str | None = None  # for reject: what the model should do instead
    program: str | None = None  # basename of the (first) program, when known
    argv: tuple[str, ...] = ()  # words of the (first) command after quote removal
    # The validated structure the executor runs (None when rejected).
    plan: CommandList | None = None
    # Loses work irrecoverably: needs a human in every mode, `auto` included.
    destructive: bool = False
    # Every word the validator took for a path (arguments, attached option
    # values, redirection targets, `cd` folders), as written; the workspace
    # wrapper (activities/bash/facts.py) resolves them with realpath.
    paths: tuple[str, ...] = ()
    # The validator could not prove what runs (a loop, a condition, a
    # function, an unknown variable, a command substitution, a subshell or a
    # group): the reason starts with "opaque: <construct>", the verdict is at
    # least ``ask``, the plan runs as a bash script (``plan.script``) on a
    # captured copy of the workspace, one call at a time, and what it changed
    # decides (never the read-only mount, never in parallel).
    opaque: bool = False


class J(NamedTuple):
    """One rule's judgement of one simple command."""

    verdict: str
    reason: str
    hint: str | None = None
    destructive: bool = False
    # The program writes or changes the paths it is given: one outside the
    # workspace rejects the command instead of lowering it to ask.
    writes: bool = False


_new_j = partial(tuple.__new__, J)  # skips NamedTuple's Python-level __new__ (hot path)


def allow(reason: str) -> J:
    return _new_j(("allow", reason, None, False, False))


def ask(reason: str) -> J:
    return _new_j(("ask", reason, None, False, False))


def rej(reason: str, hint: str) -> J:
    return _new_j(("reject", reason, hint, False, False))


def destructive(reason: str, writes: bool = False) -> J:
    """``ask`` that no mode or rule may run unattended (work is lost for good)."""
    return J("ask", reason, None, True, writes)


def ask_writes(reason: str) -> J:
    """``ask`` for a program that writes the paths it is given."""
    return J("ask", reason, None, False, True)


H_SEPARATE = "run the inner commands directly, joined with && (or as separate bash calls)"
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
    "each bash call starts in the workspace root and keeps no shell state: start the command with "
    "`cd DIR && ...` or pass paths as arguments (e.g. `ls src`, `make -C sub`, `git -C sub status`)"
)
H_GLOB = (
    "there is no shell to expand patterns: quote the pattern (e.g. '*.py') if the program itself "
    "takes a pattern, or list the files with the glob tool and pass them explicitly"
)
H_GIT_STD = "use a standard git subcommand with its plain options (aliases and git-* extensions are not allowed)"
