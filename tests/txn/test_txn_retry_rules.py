"""Which attempt of a bash call may run its command (activities.bash.attempts), and
which transaction folders artifact retention may delete: real files, real
overlay captures, no server."""

from __future__ import annotations

import os
import time
from pathlib import Path

from activities.bash import attempts as bash_txn
from activities.txn import journal
from activities.txn import api as txn
from activities.workspace.artifacts import prune_artifacts
from activities.txn.state import id_key
from activities.txn.store import call_dir
from tests.txn.support.helpers import needs_overlay, run_captured


def test_a_call_that_never_launched_may_run_again(workspace: Path) -> None:
    assert bash_txn.prior_attempt(str(workspace), "t", "c").safe_to_run
    (workspace / ".agent-artifacts").mkdir()
    assert bash_txn.prior_attempt(str(workspace), "t", "c").safe_to_run


def test_a_direct_run_is_not_run_again_unless_its_result_was_kept(workspace: Path) -> None:
    root = str(workspace)
    assert bash_txn.mark_launched(root, "t", "c", "direct", 1, "disabled")
    prior = bash_txn.prior_attempt(root, "t", "c")
    assert not prior.safe_to_run and prior.result is None and "disabled" in prior.reason
    bash_txn.store_direct_result(root, "t", "c", bash_txn.result_dict("out", False, {}, 0))
    assert bash_txn.prior_attempt(root, "t", "c").result["output"] == "out"


def test_captured_and_read_only_runs_may_run_again(workspace: Path) -> None:
    root = str(workspace)
    bash_txn.mark_launched(root, "t", "c", "capture", 1)
    assert bash_txn.prior_attempt(root, "t", "c").safe_to_run
    bash_txn.mark_launched(root, "t", "r", "read-only", 1)
    assert bash_txn.prior_attempt(root, "t", "r").safe_to_run


def test_a_transaction_folder_that_is_a_file_or_a_symlink_means_unknown(workspace: Path, tmp_path: Path) -> None:
    folder = Path(call_dir(str(workspace), "t", "c", create=True))
    folder.rmdir()
    folder.write_text("not a folder")
    assert not bash_txn.prior_attempt(str(workspace), "t", "c").safe_to_run
    folder.unlink()
    (tmp_path / "elsewhere").mkdir()
    folder.symlink_to(tmp_path / "elsewhere")
    assert not bash_txn.prior_attempt(str(workspace), "t", "c").safe_to_run


def test_the_workspace_artifacts_folder_plays_no_part_in_retries(workspace: Path) -> None:
    # The start markers live in the worker's state folder: a command that
    # replaced the workspace's artifacts folder changes nothing.
    (workspace / ".agent-artifacts").write_text("not a folder")
    assert bash_txn.prior_attempt(str(workspace), "t", "c").safe_to_run


@needs_overlay
def test_retention_deletes_only_the_txn_folders_journal_prunable_lists(workspace: Path) -> None:
    (workspace / "f.txt").write_text("a\n")
    root = str(workspace)
    for call, then in (("applied", "apply"), ("journaled", "keep")):
        cap, proc = run_captured(workspace, "echo b >> f.txt", "old-turn", call)
        assert proc.returncode == 0, proc.stderr
        started = txn.TxnStart("capture", cap.workspace, "old-turn", call, cap)
        if then == "apply":
            assert txn.finish(started, verdict="ask", completed=True, result={}).capture == "applied"
        else:
            scan = __import__("activities.txn.overlay", fromlist=["scan"]).scan(cap)
            assert journal.write_journal(cap, scan, result={}).journal is not None
    week_ago = time.time() - 8 * 24 * 3600
    for call in ("applied", "journaled"):
        os.utime(call_dir(root, "old-turn", call), (week_ago, week_ago))
    pruned = prune_artifacts(root)
    assert any(p.endswith(id_key("applied")) for p in pruned.removed), pruned
    assert not Path(call_dir(root, "old-turn", "applied")).exists()
    assert Path(call_dir(root, "old-turn", "journaled"), "manifest.json").exists()  # a retry still needs it
    # A rollback of that turn says what retention removed instead of "no changes".
    assert "1 bash call record(s)" in txn.rollback(root, "old-turn").pruned
