"""Exactly-once bash across a lost worker, on the real pipeline: worker.py as
a process, the dev server, AgentTurnWorkflow (which retries bash behind
patch bash-retry-with-capture), real bubblewrap and overlay. SIGKILL the
worker during the command (the retry runs it again: nothing was applied)
and between journal and apply (the apply half is retried by the digest the
history recorded; the command does not run again): a command that appends one line leaves one line.
Without capture the retry refuses to run it again and says so."""

from __future__ import annotations

from pathlib import Path

from temporalio.client import Client

from activities.txn.store import call_dir
from tests.txn.support.helpers import needs_overlay
from tests.txn.support.pipeline import bash_call, result, start, wait_for, worker

pytestmark = needs_overlay

APPEND = "sh append.sh"  # the validator takes one plain command: the script does the work


def seed(workspace: Path, then_sleep: bool = True) -> None:
    (workspace / "log.txt").write_text("start\n")
    (workspace / "append.sh").write_text("echo appended >> log.txt\n" + ("sleep 3\n" if then_sleep else ""))


async def test_sigkill_during_the_command_runs_it_again_once(
    client: Client, workspace: Path, task_queue: str, tmp_path: Path
) -> None:
    seed(workspace)
    first = worker(client, workspace, task_queue, tmp_path / "w1.log").start()
    try:
        handle = await start(client, workspace, task_queue, [bash_call(APPEND)])
        upper = Path(call_dir(str(workspace), handle.id, "call_1")) / "upper" / "log.txt"
        await wait_for(upper.exists, first.log_path)  # appended, in its copy-on-write view only
        first.kill()
    finally:
        first.stop()
    assert (workspace / "log.txt").read_text() == "start\n"
    second = worker(client, workspace, task_queue, tmp_path / "w2.log").start()
    try:
        done = await result(handle)
    finally:
        second.stop()
    [r] = done.results
    assert not r.is_error, r.output
    assert (workspace / "log.txt").read_text() == "start\nappended\n"
    assert r.metadata["capture"] == "applied" and r.metadata["attempt"] == "2"


async def test_sigkill_between_journal_and_apply_finishes_the_apply(
    client: Client, workspace: Path, task_queue: str, tmp_path: Path
) -> None:
    seed(workspace, then_sleep=False)
    pause = tmp_path / "journaled"
    first = worker(client, workspace, task_queue, tmp_path / "w1.log", pause=pause).start()
    try:
        handle = await start(client, workspace, task_queue, [bash_call(APPEND)])
        await wait_for(pause.exists, first.log_path)
        first.kill()
    finally:
        first.stop()
    assert (workspace / "log.txt").read_text() == "start\n"
    second = worker(client, workspace, task_queue, tmp_path / "w2.log").start()
    try:
        done = await result(handle)
    finally:
        second.stop()
    [r] = done.results
    assert (workspace / "log.txt").read_text() == "start\nappended\n"
    # The command ran once (its result is the first half's, in the history);
    # the apply half was retried on the new worker, by the recorded digest.
    assert r.metadata["capture"] == "applied" and len(r.metadata["txn_digest"]) == 64, r
    assert r.metadata["attempt"] == "1" and r.metadata["apply_attempt"] == "2" and r.metadata["exit_code"] == "0"


async def test_without_capture_a_lost_command_is_not_run_again(
    client: Client, workspace: Path, task_queue: str, tmp_path: Path
) -> None:
    seed(workspace)
    first = worker(client, workspace, task_queue, tmp_path / "w1.log", env={"AGENT_TOOLS_TXN": "off"}).start()
    try:
        handle = await start(client, workspace, task_queue, [bash_call(APPEND)])
        await wait_for(lambda: "appended" in (workspace / "log.txt").read_text(), first.log_path)
        first.kill()
    finally:
        first.stop()
    second = worker(client, workspace, task_queue, tmp_path / "w2.log").start()  # this one has capture
    try:
        done = await result(handle)
    finally:
        second.stop()
    [r] = done.results
    assert (workspace / "log.txt").read_text() == "start\nappended\n"  # once: the first attempt's
    assert r.is_error and "may or may not have run" in r.output and "NOT run again" in r.output
    assert r.metadata["capture"] == "unavailable" and r.metadata["failure"] == "lost_worker"
    assert r.metadata["retry"] == "may-or-may-not-have-run"
    assert "runs without capture" in (tmp_path / "w1.log").read_text()
