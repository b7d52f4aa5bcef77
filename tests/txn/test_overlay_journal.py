"""Journal and apply on real overlays: the applied workspace equals what the
command does when run directly, and an interrupted apply (an exception, or a
SIGKILL of the process between journal and apply or in the middle of the
apply) finishes on retry with the effect landing exactly once."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from activities.txn import journal
from activities.txn import overlay
from activities.txn import apply as txn_apply
from tests.txn.support.helpers import DEFAULT_PATH, SCRIPT, modes, needs_overlay, run_captured, sandboxed, seed, tree

pytestmark = needs_overlay

REPO = Path(__file__).resolve().parents[2]
TURN, CALL = "turn-1", "call-1"


def capture_and_journal(ws: Path, script: str, call_id: str = CALL) -> journal.Journal:
    cap, proc = run_captured(ws, script, TURN, call_id)
    assert proc.returncode == 0, proc.stderr
    out = journal.write_journal(cap, overlay.scan(cap), result={"exit_code": 0, "output": proc.stdout})
    assert out.conflicts == []
    return out.journal


def test_applied_workspace_equals_a_direct_run(workspace, tmp_path):
    seed(workspace)
    direct = tmp_path / "direct"
    shutil.copytree(workspace, direct, symlinks=True)
    # The oracle: the same script run directly (bwrap, no overlay) on a copy.
    subprocess.run(sandboxed(direct, SCRIPT), check=True, env={"PATH": DEFAULT_PATH}, capture_output=True)

    j = capture_and_journal(workspace, SCRIPT)
    assert journal.journal_state(str(workspace), TURN, CALL) == journal.JOURNALED
    report = journal.apply_journal(str(workspace), TURN, CALL)
    assert report.ok, report.text()
    assert tree(workspace) == tree(direct)
    assert modes(workspace) == modes(direct)
    assert journal.journal_state(str(workspace), TURN, CALL) == journal.STATE_APPLIED
    again = journal.apply_journal(str(workspace), TURN, CALL)
    assert again.ok and again.applied == []  # idempotent: nothing done twice
    assert {c.path: c.renamed_from for c in j.changeset.changes}["r2"] == "r"
    assert journal.prunable(str(workspace)) == [j.dir]  # applied: pruning may take it


def test_pruning_never_takes_a_journal_that_still_has_to_be_applied(workspace):
    (workspace / "a.txt").write_text("a\n")
    j = capture_and_journal(workspace, "echo b > a.txt")
    assert journal.prunable(str(workspace)) == []
    journal.apply_journal(str(workspace), TURN, CALL)
    assert journal.prunable(str(workspace)) == [j.dir]


def test_git_repository_created_and_committed_inside_the_view(workspace):
    (workspace / "app.py").write_text("print('hi')\n")
    capture_and_journal(
        workspace,
        "git init -q && git add -A && git -c user.email=a@example.com -c user.name=A commit -qm first",
    )
    assert journal.apply_journal(str(workspace), TURN, CALL).ok
    env = {"PATH": DEFAULT_PATH, "HOME": str(workspace), "GIT_CONFIG_NOSYSTEM": "1"}
    log = subprocess.run(["git", "-C", str(workspace), "log", "--format=%s"], capture_output=True, text=True, env=env)
    assert log.stdout == "first\n", log.stderr
    fsck = subprocess.run(["git", "-C", str(workspace), "fsck", "--strict"], capture_output=True, text=True, env=env)
    assert fsck.returncode == 0, fsck.stderr
    status = subprocess.run(["git", "-C", str(workspace), "status", "--porcelain"], capture_output=True, text=True, env=env)
    assert status.stdout == ""  # .agent-artifacts ignores itself

    # A second commit on the existing repository: .git updates (objects, refs, index).
    (workspace / "app.py").write_text("print('hello')\n")
    capture_and_journal(workspace, "git -c user.email=a@example.com -c user.name=A commit -qam second", "call-2")
    assert journal.apply_journal(str(workspace), TURN, "call-2").ok
    log = subprocess.run(["git", "-C", str(workspace), "log", "--format=%s"], capture_output=True, text=True, env=env)
    assert log.stdout == "second\nfirst\n"


def test_exception_in_the_middle_of_apply_then_retry_appends_once(workspace, monkeypatch):
    (workspace / "log.txt").write_text("start\n")
    capture_and_journal(workspace, "echo appended >> log.txt && for i in 1 2 3 4 5; do echo $i > n$i; done")
    real = txn_apply._apply_one
    calls = []

    def crash_on_third(*args):
        calls.append(args)
        if len(calls) == 3:
            raise OSError("simulated crash")
        real(*args)

    monkeypatch.setattr(txn_apply, "_apply_one", crash_on_third)
    with pytest.raises(OSError, match="simulated"):
        journal.apply_journal(str(workspace), TURN, CALL)
    assert journal.journal_state(str(workspace), TURN, CALL) == journal.JOURNALED
    monkeypatch.setattr(txn_apply, "_apply_one", real)
    report = journal.apply_journal(str(workspace), TURN, CALL)
    assert report.ok, report.text()
    assert len(report.already) == 2 and len(report.applied) == 4
    assert (workspace / "log.txt").read_text() == "start\nappended\n"
    assert [(workspace / f"n{i}").read_text() for i in range(1, 6)] == [f"{i}\n" for i in range(1, 6)]


CHILD = r"""
import os, signal, sys
sys.path.insert(0, {repo!r})
from activities.txn import journal, overlay
from activities.txn import apply as txn_apply
from tests.txn.support.helpers import run_captured
ws, when = {ws!r}, {when!r}
cap, proc = run_captured(ws, "echo appended >> log.txt && mkdir -p out && echo a > out/a && echo b > out/b", "turn-1", "call-1")
journal.write_journal(cap, overlay.scan(cap), result={{"exit_code": proc.returncode, "output": proc.stdout}})
if when == "after-journal":
    os.kill(os.getpid(), signal.SIGKILL)
real, done = txn_apply._apply_one, []
def die_midway(*args):
    if len(done) == 2:
        os.kill(os.getpid(), signal.SIGKILL)
    real(*args)
    done.append(args)
txn_apply._apply_one = die_midway
journal.apply_journal(ws, "turn-1", "call-1")
"""


@pytest.mark.parametrize("when", ["after-journal", "during-apply"])
def test_sigkill_then_retry_finishes_the_apply_exactly_once(workspace, when):
    (workspace / "log.txt").write_text("start\n")
    child = subprocess.run([sys.executable, "-c", CHILD.format(repo=str(REPO), ws=str(workspace), when=when)],
                           capture_output=True, text=True, timeout=60)
    assert child.returncode == -signal.SIGKILL, child.stderr
    # The retry (a new process, like a new worker) finds the journal and does not re-run the command.
    assert journal.journal_state(str(workspace), TURN, CALL) == journal.JOURNALED
    with pytest.raises(FileExistsError):
        overlay.begin(str(workspace), TURN, CALL)
    report = journal.apply_journal(str(workspace), TURN, CALL)
    assert report.ok, report.text()
    assert (workspace / "log.txt").read_text() == "start\nappended\n"
    assert (workspace / "out" / "a").read_text() == "a\n" and (workspace / "out" / "b").read_text() == "b\n"
    assert not [p for p in os.listdir(workspace) if p.startswith(".txn-")]  # no temporary left behind
    assert journal.load(str(workspace), TURN, CALL).result["exit_code"] == 0
