"""Helpers of the file tool tests: requests, the three tools called directly,
and checks on their results."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path
from typing import Any

from activities.files.write import edit_file, read_file, write_file
from core.contracts import Snapshot, ToolRequest, ToolResult, ToolStatus
from core.tools.specs import EditFileArgs, ReadFileArgs, WriteFileArgs


def request(ws: Path, tool: str, snapshot: Snapshot | None = None, **arguments: Any) -> ToolRequest:
    return ToolRequest(call_id="call-1", tool=tool, workspace_root=str(ws), arguments=arguments, snapshot=snapshot)


def read(ws: Path, path: str, **kw: Any) -> ToolResult:
    return read_file(request(ws, "read_file", path=path, **kw), ReadFileArgs(path=path, **kw))


def write(ws: Path, path: str, content: str, snapshot: Snapshot | None = None) -> ToolResult:
    return write_file(
        request(ws, "write_file", snapshot, path=path, content=content), WriteFileArgs(path=path, content=content)
    )


def edit(ws: Path, path: str, old: str, new: str, snapshot: Snapshot | None, replace_all: bool = False) -> ToolResult:
    args = dict(path=path, old_string=old, new_string=new, replace_all=replace_all)
    return edit_file(request(ws, "edit_file", snapshot, **args), EditFileArgs(**args))


def snap(ws: Path, path: str) -> Snapshot:
    result = read(ws, path)
    assert result.status == ToolStatus.OK, result.output
    assert result.snapshot is not None
    return result.snapshot


def error(result: ToolResult, *fragments: str) -> str:
    assert result.status == ToolStatus.ERROR and result.is_error, result.output
    assert result.snapshot is None, "an error must never hand out a snapshot"
    for fragment in fragments:
        assert fragment in result.output, (fragment, result.output)
    return result.output


def ok(result: ToolResult) -> ToolResult:
    assert result.status == ToolStatus.OK and not result.is_error, result.output
    return result


def body(result: ToolResult) -> list[str]:
    """The numbered lines of a read, without the trailing note."""
    return [line for line in result.output.split("\n") if re.match(r" *\d+\|", line)]


def leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.rglob("*.tmp")]


def within(seconds: float, fn, *args):
    """Run fn in a thread; fail (not hang) if it does not return in time."""
    box: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: box.setdefault("r", fn(*args)), daemon=True)
    thread.start()
    thread.join(seconds)
    return thread.is_alive(), box.get("r")
