"""Huge files get a bounded snapshot, and no reader thread outlives its
activity attempt (four read_file calls on a 300 GiB sparse file
pinned the worker for 5 minutes and left hashing threads running after their
attempts were cancelled)."""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path

import pytest
from temporalio.testing import ActivityEnvironment

from activities.base import tool_activity
from activities.files.write import cancellable, read_file, write_file
from activities.workspace.cancel import THREAD_PREFIX
from activities.files.snapshots import SAMPLED_ABOVE, SAMPLED_PREFIX
from core.contracts import Snapshot, ToolRequest, ToolResult, ToolStatus
from core.tools.specs import READ_FILE, ReadFileArgs, WriteFileArgs

GIB = 1 << 30
# More than read_file's 8 KiB binary sniff of text before the hole.
HEAD = b"first line\nsecond line\n" + b"".join(b"filler %d\n" % i for i in range(2000))

# The tool in a thread of its own that stops on cancellation (the worker's
# registry runs file tools through asyncio.to_thread: the to-thread cases).
OWN_THREAD_READ = tool_activity(READ_FILE, cancellable(read_file), in_thread=False)


def _read(ws: Path, path: str, **kw: object) -> ToolResult:
    args = {"path": path, **kw}
    return read_file(ToolRequest(call_id="r", tool="read_file", workspace_root=str(ws), arguments=args),
                     ReadFileArgs(**args))  # type: ignore[arg-type]


def _write(ws: Path, path: str, content: str, snapshot: Snapshot | None) -> ToolResult:
    args = {"path": path, "content": content}
    request = ToolRequest(call_id="w", tool="write_file", workspace_root=str(ws), arguments=args, snapshot=snapshot)
    return write_file(request, WriteFileArgs(path=path, content=content))


def _sparse(path: Path, size: int, head: bytes = HEAD, tail: bytes = b"") -> None:
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(size - len(tail))
        f.seek(size - len(tail))
        f.write(tail)


def _tool_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith((THREAD_PREFIX, "read_file-sha256"))]


@pytest.mark.timeout(60)  # the unbounded read took minutes
def test_a_300_gib_sparse_file_is_read_with_a_bounded_snapshot(workspace: Path) -> None:
    path = workspace / "huge.log"
    _sparse(path, 300 * GIB, tail=b"the end\n")
    result = _read(workspace, "huge.log", limit=2)
    assert result.status == ToolStatus.OK, result.output
    assert result.output.startswith("     1|first line\n     2|second line")
    assert "too large to count its lines" in result.output
    assert result.metadata["snapshot"] == "sampled" and "total_lines" not in result.metadata
    assert result.metadata["next_offset"] == "3"
    snap = result.snapshot
    assert snap is not None and snap.size == 300 * GIB and snap.sha256.startswith(SAMPLED_PREFIX)
    assert _read(workspace, "huge.log", limit=2).snapshot == snap  # the fingerprint is stable


@pytest.mark.timeout(60)
def test_the_conflict_check_compares_the_bounded_fingerprint(workspace: Path) -> None:
    path = workspace / "huge.bin.txt"
    _sparse(path, SAMPLED_ABOVE + GIB, tail=b"tail\n")
    snap = _read(workspace, "huge.bin.txt", limit=1).snapshot
    assert snap is not None and snap.sha256.startswith(SAMPLED_PREFIX)
    st = os.stat(path)
    with open(path, "r+b") as f:  # change the last bytes in place, mtime put back
        f.seek(st.st_size - 5)
        f.write(b"TAIL\n")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    conflict = _write(workspace, "huge.bin.txt", "small now\n", snap)
    assert conflict.status == ToolStatus.ERROR and "conflict" in conflict.output
    assert os.path.getsize(path) == SAMPLED_ABOVE + GIB
    fresh = _read(workspace, "huge.bin.txt", limit=1).snapshot
    replaced = _write(workspace, "huge.bin.txt", "small now\n", fresh)
    assert replaced.status == ToolStatus.OK, replaced.output
    assert path.read_text() == "small now\n"


@pytest.mark.timeout(60)
def test_a_window_far_into_a_huge_file_is_refused_with_a_hint(workspace: Path) -> None:
    _sparse(workspace / "holes.txt", 3 * GIB, tail=b"last\n")  # the last line starts after 3 GiB of NULs
    result = _read(workspace, "holes.txt", offset=2004)
    assert result.status == ToolStatus.ERROR and "tail -n" in result.output, result.output


def _request(ws: Path, path: str) -> ToolRequest:
    return ToolRequest(call_id="big", tool=READ_FILE, workspace_root=str(ws), arguments={"path": path})


@pytest.fixture
def slow_file(tmp_path: Path) -> Path:
    """A file whose full hash takes seconds: text, then a 2 GiB hole (the
    largest size that is still hashed whole)."""
    ws = tmp_path / "slow"
    ws.mkdir()
    _sparse(ws / "slow.txt", SAMPLED_ABOVE, tail=b"end\n")
    return ws


@pytest.mark.parametrize("own_thread", [True, False], ids=["own-thread", "to-thread"])
async def test_a_cancelled_read_leaves_no_thread_behind(slow_file: Path, own_thread: bool) -> None:
    # cancellable() runs the tool in a thread of its own and waits for it
    # to stop; tool_activity(..., read_file) is what the registry builds
    # (asyncio.to_thread), whose thread stops at its next chunk on its own.
    activity = OWN_THREAD_READ if own_thread else tool_activity(READ_FILE, read_file)
    assert _tool_threads() == []
    env = ActivityEnvironment()
    task = asyncio.ensure_future(env.run(activity, _request(slow_file, "slow.txt")))
    for _ in range(500):  # until the read is under way
        await asyncio.sleep(0.01)
        if any(_busy(t) for t in threading.enumerate()):
            break
    await asyncio.sleep(0.2)
    env.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    if not own_thread:  # one chunk (4 MiB) away; the whole read would take seconds more
        for _ in range(50):
            if not any(_busy(t) for t in threading.enumerate()):
                break
            await asyncio.sleep(0.01)
    assert [t.name for t in threading.enumerate() if _busy(t)] == []


def _busy(thread: threading.Thread) -> bool:
    """A thread still inside the read (pool threads idle afterwards are not)."""
    if thread.name.startswith((THREAD_PREFIX, "read_file-sha256")):
        return True
    frames = __import__("sys")._current_frames()
    frame = frames.get(thread.ident or -1)
    while frame is not None:
        if frame.f_code.co_filename.endswith(("activities/files/read.py", "activities/files/snapshots.py")):
            return True
        frame = frame.f_back
    return False


async def test_a_finished_read_leaves_no_thread_behind(slow_file: Path) -> None:
    (slow_file / "small.txt").write_text("hello\n")
    result = await ActivityEnvironment().run(OWN_THREAD_READ, _request(slow_file, "small.txt"))
    assert result.status == ToolStatus.OK
    assert _tool_threads() == []


async def test_a_turn_of_huge_reads_finishes_and_its_history_replays(client, workspace: Path, task_queue: str) -> None:
    """The turn-level finding: four read_file calls on a 300 GiB sparse file
    pinned the worker and the turn's history no longer replayed. Now the turn
    finishes promptly (bounded snapshots) and replays against the current code."""
    from temporalio.contrib.pydantic import pydantic_data_converter
    from temporalio.worker import Replayer

    from core.contracts import TurnStatus
    from tests.support import call
    from tests.turn.test_turn_workflow import run_turn, turn_input
    from runtime.worker import build_worker
    from workflows.turn import AgentTurnWorkflow

    huge = workspace / "huge.log"
    with open(huge, "wb") as fh:
        fh.write(HEAD)
        fh.truncate(300 * GIB)
    calls = [call(i, "read_file", path="huge.log", offset=1 + i, limit=2) for i in range(4)]
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        turn = turn_input(workspace, task_queue, calls)
        result = await asyncio.wait_for(run_turn(client, turn), timeout=60)
    assert result.status == TurnStatus.COMPLETED
    assert [r.status for r in result.results] == [ToolStatus.OK] * 4, [r.output for r in result.results]
    assert all(r.snapshot and r.snapshot.sha256.startswith(SAMPLED_PREFIX) for r in result.results)
    history = await client.get_workflow_handle(turn.turn_id).fetch_history()
    replayer = Replayer(workflows=[AgentTurnWorkflow], data_converter=pydantic_data_converter)
    await replayer.replay_workflow(history)
