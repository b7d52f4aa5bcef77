"""activities.workspace.root and the error paths every file and search tool shares:
names with control characters refused, OS errors such as a
300-character name turned into error results naming the path, and
the openat2 and component-by-component resolutions agreeing."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any, Callable

import pytest

import activities.workspace.root as fs_root
from activities.files.write import edit_file, read_file, write_file
from activities.workspace.root import WorkspaceError, WorkspaceRoot
from activities.search.grep import glob_files, grep
from core.contracts import Snapshot, ToolRequest, ToolResult, ToolStatus
from core.tools.specs import EditFileArgs, GlobArgs, GrepArgs, ReadFileArgs, WriteFileArgs

TOOLS: dict[str, tuple[Callable[..., ToolResult], Any, dict[str, Any]]] = {
    "read_file": (read_file, ReadFileArgs, {}),
    "write_file": (write_file, WriteFileArgs, {"content": "x\n"}),
    "edit_file": (edit_file, EditFileArgs, {"old_string": "a", "new_string": "b"}),
    "glob": (glob_files, GlobArgs, {"pattern": "*"}),
    "grep": (grep, GrepArgs, {"pattern": "a"}),
}


def run(ws: Path, tool: str, path: str, snapshot: Snapshot | None = None, **extra: Any) -> ToolResult:
    fn, model, defaults = TOOLS[tool]
    arguments = {**defaults, "path": path, **extra}
    request = ToolRequest(call_id="c1", tool=tool, workspace_root=str(ws), arguments=arguments, snapshot=snapshot)
    return fn(request, model(**arguments))


def listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


# ------------------------------------------------------- control characters

CONTROL_NAMES = [
    "a\nb.txt",  # newline: one name that reads as two lines
    "x/\nrm -rf.txt",
    "a\rb.txt",
    "a\x1b[31mred.txt",  # ESC: a terminal escape sequence
    "a\x7fb.txt",  # DEL
    "a\x9bb.txt",  # C1 CSI
    "a\x85b.txt",  # C1 NEL
    "a\u202eb.txt",  # RIGHT-TO-LEFT OVERRIDE: shows 'txt.b' reversed
    "a\ud800.txt",  # a lone surrogate: no file system can hold it
]


@pytest.mark.parametrize("tool", list(TOOLS))
@pytest.mark.parametrize("name", CONTROL_NAMES)
def test_names_with_control_characters_are_refused_by_every_tool(workspace: Path, tool: str, name: str) -> None:
    (workspace / "a").write_text("a\n")
    result = run(workspace, tool, name)
    assert result.status == ToolStatus.ERROR, result.output
    assert "control character" in result.output or "lone surrogate" in result.output, result.output
    assert "U+" in result.output  # says which character
    assert listing(workspace) == ["a"]  # nothing created


@pytest.mark.parametrize("tool", ["read_file", "write_file", "edit_file"])
def test_a_link_to_a_name_with_control_characters_is_refused_too(workspace: Path, tool: str) -> None:
    (workspace / "evil\x1b[2Jdir").mkdir()
    (workspace / "evil\x1b[2Jdir" / "f.txt").write_text("a\n")
    (workspace / "plain").symlink_to("evil\x1b[2Jdir")
    result = run(workspace, tool, "plain/f.txt")
    assert result.status == ToolStatus.ERROR and "U+001B" in result.output, result.output


def test_write_file_never_creates_a_name_with_a_newline(workspace: Path) -> None:
    result = run(workspace, "write_file", "notes\n.txt", content="hello\n")
    assert result.status == ToolStatus.ERROR and "U+000A" in result.output
    assert os.listdir(workspace) == []


def test_glob_shows_names_with_control_characters_escaped(workspace: Path) -> None:
    (workspace / "two\nlines.txt").write_text("x\n")
    (workspace / "red\x1b[31m.txt").write_text("x\n")
    (workspace / "plain.txt").write_text("x\n")
    result = run(workspace, "glob", ".", pattern="*.txt")
    assert result.output.splitlines() == ["plain.txt", "red\\x1b[31m.txt", "two\\nlines.txt"]


def test_plain_unicode_names_are_fine(workspace: Path) -> None:
    for name in ("café.txt", "日本語.md", "emoji-🙂.txt", "a b.txt"):
        assert run(workspace, "write_file", name).status == ToolStatus.OK
        assert run(workspace, "read_file", name).status == ToolStatus.OK


# --------------------------------------------- OS errors become error results

LONG = "n" * 300  # a 300-character component: ENAMETOOLONG


@pytest.mark.parametrize(
    "tool,path,extra",
    [
        ("glob", LONG, {}),
        ("glob", f"{LONG}/deeper", {}),
        ("glob", ".", {"pattern": f"{LONG}/*.py"}),
        ("glob", ".", {"pattern": f"**/{LONG}"}),
        ("grep", LONG, {}),
        ("grep", f"src/{LONG}", {}),
        ("read_file", LONG, {}),
        ("read_file", f"src/{LONG}", {}),
        ("write_file", LONG, {}),
        ("write_file", f"{LONG}/new.txt", {}),
        ("edit_file", LONG, {}),
    ],
)
def test_a_300_character_component_is_an_error_result_naming_the_path(
    workspace: Path, tool: str, path: str, extra: dict[str, Any]
) -> None:
    (workspace / "src").mkdir()
    result = run(workspace, tool, path, **extra)  # never raises
    if result.status == ToolStatus.OK:  # a pattern that merely matches nothing
        assert tool == "glob" and "No files matched" in result.output
        return
    assert "nnnnnnnnnnnnnnnnnnnn" in result.output  # names the path
    assert "too long" in result.output.lower() or "does not exist" in result.output, result.output
    assert listing(workspace) == ["src"]


@pytest.mark.parametrize("tool", list(TOOLS))
def test_symlink_loops_and_files_as_folders_are_error_results(workspace: Path, tool: str) -> None:
    (workspace / "loop").symlink_to("loop")
    (workspace / "file").write_text("a\n")
    for path in ("loop", "loop/x", "file/x"):
        result = run(workspace, tool, path)
        assert result.status == ToolStatus.ERROR, (path, result.output)
        assert ("loop" in result.output or "file" in result.output), result.output


def test_glob_literal_names_are_not_looked_up_through_a_link_out(workspace: Path, tmp_path: Path) -> None:
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("s\n")
    (workspace / "d").symlink_to(tmp_path / "outside")
    (workspace / "real").mkdir()
    (workspace / "real" / "here.txt").write_text("h\n")
    for pattern in ("d/secret.txt", "d/*.txt", "*/secret.txt", "{d,real}/*.txt"):
        result = run(workspace, "glob", ".", pattern=pattern)
        assert result.metadata["matches"] == ("1" if "real" in pattern else "0"), (pattern, result.output)
        assert "d/secret.txt" not in result.output.splitlines()
    assert run(workspace, "glob", ".", pattern="real/here.txt").output == "real/here.txt"


# ------------------------------------------------------ the two resolutions


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "src" / "pkg").mkdir(parents=True)
    (ws / "src" / "pkg" / "m.py").write_text("m\n")
    (tmp_path / "outside").mkdir()
    (ws / "in").symlink_to("src/pkg")
    (ws / "abs-in").symlink_to(ws / "src")
    (ws / "out").symlink_to(tmp_path / "outside")
    (ws / "up").symlink_to("..")
    (ws / "proc").symlink_to("/proc/self/root")
    (ws / "loop").symlink_to("loop")
    return ws


PATHS = [
    "src/pkg/m.py", "in/m.py", "abs-in/pkg/m.py", "in/../pkg/m.py", "src/pkg/../pkg/m.py", "in", "abs-in",
    "out/x", "out", "up/ws/src", "proc/etc/passwd", "loop/x", "src/missing/x", "src/pkg/m.py/x", ".",
    "src/./pkg//m.py", "src/pkg/new.txt",
]


def _outcome(ws: Path, path: str) -> str:
    try:
        with WorkspaceRoot(ws) as root, root.locate(path) as loc:
            return f"ok {loc.rel} {loc.name}"
    except WorkspaceError as exc:
        return f"refused {type(exc).__name__}"
    except OSError as exc:
        return f"oserror {exc.errno}"


def test_openat2_is_used_where_the_kernel_has_it() -> None:
    if not fs_root.openat2_available():
        pytest.skip("this kernel (or its seccomp filter) has no openat2")
    assert fs_root._openat2_works is True


@pytest.mark.parametrize("err", [errno.ENOSYS, errno.EPERM])  # an old kernel, a seccomp filter
def test_without_openat2_the_walk_takes_over(tree: Path, monkeypatch: pytest.MonkeyPatch, err: int) -> None:
    import ctypes

    class NoOpenat2:
        def syscall(self, *args: object) -> int:
            ctypes.set_errno(err)
            return -1

    monkeypatch.setattr(fs_root, "_libc", NoOpenat2())
    monkeypatch.setattr(fs_root, "_openat2_works", None)
    assert _outcome(tree, "in/m.py") == "ok src/pkg/m.py m.py"
    assert fs_root._openat2_works is False  # detected once, not tried again
    assert _outcome(tree, "out/x").startswith("refused")


def test_openat2_and_the_component_walk_agree(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with_kernel = {p: _outcome(tree, p) for p in PATHS}
    monkeypatch.setattr(fs_root, "_openat2_works", False)  # as on a kernel without it
    walked = {p: _outcome(tree, p) for p in PATHS}
    assert walked == with_kernel
    assert with_kernel["in/m.py"] == "ok src/pkg/m.py m.py"
    assert with_kernel["abs-in/pkg/m.py"] == "ok src/pkg/m.py m.py"
    for escape in ("out/x", "out", "up/ws/src", "proc/etc/passwd", "loop/x"):
        assert with_kernel[escape].startswith("refused"), (escape, with_kernel[escape])
