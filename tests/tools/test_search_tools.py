"""grep and glob on real files with the real rg binary, plus one run of each
activity on the dev server.

Notes on I/O errors: the tests run as root, and root reads a chmod 000
folder anyway (CAP_DAC_OVERRIDE / CAP_DAC_READ_SEARCH). Two ways to get an
error root does see:
* a folder nested so deep that its path exceeds PATH_MAX: opening it fails
  with ENAMETOOLONG for root too (built with mkdir/openat relative to a
  folder descriptor, so creating it never needs the long path);
* a child process whose capability bounding set lacks the two DAC
  capabilities: for it, a chmod 000 folder is unreadable like for any user.
"""

from __future__ import annotations

import ctypes
import json
import logging
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from wcmatch import glob as wcglob

from activities.search import glob as fs_glob
from activities.search import grep as search
from activities.base import parse_request_args
from activities.search.grep import glob_activity, glob_files, grep, grep_activity
from activities.workspace.paths import ARTIFACTS_DIR, WorkspaceError
from core.contracts import ToolRequest, ToolResult, ToolStatus
from tests.support import run_tool_on_server

REPO = Path(__file__).resolve().parents[2]
TOOLS = {"grep": grep, "glob": glob_files}


def call(tool: str, root: Path, **arguments: object) -> ToolResult:
    """What the activity does, minus Temporal: validate, run, turn a refused
    path into an error result."""
    request = ToolRequest(call_id="t-1", tool=tool, workspace_root=str(root), arguments=arguments)
    args = parse_request_args(request)
    if isinstance(args, ToolResult):
        return args
    try:
        return TOOLS[tool](request, args)  # type: ignore[arg-type]
    except WorkspaceError as exc:
        return ToolResult.error(request.call_id, tool, str(exc))


def write(root: Path, rel: str, content: str | bytes = "") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return path


def body(result: ToolResult) -> list[str]:
    """The listed lines: no trailing [notice] blocks, nothing for "no match"."""
    if result.output.startswith(("No matches found", "No files matched")):
        return []
    return result.output.split("\n[", 1)[0].splitlines()


@pytest.fixture(autouse=True)
def _real_ripgrep(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(search.RG_ENV_VAR, raising=False)


@pytest.fixture
def no_ripgrep(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(search.RG_ENV_VAR, str(tmp_path / "nonexistent" / "rg"))


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text("needle outside the workspace\n")
    return folder


def make_too_deep(parent: Path, levels: int = 18) -> str:
    """A folder chain whose full path is longer than PATH_MAX (4096), with
    deep.txt at the bottom; returns the name of the top folder."""
    top = "d00" + "x" * 240
    fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for level in range(levels):
            name = f"d{level:02d}" + "x" * 240
            os.mkdir(name, dir_fd=fd)
            child = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
        leaf = os.open("deep.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(leaf, b"needle deep\n")
        os.close(leaf)
    finally:
        os.close(fd)
    return top


# ------------------------------------------------------------------------ grep


@pytest.mark.parametrize("pattern", ["-v", "--pre=sh", "--files", "-f/etc/passwd", "--help", "-e", "--"])
def test_grep_pattern_that_looks_like_a_flag_is_a_pattern(workspace: Path, pattern: str) -> None:
    flags = ["-v", "--pre=sh", "--files", "-f/etc/passwd", "--help", "-e"]
    write(workspace, "flags.txt", "".join(f"{p} here\n" for p in flags))
    write(workspace, "other.txt", "nothing to see\n")
    result = call("grep", workspace, pattern=pattern)
    assert result.status == ToolStatus.OK, result.output
    # `--` is a substring of several lines; every other pattern of exactly one.
    expected = [f"flags.txt:{n}:{flag} here" for n, flag in enumerate(flags, 1) if pattern in flag]
    assert body(result) == expected and expected
    assert result.metadata["engine"] == "ripgrep"


def test_grep_argv_puts_pattern_and_path_after_the_options() -> None:
    argv = search.ripgrep_argv("rg", "-weird-dir", "--pre=sh", "*.py", False)
    assert argv[-4:] == ["-e", "--pre=sh", "--", "-weird-dir"]
    assert "--no-config" in argv and "--sort=path" in argv and "--no-require-git" in argv
    # The exclusions come after the include: in rg the later glob wins.
    assert argv.index("--glob=*.py") < argv.index("--glob=!.git") < argv.index(f"--glob=!{ARTIFACTS_DIR}")


def test_grep_total_cap_across_files(workspace: Path) -> None:
    for f in range(30):
        write(workspace, f"src/f{f:02d}.txt", "".join(f"match {i}\n" for i in range(10)))
    result = call("grep", workspace, pattern="match")
    assert result.status == ToolStatus.OK
    lines = body(result)
    assert len(lines) == 50  # in total, not per file
    assert lines[0] == "src/f00.txt:1:match 0"
    assert lines[-1] == "src/f04.txt:10:match 9"
    assert "showing 50 of more than 50 matching lines" in result.output
    assert "narrow the pattern or path" in result.output
    assert result.metadata["matches"] == "50"
    assert result.metadata["truncated"] == "true"


def test_grep_exactly_at_the_cap(workspace: Path) -> None:
    for f in range(5):
        write(workspace, f"f{f}.txt", "".join(f"match {i}\n" for i in range(10)))
    result = call("grep", workspace, pattern="match")
    assert len(body(result)) == 50
    assert "showing" not in result.output
    assert result.metadata["truncated"] == "false" and result.metadata["total"] == "50"
    write(workspace, "g.txt", "match extra\n")
    result = call("grep", workspace, pattern="match")
    assert len(body(result)) == 50
    assert "showing 50 of more than 50 matching lines" in result.output


@pytest.mark.parametrize("engine", ["ripgrep", "python-fallback"])
def test_grep_flood_is_fast_and_bounded(workspace: Path, engine: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if engine == "python-fallback":
        monkeypatch.setenv(search.RG_ENV_VAR, "/nonexistent/rg")
    started_rgs: list[subprocess.Popen] = []

    class RecordingPopen(subprocess.Popen):  # type: ignore[type-arg]
        def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
            super().__init__(*args, **kwargs)
            started_rgs.append(self)

    monkeypatch.setattr(search.subprocess, "Popen", RecordingPopen)
    with open(workspace / "flood.txt", "wb") as handle:
        handle.write(b"match this line\n" * 1_000_000)
    started = time.monotonic()
    result = call("grep", workspace, pattern="match")
    elapsed = time.monotonic() - started
    assert result.metadata["engine"] == engine
    assert len(body(result)) == 50
    assert result.metadata["truncated"] == "true"
    assert len(result.output) < 5_000
    assert elapsed < 2.0, elapsed
    if engine == "ripgrep":
        # rg did not run to the end: we stopped reading and killed it.
        assert [p.returncode for p in started_rgs] == [-9]


def test_grep_no_match_is_ok(workspace: Path) -> None:
    write(workspace, "a.txt", "hello\n")
    result = call("grep", workspace, pattern="absent")
    assert result.status == ToolStatus.OK and not result.is_error
    assert result.output == "No matches found"
    assert result.metadata["matches"] == "0"


def test_grep_bad_regex_is_an_error_with_rgs_message(workspace: Path) -> None:
    write(workspace, "a.txt", "hello (\n")
    result = call("grep", workspace, pattern="hello (")
    assert result.is_error
    assert "regex parse error" in result.output and "unclosed group" in result.output
    assert "escape" in result.output


def test_grep_refuses_line_breaks_nul_and_huge_patterns(workspace: Path) -> None:
    result = call("grep", workspace, pattern="a\nb")
    assert result.is_error and "line break" in result.output
    assert "NUL byte" in call("grep", workspace, pattern="a\x00b").output
    assert "characters long" in call("grep", workspace, pattern="a" * 200_000).output
    assert "characters long" in call("glob", workspace, pattern="a" * 200_000).output


def test_grep_include_glob(workspace: Path) -> None:
    write(workspace, "a.py", "needle\n")
    write(workspace, "pkg/b.py", "needle\n")
    write(workspace, "c.txt", "needle\n")
    assert body(call("grep", workspace, pattern="needle", include="*.py")) == ["a.py:1:needle", "pkg/b.py:1:needle"]
    assert body(call("grep", workspace, pattern="needle", include="pkg/*.py")) == ["pkg/b.py:1:needle"]
    assert body(call("grep", workspace, pattern="needle", include="*.{py,txt}")) == [
        "a.py:1:needle", "c.txt:1:needle", "pkg/b.py:1:needle"
    ]
    bad = call("grep", workspace, pattern="needle", include="{a")
    assert bad.is_error and "glob" in bad.output


def test_grep_include_cannot_invert_or_readmit_excluded_folders(workspace: Path) -> None:
    write(workspace, "a.py", "needle\n")
    write(workspace, ".git/HEAD", "needle\n")
    write(workspace, f"{ARTIFACTS_DIR}/out.txt", "needle\n")
    result = call("grep", workspace, pattern="needle", include="!*.py")
    assert result.is_error and "positive glob" in result.output
    for include in ["*", "**", ".git/**", f"{ARTIFACTS_DIR}/*"]:
        lines = body(call("grep", workspace, pattern="needle", include=include))
        assert all(not line.startswith((".git/", ARTIFACTS_DIR)) for line in lines), (include, lines)


def test_grep_respects_gitignore_outside_a_git_repo(workspace: Path) -> None:
    write(workspace, ".gitignore", "ignored.txt\nbuild/\n")
    write(workspace, "kept.txt", "needle\n")
    write(workspace, "ignored.txt", "needle\n")
    write(workspace, "build/out.txt", "needle\n")
    assert not (workspace / ".git").exists()
    assert body(call("grep", workspace, pattern="needle")) == ["kept.txt:1:needle"]
    # A broken .gitignore line is passed on, not fatal.
    write(workspace, ".gitignore", "ignored.txt\nbuild/\n{oops\n")
    result = call("grep", workspace, pattern="needle")
    assert result.status == ToolStatus.OK and body(result) == ["kept.txt:1:needle"]
    assert "ripgrep also reported" in result.output and "{oops" in result.output


def test_grep_skips_git_and_artifacts_folders_but_searches_hidden_files(workspace: Path) -> None:
    write(workspace, ".git/config", "needle\n")
    # No .gitignore inside: the explicit --glob exclusion must do the work.
    write(workspace, f"{ARTIFACTS_DIR}/grep-x.txt", "needle\n")
    write(workspace, ".github/workflows/ci.yml", "needle: true\n")
    write(workspace, ".env.example", "NEEDLE=needle\n")
    write(workspace, "src/app.py", "needle = 1\n")
    assert body(call("grep", workspace, pattern="needle")) == [
        ".env.example:1:NEEDLE=needle",
        ".github/workflows/ci.yml:1:needle: true",
        "src/app.py:1:needle = 1",
    ]


def test_grep_paths_and_path_errors(workspace: Path, outside: Path) -> None:
    write(workspace, "src/a.py", "needle\n")
    write(workspace, "b.py", "needle\n")
    assert body(call("grep", workspace, pattern="needle", path="src")) == ["src/a.py:1:needle"]
    assert body(call("grep", workspace, pattern="needle", path="src/a.py")) == ["src/a.py:1:needle"]
    assert body(call("grep", workspace, pattern="NEEDLE", ignore_case=True, path="b.py")) == ["b.py:1:needle"]
    assert body(call("grep", workspace, pattern="NEEDLE", path="b.py")) == []
    for bad in ["../outside", str(outside), "/etc"]:
        result = call("grep", workspace, pattern="needle", path=bad)
        assert result.is_error and "outside the workspace" in result.output
    missing = call("grep", workspace, pattern="needle", path="nope")
    assert missing.is_error and "does not exist" in missing.output
    os.mkfifo(workspace / "fifo")
    fifo = call("grep", workspace, pattern="needle", path="fifo")
    assert fifo.is_error and "not a regular file" in fifo.output


def test_grep_does_not_follow_symlinks_out(workspace: Path, outside: Path) -> None:
    (workspace / "linkdir").symlink_to(outside, target_is_directory=True)
    (workspace / "linkfile.txt").symlink_to(outside / "secret.txt")
    write(workspace, "inside.txt", "needle inside\n")
    for engine in ["ripgrep", "python-fallback"]:
        os.environ.pop(search.RG_ENV_VAR, None)
        if engine == "python-fallback":
            os.environ[search.RG_ENV_VAR] = "/nonexistent/rg"
        try:
            result = call("grep", workspace, pattern="needle")
        finally:
            os.environ.pop(search.RG_ENV_VAR, None)
        assert result.metadata["engine"] == engine
        assert body(result) == ["inside.txt:1:needle inside"], engine
        assert "outside" not in result.output
        result = call("grep", workspace, pattern="needle", path="linkdir")
        assert result.is_error and "outside the workspace" in result.output


def test_grep_long_lines_use_rgs_marker(workspace: Path) -> None:
    write(workspace, "min.js", "var needle=1;" + "x" * 2000 + "\nshort needle\n")
    assert body(call("grep", workspace, pattern="needle")) == [
        "min.js:1:[Omitted long matching line]",
        "min.js:2:short needle",
    ]


def test_grep_timeout_kills_rg(workspace: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    stub = tmp_path / "slow-rg"
    stub.write_text("#!/bin/sh\nexec sleep 30\n")
    stub.chmod(0o755)
    monkeypatch.setenv(search.RG_ENV_VAR, str(stub))
    monkeypatch.setattr(search, "GREP_TIMEOUT_S", 0.5)
    write(workspace, "a.txt", "needle\n")
    started = time.monotonic()
    result = call("grep", workspace, pattern="needle")
    assert time.monotonic() - started < 5
    assert result.is_error and "timed out after 0.5 s" in result.output
    assert result.metadata["engine"] == "ripgrep"


def test_grep_reports_unreadable_paths(workspace: Path) -> None:
    write(workspace, "top.txt", "needle top\n")
    top = make_too_deep(workspace)
    try:
        for engine in ["ripgrep", "python-fallback"]:
            os.environ.pop(search.RG_ENV_VAR, None)
            if engine == "python-fallback":
                os.environ[search.RG_ENV_VAR] = "/nonexistent/rg"
            try:
                result = call("grep", workspace, pattern="needle")
            finally:
                os.environ.pop(search.RG_ENV_VAR, None)
            assert result.status == ToolStatus.OK, (engine, result.output)
            assert body(result) == ["top.txt:1:needle top"], engine
            assert "could not be read" in result.output, engine
            assert "too long" in result.output, engine
            assert result.metadata["io_errors"] == "1", engine
    finally:
        shutil.rmtree(workspace / top)


# --- the Python fallback ------------------------------------------------------------


@pytest.fixture
def mixed_tree(workspace: Path) -> Path:
    w = workspace
    write(w, ".gitignore", "*.log\nbuild/\n!keep.log\n/rootonly.txt\n")
    write(w, "a/x.txt", "needle one\nnothing\n")
    write(w, "a-b/y.txt", "Needle two\n")
    write(w, "a.txt", "needle\r\nno\r\nneedle crlf\r\n")
    write(w, "b.py", "def needle():\n    return 'needle'\n")
    write(w, ".hidden/h.txt", "needle hidden\n")
    write(w, ".env.example", "NEEDLE=1\n")
    write(w, "build/out.txt", "needle built\n")
    write(w, "app.log", "needle log\n")
    write(w, "keep.log", "needle kept\n")
    write(w, "rootonly.txt", "needle\n")
    write(w, "sub/rootonly.txt", "needle sub\n")
    write(w, "sub/.gitignore", "local.txt\n")
    write(w, "sub/local.txt", "needle local\n")
    write(w, "sub/deeper/z.md", "a needle in markdown\n")
    write(w, "long.txt", "needle " * 100 + "\n")
    write(w, "uni.txt", "naïve needle ünïcode\nNAÏVE\n")
    write(w, ".git/config", "needle in git\n")
    write(w, f"{ARTIFACTS_DIR}/out.txt", "needle artifact\n")
    write(w, "bin.dat", b"needle\x00binary\n")
    return w


FALLBACK_CASES = [
    dict(pattern="needle"),
    dict(pattern="needle", ignore_case=True),
    dict(pattern="naïve", ignore_case=True),
    dict(pattern="needle", include="*.txt"),
    dict(pattern="needle", include="*.log"),
    dict(pattern="needle", include="sub/**"),
    dict(pattern="needle", path="sub"),
    dict(pattern="needle", path="a.txt"),
    dict(pattern="needle", path="a.txt", include="*.py"),  # a file named explicitly is always searched
    dict(pattern="needle", path="build"),  # so is a folder named explicitly, even if ignored
    dict(pattern=r"ne+dle\b"),
    dict(pattern="^def "),
    dict(pattern="crlf$"),
    dict(pattern="absent"),
]


@pytest.mark.parametrize("case", FALLBACK_CASES, ids=[json.dumps(c) for c in FALLBACK_CASES])
def test_fallback_matches_ripgrep(mixed_tree: Path, monkeypatch: pytest.MonkeyPatch, case: dict) -> None:
    with_rg = call("grep", mixed_tree, **case)
    monkeypatch.setenv(search.RG_ENV_VAR, "/nonexistent/rg")
    fallback = call("grep", mixed_tree, **case)
    assert with_rg.metadata["engine"] == "ripgrep"
    assert fallback.metadata["engine"] == "python-fallback"
    assert fallback.output == with_rg.output
    assert fallback.status == with_rg.status == ToolStatus.OK


def test_fallback_matches_ripgrep_at_the_cap(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for f in range(30):
        write(workspace, f"d{f % 3}/f{f:02d}.txt", "".join(f"match {i}\n" for i in range(10)))
    with_rg = call("grep", workspace, pattern="match")
    monkeypatch.setenv(search.RG_ENV_VAR, "/nonexistent/rg")
    fallback = call("grep", workspace, pattern="match")
    assert fallback.output == with_rg.output
    assert len(body(fallback)) == 50


def test_fallback_warns_and_reports_regex_errors(
    workspace: Path, no_ripgrep: None, caplog: pytest.LogCaptureFixture
) -> None:
    write(workspace, "a.txt", "needle\n")
    with caplog.at_level(logging.WARNING, logger="activities.search.grep"):
        result = call("grep", workspace, pattern="needle")
    assert body(result) == ["a.txt:1:needle"]
    assert result.metadata["engine"] == "python-fallback"
    assert "ripgrep unavailable" in result.metadata["warning"]
    assert any("fallback" in r.getMessage() for r in caplog.records)
    bad = call("grep", workspace, pattern="(")
    assert bad.is_error and "regex parse error" in bad.output and "Python" in bad.output


# ------------------------------------------------------------------------ glob


@pytest.fixture
def source_tree(workspace: Path) -> Path:
    for rel in [
        "README.md",
        "src/a.py",
        "src/pkg/b.py",
        "src/pkg/deep/c.py",
        "src/pkg/notes.txt",
        ".github/workflows/ci.yml",
        ".venv/lib/site.py",
        ".env.example",
        ".git/hooks/pre-commit.py",
        f"{ARTIFACTS_DIR}/glob-x.txt",
    ]:
        write(workspace, rel, "x\n")
    (workspace / "empty-dir").mkdir()
    return workspace


def test_glob_globstar_and_braces(source_tree: Path) -> None:
    py = ["src/a.py", "src/pkg/b.py", "src/pkg/deep/c.py"]
    assert body(call("glob", source_tree, pattern="**/*.py")) == py
    assert body(call("glob", source_tree, pattern="src/**/*.py")) == py
    assert body(call("glob", source_tree, pattern="**/*.py", path="src/pkg")) == py[1:]
    assert body(call("glob", source_tree, pattern="./src/*.py")) == ["src/a.py"]
    assert body(call("glob", source_tree, pattern="**/*.{md,txt}")) == ["README.md", "src/pkg/notes.txt"]
    # Files only: folders (even empty ones) are never listed.
    assert body(call("glob", source_tree, pattern="*")) == ["README.md"]
    result = call("glob", source_tree, pattern="**/*.py")
    assert result.metadata == {"matches": "3", "shown": "3", "truncated": "false"}


def test_glob_hidden_names_need_an_explicit_dot(source_tree: Path) -> None:
    assert body(call("glob", source_tree, pattern="**/*.yml")) == []
    assert body(call("glob", source_tree, pattern=".github/**/*.yml")) == [".github/workflows/ci.yml"]
    assert body(call("glob", source_tree, pattern=".*")) == [".env.example"]
    assert "site.py" not in call("glob", source_tree, pattern="**/*.py").output
    assert body(call("glob", source_tree, pattern=".venv/**/*.py")) == [".venv/lib/site.py"]


def test_glob_never_lists_git_or_artifacts(source_tree: Path) -> None:
    for pattern in [".git/**/*", ".git/hooks/*", f"{ARTIFACTS_DIR}/*", ".*/**/*", "**/*.txt", "**/*.py"]:
        listed = body(call("glob", source_tree, pattern=pattern))
        assert not any(p.startswith((".git/", ARTIFACTS_DIR)) for p in listed), (pattern, listed)
    # Pointing path at the artifacts folder is an explicit request (e.g. to
    # find a saved output) and is honoured.
    assert body(call("glob", source_tree, pattern="*", path=ARTIFACTS_DIR)) == [f"{ARTIFACTS_DIR}/glob-x.txt"]


def test_glob_no_match_is_ok(source_tree: Path) -> None:
    result = call("glob", source_tree, pattern="**/*.rs")
    assert result.status == ToolStatus.OK
    assert result.output.startswith("No files matched '**/*.rs'")
    assert result.metadata["matches"] == "0"


def test_glob_cap_with_total_and_artifact(workspace: Path) -> None:
    for d in range(3):
        folder = workspace / f"dir{d}"
        folder.mkdir()
        for f in range(400):
            (folder / f"f{f:04d}.txt").write_bytes(b"")
    result = call("glob", workspace, pattern="**/*.txt")
    lines = body(result)
    assert len(lines) == 1000
    assert lines == sorted(lines)
    assert lines[0] == "dir0/f0000.txt" and lines[-1] == "dir2/f0199.txt"
    assert "showing 1000 of 1200 matching files, sorted by path" in result.output
    assert result.metadata["matches"] == "1200" and result.metadata["shown"] == "1000"
    assert result.metadata["truncated"] == "true"
    saved = (workspace / result.metadata["full_output"]).read_text().splitlines()
    assert len(saved) == 1200 and saved[:1000] == lines


def test_glob_order_is_by_path_folder_by_folder(workspace: Path) -> None:
    for rel in ["b.txt", "a.txt", "a/x.txt", "a-b/y.txt", "B/z.txt", "_u.txt", "é.txt", "a/b/c.txt", "a/a.txt"]:
        write(workspace, rel, "needle\n")
    lines = body(call("glob", workspace, pattern="**/*.txt"))
    assert lines == ["B/z.txt", "_u.txt", "a/a.txt", "a/b/c.txt", "a/x.txt", "a-b/y.txt", "a.txt", "b.txt", "é.txt"]
    # The same order grep uses (rg --sort path).
    grep_paths = [line.split(":", 1)[0] for line in body(call("grep", workspace, pattern="needle"))]
    assert grep_paths == lines


_NAMES = st.text(alphabet="ab.-_Zé", min_size=1, max_size=4).filter(lambda s: s not in (".", ".."))


@given(st.lists(st.lists(_NAMES, min_size=1, max_size=3), max_size=30))
@settings(max_examples=200, deadline=None)
def test_glob_sort_matches_a_per_component_sort(parts: list[list[str]]) -> None:
    paths = list({"/".join(p) for p in parts})
    assert search._sorted_paths(paths, "") == sorted(paths, key=lambda p: p.split("/"))
    assert search._sorted_paths(paths, "pre/") == ["pre/" + p for p in sorted(paths, key=lambda p: p.split("/"))]


@pytest.mark.parametrize(
    "pattern",
    ["../*", "src/../../*", "**/../secret.txt", "{..,src}/*", "src/{a,..}/x", "\\.\\./x", "/etc/*", "/**/passwd"],
)
def test_glob_pattern_cannot_escape(source_tree: Path, pattern: str) -> None:
    result = call("glob", source_tree, pattern=pattern)
    assert result.is_error, result.output
    assert "path" in result.output  # tells the model to pass path instead


def test_glob_path_errors(source_tree: Path, outside: Path) -> None:
    for bad in ["..", str(outside), "../outside"]:
        result = call("glob", source_tree, pattern="*", path=bad)
        assert result.is_error and "outside the workspace" in result.output
    assert "is a file" in call("glob", source_tree, pattern="*", path="README.md").output
    assert "does not exist" in call("glob", source_tree, pattern="*", path="nope").output
    assert "1000 alternatives" in call("glob", source_tree, pattern="{1..5000}").output


def test_glob_does_not_follow_symlinks_out(workspace: Path, outside: Path) -> None:
    write(workspace, "inside/a.txt", "x\n")
    (workspace / "outlink").symlink_to(outside, target_is_directory=True)
    (workspace / "inside" / "deeplink").symlink_to(outside, target_is_directory=True)
    # Stock wcmatch: `**` skips symlinked folders, but a plain component
    # descends into them -- the reason the tool replaces the directory scan.
    assert wcglob.glob("**/secret.txt", flags=search.GLOB_FLAGS, root_dir=str(workspace)) == []
    assert wcglob.glob("*/secret.txt", flags=search.GLOB_FLAGS, root_dir=str(workspace)) == ["outlink/secret.txt"]
    patterns = ["**/*", "*/*", "*/*/*", "outlink/*", "outlink/**/*", "*/secret.txt", "inside/deeplink/*", "**/*/secret.txt"]
    for pattern in patterns:
        listed = body(call("glob", workspace, pattern=pattern))
        assert not any("secret" in p for p in listed), (pattern, listed)
    # The links themselves are entries of the workspace and are listed.
    assert body(call("glob", workspace, pattern="**/*")) == ["inside/a.txt", "inside/deeplink", "outlink"]


def test_glob_symlink_loops_do_not_hang(workspace: Path) -> None:
    write(workspace, "a/file.txt", "x\n")
    (workspace / "a" / "up").symlink_to("..", target_is_directory=True)
    (workspace / "a" / "self").symlink_to("self")
    (workspace / "ring1").symlink_to("ring2")
    (workspace / "ring2").symlink_to("ring1")
    started = time.monotonic()
    result = call("glob", workspace, pattern="**/*")
    assert time.monotonic() - started < 5
    assert body(result) == ["a/file.txt", "a/self", "a/up", "ring1", "ring2"]
    assert call("grep", workspace, pattern="x").output == "a/file.txt:1:x"


def test_glob_reports_a_folder_it_cannot_read(workspace: Path) -> None:
    write(workspace, "top.txt", "x\n")
    top = make_too_deep(workspace)
    try:
        result = call("glob", workspace, pattern="**/*.txt")
    finally:
        shutil.rmtree(workspace / top)
    assert result.status == ToolStatus.OK
    assert body(result) == ["top.txt"]
    assert "some folders could not be read" in result.output
    assert "File name too long" in result.output
    assert result.metadata["io_errors"] == "1"


def test_very_deep_folders(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(workspace, "top.txt", "needle top\n")
    deep = "/".join(["d"] * 250)
    write(workspace, f"{deep}/deep.txt", "needle deep\n")
    # wcmatch recurses per level: glob stops at GLOB_MAX_DEPTH and says so
    # instead of dying on Python's recursion limit.
    result = call("glob", workspace, pattern="**/*.txt")
    assert result.status == ToolStatus.OK
    assert body(result) == ["top.txt"]
    assert f"nested more than {search.GLOB_MAX_DEPTH} folders deep" in result.output
    expected = [f"{deep}/deep.txt:1:needle deep", "top.txt:1:needle top"]
    assert body(call("grep", workspace, pattern="needle")) == expected
    monkeypatch.setenv(search.RG_ENV_VAR, "/nonexistent/rg")
    assert body(call("grep", workspace, pattern="needle")) == expected  # iterative walk


def test_timeouts_become_error_results(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(workspace, "a/b.txt", "needle\n")
    monkeypatch.setattr(fs_glob, "GLOB_TIMEOUT_S", 0.0)
    monkeypatch.setattr(search, "GREP_TIMEOUT_S", 0.0)
    result = call("glob", workspace, pattern="**/*")
    assert result.is_error and "glob timed out" in result.output
    monkeypatch.setenv(search.RG_ENV_VAR, "/nonexistent/rg")
    result = call("grep", workspace, pattern="needle")
    assert result.is_error and "grep timed out" in result.output
    assert result.metadata["engine"] == "python-fallback"


# --- chmod 000, seen by a process without the DAC capabilities ---------------------

_CHILD = r"""
import json, os, sys
from activities.search.grep import glob_files, grep
from core.contracts import ToolRequest
from core.tools.specs import GlobArgs, GrepArgs
root = sys.argv[1]
def req(tool):
    return ToolRequest(call_id="c", tool=tool, workspace_root=root, arguments={})
out = {"can_list": os.access(os.path.join(root, "locked"), os.R_OK)}
out["glob"] = glob_files(req("glob"), GlobArgs(pattern="**/*.txt")).model_dump(mode="json")
out["glob_locked"] = glob_files(req("glob"), GlobArgs(pattern="*", path="locked")).model_dump(mode="json")
out["grep"] = grep(req("grep"), GrepArgs(pattern="needle")).model_dump(mode="json")
os.environ["AGENT_TOOLS_RG"] = "/nonexistent/rg"
out["grep_fallback"] = grep(req("grep"), GrepArgs(pattern="needle")).model_dump(mode="json")
print(json.dumps(out))
"""

_PR_CAPBSET_DROP = 24
_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH = 1, 2


def _drop_dac_capabilities() -> None:  # runs in the child before exec
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH):
        if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")


def test_unreadable_folder_is_reported_by_both_tools(workspace: Path) -> None:
    write(workspace, "open.txt", "needle open\n")
    write(workspace, "locked/inner/hidden.txt", "needle locked\n")
    (workspace / "locked").chmod(0)
    try:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        env.pop(search.RG_ENV_VAR, None)
        kwargs: dict = {}
        if os.geteuid() == 0:
            if not sys.platform.startswith("linux"):
                pytest.skip("dropping capabilities needs Linux")
            kwargs["preexec_fn"] = _drop_dac_capabilities
        try:
            proc = subprocess.run(
                [sys.executable, "-c", _CHILD, str(workspace)],
                cwd=REPO, env=env, capture_output=True, text=True, timeout=60, **kwargs,
            )
        except subprocess.SubprocessError as exc:
            pytest.skip(f"cannot start a process without DAC capabilities: {exc}")
        assert proc.returncode == 0, proc.stderr
        out = json.loads(proc.stdout)
    finally:
        (workspace / "locked").chmod(0o755)
    assert out["can_list"] is False  # the child really cannot read it

    glob_result = out["glob"]
    assert glob_result["status"] == "ok"
    assert glob_result["output"].splitlines()[0] == "open.txt"
    assert "locked: Permission denied" in glob_result["output"]
    assert glob_result["metadata"]["io_errors"] == "1"
    locked = out["glob_locked"]
    assert locked["is_error"] and "cannot read folder 'locked'" in locked["output"]

    for key, engine in [("grep", "ripgrep"), ("grep_fallback", "python-fallback")]:
        result = out[key]
        assert result["metadata"]["engine"] == engine
        assert result["status"] == "ok", result["output"]
        assert result["output"].splitlines()[0] == "open.txt:1:needle open"
        assert "locked: Permission denied" in result["output"], result["output"]
        assert "needle locked" not in result["output"]


# ------------------------------------------------------------------ on the server


async def test_grep_activity_on_the_dev_server(client, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    write(workspace, "src/app.py", "def main():\n    return --pre=sh\n")
    request = ToolRequest(
        call_id="call-grep", tool="grep", workspace_root=str(workspace),
        arguments={"pattern": "--pre=sh", "include": "*.py"},
    )
    result = await run_tool_on_server(client, [grep_activity], request)
    assert result.status == ToolStatus.OK
    assert result.tool_call_id == "call-grep" and result.name == "grep"
    assert result.output == "src/app.py:2:    return --pre=sh"
    assert result.metadata["engine"] == "ripgrep"
    assert result.elapsed_ms > 0


async def test_glob_activity_on_the_dev_server(  # type: ignore[no-untyped-def]
    client, workspace: Path, outside: Path
) -> None:
    write(workspace, "src/a.py", "x\n")
    write(workspace, "src/b/c.py", "x\n")
    ok = await run_tool_on_server(
        client, [glob_activity],
        ToolRequest(call_id="call-glob", tool="glob", workspace_root=str(workspace), arguments={"pattern": "**/*.py"}),
    )
    assert ok.status == ToolStatus.OK and ok.output == "src/a.py\nsrc/b/c.py"
    refused = await run_tool_on_server(
        client, [glob_activity],
        ToolRequest(
            call_id="call-glob-2", tool="glob", workspace_root=str(workspace),
            arguments={"pattern": "*", "path": str(outside)},
        ),
    )
    assert refused.is_error and "outside the workspace" in refused.output
