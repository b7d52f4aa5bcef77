"""The pure-Python grep, used when the rg binary is missing: the same
output format, order and cap as rg; Python ``re`` syntax; only ``.gitignore``
files inside the workspace are read. Every folder and file is opened beneath
the root's descriptor through no symlink, so a folder swapped for a link
while the walk runs is skipped, never followed."""

from __future__ import annotations

import os
import re
import stat
import time
from dataclasses import dataclass

from wcmatch import fnmatch as wcfnmatch
from wcmatch import glob as wcglob

from activities.workspace.cancel import check
from activities.workspace.root import open_beneath
from activities.search.common import GREP_MAX_COLUMNS, GREP_READ_LIMIT, OMITTED_LINE, SKIP_NAMES, Search, printable


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
                shown = OMITTED_LINE
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


def python_search(
    root_fd: int, rel_path: str, pattern: str, include: str | None, ignore_case: bool, deadline: float
) -> Search:
    """The fallback: a depth-first walk with each folder's entries sorted by
    name (rg's --sort path order), iterative so that no folder depth can
    exhaust Python's recursion limit."""
    result = Search()
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
            result.warnings.append(f"{printable(rel_dir) or '.'}: {exc.strerror or exc}")
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
                _search_file(root_fd, rel, printable(rel), regex, out, False, deadline)
            except OSError as exc:
                result.warnings.append(f"{printable(rel)}: {exc.strerror or exc}")
            if len(out) >= GREP_READ_LIMIT:
                result.complete = False
                return result
    except _SearchTimeout:
        result.timed_out = True
        result.complete = False
    return result
