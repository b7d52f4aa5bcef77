"""What `agent-turn show` puts before the approver: the whole file's diff of
an edit with real hunk lines, a write's diff against the file it replaces,
latin-1 text as text, escape sequences escaped, no `timeout: None s`."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

from temporalio.client import Client

from core.contracts import Policy, TurnStatus
from runtime.api import TurnClient, build_turn_input
from runtime.worker import build_worker
from tests.processes import run_client, server_address
from tests.support import call


async def wait_paused(turns: TurnClient, turn_id: str, timeout: float = 30):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            progress = await turns.status(turn_id)
            if progress.status == TurnStatus.PAUSED:
                return progress
        except Exception:  # not started yet
            pass
        await asyncio.sleep(0.1)
    raise AssertionError(f"turn {turn_id} did not pause within {timeout} s")


async def test_show_prints_whole_file_diffs_escaped(client: Client, workspace: Path, task_queue: str) -> None:
    (workspace / "big.txt").write_text("".join(f"line {i}\n" for i in range(1, 101)))
    (workspace / "menu.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    turn = build_turn_input(
        workspace_root=str(workspace), task_queue=task_queue, policy=Policy(mode="ask-all"),
        tool_calls=[
            call(0, "edit_file", path="big.txt", old_string="line 50\n", new_string="line fifty\n"),
            call(1, "write_file", path="menu.txt", content="café crème\n\x1b[2Jgone\n"),
            call(2, "bash", command="ls"),
        ],
    )
    turns = TurnClient(client)
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        await turns.start_turn(turn)
        progress = await wait_paused(turns, turn.turn_id)
        assert progress.pending[0].review.splitlines()[2] == "@@ -47,7 +47,7 @@"
        done = await asyncio.to_thread(run_client, "--address", server_address(client), "show", turn.turn_id)
        assert done.returncode == 0, done.stderr
        out = done.stdout
        assert "@@ -47,7 +47,7 @@" in out and "-line 50" in out and "+line fifty" in out and "@@ -1 +1 @@" not in out
        assert "-café" in out and "+café crème" in out and "binary" not in out
        assert "\x1b" not in out and "+\\x1b[2Jgone" in out
        assert "timeout: None" not in out
        await turns.reject(turn.turn_id, approver="test", reason="only looking")


async def test_calls_that_will_certainly_fail_are_settled_before_approval(
    client: Client, workspace: Path, task_queue: str
) -> None:
    (workspace / "unread.txt").write_text("old\n")
    (workspace / "kept.txt").write_text("keep\n")
    turn = build_turn_input(
        workspace_root=str(workspace), task_queue=task_queue, policy=Policy(mode="ask-writes"),
        tool_calls=[
            call(0, "write_file", path="fresh.txt", content="hello\n"),  # can run: the one to approve
            call(1, "edit_file", path="unread.txt", old_string="old", new_string="new"),  # no snapshot
            call(2, "write_file", path="kept.txt", content="overwritten\n"),  # no snapshot of an existing file
            call(3, "edit_file", path="missing.txt", old_string="a", new_string="b"),  # no such file
            call(4, "write_file", path="../outside.txt", content="x\n"),  # refused by the tools
        ],
    )
    turns = TurnClient(client)
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        handle = await turns.start_turn(turn)
        progress = await wait_paused(turns, turn.turn_id)
        assert [p.index for p in progress.pending] == [0]
        await turns.approve(turn.turn_id, approver="test")
        result = await handle.result()
    texts = [r.output for r in result.results]
    assert "Not run (found when the turn was planned)" in texts[1] and "has not been read" in texts[1], texts
    # The calls after the first certain failure would be skipped when the
    # turn runs, so they are settled as skipped and not put before the approver.
    assert all(r.status.value == "skipped" for r in result.results[2:]), texts
    assert (workspace / "kept.txt").read_text() == "keep\n" and (workspace / "fresh.txt").read_text() == "hello\n"


def test_each_certain_failure_has_its_reason(workspace: Path) -> None:
    from activities.files.review import certain_failure

    (workspace / "a.txt").write_text("old\n")
    root = str(workspace)
    assert "has not been read" in certain_failure(root, "edit_file", {"path": "a.txt", "old_string": "old"}, False)
    assert "has not been read" in certain_failure(root, "write_file", {"path": "a.txt", "content": "new\n"}, False)
    assert certain_failure(root, "write_file", {"path": "a.txt", "content": "old\n"}, False) is None  # same content
    assert "file not found" in certain_failure(root, "edit_file", {"path": "nope.txt", "old_string": "x"}, True)
    assert "was not found" in certain_failure(root, "edit_file", {"path": "a.txt", "old_string": "zzz"}, True)
    assert certain_failure(root, "edit_file", {"path": "a.txt", "old_string": "old"}, True) is None
    assert "refused by the file tools" in certain_failure(root, "write_file", {"path": "../x.txt", "content": ""}, True)
    assert certain_failure(root, "write_file", {"path": "new/dir/x.txt", "content": "x"}, False) is None


async def test_a_rejected_turns_calls_show_as_denied(client: Client, workspace: Path, task_queue: str) -> None:
    turn = build_turn_input(
        workspace_root=str(workspace), task_queue=task_queue, policy=Policy(mode="ask-all"),
        tool_calls=[call(0, "glob", pattern="*"), call(1, "write_file", path="n.txt", content="x\n")],
    )
    turns = TurnClient(client)
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        handle = await turns.start_turn(turn)
        await wait_paused(turns, turn.turn_id)
        await turns.reject(turn.turn_id, approver="test", reason="no")
        await handle.result()
        done = await asyncio.to_thread(run_client, "--address", server_address(client), "status", turn.turn_id)
    assert "rejected" in done.stdout.splitlines()[0]
    assert done.stdout.count("done [denied]") == 2 and "pending" not in done.stdout, done.stdout
