"""Turn rollback and the kinds of change bash can make, on the real pipeline
(worker.py process, dev server, bubblewrap, overlay): deletes, renames, mode
changes, new folders and a `.git` repository land through the changeset;
`client.py rollback` (a process, after a worker restart, on a session-style
turn id) puts back write_file, edit_file and bash changes alike; a file
changed since by someone else is refused and listed; a symlink escape in
the changeset is refused whole; a timed-out command applies nothing."""

from __future__ import annotations

import json
import stat
import uuid
from pathlib import Path

from temporalio.client import Client

from tests.processes import run_client, server_address
from tests.support import call
from tests.txn.support.helpers import modes, needs_overlay, tree
from runtime.api import TurnClient
from tests.txn.support.pipeline import bash_call, result, start, wait_paused, worker

pytestmark = needs_overlay

CHANGE = """rm gone.txt
rm -r sub
mv r r2
chmod 755 x.sh
echo 'line 2' >> keep.txt
mkdir -p new/a
echo deep > new/a/c
git init -q
git add -A
git -c user.name=t -c user.email=t@example.com commit -qm one
"""


def seed(ws: Path) -> None:
    (ws / "sub").mkdir()
    (ws / "sub" / "s").write_text("s\n")
    (ws / "r").write_text("rename me\n")
    (ws / "x.sh").write_text("echo hi\n")
    (ws / "gone.txt").write_text("delete me\n")
    (ws / "keep.txt").write_text("line 1\n")
    (ws / "change.sh").write_text(CHANGE)


async def test_a_turns_changes_land_and_roll_back_after_a_restart(
    client: Client, workspace: Path, task_queue: str, tmp_path: Path
) -> None:
    seed(workspace)
    before, before_modes = tree(workspace), modes(workspace)
    turn_id = f"sess-{uuid.uuid4().hex[:6]}/turn-3"  # a session's turn id
    calls = [
        call(1, "read_file", path="keep.txt"),
        call(2, "edit_file", path="keep.txt", old_string="line 1", new_string="LINE 1"),
        call(3, "write_file", path="notes/new.txt", content="hello\n"),
        bash_call("sh change.sh", i=4),
    ]
    w = worker(client, workspace, task_queue, tmp_path / "w1.log").start()
    try:
        handle = await start(client, workspace, task_queue, calls, turn_id=turn_id)
        # Deleting, renaming onto, chmod +x and .git: destructive by effect, so
        # even under auto the turn pauses at the bash call for a person.
        paused = await wait_paused(client, turn_id)
        assert [p.index for p in paused.pending] == [3] and "destructive by effect" in paused.pending[0].reason
        await TurnClient(client).approve(turn_id, approver="t", digest=paused.batch_digest)
        done = await result(handle)
    finally:
        w.stop()
    assert [r.is_error for r in done.results] == [False] * 4, [r.output for r in done.results]
    bash = done.results[3]
    assert bash.metadata["capture"] == "applied" and int(bash.metadata["changed_files"]) >= 8
    assert not (workspace / "gone.txt").exists() and not (workspace / "sub").exists()
    assert (workspace / "r2").read_text() == "rename me\n" and not (workspace / "r").exists()
    assert stat.S_IMODE((workspace / "x.sh").stat().st_mode) == 0o755
    assert (workspace / "keep.txt").read_text() == "LINE 1\nline 2\n"
    assert (workspace / "new" / "a" / "c").read_text() == "deep\n"
    assert (workspace / ".git" / "HEAD").exists() and list((workspace / ".git" / "objects").iterdir())

    w = worker(client, workspace, task_queue, tmp_path / "w2.log").start()  # a restarted worker
    try:
        out = run_client("--address", server_address(client), "rollback", turn_id, "--json")
        again = run_client("--address", server_address(client), "rollback", turn_id)
    finally:
        w.stop()
    assert out.returncode == 0, out.stdout + out.stderr
    report = json.loads(out.stdout)
    assert {"gone.txt", "r", "r2", "x.sh", "keep.txt", "notes/new.txt", "sub/s", ".git"} <= set(report["restored"])
    assert report["conflicts"] == [] and report["not_restorable"] == []
    assert tree(workspace) == before and modes(workspace) == before_modes
    assert again.returncode == 0 and "restored 0 path(s)" in again.stdout, again.stdout  # already undone


async def test_conflicts_escapes_and_timeouts(client: Client, workspace: Path, task_queue: str, tmp_path: Path) -> None:
    (workspace / "log.txt").write_text("start\n")
    (workspace / "escape.sh").write_text("echo x > ok.txt\nln -s /etc evil\n")
    (workspace / "slow.sh").write_text("echo appended >> log.txt\nsleep 30\n")
    w = worker(client, workspace, task_queue, tmp_path / "w.log").start()
    try:
        escape = await result(await start(client, workspace, task_queue, [bash_call("sh escape.sh")]))
        turn_id = f"t-{uuid.uuid4().hex[:8]}"
        slow = await result(await start(client, workspace, task_queue, [
            call(1, "write_file", path="a.txt", content="one\n"), bash_call("sh slow.sh", i=2, timeout=2),
        ], turn_id=turn_id))
        (workspace / "a.txt").write_text("someone else's\n")
        out = run_client("--address", server_address(client), "rollback", turn_id)
        unknown = run_client("--address", server_address(client), "rollback", "no-such-turn")
    finally:
        w.stop()
    [r] = escape.results
    assert r.is_error and r.metadata["capture"] == "refused" and "evil" in r.output, r
    assert not (workspace / "ok.txt").exists() and not (workspace / "evil").is_symlink()  # nothing half-applied

    timed_out = slow.results[1]
    assert timed_out.is_error and timed_out.metadata["capture"] == "discarded"
    assert "nothing it changed was applied" in timed_out.output
    assert (workspace / "log.txt").read_text() == "start\n"

    assert out.returncode == 1, out.stdout + out.stderr
    assert "changed since the turn by someone else" in out.stdout and "a.txt" in out.stdout
    assert (workspace / "a.txt").read_text() == "someone else's\n"
    assert unknown.returncode == 1 and "pass --workspace and --task-queue" in unknown.stdout, unknown
