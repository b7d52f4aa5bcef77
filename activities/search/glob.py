"""The glob tool: file names matching a pattern, confined to the workspace.

wcmatch's ``Glob`` with ``GLOBSTAR | BRACE | NODIR`` and our own directory
scan (``_ConfinedGlob``, see ``activities.search.grep``'s docstring for the
rules); every folder is opened beneath the searched folder's descriptor
through no symlink.
"""

from __future__ import annotations

import inspect
import os
import re
import time

import bracex
import wcmatch
from wcmatch import _wcparse
from wcmatch import glob as wcglob

from activities.base import bound_output
from activities.workspace.cancel import check
from activities.files.common import guarded
from activities.workspace.root import WorkspaceRoot, open_beneath
from activities.workspace.root import shown as shown_path
from activities.search.common import SKIP_NAMES, check_text_arg, printable, search_error, warning_block
from activities.workspace.artifacts import save_artifact
from core.contracts import ToolRequest, ToolResult
from core.tools.specs import GlobArgs

GLOB_MAX_RESULTS = 1000
GLOB_TIMEOUT_S = 30.0
GLOB_MAX_DEPTH = 200
GLOB_FLAGS = wcglob.GLOBSTAR | wcglob.BRACE | wcglob.NODIR


class _GlobTimeout(Exception):
    pass


# _ConfinedGlob overrides a private wcmatch method (checked with wcmatch 12).
# If a wcmatch release reshapes it, refuse to import rather than silently
# run wcmatch's own scan, which follows symlinked folders.
if list(inspect.signature(wcglob.Glob._iter).parameters) != ["self", "curdir", "dir_only", "deep"] or list(
    inspect.signature(wcglob.Glob._lexists).parameters
) != ["self", "path"]:
    raise ImportError(
        f"wcmatch {wcmatch.__version__} changed Glob._iter or _lexists; update activities/search/grep.py (_ConfinedGlob)"
    )


class _ConfinedGlob(wcglob.Glob):  # type: ignore[type-arg]
    """wcmatch's Glob with our own directory scan (see the module docstring).

    ``_iter`` is wcmatch's one place that lists a folder; its contract is to
    yield ``(name, is_dir, hidden, is_link)``. Ours reports symlinks as
    non-folders (so no pattern component can descend into one), never yields
    '.' or '..', skips SKIP_NAMES, and records OSErrors instead of dropping
    them. tests/tools/test_search_tools.py pins each of these behaviours, so a
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
    problem = check_text_arg("pattern", pattern)
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
        paths = [printable(p) for p in paths]
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
        return search_error(request, problem)
    with WorkspaceRoot(request.workspace_root) as ws:
        try:
            base_fd, rel_base = ws.open_dir(args.path, flags=os.O_PATH)
        except FileNotFoundError:
            return search_error(request, f"path {shown_path(args.path)} does not exist; give a folder relative to the workspace root")
        except NotADirectoryError:
            return search_error(
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
        return search_error(
            request,
            f"glob timed out after {GLOB_TIMEOUT_S:g} s; narrow path or make the pattern more specific "
            "(e.g. 'src/**/*.py' instead of '**/*')",
        )
    except _wcparse.PatternLimitException as exc:
        return search_error(request, f"pattern {args.pattern!r} is too complex: {exc}")

    for folder, exc in finder.io_errors:
        if folder == ".":  # the folder we were asked to search
            return search_error(request, f"cannot read folder {rel_base!r}: {exc.strerror or exc}")
    errors = [f"{printable(prefix + folder)}: {exc.strerror or exc}" for folder, exc in finder.io_errors]

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
        parts.append(warning_block("some folders could not be read, so files in them may be missing", errors))
    text, extra = bound_output("\n".join(parts), request, "glob")
    metadata.update(extra)
    return ToolResult.ok(request.call_id, request.tool, text, metadata=metadata)
