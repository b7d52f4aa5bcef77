"""A worker SIGKILLed in the middle of a rollback: the ``rollback_turn``
activity heartbeats under a heartbeat timeout, so the server notices within
seconds and the next worker finishes the rollback (idempotent: what is
already back counts as done). Real worker processes, dev server, bubblewrap
and overlay."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

from temporalio.client import Client

from runtime import txn_api
from tests.txn.support.helpers import needs_overlay, tree
from tests.txn.support.pipeline import bash_call, result, start, wait_for, worker
from workflows.rollback import ROLLBACK_HEARTBEAT_TIMEOUT

pytestmark = needs_overlay

FILES = 200


async def test_rollback_killed_midway_finishes_on_the_next_worker(
    client: Client, workspace: Path, task_queue: str, tmp_path: Path
) -> None:
    for i in range(FILES):
        (workspace / f"f{i:03}.txt").write_text(f"before {i}\n")
    # Appending is an edit (rewriting each file whole would be destructive by
    # effect and pause the turn at the call, even under auto).
    (workspace / "change.sh").write_text("for f in f*.txt; do echo after >> \"$f\"; done\n")
    before = tree(workspace)
    turn_id = f"t-{uuid.uuid4().hex[:8]}"
    w1 = worker(client, workspace, task_queue, tmp_path / "w1.log").start()
    try:
        done = await result(await start(client, workspace, task_queue, [bash_call("sh change.sh")], turn_id=turn_id))
    finally:
        w1.stop()
    assert done.results[0].metadata["capture"] == "applied", done.results[0].output
    assert (workspace / "f000.txt").read_text() == "before 0\nafter\n"

    pause = tmp_path / "rollback-paused"
    w2 = worker(client, workspace, task_queue, tmp_path / "w2.log",
                env={"TXN_ROLLBACK_PAUSE_FILE": str(pause), "TXN_ROLLBACK_PAUSE_AFTER": "20"})
    w2.args[1:2] = ["-m", "tests.txn.support.pause_worker"]
    w2.start()
    try:
        rolling = asyncio.ensure_future(txn_api.rollback(client, turn_id, workspace_root=str(workspace),
                                                         task_queue=task_queue))
        await wait_for(pause.exists, w2.log_path)
        w2.kill()  # 20 of the 200 files are back
    finally:
        w2.stop()
    restored = sum((workspace / f"f{i:03}.txt").read_text() == f"before {i}\n" for i in range(FILES))
    assert 0 < restored < FILES
    w3 = worker(client, workspace, task_queue, tmp_path / "w3.log").start()
    began = time.monotonic()
    try:
        report = await asyncio.wait_for(rolling, 120)
    finally:
        w3.stop()
    took = time.monotonic() - began
    assert report.conflicts == [] and len(report.restored) + len(report.already) >= FILES, (
        f"conflicts {report.conflicts[:5]}, restored {len(report.restored)}, already {len(report.already)}, "
        f"unchecked {report.unchecked[:5]}, not restorable {report.not_restorable[:5]}")
    assert tree(workspace) == before
    # Noticed by the heartbeat timeout, not the activity's 10-minute limit.
    assert took < ROLLBACK_HEARTBEAT_TIMEOUT.total_seconds() + 30, took
