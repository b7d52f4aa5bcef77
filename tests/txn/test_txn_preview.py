"""Preview before approval on the real pipeline (Policy.preview_bash): the
paused turn shows the command's output and diff, approval applies exactly
the previewed changeset with no second run (the command appends a random
line: the line applied is the one the preview showed), a stale preview is
not applied and says so, a rejected one is discarded."""

from __future__ import annotations

import re
from pathlib import Path

from temporalio.client import Client

from activities.txn.store import call_dir
from core.contracts import Policy
from runtime.api import TurnClient
from tests.processes import run_client, server_address
from tests.txn.support.helpers import needs_overlay
from tests.txn.support.pipeline import bash_call, result, start, wait_paused, worker
from workflows.turn_preview import RUNNING_TEXT

pytestmark = needs_overlay

POLICY = Policy(mode="ask-writes", preview_bash=True)


def seed(ws: Path) -> None:
    (ws / "log.txt").write_text("start\n")
    (ws / "append.sh").write_text("od -An -N8 -tx8 /dev/urandom >> log.txt\necho ran\n")


def previewed(progress) -> bool:  # type: ignore[no-untyped-def]
    return bool(progress.pending) and progress.pending[0].preview not in ("", RUNNING_TEXT)


async def test_approving_a_preview_applies_it_without_a_second_run(
    client: Client, workspace: Path, task_queue: str, tmp_path: Path
) -> None:
    seed(workspace)
    w = worker(client, workspace, task_queue, tmp_path / "w.log").start()
    try:
        handle = await start(client, workspace, task_queue, [bash_call("sh append.sh")], policy=POLICY)
        progress = await wait_paused(client, handle.id, previewed)
        preview = progress.pending[0].preview
        assert (workspace / "log.txt").read_text() == "start\n"  # nothing applied before approval
        shown = run_client("--address", server_address(client), "show", handle.id)
        await TurnClient(client).approve(handle.id, approver="test")
        done = await result(handle)
    finally:
        w.stop()
    added = re.search(r"^\+\s*([0-9a-f]{16})$", preview, re.M)
    assert added, preview
    assert "ran" in preview and added.group(1) in shown.stdout
    [r] = done.results
    assert not r.is_error, r.output
    assert r.metadata["txn_mode"] == "previewed" and r.metadata["capture"] == "applied"
    assert (workspace / "log.txt").read_text().split() == ["start", added.group(1)]  # the previewed line


async def test_a_stale_preview_is_not_applied_and_a_rejected_one_is_discarded(
    client: Client, workspace: Path, task_queue: str, tmp_path: Path
) -> None:
    seed(workspace)
    w = worker(client, workspace, task_queue, tmp_path / "w.log").start()
    try:
        stale = await start(client, workspace, task_queue, [bash_call("sh append.sh")], policy=POLICY)
        await wait_paused(client, stale.id, previewed)
        (workspace / "other.txt").write_text("changed meanwhile\n")
        await TurnClient(client).approve(stale.id, approver="test")
        stale_done = await result(stale)

        rejected = await start(client, workspace, task_queue, [bash_call("sh append.sh")], policy=POLICY)
        await wait_paused(client, rejected.id, previewed)
        folder = Path(call_dir(str(workspace), rejected.id, "call_1"))
        assert (folder / "manifest.json").exists()
        await TurnClient(client).reject(rejected.id, approver="test", reason="no")
        await result(rejected)
    finally:
        w.stop()
    [r] = stale_done.results
    assert r.is_error and r.metadata["capture"] == "stale" and "stale" in r.output, r
    assert "other.txt" in r.output
    assert (workspace / "log.txt").read_text() == "start\n"
    assert not folder.exists()
