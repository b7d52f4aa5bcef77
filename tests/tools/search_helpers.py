"""Helpers and fixtures of the search tool tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from activities.search import grep as search
from activities.base import parse_request_args
from activities.search.grep import glob_files, grep
from activities.workspace.paths import WorkspaceError
from core.contracts import ToolRequest, ToolResult

REPO = Path(__file__).resolve().parents[2]
TOOLS = {"grep": grep, "glob": glob_files}


def run(tool: str, root: Path, **arguments: object) -> ToolResult:
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
