"""The validated shape of a bash command: what the executor runs. Pure.

The validator (``core.shell``) turns the model's string into this structure
and judges every part; the executor (``activities.bash.tool``) runs *this
structure* (processes joined by OS pipes, lists by exit status, redirections
opened by the executor after path confinement, globs expanded by the
executor inside the workspace), never the model's string. A plain command is
a ``CommandList`` of one ``Pipeline`` of one ``SimpleCommand``.

Frozen dataclasses of tuples and strings, so a plan is hashable, comparable
in tests, and cheap to rebuild from the command text on every layer that
needs it (the activity re-validates with its own build's rules rather than
trusting a plan handed to it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

RedirectOp = Literal["<", ">", ">>", ">&", "&>"]
ListOp = Literal["&&", "||", ";"]


@dataclass(frozen=True)
class Redirect:
    """One redirection, applied by the executor before the program starts.

    - ``fd`` the descriptor redirected (0 for ``<``, 1 for ``>``/``>>`` unless
      written ``2>``; ``&>`` redirects both 1 and 2 and has fd=1).
    - ``op`` ``<`` read, ``>`` truncate, ``>>`` append, ``>&`` duplicate the
      descriptor named in ``target`` (``2>&1``: fd=2, target="1"), ``&>``
      stdout and stderr to one file.
    - ``target`` a path as written (relative to the command's working folder,
      or ``/dev/null``), or a descriptor number for ``>&``.
    """

    fd: int
    op: RedirectOp
    target: str


@dataclass(frozen=True)
class SimpleCommand:
    # Words after quote removal. For a word whose ``globs`` flag is set, the
    # executor expands the word as a glob inside the workspace (no match: the
    # word stays as written, as bash does without nullglob).
    argv: tuple[str, ...]
    globs: tuple[bool, ...] = ()
    redirects: tuple[Redirect, ...] = ()
    # A quoted heredoc (``<<'EOF'``): its body, fed literally on stdin.
    stdin_text: str | None = None
    # The part's own verdict and reason (the whole command's is the worst).
    verdict: Literal["allow", "ask", "reject"] = "allow"
    reason: str = ""
    destructive: bool = False
    # ``NAME=value`` written before the program: the environment of this
    # command only (names judged by core.shell.environment).
    env: tuple[tuple[str, str], ...] = ()
    # A wrapper that only bounds or tunes the program (``timeout 60``,
    # ``nice -n 10``, ``stdbuf -oL``, ``env NAME=value -u NAME``:
    # core.shell.rules.wrappers), its words as written; ``argv`` is the
    # program it runs, judged as if written alone. The executor runs the
    # wrapper by its absolute path, then ``argv`` with the program resolved.
    wrapper: tuple[str, ...] = ()

    def glob_flags(self) -> tuple[bool, ...]:
        return self.globs or tuple(False for _ in self.argv)


@dataclass(frozen=True)
class Pipeline:
    commands: tuple[SimpleCommand, ...]


@dataclass(frozen=True)
class CommandList:
    """``items[0] ops[0] items[1] ops[1] ...``: ``&&`` runs the next item only
    after success, ``||`` only after failure, ``;`` (or a newline) always."""

    items: tuple[Pipeline, ...]
    ops: tuple[ListOp, ...] = ()
    # A leading ``cd DIR &&``: the folder (relative to the workspace root)
    # every part runs in. None: the workspace root.
    cwd: str | None = None
    # An opaque command (loops, conditionals, functions, variables, command
    # substitution, subshells, groups): the exact source the validator
    # parsed, run by bash as a script. ``items`` then lists the simple
    # commands found inside it, each judged, for policy rules and display;
    # they are not run one by one.
    script: str | None = None

    def all_commands(self) -> tuple[SimpleCommand, ...]:
        return tuple(c for p in self.items for c in p.commands)
