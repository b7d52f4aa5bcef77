"""Turn rollback from the journals' pre-images: bash changesets and file-tool
records alike, after a restart (a new process), with conflicts listed and
bounded pre-image storage."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from activities.txn import journal
from activities.txn import overlay
from activities.txn.rollback import rollback_turn
from activities.workspace.paths import WorkspaceError
from tests.txn.support.helpers import SCRIPT, modes, needs_overlay, run_captured, seed, tree

pytestmark = needs_overlay

REPO = Path(__file__).resolve().parents[2]
TURN = "turn-9"


def bash_call(ws: Path, script: str, call_id: str) -> journal.ApplyReport:
    cap, proc = run_captured(ws, script, TURN, call_id)
    assert proc.returncode == 0, proc.stderr
    assert journal.write_journal(cap, overlay.scan(cap)).journal is not None
    report = journal.apply_journal(str(ws), TURN, call_id)
    assert report.ok, report.text()
    return report


def write_file_tool(ws: Path, call_id: str, rel: str, text: str) -> None:
    """What write_file does once the lead wires the two calls in."""
    journal.record_preimage(str(ws), TURN, call_id, rel)
    (ws / rel).write_text(text)
    journal.record_postimage(str(ws), TURN, call_id, rel)


def run_turn(ws: Path) -> None:
    bash_call(ws, SCRIPT, "call-1")
    write_file_tool(ws, "call-2", "keep.txt", "rewritten by write_file\n")
    write_file_tool(ws, "call-3", "notes.md", "a new file\n")
    bash_call(ws, "echo more >> keep.txt && rm link && chmod -R u+w new && rm -r new", "call-4")


ROLLBACK_IN_A_NEW_PROCESS = r"""
import json, sys
sys.path.insert(0, {repo!r})
from activities.txn.rollback import rollback_turn
from activities.workspace.paths import WorkspaceError
r = rollback_turn({ws!r}, {turn!r})
print(json.dumps(r.__dict__))
"""


def rollback_elsewhere(ws: Path) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", ROLLBACK_IN_A_NEW_PROCESS.format(repo=str(REPO), ws=str(ws), turn=TURN)],
        capture_output=True, text=True, timeout=60, check=True,
    )
    return json.loads(out.stdout)


def test_rollback_after_restart_restores_the_workspace_before_the_turn(workspace):
    seed(workspace)
    before, before_modes = tree(workspace), modes(workspace)
    run_turn(workspace)
    assert tree(workspace) != before
    report = rollback_elsewhere(workspace)
    assert tree(workspace) == before and modes(workspace) == before_modes
    assert report["conflicts"] == [] and report["unchecked"] == []
    assert sorted(report["restored"]) == sorted({
        "sub/s", "sub/deep", "sub/deep/d", "sub/z", "r", "r2", "x.sh", "f", "f/in",
        "dir2file", "dir2file/inner", "keep.txt", "notes.md",
    })  # link and new/ were created and removed within the turn: nothing to do for them
    again = rollback_turn(str(workspace), TURN)
    assert again.restored == [] and len(again.already) == len(report["restored"])


def test_rollback_leaves_files_changed_since_by_someone_else_and_lists_them(workspace):
    seed(workspace)
    run_turn(workspace)
    (workspace / "keep.txt").write_text("the user's own edit\n")
    report = rollback_turn(str(workspace), TURN)
    assert [c.split(":")[0] for c in report.conflicts] == ["keep.txt"]
    assert (workspace / "keep.txt").read_text() == "the user's own edit\n"
    assert "keep.txt" not in report.restored and "sub/s" in report.restored
    assert (workspace / "sub" / "s").read_text() == "s\n"
    assert "changed since the turn by someone else" in report.text()


def test_preimage_over_the_cap_is_not_kept_and_says_so(workspace, monkeypatch):
    (workspace / "big.bin").write_bytes(b"x" * 4096)
    monkeypatch.setenv(journal.PREIMAGE_FILE_ENV, "0")
    report = bash_call(workspace, "echo y > big.bin", "call-1")
    assert report.notices and "not kept" in report.notices[0] and "big.bin" in report.notices[0]
    assert "not kept" in journal.record_preimage(str(workspace), TURN, "call-2", "big.bin")
    rb = rollback_turn(str(workspace), TURN)
    assert [p.split(":")[0] for p in rb.not_restorable] == ["big.bin"]
    assert (workspace / "big.bin").read_text() == "y\n"


def test_file_tool_without_a_post_image_is_restored_unchecked(workspace):
    (workspace / "a.txt").write_text("before\n")
    journal.record_preimage(str(workspace), TURN, "call-1", "a.txt")
    (workspace / "a.txt").write_text("after\n")
    report = rollback_turn(str(workspace), TURN)
    assert report.restored == ["a.txt"] and report.unchecked == ["a.txt"]
    assert (workspace / "a.txt").read_text() == "before\n"


def test_rollback_never_reads_journals_from_the_workspace(workspace, tmp_path):
    # The journals live in the worker's state folder: whatever the workspace's
    # artifacts folder holds (here a planted symlink) is never read.
    forged = tmp_path / "forged" / "txn"
    forged.mkdir(parents=True)
    (workspace / ".agent-artifacts").symlink_to(tmp_path / "forged")
    report = rollback_turn(str(workspace), TURN)
    assert report.restored == [] and "no recorded file changes" in report.text()


def test_a_folder_planted_at_the_temporary_name_does_not_stop_a_rollback_half_way(workspace):
    # The temporary name beside each restored file is predictable; an earlier
    # command can leave a folder there. Every path is still restored.
    import hashlib

    (workspace / "a.txt").write_text("a\n")
    (workspace / "b.txt").write_text("b\n")
    bash_call(workspace, "echo A > a.txt && echo B > b.txt", "call-1")
    planted = workspace / f".txn-rollback-{hashlib.sha1(b'b.txt').hexdigest()[:12]}.tmp"
    planted.mkdir()
    (planted / "x").write_text("kept\n")
    report = rollback_turn(str(workspace), TURN)
    assert sorted(report.restored) == ["a.txt", "b.txt"], report.text()
    assert (workspace / "a.txt").read_text() == "a\n" and (workspace / "b.txt").read_text() == "b\n"
    assert (planted / "x").read_text() == "kept\n"
