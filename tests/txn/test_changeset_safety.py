"""Safe to apply, on real overlays: symlink escapes and writes
through symlinks are refused, files changed in the real workspace since the
command started are conflicts, and in every refusal nothing is applied."""

from __future__ import annotations

import os
import stat

import pytest

from activities.txn import journal
from activities.txn import overlay
from activities.txn.changeset import read_only_refusal
from tests.txn.support.helpers import needs_overlay, run_captured, tree

pytestmark = needs_overlay

TURN, CALL = "turn-1", "call-1"


def journal_of(ws, script):
    cap, proc = run_captured(ws, script, TURN, CALL)
    assert proc.returncode == 0, proc.stderr
    return journal.write_journal(cap, overlay.scan(cap))


@pytest.mark.parametrize("script", [
    "ln -s /etc/passwd pw",
    "ln -s ../outside up",
    "mkdir -p in && ln -s .. in/up && ln -s in/up/.. esc",  # escapes only when links are followed
])
def test_symlink_pointing_outside_is_refused_and_nothing_applied(workspace, script):
    (workspace / "a.txt").write_text("a\n")
    before = tree(workspace)
    out = journal_of(workspace, "echo changed > a.txt && " + script)
    report = journal.apply_journal(str(workspace), TURN, CALL)
    assert report.status == "refused", report.text()
    assert "points outside the workspace" in report.text()
    assert tree(workspace) == before  # not even the harmless a.txt change
    assert out.journal is not None


def test_write_through_a_symlink_planted_after_the_command_is_refused(workspace, tmp_path):
    (workspace / "sub").mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    journal_of(workspace, "echo x > sub/new.txt")
    (workspace / "sub").rmdir()
    (workspace / "sub").symlink_to(outside)  # a racing process swaps the folder for a link
    report = journal.apply_journal(str(workspace), TURN, CALL)
    assert report.status == "refused" and "through a symlink" in report.text()
    assert os.listdir(outside) == []


def test_file_changed_while_the_command_ran_is_a_conflict_and_nothing_is_journaled(workspace):
    (workspace / "a.txt").write_text("a\n")
    cap, proc = run_captured(workspace, "echo more >> a.txt && echo new > b.txt", TURN, CALL)
    (workspace / "a.txt").write_text("edited by someone else\n")
    out = journal.write_journal(cap, overlay.scan(cap))
    assert out.journal is None and out.conflicts == ["a.txt: changed in the workspace while the command ran"]
    assert journal.journal_state(str(workspace), TURN, CALL) == journal.NONE
    assert not (workspace / "b.txt").exists()


def test_file_changed_between_journal_and_apply_is_a_conflict_nothing_half_applied(workspace):
    (workspace / "a.txt").write_text("a\n")
    (workspace / "b.txt").write_text("b\n")
    journal_of(workspace, "echo A > a.txt && echo B > b.txt && echo C > c.txt")
    (workspace / "b.txt").write_text("someone else\n")
    report = journal.apply_journal(str(workspace), TURN, CALL)
    assert report.status == "conflict"
    assert report.conflicts[0].startswith("b.txt: file (13 bytes")
    assert (workspace / "a.txt").read_text() == "a\n" and not (workspace / "c.txt").exists()


def test_folder_deleted_by_the_command_that_gained_a_file_since_is_a_conflict(workspace):
    (workspace / "d").mkdir()
    (workspace / "d" / "old").write_text("o\n")
    journal_of(workspace, "rm -r d")
    (workspace / "d" / "added").write_text("new work\n")
    report = journal.apply_journal(str(workspace), TURN, CALL)
    assert report.status == "conflict" and "added" in report.text()
    assert (workspace / "d" / "old").exists()


def test_setuid_bits_and_special_files_never_reach_the_workspace(workspace):
    out = journal_of(workspace, "echo '#!/bin/sh' > s.sh && chmod 4755 s.sh && mkfifo pipe")
    assert ("pipe", "fifo, socket or device file: not applied") in out.journal.changeset.skipped
    assert journal.apply_journal(str(workspace), TURN, CALL).ok
    assert stat.S_IMODE((workspace / "s.sh").stat().st_mode) == 0o755
    assert not (workspace / "pipe").exists()


def test_allowed_command_that_changed_files_is_not_applied(workspace):
    (workspace / "a.txt").write_text("a\n")
    cap, _ = run_captured(workspace, "cat a.txt && touch stray.txt && rm a.txt", TURN, CALL)
    scan = overlay.scan(cap)
    text = read_only_refusal("allow", scan.changeset)
    assert "create stray.txt" in text and "delete a.txt" in text
    cap.discard()
    assert tree(workspace) == {"a.txt": "a\n"}
