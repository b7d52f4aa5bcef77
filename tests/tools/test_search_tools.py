"""grep on real files with the real rg binary and with the Python fallback
(glob, unreadable folders and the activities on the dev server:
test_search_glob.py).

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

import json
import logging
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from activities.search import grep as search
from activities.search.grep import grep
from activities.workspace.paths import ARTIFACTS_DIR
from core.contracts import ToolStatus
from tests.tools.search_helpers import body, make_too_deep, run, write
from tests.tools.search_helpers import _real_ripgrep, no_ripgrep, outside  # noqa: F401 - fixtures


# ------------------------------------------------------------------------ grep


@pytest.mark.parametrize("pattern", ["-v", "--pre=sh", "--files", "-f/etc/passwd", "--help", "-e", "--"])
def test_grep_pattern_that_looks_like_a_flag_is_a_pattern(workspace: Path, pattern: str) -> None:
    flags = ["-v", "--pre=sh", "--files", "-f/etc/passwd", "--help", "-e"]
    write(workspace, "flags.txt", "".join(f"{p} here\n" for p in flags))
    write(workspace, "other.txt", "nothing to see\n")
    result = run("grep", workspace, pattern=pattern)
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
    result = run("grep", workspace, pattern="match")
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
    result = run("grep", workspace, pattern="match")
    assert len(body(result)) == 50
    assert "showing" not in result.output
    assert result.metadata["truncated"] == "false" and result.metadata["total"] == "50"
    write(workspace, "g.txt", "match extra\n")
    result = run("grep", workspace, pattern="match")
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
    result = run("grep", workspace, pattern="match")
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
    result = run("grep", workspace, pattern="absent")
    assert result.status == ToolStatus.OK and not result.is_error
    assert result.output == "No matches found"
    assert result.metadata["matches"] == "0"


def test_grep_bad_regex_is_an_error_with_rgs_message(workspace: Path) -> None:
    write(workspace, "a.txt", "hello (\n")
    result = run("grep", workspace, pattern="hello (")
    assert result.is_error
    assert "regex parse error" in result.output and "unclosed group" in result.output
    assert "escape" in result.output


def test_grep_refuses_line_breaks_nul_and_huge_patterns(workspace: Path) -> None:
    result = run("grep", workspace, pattern="a\nb")
    assert result.is_error and "line break" in result.output
    assert "NUL byte" in run("grep", workspace, pattern="a\x00b").output
    assert "characters long" in run("grep", workspace, pattern="a" * 200_000).output
    assert "characters long" in run("glob", workspace, pattern="a" * 200_000).output


def test_grep_include_glob(workspace: Path) -> None:
    write(workspace, "a.py", "needle\n")
    write(workspace, "pkg/b.py", "needle\n")
    write(workspace, "c.txt", "needle\n")
    assert body(run("grep", workspace, pattern="needle", include="*.py")) == ["a.py:1:needle", "pkg/b.py:1:needle"]
    assert body(run("grep", workspace, pattern="needle", include="pkg/*.py")) == ["pkg/b.py:1:needle"]
    assert body(run("grep", workspace, pattern="needle", include="*.{py,txt}")) == [
        "a.py:1:needle", "c.txt:1:needle", "pkg/b.py:1:needle"
    ]
    bad = run("grep", workspace, pattern="needle", include="{a")
    assert bad.is_error and "glob" in bad.output


def test_grep_include_cannot_invert_or_readmit_excluded_folders(workspace: Path) -> None:
    write(workspace, "a.py", "needle\n")
    write(workspace, ".git/HEAD", "needle\n")
    write(workspace, f"{ARTIFACTS_DIR}/out.txt", "needle\n")
    result = run("grep", workspace, pattern="needle", include="!*.py")
    assert result.is_error and "positive glob" in result.output
    for include in ["*", "**", ".git/**", f"{ARTIFACTS_DIR}/*"]:
        lines = body(run("grep", workspace, pattern="needle", include=include))
        assert all(not line.startswith((".git/", ARTIFACTS_DIR)) for line in lines), (include, lines)


def test_grep_respects_gitignore_outside_a_git_repo(workspace: Path) -> None:
    write(workspace, ".gitignore", "ignored.txt\nbuild/\n")
    write(workspace, "kept.txt", "needle\n")
    write(workspace, "ignored.txt", "needle\n")
    write(workspace, "build/out.txt", "needle\n")
    assert not (workspace / ".git").exists()
    assert body(run("grep", workspace, pattern="needle")) == ["kept.txt:1:needle"]
    # A broken .gitignore line is passed on, not fatal.
    write(workspace, ".gitignore", "ignored.txt\nbuild/\n{oops\n")
    result = run("grep", workspace, pattern="needle")
    assert result.status == ToolStatus.OK and body(result) == ["kept.txt:1:needle"]
    assert "ripgrep also reported" in result.output and "{oops" in result.output


def test_grep_skips_git_and_artifacts_folders_but_searches_hidden_files(workspace: Path) -> None:
    write(workspace, ".git/config", "needle\n")
    # No .gitignore inside: the explicit --glob exclusion must do the work.
    write(workspace, f"{ARTIFACTS_DIR}/grep-x.txt", "needle\n")
    write(workspace, ".github/workflows/ci.yml", "needle: true\n")
    write(workspace, ".env.example", "NEEDLE=needle\n")
    write(workspace, "src/app.py", "needle = 1\n")
    assert body(run("grep", workspace, pattern="needle")) == [
        ".env.example:1:NEEDLE=needle",
        ".github/workflows/ci.yml:1:needle: true",
        "src/app.py:1:needle = 1",
    ]


def test_grep_paths_and_path_errors(workspace: Path, outside: Path) -> None:
    write(workspace, "src/a.py", "needle\n")
    write(workspace, "b.py", "needle\n")
    assert body(run("grep", workspace, pattern="needle", path="src")) == ["src/a.py:1:needle"]
    assert body(run("grep", workspace, pattern="needle", path="src/a.py")) == ["src/a.py:1:needle"]
    assert body(run("grep", workspace, pattern="NEEDLE", ignore_case=True, path="b.py")) == ["b.py:1:needle"]
    assert body(run("grep", workspace, pattern="NEEDLE", path="b.py")) == []
    for bad in ["../outside", str(outside), "/etc"]:
        result = run("grep", workspace, pattern="needle", path=bad)
        assert result.is_error and "outside the workspace" in result.output
    missing = run("grep", workspace, pattern="needle", path="nope")
    assert missing.is_error and "does not exist" in missing.output
    os.mkfifo(workspace / "fifo")
    fifo = run("grep", workspace, pattern="needle", path="fifo")
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
            result = run("grep", workspace, pattern="needle")
        finally:
            os.environ.pop(search.RG_ENV_VAR, None)
        assert result.metadata["engine"] == engine
        assert body(result) == ["inside.txt:1:needle inside"], engine
        assert "outside" not in result.output
        result = run("grep", workspace, pattern="needle", path="linkdir")
        assert result.is_error and "outside the workspace" in result.output


def test_grep_long_lines_use_rgs_marker(workspace: Path) -> None:
    write(workspace, "min.js", "var needle=1;" + "x" * 2000 + "\nshort needle\n")
    assert body(run("grep", workspace, pattern="needle")) == [
        "min.js:1:[Omitted long matching line]",
        "min.js:2:short needle",
    ]


def _use_a_hanging_rg(workspace: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """grep runs an rg that never ends, with a 0.5 s timeout, over a.txt."""
    stub = tmp_path / "slow-rg"
    stub.write_text("#!/bin/sh\nexec sleep 30\n")
    stub.chmod(0o755)
    monkeypatch.setenv(search.RG_ENV_VAR, str(stub))
    monkeypatch.setattr(search, "GREP_TIMEOUT_S", 0.5)
    write(workspace, "a.txt", "needle\n")


def test_grep_timeout_kills_rg(workspace: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _use_a_hanging_rg(workspace, monkeypatch, tmp_path)
    started = time.monotonic()
    result = run("grep", workspace, pattern="needle")
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
                result = run("grep", workspace, pattern="needle")
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
    with_rg = run("grep", mixed_tree, **case)
    monkeypatch.setenv(search.RG_ENV_VAR, "/nonexistent/rg")
    fallback = run("grep", mixed_tree, **case)
    assert with_rg.metadata["engine"] == "ripgrep"
    assert fallback.metadata["engine"] == "python-fallback"
    assert fallback.output == with_rg.output
    assert fallback.status == with_rg.status == ToolStatus.OK


def test_fallback_matches_ripgrep_at_the_cap(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for f in range(30):
        write(workspace, f"d{f % 3}/f{f:02d}.txt", "".join(f"match {i}\n" for i in range(10)))
    with_rg = run("grep", workspace, pattern="match")
    monkeypatch.setenv(search.RG_ENV_VAR, "/nonexistent/rg")
    fallback = run("grep", workspace, pattern="match")
    assert fallback.output == with_rg.output
    assert len(body(fallback)) == 50


def test_fallback_warns_and_reports_regex_errors(
    workspace: Path, no_ripgrep: None, caplog: pytest.LogCaptureFixture
) -> None:
    write(workspace, "a.txt", "needle\n")
    with caplog.at_level(logging.WARNING, logger="activities.search.grep"):
        result = run("grep", workspace, pattern="needle")
    assert body(result) == ["a.txt:1:needle"]
    assert result.metadata["engine"] == "python-fallback"
    assert "ripgrep unavailable" in result.metadata["warning"]
    assert any("fallback" in r.getMessage() for r in caplog.records)
    bad = run("grep", workspace, pattern="(")
    assert bad.is_error and "regex parse error" in bad.output and "Python" in bad.output


def test_a_hanging_rg_costs_its_own_search_not_the_jail_of_later_ones(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The jail's first-use probe must not run the configured rg: one that
    hangs would stall that search for the probe's timeout and then turn the
    jail off for every later search of the worker."""
    from activities.search import jail

    root_fd = os.open(workspace, os.O_RDONLY)
    try:
        jailed = jail.jail_argv(["/usr/bin/true"], root_fd, str(workspace)) is not None
    finally:
        os.close(root_fd)
    if not jailed:
        pytest.skip("no working bubblewrap here: nothing to turn off")
    monkeypatch.setattr(jail, "_probed", {})  # as in a fresh worker process
    _use_a_hanging_rg(workspace, monkeypatch, tmp_path)
    started = time.monotonic()
    hung = run("grep", workspace, pattern="needle")
    assert time.monotonic() - started < 5 and "timed out after 0.5 s" in hung.output
    monkeypatch.delenv(search.RG_ENV_VAR)
    later = run("grep", workspace, pattern="needle")
    assert body(later) == ["a.txt:1:needle"]
    assert "confinement" not in later.metadata, later.metadata  # still jailed
