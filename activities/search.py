"""The read-only search tools: ``grep`` (file contents) and ``glob`` (file names).

grep
    Runs the ``rg`` binary from the ripgrep wheel as a subprocess with an argv
    list (never a shell). Every option comes first, then ``-e PATTERN``, then
    ``--`` and the path, so neither the pattern nor the path can ever be read
    as a flag (``--pre=sh``, ``-f/etc/passwd``, ``--files`` are just patterns).
    ``--no-config`` keeps ``RIPGREP_CONFIG_PATH`` from injecting flags. rg runs
    with the workspace root as its cwd and a relative path, so every line comes
    out as ``relpath:line:text`` relative to the root.

    Choices: hidden files are searched (``--hidden``) but never ``.git`` or the
    artifacts folder; ``.gitignore`` is honoured even outside a git repository
    (``--no-require-git``); the user's global gitignore is not
    (``--no-ignore-global``: results must not depend on which worker runs the
    search); symlinks are never followed (rg's default; the top-level path is
    resolved and confined first, beneath the root's descriptor); lines longer than 500 bytes are replaced by
    rg's ``[Omitted long matching line]`` marker; results are sorted by path
    (``--sort path``: folder by folder, names compared bytewise), which makes
    rg single-threaded but lets us stop reading early and still be
    deterministic.

    rg opens what it walks by path name, so a sandboxed script swapping a
    folder for a symlink while rg walks would make it read outside files
    (it did, before). Where bubblewrap works, rg therefore runs in a jail
    holding only ``/usr`` and the workspace, bound from the root's descriptor
    (``activities.fs_jail``); elsewhere it starts in the root by descriptor
    and the result's metadata says ``confinement``. The Python fallback opens
    every folder and file beneath the root's descriptor through no symlink.

    The cap is 50 matching lines in total (not per file). We stream rg's
    stdout and kill rg as soon as we hold 51 lines, so a pattern matching
    millions of lines costs about as much as one matching a few dozen. The
    notice gives the exact total when rg finished by itself, and otherwise
    says "more than 50" and how to narrow the search: counting further would
    cost rg time in proportion (up to a full scan for sparse matches), and
    there is nothing beyond the 51st line to save as an artifact.

    If ``rg`` is missing (or ``AGENT_TOOLS_RG`` names something that is not an
    executable file) a pure-Python search takes over with a logged downgrade
    warning: same output format, order and cap; Python ``re`` syntax; only
    ``.gitignore`` files inside the workspace are read.

glob
    wcmatch's ``Glob`` with ``GLOBSTAR | BRACE | NODIR``: ``**`` crosses
    folders, ``{a,b}`` alternatives, files only (folders are never listed;
    symlinks are listed as entries but never followed). No ``DOTGLOB``: like a
    shell, ``*`` and ``**`` skip names starting with '.', which keeps
    ``.venv`` and friends out of ``**/*.py``; spell the dot to match them
    (``.github/**/*.yml``, ``**/.env*``).

    wcmatch's directory scan is replaced (``_ConfinedGlob._iter``) to fix three
    things: it silently drops folders it cannot read (we record and report
    them), it follows symlinked folders when a non-``**`` component matches
    them (we never descend into a symlink), and it would walk ``.git`` and the
    artifacts folder (we prune them during the scan, which is cheaper than
    wcmatch's post-filtering ``exclude``). Every folder is opened beneath the
    searched folder's descriptor through no symlink (openat2
    ``RESOLVE_NO_SYMLINKS`` or an ``O_NOFOLLOW`` walk), so a folder swapped
    for a link after it was listed is reported, never listed; wcmatch's own
    checks of literal names go through that descriptor's ``/proc`` link. The pattern must be relative and
    may not contain ``..``; the folder to search from is ``path``.

    Results are relative to the workspace root and sorted by path, folder by
    folder (the same order as grep). The cap is 1000 paths; the notice gives
    the total and the full list is saved as an artifact.
"""

from __future__ import annotations

import inspect
import logging
import os
import re
import selectors
import stat
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import bracex
import wcmatch
from wcmatch import _wcparse
from wcmatch import fnmatch as wcfnmatch
from wcmatch import glob as wcglob

from activities.base import bound_output, tool_activity
from activities.binaries import find_binary
from activities.fs_cancel import Cancelled, check
from activities.fs_jail import jail_argv
from activities.fs_root import WorkspaceRoot, open_beneath
from activities.fs_root import shown as shown_path
from activities.fs_common import guarded
from activities.workspace import ARTIFACTS_DIR, save_artifact
from core.contracts import ToolRequest, ToolResult
from core.tool_specs import GLOB, GREP, GlobArgs, GrepArgs

log = logging.getLogger(__name__)

GREP_MAX_MATCHES = 50
# Lines read before the search is stopped: the cap plus one, which proves
# there is more. Reading further only to count costs rg time in proportion
# (for sparse matches up to a full scan), so we say "more than 50" instead.
GREP_READ_LIMIT = GREP_MAX_MATCHES + 1
GREP_TIMEOUT_S = 30.0
GREP_MAX_COLUMNS = 500
GLOB_MAX_RESULTS = 1000
GLOB_TIMEOUT_S = 30.0
GLOB_MAX_DEPTH = 200
# Names never searched or listed, at any depth, unless a tool's `path` points
# into them explicitly.
SKIP_NAMES = frozenset({".git", ARTIFACTS_DIR})
# Set to a path to use another rg binary; a path that is not an executable
# file means "no ripgrep" (the Python fallback is used).
RG_ENV_VAR = "AGENT_TOOLS_RG"

ENGINE_RIPGREP = "ripgrep"
ENGINE_PYTHON = "python-fallback"

GLOB_FLAGS = wcglob.GLOBSTAR | wcglob.BRACE | wcglob.NODIR
# A pattern or include glob longer than this is refused (and an argv string
# must stay far below Linux's 128 KiB per-argument limit).
MAX_PATTERN_CHARS = 10_000
_MAX_WARNINGS = 10
_MAX_WARNING_CHARS = 300
_MAX_STDERR_BYTES = 64 * 1024
_OMITTED_LINE = "[Omitted long matching line]"


# --------------------------------------------------------------------- helpers


def _printable(text: str) -> str:
    """File names that are not valid UTF-8 arrive with surrogate escapes,
    which JSON cannot carry: replace them."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _clip(text: str, limit: int = _MAX_WARNING_CHARS) -> str:
    """Cut the middle out of a long message: its head names the path and its
    tail holds the reason (say, a 4,000-character path then "File name too
    long")."""
    if len(text) <= limit:
        return text
    half = (limit - 5) // 2
    return text[:half] + " ... " + text[-half:]


def _warning_block(title: str, warnings: list[str]) -> str:
    shown = [f"  {_clip(w)}" for w in warnings[:_MAX_WARNINGS]]
    if len(warnings) > _MAX_WARNINGS:
        shown.append(f"  ... and {len(warnings) - _MAX_WARNINGS} more")
    return f"[{title}:\n" + "\n".join(shown) + "\n]"


def _error(request: ToolRequest, message: str, **metadata: str) -> ToolResult:
    return ToolResult.error(request.call_id, request.tool, message, metadata=dict(metadata))


def _check_text_arg(name: str, value: str) -> str | None:
    if "\x00" in value:
        return f"{name} contains a NUL byte; remove it"
    if len(value) > MAX_PATTERN_CHARS:
        return f"{name} is {len(value)} characters long; keep it under {MAX_PATTERN_CHARS}"
    return None


# ------------------------------------------------------------------------ grep


@dataclass
class _Search:
    """What one search engine found."""

    lines: list[str] = field(default_factory=list)  # formatted `path:line:text`
    complete: bool = True  # the engine ran to the end (the count is exact)
    timed_out: bool = False
    fatal: str | None = None  # the search could not run: regex error and the like
    warnings: list[str] = field(default_factory=list)  # files/folders it could not read
    notes: list[str] = field(default_factory=list)  # other messages, e.g. a bad .gitignore line
    jailed: bool = False  # rg ran in the bubblewrap jail (activities.fs_jail)


_rg_found: str | None = None


def ripgrep_binary() -> tuple[str | None, str]:
    """The rg to use, or (None, why not)."""
    override = os.environ.get(RG_ENV_VAR)
    if override:
        if os.path.isfile(override) and os.access(override, os.X_OK):
            return override, ""
        return None, f"{RG_ENV_VAR}={override!r} is not an executable file"
    global _rg_found
    if _rg_found is None or not os.path.isfile(_rg_found):
        _rg_found = find_binary("rg")
    if _rg_found is None:
        return None, "the rg binary was not found (install the ripgrep wheel)"
    return _rg_found, ""


def ripgrep_argv(rg: str, rel_path: str, pattern: str, include: str | None, ignore_case: bool) -> list[str]:
    """The exact command grep runs (the benchmark reuses it as its baseline).
    All options first; `-e PATTERN` and `--` make sure neither the pattern nor
    the path is ever parsed as an option."""
    argv = [
        rg,
        "--no-config",
        "--color=never",
        "--no-heading",
        "--with-filename",
        "--line-number",
        "--hidden",
        "--no-require-git",
        "--no-ignore-global",
        "--sort=path",
        f"--max-columns={GREP_MAX_COLUMNS}",
        "--ignore-case" if ignore_case else "--case-sensitive",
    ]
    if include is not None:
        argv.append(f"--glob={include}")
    # Later globs win in rg: the exclusions come after the include so that an
    # include like '*' can never re-admit .git or the artifacts folder.
    argv += ["--glob=!.git", f"--glob=!{ARTIFACTS_DIR}", "-e", pattern, "--", rel_path]
    return argv


def _decode_rg_lines(raw_lines: list[bytes], strip_dot: bool) -> list[str]:
    """rg's output lines to text, in bulk: one join, two replaces and one
    decode in C instead of per-line Python work."""
    if not raw_lines:
        return []
    blob = b"\n" + b"\n".join(raw_lines) + b"\n"
    blob = blob.replace(b"\r\n", b"\n")
    if strip_dot:  # `rg ... -- .` prints ./path; "\n./" can only start a line
        blob = blob.replace(b"\n./", b"\n")
    return blob[1:-1].decode("utf-8", "replace").split("\n")


def _classify_rg_stderr(text: str, strip_dot: bool) -> tuple[list[str], list[str]]:
    """Split rg's messages into per-path I/O errors ("... (os error N)") and
    everything else."""
    warnings: list[str] = []
    other: list[str] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        if line.startswith("rg: "):
            line = line[4:]
        if strip_dot and line.startswith("./"):
            line = line[2:]
        if "(os error " in line:
            warnings.append(line.replace(": ./", ": "))
        else:
            other.append(line)
    return warnings, other


def _run_ripgrep(
    rg: str, ws: WorkspaceRoot, rel_path: str, pattern: str, include: str | None, ignore_case: bool, deadline: float
) -> _Search:
    argv = ripgrep_argv(rg, rel_path, pattern, include, ignore_case)
    jailed = jail_argv(argv, ws.fd, str(ws.path))
    # --no-config already makes rg ignore RIPGREP_CONFIG_PATH; no rg option
    # can be set through any other variable, so the environment is inherited.
    # Unjailed, rg still starts in the root by its descriptor, not its name.
    proc = subprocess.Popen(
        jailed or argv,
        cwd=None if jailed else f"/proc/self/fd/{ws.fd}",
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        close_fds=True,
        pass_fds=(ws.fd,),
    )
    assert proc.stdout is not None and proc.stderr is not None
    strip_dot = rel_path == "."
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    result = _Search(jailed=jailed is not None)
    raw_lines: list[bytes] = []
    pending = b""
    err = bytearray()
    stopped = False
    sel = selectors.DefaultSelector()
    try:
        sel.register(out_fd, selectors.EVENT_READ)
        sel.register(err_fd, selectors.EVENT_READ)
        open_fds = 2
        while open_fds and not stopped:
            check()  # a cancelled attempt stops rg (killed below)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                result.timed_out = True
                break
            for key, _ in sel.select(min(remaining, 0.5)):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    sel.unregister(key.fd)
                    open_fds -= 1
                    if key.fd == out_fd and pending:
                        raw_lines.append(pending)
                        pending = b""
                    continue
                if key.fd == err_fd:
                    if len(err) < _MAX_STDERR_BYTES:
                        err += chunk
                    continue
                parts = (pending + chunk).split(b"\n")
                pending = parts.pop()
                raw_lines += parts
                if len(raw_lines) >= GREP_READ_LIMIT:
                    # Enough to fill the cap and know there is more: stop rg.
                    del raw_lines[GREP_READ_LIMIT:]
                    stopped = True
                    break
    finally:
        sel.close()
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()

    result.lines = _decode_rg_lines(raw_lines[:GREP_READ_LIMIT], strip_dot)
    result.complete = not stopped and not result.timed_out
    warnings, other = _classify_rg_stderr(err.decode("utf-8", "replace"), strip_dot)
    result.warnings = warnings
    if proc.returncode == 2 and other and not result.lines and not warnings:
        # rg gave up before searching anything: a bad regex or include glob.
        result.fatal = "\n".join(other)
    else:
        result.notes = other
    return result


# --- the pure-Python fallback -------------------------------------------------


class _GitIgnore:
    """The common subset of one .gitignore file: comments, negation, trailing
    '/' for folders only, anchoring by a '/', '**'. The last matching line
    wins; a deeper file wins over a shallower one."""

    _GLOB_FLAGS = wcglob.GLOBSTAR | wcglob.DOTMATCH | wcglob.BRACE
    _NAME_FLAGS = wcfnmatch.DOTMATCH | wcfnmatch.BRACE

    def __init__(self, base: str, text: str) -> None:
        self.base = base  # folder of the .gitignore, relative to the root ("" = root)
        self.rules: list[tuple[bool, bool, bool, object]] = []
        for raw in text.splitlines():
            line = raw.rstrip("\r")
            if not line or line.startswith("#"):
                continue
            while line.endswith(" ") and not line.endswith("\\ "):
                line = line[:-1]
            negate = line.startswith("!")
            if negate:
                line = line[1:]
            elif line.startswith(("\\!", "\\#")):
                line = line[1:]
            dir_only = line.endswith("/")
            line = line.rstrip("/")
            if not line:
                continue
            anchored = "/" in line
            line = line.lstrip("/")
            try:
                if anchored:
                    matcher: object = wcglob.compile(line, flags=self._GLOB_FLAGS)
                else:
                    matcher = wcfnmatch.compile(line, flags=self._NAME_FLAGS)
            except Exception:  # noqa: BLE001 - a broken line is skipped, as git does
                continue
            self.rules.append((negate, dir_only, anchored, matcher))

    def decide(self, rel: str, name: str, is_dir: bool) -> bool | None:
        """True: ignored, False: re-included by '!', None: no rule matched."""
        sub = rel[len(self.base) + 1 :] if self.base else rel
        for negate, dir_only, anchored, matcher in reversed(self.rules):
            if dir_only and not is_dir:
                continue
            if matcher.match(sub if anchored else name):  # type: ignore[attr-defined]
                return not negate
        return None


def _open_regular(root_fd: int, rel: str) -> int | None:
    """A regular file beneath the root, through no symlink; None if it is anything else."""
    fd = open_beneath(root_fd, rel, os.O_RDONLY | os.O_NONBLOCK)
    if stat.S_ISREG(os.fstat(fd).st_mode):
        return fd
    os.close(fd)
    return None


def _load_gitignore(root_fd: int, rel_dir: str) -> _GitIgnore | None:
    try:
        fd = _open_regular(root_fd, f"{rel_dir}/.gitignore" if rel_dir else ".gitignore")
    except OSError:
        return None
    if fd is None:
        return None
    with os.fdopen(fd, "rb") as fh:
        return _GitIgnore(rel_dir, fh.read(1 << 20).decode("utf-8", "replace"))


def _ignored(rules: list[_GitIgnore], rel: str, name: str, is_dir: bool) -> bool:
    for ignore in reversed(rules):
        decision = ignore.decide(rel, name, is_dir)
        if decision is not None:
            return decision
    return False


class _Include:
    """rg's --glob for one positive glob: a glob without '/' matches the base
    name anywhere; with one, the path relative to the root. A folder matching
    it is searched even when .gitignore says otherwise (as in rg)."""

    def __init__(self, glob: str) -> None:
        trimmed = glob.rstrip("/")
        self.dir_only = glob.endswith("/")
        self.anchored = "/" in trimmed
        flags = wcglob.GLOBSTAR | wcglob.DOTMATCH | wcglob.BRACE
        if self.anchored:
            self._matcher = wcglob.compile(trimmed.lstrip("/"), flags=flags)
        else:
            self._matcher = wcfnmatch.compile(trimmed, flags=wcfnmatch.DOTMATCH | wcfnmatch.BRACE)

    def match(self, rel: str, name: str, is_dir: bool) -> bool:
        if self.dir_only and not is_dir:
            return False
        return bool(self._matcher.match(rel if self.anchored else name))


class _SearchTimeout(Exception):
    pass


def _search_file(
    root_fd: int, rel: str, shown_rel: str, regex: re.Pattern[str], out: list[str], explicit: bool, deadline: float
) -> None:
    """Append the file's matching lines to ``out`` in rg's format, stopping at
    GREP_READ_LIMIT lines. Like rg, a file with a NUL byte is binary: skipped
    during a walk, reported in one line when it was asked for by name. The
    file is opened beneath the root's descriptor through no symlink."""
    fd = _open_regular(root_fd, rel)
    if fd is None:
        return
    rel = shown_rel
    with os.fdopen(fd, "rb") as handle:
        head = handle.read(65536)
        if b"\x00" in head:
            if explicit:
                rest = head + handle.read()
                if regex.search(rest.decode("utf-8", "replace")):
                    out.append(f"{rel}: binary file matches (found \"\\0\" byte)")
            return
        handle.seek(0)
        for number, raw in enumerate(handle, 1):
            if number % 10_000 == 0:
                check()
                if time.monotonic() > deadline:
                    raise _SearchTimeout
            if b"\x00" in raw:
                return
            if raw.endswith(b"\n"):
                raw = raw[:-1]
            text = raw.decode("utf-8", "replace")
            if regex.search(text) is None:
                continue
            if len(raw) > GREP_MAX_COLUMNS:
                shown = _OMITTED_LINE
            else:
                shown = text[:-1] if text.endswith("\r") else text
            out.append(f"{rel}:{number}:{shown}")
            if len(out) >= GREP_READ_LIMIT:
                return


@dataclass
class _Entry:
    """What the walk needs of a folder entry, taken while the folder is open
    (symlinks are neither folders nor files here: never followed)."""

    name: str
    is_dir: bool
    is_file: bool

    @classmethod
    def of(cls, entry: os.DirEntry) -> "_Entry":  # type: ignore[type-arg]
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
            return cls(entry.name, is_dir, not is_dir and entry.is_file(follow_symlinks=False))
        except OSError:
            return cls(entry.name, False, False)


def _python_search(
    root_fd: int, rel_path: str, pattern: str, include: str | None, ignore_case: bool, deadline: float
) -> _Search:
    """The fallback: a depth-first walk with each folder's entries sorted by
    name (rg's --sort path order), iterative so that no folder depth can
    exhaust Python's recursion limit."""
    result = _Search()
    try:
        regex = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except re.error as exc:
        result.fatal = f"regex parse error: {exc} (the fallback search uses Python regular expressions)"
        return result
    try:
        include_matcher = _Include(include) if include is not None else None
    except Exception as exc:  # noqa: BLE001 - wcmatch raises several types
        result.fatal = f"error parsing glob {include!r}: {exc}"
        return result

    out = result.lines
    try:
        start_is_dir = stat.S_ISDIR(os.stat(rel_path, dir_fd=root_fd, follow_symlinks=False).st_mode)
    except OSError:
        start_is_dir = False
    if not start_is_dir:
        try:
            _search_file(root_fd, rel_path, rel_path, regex, out, True, deadline)
        except _SearchTimeout:
            result.timed_out = True
        except OSError as exc:
            result.warnings.append(f"{rel_path}: {exc.strerror or exc}")
        result.complete = len(out) < GREP_READ_LIMIT and not result.timed_out
        return result

    # .gitignore files from the root down to the starting folder.
    base_rules: list[_GitIgnore] = []
    parts = [] if rel_path == "." else rel_path.split("/")
    for depth in range(len(parts) + 1):
        loaded = _load_gitignore(root_fd, "/".join(parts[:depth]))
        if loaded is not None:
            base_rules.append(loaded)

    def open_folder(rel_dir: str, rules: list[_GitIgnore], load_local: bool):  # type: ignore[no-untyped-def]
        try:
            fd = open_beneath(root_fd, rel_dir or ".", os.O_RDONLY | os.O_DIRECTORY)
            try:
                with os.scandir(fd) as scan:
                    entries = sorted((_Entry.of(e) for e in scan), key=lambda e: e.name)
            finally:
                os.close(fd)
        except OSError as exc:
            result.warnings.append(f"{_printable(rel_dir) or '.'}: {exc.strerror or exc}")
            return None
        if load_local:
            local = _load_gitignore(root_fd, rel_dir)
            if local is not None:
                rules = rules + [local]
        return rel_dir, rules, iter(entries)

    first = open_folder("" if rel_path == "." else rel_path, base_rules, False)
    stack = [first] if first is not None else []
    try:
        while stack:
            rel_dir, rules, entries = stack[-1]
            entry = next(entries, None)
            if entry is None:
                stack.pop()
                continue
            if time.monotonic() > deadline:
                raise _SearchTimeout
            name = entry.name
            if name in SKIP_NAMES:
                continue
            rel = f"{rel_dir}/{name}" if rel_dir else name
            is_dir, is_file = entry.is_dir, entry.is_file
            if not is_dir and not is_file:
                continue
            included = include_matcher.match(rel, name, is_dir) if include_matcher else None
            if is_dir:
                if included or not _ignored(rules, rel, name, True):
                    opened = open_folder(rel, rules, True)
                    if opened is not None:
                        stack.append(opened)
                continue
            if include_matcher is not None and not included:
                continue
            if not included and _ignored(rules, rel, name, False):
                continue
            try:
                _search_file(root_fd, rel, _printable(rel), regex, out, False, deadline)
            except OSError as exc:
                result.warnings.append(f"{_printable(rel)}: {exc.strerror or exc}")
            if len(out) >= GREP_READ_LIMIT:
                result.complete = False
                return result
    except _SearchTimeout:
        result.timed_out = True
        result.complete = False
    return result


# --- the tool -------------------------------------------------------------------


@guarded
def grep(request: ToolRequest, args: GrepArgs) -> ToolResult:
    with WorkspaceRoot(request.workspace_root) as ws:
        return _grep(request, args, ws)


def _grep(request: ToolRequest, args: GrepArgs, ws: WorkspaceRoot) -> ToolResult:
    pattern = args.pattern
    include = args.include if args.include and args.include.strip() else None
    for name, value in (("pattern", pattern), ("include", include or "")):
        problem = _check_text_arg(name, value)
        if problem:
            return _error(request, problem)
    if "\n" in pattern or "\r" in pattern:
        return _error(
            request,
            "pattern contains a line break: grep matches one line at a time; "
            "search for a single line (use '\\s' or '.' where the break would be)",
        )
    if include is not None and include.startswith("!"):
        return _error(
            request,
            f"include {include!r} starts with '!', which would exclude files instead of selecting them; "
            "include must be a positive glob such as '*.py' or 'src/**/*.ts' "
            "(to leave files out, narrow path or include instead)",
        )
    try:
        loc, st = ws.lookup(args.path)
    except FileNotFoundError:
        loc, st = None, None
    if loc is not None:
        loc.close()
    if loc is None or st is None:
        return _error(
            request, f"path {shown_path(args.path)} does not exist; give a file or folder relative to the workspace root"
        )
    if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
        return _error(
            request,
            f"path {shown_path(args.path)} is not a regular file or folder (a FIFO, socket or device); "
            "grep only searches files",
        )
    rel_path = loc.rel
    deadline = time.monotonic() + GREP_TIMEOUT_S

    metadata: dict[str, str] = {}
    rg, why_not = ripgrep_binary()
    search: _Search | None = None
    if rg is not None:
        try:
            search = _run_ripgrep(rg, ws, rel_path, pattern, include, args.ignore_case, deadline)
            metadata["engine"] = ENGINE_RIPGREP
            if not search.jailed:
                metadata["confinement"] = "starting folder only (no bubblewrap jail for rg on this worker)"
        except OSError as exc:
            why_not = f"{rg} could not be started ({exc.strerror or exc})"
    if search is None:
        warning = (
            f"ripgrep unavailable: {why_not}; searched with the slower pure-Python fallback "
            "(Python regex syntax; only .gitignore files inside the workspace are honoured)"
        )
        log.warning("grep downgraded to the Python fallback: %s", why_not)
        metadata["engine"] = ENGINE_PYTHON
        metadata["warning"] = warning
        search = _python_search(ws.fd, rel_path, pattern, include, args.ignore_case, deadline)

    if search.fatal is not None:
        hint = ""
        if "regex parse error" in search.fatal:
            hint = (
                "\nThe pattern is a regular expression: escape characters meant literally "
                "(\\( \\) \\[ \\] \\{ \\} \\. \\* \\+ \\? \\|) with a backslash."
            )
        elif "glob" in search.fatal:
            hint = "\nCheck the include glob, e.g. '*.py' or 'src/**/*.{ts,tsx}'."
        return _error(request, f"grep failed: {search.fatal}{hint}", **metadata)

    lines = search.lines
    shown = lines[:GREP_MAX_MATCHES]
    truncated = len(lines) > GREP_MAX_MATCHES
    total = str(len(lines)) if search.complete else f"more than {GREP_MAX_MATCHES}"
    metadata.update(matches=str(len(shown)), total=total, truncated="true" if truncated else "false")

    if search.timed_out:
        partial = ""
        if shown:
            partial = f"\nMatches found before the timeout ({len(shown)} shown):\n" + "\n".join(shown)
        return _error(
            request,
            f"grep timed out after {GREP_TIMEOUT_S:g} s and was stopped; narrow path, add an include "
            f"glob, or make the pattern more specific{partial}",
            **metadata,
        )

    parts: list[str] = ["\n".join(shown) if shown else "No matches found"]
    if truncated:
        stopped = "" if search.complete else " (the search stopped there)"
        parts.append(
            f"[showing {len(shown)} of {total} matching lines, sorted by path{stopped}; "
            "narrow the pattern or path, or add an include glob such as '*.py', to see the rest]"
        )
    if search.warnings:
        metadata["io_errors"] = str(len(search.warnings))
        parts.append(
            _warning_block("some files or folders could not be read, so matches in them are missing", search.warnings)
        )
    if search.notes:
        parts.append(_warning_block("ripgrep also reported", search.notes))
    text, extra = bound_output("\n".join(parts), request, "grep")
    metadata.update(extra)
    return ToolResult.ok(request.call_id, request.tool, text, metadata=metadata)


# ------------------------------------------------------------------------ glob


class _GlobTimeout(Exception):
    pass


# _ConfinedGlob overrides a private wcmatch method (checked with wcmatch 12).
# If a wcmatch release reshapes it, refuse to import rather than silently
# run wcmatch's own scan, which follows symlinked folders.
if list(inspect.signature(wcglob.Glob._iter).parameters) != ["self", "curdir", "dir_only", "deep"] or list(
    inspect.signature(wcglob.Glob._lexists).parameters
) != ["self", "path"]:
    raise ImportError(
        f"wcmatch {wcmatch.__version__} changed Glob._iter or _lexists; update activities/search.py (_ConfinedGlob)"
    )


class _ConfinedGlob(wcglob.Glob):  # type: ignore[type-arg]
    """wcmatch's Glob with our own directory scan (see the module docstring).

    ``_iter`` is wcmatch's one place that lists a folder; its contract is to
    yield ``(name, is_dir, hidden, is_link)``. Ours reports symlinks as
    non-folders (so no pattern component can descend into one), never yields
    '.' or '..', skips SKIP_NAMES, and records OSErrors instead of dropping
    them. tests/test_search_tools.py pins each of these behaviours, so a
    wcmatch upgrade that changes this internal hook fails loudly."""

    def __init__(self, pattern: str, *, base_fd: int, deadline: float) -> None:
        self.io_errors: list[tuple[str, OSError]] = []
        self._deadline = deadline
        # NOUNIQUE: wcmatch's per-path uniqueness check is a Python call per
        # result; glob_files removes duplicates (from '{a,a}' or 'x/**/y/**')
        # in one C-level pass instead.
        # wcmatch's own checks of literal names go through the base folder's
        # descriptor (its /proc magic link), never through its name.
        self._base_fd = base_fd
        super().__init__(pattern, flags=GLOB_FLAGS | wcglob.NOUNIQUE, root_dir=f"/proc/self/fd/{base_fd}")

    def _lexists(self, path):  # type: ignore[no-untyped-def,override]
        """wcmatch's check that a literal name exists ('src/app.py'), made
        beneath the base descriptor through no symlink: its own
        ``os.path.lexists`` would follow 'src' if it were a link to outside."""
        parent, _, name = path.rpartition("/")
        try:
            folder = open_beneath(self._base_fd, parent or ".", os.O_PATH | os.O_DIRECTORY)
        except OSError:
            return False
        try:
            os.stat(name, dir_fd=folder, follow_symlinks=False)
            return True
        except OSError:
            return False
        finally:
            os.close(folder)

    def _iter(self, curdir, dir_only, deep):  # type: ignore[no-untyped-def,override]
        if time.monotonic() > self._deadline:
            raise _GlobTimeout
        if curdir and curdir.count("/") >= GLOB_MAX_DEPTH:
            # wcmatch recurses once per folder level; stop well before
            # Python's recursion limit and say so.
            self.io_errors.append((curdir, OSError(f"nested more than {GLOB_MAX_DEPTH} folders deep; not searched")))
            return
        check()
        no_dot = not self.dot
        try:
            # Opened beneath the base through no symlink: a folder swapped for
            # a link after it was listed is refused (ELOOP), not followed.
            folder = open_beneath(self._base_fd, curdir or ".", os.O_RDONLY | os.O_DIRECTORY)
        except OSError as exc:
            self.io_errors.append((curdir or ".", exc))
            return
        try:
            with os.scandir(folder) as scan:
                for entry in scan:
                    name = entry.name
                    if name in SKIP_NAMES:
                        continue
                    try:
                        is_dir = entry.is_dir(follow_symlinks=False)
                    except OSError:
                        is_dir = False
                    if dir_only and not is_dir:
                        continue
                    yield name, is_dir, no_dot and name[:1] == ".", False
        except OSError as exc:
            self.io_errors.append((curdir or ".", exc))
        finally:
            os.close(folder)


def _normalise_pattern(pattern: str) -> str:
    parts = [p for p in pattern.split("/") if p != "."]
    return "/".join(parts) if parts else "."


def _pattern_problem(pattern: str) -> str | None:
    problem = _check_text_arg("pattern", pattern)
    if problem:
        return problem
    if pattern.startswith("/") or pattern.startswith("\\/"):
        return (
            f"pattern {pattern!r} is absolute; patterns are relative to path. "
            "Pass the folder as path and a relative pattern, e.g. path='src', pattern='**/*.py'"
        )
    try:
        expanded = list(bracex.iexpand(pattern, keep_escapes=True, limit=1000))
    except bracex.ExpansionLimitException:
        return f"pattern {pattern!r} expands to more than 1000 alternatives; use fewer or smaller {{...}} groups"
    for variant in expanded:
        if variant.startswith("/"):
            return f"pattern {pattern!r} can expand to an absolute path; patterns are relative to path"
        if any(part.replace("\\", "") == ".." for part in variant.split("/")):
            return (
                f"pattern {pattern!r} contains '..'; a pattern cannot leave the folder it searches. "
                "Pass the folder to search as path instead (relative to the workspace root), "
                "e.g. path='other/dir', pattern='**/*.py'"
            )
    return None


_SWAP_SLASH_NUL = str.maketrans({"/": "\x00", "\x00": "/"})


def _sorted_paths(found: list[str], prefix: str) -> list[str]:
    """Prefix and sort the paths folder by folder (what ``rg --sort path``
    does): with '/' swapped for NUL, which no name can hold and which sorts
    before every character, a plain string sort compares name by name. Done
    on one joined string, so the per-path work stays in C."""
    if not found:
        return []
    blob = "\x00".join(found)
    if blob.startswith("./") or "\x00./" in blob:  # e.g. from '{./a,b}'
        blob = "\x00".join(p[2:] if p.startswith("./") else p for p in found)
    if prefix:
        blob = prefix + blob.replace("\x00", "\x00" + prefix)
    keys = blob.translate(_SWAP_SLASH_NUL).split("/")
    keys.sort()
    paths = "/".join(keys).translate(_SWAP_SLASH_NUL).split("\x00")
    try:
        "\n".join(paths).encode("utf-8")
    except UnicodeEncodeError:  # names that are not valid UTF-8
        paths = [_printable(p) for p in paths]
    if _CONTROL.search("".join(paths)):
        # A name with a newline would read as two files: show it escaped (the
        # file tools refuse such names anyway, so nobody can use it unseen).
        paths = [_CONTROL.sub(lambda m: ascii(m.group())[1:-1], p) for p in paths]
    return paths


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


@guarded
def glob_files(request: ToolRequest, args: GlobArgs) -> ToolResult:
    problem = _pattern_problem(args.pattern)
    if problem:
        return _error(request, problem)
    with WorkspaceRoot(request.workspace_root) as ws:
        try:
            base_fd, rel_base = ws.open_dir(args.path, flags=os.O_PATH)
        except FileNotFoundError:
            return _error(request, f"path {shown_path(args.path)} does not exist; give a folder relative to the workspace root")
        except NotADirectoryError:
            return _error(
                request,
                f"path {shown_path(args.path)} is a file, not a folder; glob searches under a folder. "
                "To check one file, use its folder as path and its name as pattern, or use read_file",
            )
        try:
            return _glob_in(request, args, ws, base_fd, rel_base)
        finally:
            os.close(base_fd)


def _glob_in(request: ToolRequest, args: GlobArgs, ws: WorkspaceRoot, base_fd: int, rel_base: str) -> ToolResult:
    pattern = _normalise_pattern(args.pattern)
    prefix = "" if rel_base == "." else rel_base + "/"
    finder = _ConfinedGlob(pattern, base_fd=base_fd, deadline=time.monotonic() + GLOB_TIMEOUT_S)
    try:
        found = list(dict.fromkeys(finder.glob()))
    except _GlobTimeout:
        return _error(
            request,
            f"glob timed out after {GLOB_TIMEOUT_S:g} s; narrow path or make the pattern more specific "
            "(e.g. 'src/**/*.py' instead of '**/*')",
        )
    except _wcparse.PatternLimitException as exc:
        return _error(request, f"pattern {args.pattern!r} is too complex: {exc}")

    for folder, exc in finder.io_errors:
        if folder == ".":  # the folder we were asked to search
            return _error(request, f"cannot read folder {rel_base!r}: {exc.strerror or exc}")
    errors = [f"{_printable(prefix + folder)}: {exc.strerror or exc}" for folder, exc in finder.io_errors]

    paths = _sorted_paths(found, prefix)
    total = len(paths)
    shown = paths[:GLOB_MAX_RESULTS]
    metadata = {
        "matches": str(total),
        "shown": str(len(shown)),
        "truncated": "true" if total > len(shown) else "false",
    }
    parts: list[str] = []
    if not paths:
        parts.append(
            f"No files matched {args.pattern!r} under {rel_base!r}. Note: glob lists files only, not "
            "folders, and '*' and '**' skip names starting with '.' unless the pattern spells the dot "
            "(e.g. '.github/**/*.yml' or '**/.env*')"
        )
    else:
        parts.append("\n".join(shown))
    if total > len(shown):
        artifact = save_artifact(ws.path, request.call_id, "glob", "\n".join(paths) + "\n")
        metadata["full_output"] = artifact
        parts.append(
            f"[showing {len(shown)} of {total} matching files, sorted by path; the full list is saved in "
            f"{artifact}. Narrow the pattern or path to see the rest here]"
        )
    if errors:
        metadata["io_errors"] = str(len(errors))
        parts.append(_warning_block("some folders could not be read, so files in them may be missing", errors))
    text, extra = bound_output("\n".join(parts), request, "glob")
    metadata.update(extra)
    return ToolResult.ok(request.call_id, request.tool, text, metadata=metadata)


grep_activity = tool_activity(GREP, grep)
glob_activity = tool_activity(GLOB, glob_files)

__all__ = [
    "grep",
    "glob_files",
    "grep_activity",
    "glob_activity",
    "ripgrep_argv",
    "ripgrep_binary",
    "GLOB_FLAGS",
]
