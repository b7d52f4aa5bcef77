"""glob on real files, folders neither tool can read, and one run of each
search activity on the dev server (notes on I/O errors as root:
test_search_tools.py)."""

from __future__ import annotations

import ctypes
import json
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
from activities.search.grep import glob_files, grep
from activities.workspace.paths import ARTIFACTS_DIR
from core.contracts import ToolRequest, ToolStatus
from tests.support import run_tool_on_server, worker_activities
from tests.tools.search_helpers import REPO, body, make_too_deep, run, write
from tests.tools.search_helpers import _real_ripgrep, outside  # noqa: F401 - fixtures


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
    assert body(run("glob", source_tree, pattern="**/*.py")) == py
    assert body(run("glob", source_tree, pattern="src/**/*.py")) == py
    assert body(run("glob", source_tree, pattern="**/*.py", path="src/pkg")) == py[1:]
    assert body(run("glob", source_tree, pattern="./src/*.py")) == ["src/a.py"]
    assert body(run("glob", source_tree, pattern="**/*.{md,txt}")) == ["README.md", "src/pkg/notes.txt"]
    # Files only: folders (even empty ones) are never listed.
    assert body(run("glob", source_tree, pattern="*")) == ["README.md"]
    result = run("glob", source_tree, pattern="**/*.py")
    assert result.metadata == {"matches": "3", "shown": "3", "truncated": "false"}


def test_glob_hidden_names_need_an_explicit_dot(source_tree: Path) -> None:
    assert body(run("glob", source_tree, pattern="**/*.yml")) == []
    assert body(run("glob", source_tree, pattern=".github/**/*.yml")) == [".github/workflows/ci.yml"]
    assert body(run("glob", source_tree, pattern=".*")) == [".env.example"]
    assert "site.py" not in run("glob", source_tree, pattern="**/*.py").output
    assert body(run("glob", source_tree, pattern=".venv/**/*.py")) == [".venv/lib/site.py"]


def test_glob_never_lists_git_or_artifacts(source_tree: Path) -> None:
    for pattern in [".git/**/*", ".git/hooks/*", f"{ARTIFACTS_DIR}/*", ".*/**/*", "**/*.txt", "**/*.py"]:
        listed = body(run("glob", source_tree, pattern=pattern))
        assert not any(p.startswith((".git/", ARTIFACTS_DIR)) for p in listed), (pattern, listed)
    # Pointing path at the artifacts folder is an explicit request (e.g. to
    # find a saved output) and is honoured.
    assert body(run("glob", source_tree, pattern="*", path=ARTIFACTS_DIR)) == [f"{ARTIFACTS_DIR}/glob-x.txt"]


def test_glob_no_match_is_ok(source_tree: Path) -> None:
    result = run("glob", source_tree, pattern="**/*.rs")
    assert result.status == ToolStatus.OK
    assert result.output.startswith("No files matched '**/*.rs'")
    assert result.metadata["matches"] == "0"


def test_glob_cap_with_total_and_artifact(workspace: Path) -> None:
    for d in range(3):
        folder = workspace / f"dir{d}"
        folder.mkdir()
        for f in range(400):
            (folder / f"f{f:04d}.txt").write_bytes(b"")
    result = run("glob", workspace, pattern="**/*.txt")
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
    lines = body(run("glob", workspace, pattern="**/*.txt"))
    assert lines == ["B/z.txt", "_u.txt", "a/a.txt", "a/b/c.txt", "a/x.txt", "a-b/y.txt", "a.txt", "b.txt", "é.txt"]
    # The same order grep uses (rg --sort path).
    grep_paths = [line.split(":", 1)[0] for line in body(run("grep", workspace, pattern="needle"))]
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
    result = run("glob", source_tree, pattern=pattern)
    assert result.is_error, result.output
    assert "path" in result.output  # tells the model to pass path instead


def test_glob_path_errors(source_tree: Path, outside: Path) -> None:
    for bad in ["..", str(outside), "../outside"]:
        result = run("glob", source_tree, pattern="*", path=bad)
        assert result.is_error and "outside the workspace" in result.output
    assert "is a file" in run("glob", source_tree, pattern="*", path="README.md").output
    assert "does not exist" in run("glob", source_tree, pattern="*", path="nope").output
    assert "1000 alternatives" in run("glob", source_tree, pattern="{1..5000}").output


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
        listed = body(run("glob", workspace, pattern=pattern))
        assert not any("secret" in p for p in listed), (pattern, listed)
    # The links themselves are entries of the workspace and are listed.
    assert body(run("glob", workspace, pattern="**/*")) == ["inside/a.txt", "inside/deeplink", "outlink"]


def test_glob_symlink_loops_do_not_hang(workspace: Path) -> None:
    write(workspace, "a/file.txt", "x\n")
    (workspace / "a" / "up").symlink_to("..", target_is_directory=True)
    (workspace / "a" / "self").symlink_to("self")
    (workspace / "ring1").symlink_to("ring2")
    (workspace / "ring2").symlink_to("ring1")
    started = time.monotonic()
    result = run("glob", workspace, pattern="**/*")
    assert time.monotonic() - started < 5
    assert body(result) == ["a/file.txt", "a/self", "a/up", "ring1", "ring2"]
    assert run("grep", workspace, pattern="x").output == "a/file.txt:1:x"


def test_glob_reports_a_folder_it_cannot_read(workspace: Path) -> None:
    write(workspace, "top.txt", "x\n")
    top = make_too_deep(workspace)
    try:
        result = run("glob", workspace, pattern="**/*.txt")
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
    result = run("glob", workspace, pattern="**/*.txt")
    assert result.status == ToolStatus.OK
    assert body(result) == ["top.txt"]
    assert f"nested more than {search.GLOB_MAX_DEPTH} folders deep" in result.output
    expected = [f"{deep}/deep.txt:1:needle deep", "top.txt:1:needle top"]
    assert body(run("grep", workspace, pattern="needle")) == expected
    monkeypatch.setenv(search.RG_ENV_VAR, "/nonexistent/rg")
    assert body(run("grep", workspace, pattern="needle")) == expected  # iterative walk


def test_timeouts_become_error_results(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(workspace, "a/b.txt", "needle\n")
    monkeypatch.setattr(fs_glob, "GLOB_TIMEOUT_S", 0.0)
    monkeypatch.setattr(search, "GREP_TIMEOUT_S", 0.0)
    result = run("glob", workspace, pattern="**/*")
    assert result.is_error and "glob timed out" in result.output
    monkeypatch.setenv(search.RG_ENV_VAR, "/nonexistent/rg")
    result = run("grep", workspace, pattern="needle")
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
    result = await run_tool_on_server(client, worker_activities(workspace, "grep"), request)
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
        client, worker_activities(workspace, "glob"),
        ToolRequest(call_id="call-glob", tool="glob", workspace_root=str(workspace), arguments={"pattern": "**/*.py"}),
    )
    assert ok.status == ToolStatus.OK and ok.output == "src/a.py\nsrc/b/c.py"
    refused = await run_tool_on_server(
        client, worker_activities(workspace, "glob"),
        ToolRequest(
            call_id="call-glob-2", tool="glob", workspace_root=str(workspace),
            arguments={"pattern": "*", "path": str(outside)},
        ),
    )
    assert refused.is_error and "outside the workspace" in refused.output
