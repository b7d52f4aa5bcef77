"""Running a validated plan (core.shell.command_plan), never the model's string.

The validator turns the command into a ``CommandList`` of ``Pipeline``s of
``SimpleCommand``s and judges every part; this module runs exactly that:

- **A plain command** (one command, no redirection, no heredoc) is exec'd
  directly (execve, no shell), as before; not a name lookup (``command -v
  NAME``, ``type NAME``), which exists only as a bash builtin.
- **Anything else** is handed to ``bash`` inside the same sandbox as a script
  *rebuilt from the validated parts*: every word quoted (``shlex.quote``),
  ``set -f`` so nothing is expanded again, every program replaced by the
  absolute path it resolved to (no builtin, alias or function can stand in
  for it; one not found prints bash's message and exits 127). The only
  builtins are ``export`` / ``unset`` and the name lookups the validator
  allowed (``builtin command -v NAME``: no function can stand in for them). A
  wrapper the validator took off (``timeout 60``, ``nice``, ``stdbuf``, ``env
  NAME=value``: ``SimpleCommand.wrapper``) runs by its absolute path, and the
  program after it by the absolute path it resolved to, so the wrapper's own
  PATH lookup never picks another one; it never runs a builtin. Bash only
  joins processes with pipes and runs the list by exit status, so all the
  processes share the sandbox, process group, cgroups, rlimits, timeout and
  bounded output of a single command.
- **Globs** are expanded here, inside the workspace only (matches outside it
  are dropped, a pattern with a ``..`` component is not expanded; no match leaves the word as written, as bash does without
  ``nullglob``; sorted by code point, as bash in the C.UTF-8 locale). Words
  not flagged as globs (quoted ``*``) are never expanded.
- **Redirections** to files are checked here, after path confinement: the
  path is resolved component by component from a descriptor of the workspace
  with O_NOFOLLOW (a symlink anywhere on the way is refused), and only
  regular files are accepted. Bash then opens the file by name, inside the
  sandbox, when its turn comes (so through the sandbox's mount: read-only
  for a command judged read-only). No host descriptor of a workspace file is
  handed in: reopened through ``/proc/self/fd/N`` it would carry the host
  mount's write access. A file that does not exist yet (an earlier part
  makes it) is checked as far as it exists.
  ``/dev/null`` and descriptor duplications (``2>&1``) are passed literally.
  A write redirection in a command run read-only is refused (it would
  bypass the read-only mount).
- **A heredoc body** is fed from a memory file, literally.

Exit status follows bash's default: **no pipefail** (a pipeline's status is
its last command's), ``&&``/``||``/``;`` as in bash. Each part's status is
recorded by the rebuilt script on a private descriptor the commands cannot
inherit and returned as ``part_exit_codes``: pipelines separated by ``; ``,
commands in a pipeline by ``|``, ``-`` for a pipeline the list skipped.
"""

from __future__ import annotations

import fcntl
import functools
import glob
import os
import re
import shlex
import shutil
import stat
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from core.paths import within
from activities.sandbox.environment import command_path, resolve_program, virtual_environment
from activities.sandbox.process import ExecOutcome, ExecRequest, run
from core.shell.command_plan import CommandList, Pipeline, Redirect, SimpleCommand
from core.shell.environment import ENVIRONMENT_BUILTINS, activated
from core.shell.git_config import git_folders
from core.shell.rules.rejected import lookup_only
from core.shell.rules.wrappers import UNWRAPPED
from core.shell.tokens import BASH_ONLY_BRACKET

MAX_GLOB_MATCHES = 10_000
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# What a wrapper can never run: bash's own builtins (the validator never plans one).
_NOT_WRAPPABLE = frozenset([*ENVIRONMENT_BUILTINS, "cd", "source", ".", "command", "type", "builtin", "exec", "eval"])
_FIRST_PRIVATE_FD = 10  # executor descriptors start here: above any N a redirection may name (0-9)


@functools.lru_cache(maxsize=1)
def _bash() -> str:
    # Looked up on first use, not at import: the workflow sandbox re-imports
    # modules that workflow files pull in, and forbids I/O while doing so.
    return shutil.which("bash", path="/usr/bin:/bin") or "/bin/bash"


class PlanError(Exception):
    """A plan the executor refuses to run; the message is for the model."""


def plan_from_argv(argv: Sequence[str]) -> CommandList:
    """The one-command plan of a verdict that carries no plan (a validator
    from before ``Verdict.plan``)."""
    return CommandList(items=(Pipeline(commands=(SimpleCommand(argv=tuple(argv)),)),))


def _scratch(target: str) -> bool:
    path = os.path.normpath(target)
    return path.startswith("/tmp/") and "\0" not in path


def _private_fd(fd: int) -> int:
    """``fd`` moved to a number >= 10 (so no redirection the model wrote can
    name it) and made inheritable for the command."""
    try:
        high = fcntl.fcntl(fd, fcntl.F_DUPFD, _FIRST_PRIVATE_FD)
    finally:
        os.close(fd)
    os.set_inheritable(high, True)
    return high


def open_confined(root: str, workdir: str, target: str, *, write: bool, create: bool = True) -> int:
    """A descriptor of ``target`` (relative to ``workdir``, or absolute) inside
    ``root``, opened without following any symlink. Read: an existing
    regular file (O_PATH), or -1 if it does not exist yet. Write: an existing
    regular file (O_PATH), or a new empty one created here (``create=False``:
    not created; -1). Raises PlanError."""
    path = os.path.normpath(target if os.path.isabs(target) else os.path.join(workdir, target))
    if not within(path, root) or path == root:
        raise PlanError(f"redirection target {target!r} is outside the workspace")
    parts = os.path.relpath(path, root).split("/")
    dir_fd = os.open(root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts[:-1]:
            try:
                nxt = os.open(part, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
            except FileNotFoundError:
                if not write or not create:
                    # not there yet (an earlier part, `mkdir -p d/sub && ... > d/sub/x`, makes it):
                    # checked as far as it exists; bash opens it by name when its turn comes
                    return -1
                raise PlanError(
                    f"redirection target {target!r}: {part!r} does not exist (yet); create the folder in an "
                    "earlier command"
                ) from None
            except OSError as exc:
                raise PlanError(
                    f"redirection target {target!r}: {part!r} is not a folder inside the workspace "
                    f"({exc.strerror}; symbolic links are not followed)"
                ) from None
            os.close(dir_fd)
            dir_fd = nxt
        name = parts[-1]
        try:
            fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
        except FileNotFoundError:
            if not write or not create:
                return -1  # not there yet (an earlier part may make it): bash opens it when its turn comes
            try:
                fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644,
                             dir_fd=dir_fd)
            except OSError as exc:
                raise PlanError(f"redirection target {target!r}: cannot create it ({exc.strerror})") from None
            return fd
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            os.close(fd)
            kind = "a symbolic link" if stat.S_ISLNK(mode) else "not a regular file"
            raise PlanError(f"redirection target {target!r} is {kind}; only regular files in the workspace")
        return fd
    finally:
        os.close(dir_fd)


def expand_glob(word: str, workdir: str, root: str, resolved: bool = False) -> list[str]:
    """The word's matches inside the workspace, sorted; ``[word]`` if none.
    ``resolved``: also drop matches that are symlinks leading out of it."""
    if "\0" in word:
        raise PlanError("a word contains a NUL character")
    if ".." in word.split("/"):
        return [word]  # a pattern that climbs out of its folder is not expanded at all
    if BASH_ONLY_BRACKET.search(word):
        # Python's fnmatch reads `[^a]` and `[[:upper:]]` otherwise than bash: never expanded to other files
        raise PlanError(f"the pattern {word!r} uses a bracket expression that is not expanded here")
    if os.path.isabs(word):
        matches = glob.glob(word)
    else:
        matches = glob.glob(word, root_dir=workdir)
    kept = sorted(
        m for m in matches
        if within(os.path.normpath(m if os.path.isabs(m) else os.path.join(workdir, m)), root)
        and (not resolved or within(os.path.realpath(os.path.join(workdir, m)), os.path.realpath(root)))
    )
    if len(kept) > MAX_GLOB_MATCHES:
        raise PlanError(f"the pattern {word!r} matches {len(kept)} paths (at most {MAX_GLOB_MATCHES})")
    return kept or [word]


@dataclass
class PreparedPlan:
    """What ``execute`` is given for a plan; owns the descriptors it opened."""

    argv: list[str]
    workdir: str
    programs: list[str] = field(default_factory=list)
    pass_fds: list[int] = field(default_factory=list)
    status_fd: int | None = None
    shape: list[int] = field(default_factory=list)  # commands per pipeline
    scripted: bool = False

    def close(self) -> None:
        for fd in self.pass_fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self.pass_fds = []

    def part_exit_codes(self, exit_code: int | None) -> str:
        """``0|1; -; 0``: each pipeline's commands' statuses, ``-`` if skipped."""
        if not self.scripted:
            return "" if exit_code is None else str(exit_code)
        if self.status_fd is None:
            return ""
        recorded: dict[int, str] = {}
        text = os.pread(self.status_fd, 1 << 20, 0).decode("ascii", "replace")
        for line in text.splitlines():
            index, _, codes = line.partition(" ")
            if index.isdigit():
                recorded[int(index)] = "|".join(codes.split())
        return "; ".join(recorded.get(i, "-") for i in range(len(self.shape)))


def _no_linked_folder(target: str, path: str, root: str) -> None:
    """Refuse a ``cd`` through a symbolic link. bash's ``cd`` is logical: after
    ``cd link``, ``cd ..`` and ``pwd`` follow the name as written, while the
    executor tracks (and runs in) the folder itself, so the parts after it
    would run, and print, elsewhere than bash says."""
    if os.path.exists(path) and os.path.realpath(path) != path:
        raise PlanError(
            f"cd {target!r}: the path goes through a symbolic link (bash would then read `..` and print the "
            f"folder by the link's name); cd to the folder itself: {os.path.relpath(os.path.realpath(path), root)!r}"
        )


class _Builder:
    def __init__(self, root: str, workdir: str, path_env: str, read_only: bool) -> None:
        self.root, self.workdir, self.path_env, self.read_only = root, workdir, path_env, read_only
        self.fds: list[int] = []
        self.programs: list[str] = []
        self.as_written: dict[str, str] = {}  # a bound program path -> the word as written (for messages)
        self.shown_as = root  # where the command sees ``root`` (differs for an overlay view)
        self.open_in_sandbox = False
        self.sandboxed = True  # /tmp is the sandbox's own scratch folder (not the host's)

    def keep(self, fd: int) -> int:
        high = _private_fd(fd)
        self.fds.append(high)
        return high

    def words(self, command: SimpleCommand) -> list[str]:
        if not command.argv:
            raise PlanError("a command in the plan has no words")
        flags = command.glob_flags()
        if len(flags) != len(command.argv):
            raise PlanError("the plan's glob flags do not match its words")
        out: list[str] = []
        for i, (word, is_glob) in enumerate(zip(command.argv, flags)):
            if "\0" in word:
                raise PlanError("a word contains a NUL character")
            # Never the program word: the validator judged that program, not what a glob finds.
            # A command judged read-only was judged on matches that stay inside
            # (the facts resolve every match): one leading out now is dropped.
            out += expand_glob(word, self.workdir, self.root, self.read_only) if is_glob and i > 0 else [word]
        return out

    def redirect(self, r: Redirect) -> str:
        if not 0 <= r.fd <= 9:
            raise PlanError(f"redirection of descriptor {r.fd} is not supported")
        if r.op == ">&":
            if r.target not in ("0", "1", "2"):
                raise PlanError(f"duplicating descriptor {r.target!r} is not supported (only 0, 1, 2)")
            return f"{r.fd}>&{r.target}"
        write = r.op in (">", ">>", "&>")
        if r.op not in ("<", ">", ">>", "&>"):
            raise PlanError(f"redirection {r.op!r} is not supported")
        if r.target == "/dev/null":
            path = "/dev/null"
        elif _scratch(r.target):
            # the sandbox's own /tmp (a private scratch folder): bash opens it there
            if not self.sandboxed:
                raise PlanError(
                    f"the redirection to {r.target!r} needs the sandbox's private /tmp, and this worker runs "
                    "commands without the sandbox; write the file inside the workspace instead"
                )
            path = os.path.normpath(r.target)
        else:
            if write and self.read_only:
                raise PlanError(
                    f"a write redirection ({r.op} {r.target!r}) in a command judged read-only; not run"
                )
            fd = open_confined(self.root, self.workdir, r.target, write=write, create=not self.open_in_sandbox)
            if self.open_in_sandbox and fd >= 0:
                # The command's view of the workspace is not ours (an overlay in its own mount
                # namespace): the path was checked here; bash opens it there, inside the sandbox.
                os.close(fd)
                fd = -1
            if fd >= 0:
                path = f"/proc/self/fd/{self.keep(fd)}"
            else:  # by name, as the command sees it (checked: inside, no symlink on the way so far)
                rel = os.path.relpath(os.path.normpath(os.path.join(self.workdir, r.target)), self.root)
                path = os.path.join(self.shown_as, rel)
        if r.op == "&>":
            return f"1>{shlex.quote(path)} 2>&1"
        return f"{r.fd}{r.op}{shlex.quote(path)}"

    def change_folder(self, target: str) -> list[str]:
        """A later ``cd DIR`` part: the folder the parts after it run in (checked
        inside the workspace now; bash enters it when its turn comes)."""
        path = os.path.normpath(os.path.join(self.workdir, target))
        if not within(path, self.root) or (os.path.exists(path) and not within(os.path.realpath(path), self.root)):
            raise PlanError(f"cd {target!r}: not a folder inside the workspace")
        _no_linked_folder(target, path, self.root)
        self.workdir = path
        return ["cd", os.path.join(self.shown_as, os.path.relpath(path, self.root))]

    def command(self, command: SimpleCommand) -> tuple[list[str], list[str], tuple[tuple[str, str], ...]]:
        """(the program's words, the redirections, the environment) of one command."""
        if command.argv[:1] == ("cd",) and len(command.argv) == 2 and not command.redirects and not command.wrapper:
            return self.change_folder(command.argv[1]), [], ()
        words = self.words(command)
        if command.wrapper:
            # The validator judged argv as the program the wrapper runs: never a builtin, an activation or a cd.
            if command.wrapper[0] not in UNWRAPPED or "\0" in "".join(command.wrapper):
                raise PlanError(f"`{command.wrapper[0]}` is not a wrapper the validator unwraps")
            if words[0] in _NOT_WRAPPABLE or lookup_only(words) or activated(tuple(words)) is not None:
                raise PlanError(f"`{command.wrapper[0]}` cannot run the shell builtin `{words[0]}`")
        # Bound to the folder each part runs in: the parts render after every
        # `cd` of the command was taken, so a relative program path (./run.sh)
        # or an activation resolved then would name a later folder's file.
        folder = activated(tuple(words)) if not command.wrapper else None
        if folder is not None:
            words = [words[0], os.path.join(self.workdir, folder, "bin", "activate")]
        elif "/" in words[0] and not os.path.isabs(words[0]):
            bound = os.path.normpath(os.path.join(self.workdir, words[0]))
            self.as_written[bound] = words[0]
            words[0] = bound
        redirects: list[str] = []
        if command.stdin_text is not None:
            memfd = os.memfd_create("heredoc", os.MFD_CLOEXEC)
            os.write(memfd, command.stdin_text.encode("utf-8", "surrogateescape"))
            redirects.append(f"0</proc/self/fd/{self.keep(memfd)}")
        redirects += [self.redirect(r) for r in command.redirects]
        for name, _ in command.env:
            if not _NAME.fullmatch(name):
                raise PlanError(f"the environment name {name!r} is not a plain name")
        return words, redirects, command.env

    def activate(self, folder: str, closes: str) -> str:
        """``source DIR/bin/activate``: what a virtual environment's activate
        script does for the later parts (core.shell.environment.ACTIVATE_SETS),
        done here; the script, workspace code, is never run. Their programs
        are resolved with DIR/bin first from now on, as bash would find them."""
        path = os.path.normpath(os.path.join(self.workdir, folder))
        bin_folder = os.path.join(path, "bin")
        if not virtual_environment(path, self.root):
            raise PlanError(f"`{folder}` is not a virtual environment inside the workspace; not activated")
        shown = os.path.join(self.shown_as, os.path.relpath(path, self.root))
        self.path_env = os.pathsep.join([bin_folder, self.path_env])
        prompt = f"({os.path.basename(shown)}) "  # as Python 3.11's venv and virtualenv write it
        sets = (f"VIRTUAL_ENV={shlex.quote(shown)} VIRTUAL_ENV_PROMPT={shlex.quote(prompt)} "
                f"PATH={shlex.quote(os.path.join(shown, 'bin'))}:\"$PATH\"")
        return f"export {sets} {closes}; unset PYTHONHOME {closes}".rstrip()

    def rendered(
        self, words: list[str], redirects: list[str], closes: str, env: tuple[tuple[str, str], ...] = (),
        wrapper: tuple[str, ...] = (),
    ) -> str:
        prefix = [f"{name}={shlex.quote(value)}" for name, value in env]  # this command's environment only
        if wrapper:
            # The wrapper by its absolute path, then the program it runs by the one the validator
            # judged: a wrapper looking the name up on PATH itself could find another.
            inner = self.head(words)
            if inner[0] == "_agent_missing":  # not found: bash's message, as without the wrapper
                return " ".join([*inner, *redirects, closes]).rstrip()
            return " ".join([*prefix, *self.head(wrapper), *inner, *redirects, closes]).rstrip()
        if words[0] == "cd":  # a later `cd DIR` (checked by change_folder): nothing runs outside that folder
            return f"cd -- {shlex.quote(words[1])} || exit 1"
        folder = activated(tuple(words))
        if folder is not None:
            return self.activate(folder, closes)
        if words[0] in ENVIRONMENT_BUILTINS:  # the builtin, for the later parts: its words were judged by the validator
            names = [w.partition("=")[0] if words[0] == "export" else w for w in words[1:] if w != "-v"]
            if not names or not all(_NAME.fullmatch(n) for n in names):
                raise PlanError(f"`{words[0]}` takes plain variable names; got {words[1:]!r}")
            return " ".join([words[0], *map(shlex.quote, words[1:]), *redirects, closes]).rstrip()
        if lookup_only(words):  # `command -v NAME` / `type NAME`: bash's own builtin (no such program), words quoted
            return " ".join(["builtin", *map(shlex.quote, words), *redirects, closes]).rstrip()
        return " ".join([*prefix, *self.head(words), *redirects, closes]).rstrip()

    def head(self, words: Sequence[str]) -> list[str]:
        """``words`` quoted, the program replaced by the absolute path it resolves to."""
        program = resolve_program(words[0], self.path_env, self.workdir)
        if program is None:
            return ["_agent_missing", shlex.quote(self.as_written.get(words[0], words[0]))]
        program = os.path.abspath(program)
        if within(program, self.root):  # a program in the workspace: by the path the command sees
            program = os.path.join(self.shown_as, os.path.relpath(program, self.root))
        self.programs.append(program)
        return [shlex.quote(program), *map(shlex.quote, words[1:])]


_PRELUDE = """set -f
_agent_missing() { printf 'bash: %s: command not found\\n' "$1" >&2; return 127; }
_agent_rc=0
"""


def prepare(
    plan: CommandList,
    root: str,
    *,
    read_only: bool,
    path_env: str | None = None,
    view: str | None = None,
    open_in_sandbox: bool = False,
    sandboxed: bool = True,
) -> PreparedPlan:
    """Turn ``plan`` into what ``execute`` runs (see the module's doc). The
    caller must ``close()`` the result. ``view``: the host folder that shows
    the workspace for this run (an overlay's merged folder); globs and
    redirections are resolved in it, while paths the command sees stay under
    ``root``. ``open_in_sandbox``: redirection targets are checked here (same
    confinement) but opened by bash inside the sandbox, for a launcher that
    mounts the command's own view of the workspace (``wrap``). Raises PlanError."""
    root = os.path.realpath(root)
    seen_root = os.path.realpath(view) if view else root
    workdir = seen_root
    if plan.cwd not in (None, "", "."):
        workdir = os.path.realpath(os.path.join(seen_root, plan.cwd))
        if not within(workdir, seen_root) or not os.path.isdir(workdir):
            raise PlanError(f"cd {plan.cwd!r}: not a folder inside the workspace")
        _no_linked_folder(plan.cwd, os.path.normpath(os.path.join(seen_root, plan.cwd)), seen_root)
    if not plan.items or any(not p.commands for p in plan.items) or len(plan.ops) != len(plan.items) - 1:
        raise PlanError("the plan is malformed (empty pipeline or list)")
    path_env = command_path(root) if path_env is None else path_env
    builder = _Builder(seen_root, workdir, path_env, read_only)
    # The working folder as the command sees it (the view is bound at root).
    builder.shown_as = root
    builder.open_in_sandbox = open_in_sandbox
    builder.sandboxed = sandboxed
    rel = os.path.relpath(workdir, seen_root)
    command_workdir = root if rel == "." else os.path.join(root, rel)
    only = plan.items[0].commands[0]
    script = getattr(plan, "script", None)
    if script is not None:
        return _prepare_script(script, read_only, command_workdir)
    try:
        if (
            len(plan.items) == 1 and len(plan.items[0].commands) == 1 and not only.redirects
            and only.stdin_text is None and not only.env and only.argv[0] not in ENVIRONMENT_BUILTINS
            and not lookup_only(only.argv)  # a builtin cannot be exec'd: it runs in the rebuilt script
            and not only.wrapper  # its program is resolved in the rebuilt script, not looked up by the wrapper
        ):
            return PreparedPlan(argv=builder.words(only), workdir=command_workdir, shape=[1])
        if any(len(p.commands) > 1 and any(activated(c.argv) for c in p.commands) for p in plan.items):
            raise PlanError("an activation in a pipeline would reach no later part (the validator never plans one)")
        # in order: a cd moves later parts
        parts = [[(*builder.command(c), c.wrapper) for c in p.commands] for p in plan.items]
        status_fd = builder.keep(os.memfd_create("status", os.MFD_CLOEXEC))
        script_fd = builder.keep(os.memfd_create("script", os.MFD_CLOEXEC))
        # Every command closes every executor descriptor (after its own
        # redirections have reopened theirs): none of them reaches a program.
        closes = " ".join(f"{fd}>&-" for fd in builder.fds)
        lines = [_PRELUDE]
        for i, pipeline in enumerate(parts):
            body = " | ".join(builder.rendered(words, redirects, closes, env, wrapper)
                              for words, redirects, env, wrapper in pipeline)
            record = (
                f'_agent_s=("${{PIPESTATUS[@]}}"); _agent_rc=${{_agent_s[-1]}}; '
                f'printf \'%s %s\\n\' {i} "${{_agent_s[*]}}" >&{status_fd}'
            )
            op = plan.ops[i - 1] if i else ";"
            if op == ";":
                lines.append(f"{body}\n{record}\n")
            else:
                test = "-eq" if op == "&&" else "-ne"
                lines.append(f'if [ "$_agent_rc" {test} 0 ]; then\n{body}\n{record}\nfi\n')
        lines.append('exit "$_agent_rc"\n')
        os.write(script_fd, "".join(lines).encode("utf-8", "surrogateescape"))
        return PreparedPlan(
            argv=[_bash(), "--noprofile", "--norc", f"/proc/self/fd/{script_fd}"],
            workdir=command_workdir,
            programs=builder.programs,
            pass_fds=builder.fds,
            status_fd=status_fd,
            shape=[len(p) for p in parts],
            scripted=True,
        )
    except BaseException:
        for fd in builder.fds:
            os.close(fd)
        raise


def _prepare_script(script: str, read_only: bool, workdir: str) -> PreparedPlan:
    """An opaque command: its exact validated source, run by bash from a
    memory file. It writes wherever bash's own redirections say, so it never
    runs on the read-only mount's promise: only captured (the caller's duty)."""
    if read_only:
        raise PlanError("an opaque command (a script) is never run as read-only; it runs captured")
    if "\0" in script:
        raise PlanError("the script contains a NUL character")
    fd = _private_fd(os.memfd_create("script", os.MFD_CLOEXEC))
    try:
        os.write(fd, script.encode("utf-8", "surrogateescape"))
    except BaseException:
        os.close(fd)
        raise
    return PreparedPlan(
        argv=[_bash(), "--noprofile", "--norc", f"/proc/self/fd/{fd}"],
        workdir=workdir,
        pass_fds=[fd],
        shape=[1],
    )


async def execute_plan(
    plan: CommandList,
    root: str,
    timeout_s: float,
    *,
    read_only: bool = False,
    view: str | None = None,
    wrap: Callable[[list[str]], list[str]] | None = None,
    sandboxed: bool = True,
    **options: Any,
) -> ExecOutcome:
    """Run ``plan`` in the workspace ``root`` behind every fence (``options``
    are ``activities.sandbox.process.execute``'s). For a transactional run, either
    ``view``: a host folder bound at ``root``'s path instead of ``root``
    itself (an overlay's merged folder); or ``wrap``: a launcher put in front
    of the sandbox's argv (one that mounts an overlay over ``root`` in a
    private mount namespace); redirections are then opened inside. The
    command sees the same paths either way. Raises PlanError before anything
    runs when the plan cannot be run as validated."""
    # Only pipes and memfds cross into the sandbox: a host descriptor of a
    # workspace file could be reopened through /proc/self/fd/N with the host
    # mount's write access, whatever the sandbox's mount says. Files are
    # checked here and opened by bash, by name, inside. (A ``view`` without a
    # launcher is a host folder the caller already chose to hand over.)
    in_sandbox = wrap is not None or view is None
    prepared = prepare(plan, root, read_only=read_only, view=view, open_in_sandbox=in_sandbox,
                       sandboxed=sandboxed)
    try:
        outcome = await run(ExecRequest(
            prepared.argv, root, timeout_s, read_only=read_only, workdir=prepared.workdir,
            programs=prepared.programs, pass_fds=prepared.pass_fds, bind_source=view, wrap=wrap,
            git_dirs=git_folders(c.argv for p in plan.items for c in p.commands), **options,
        ))
        outcome.part_exit_codes = prepared.part_exit_codes(outcome.exit_code)
        return outcome
    finally:
        prepared.close()
