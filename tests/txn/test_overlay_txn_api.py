"""The API the bash activity calls (activities/txn/api.py), end to end on real
overlays and real bubblewrap: start -> wrap -> run -> finish, retries that
resume instead of re-running, read-only enforcement, previews, fallback."""

from __future__ import annotations

import subprocess

from core.config import CHANGESET_FILES_ENV, CHANGESET_MB_ENV
from activities.txn import overlay
from activities.txn import api as txn
from tests.txn.support.helpers import DEFAULT_PATH, needs_overlay, sandboxed, tree

pytestmark = needs_overlay

TURN = "turn-api"


def run(started: txn.TxnStart, script: str, timeout: float = 30) -> tuple[bool, dict]:
    try:
        proc = subprocess.run(started.wrap(sandboxed(started.root, script)), capture_output=True, text=True,
                              timeout=timeout, env={"PATH": DEFAULT_PATH})
    except subprocess.TimeoutExpired:
        return False, {}
    return True, {"exit_code": proc.returncode, "output": proc.stdout}


def test_ask_command_is_applied_and_a_retry_returns_the_stored_result(workspace):
    (workspace / "log.txt").write_text("start\n")
    started = txn.start(str(workspace), TURN, "c1")
    assert started.mode == "capture"
    completed, result = run(started, "echo appended >> log.txt && echo printed")
    done = txn.finish(started, verdict="ask", completed=completed, result=result)
    assert done.capture == "applied" and not done.is_error
    assert done.metadata == {"capture": "applied", "changed_files": "1"}
    assert "modify log.txt" in done.text
    # The worker is lost after the apply: the retry must not run the command again.
    again = txn.start(str(workspace), TURN, "c1")
    assert again.mode == "done"
    replay = txn.resume(str(workspace), TURN, "c1")
    assert replay.capture == "applied" and replay.stored == {"exit_code": 0, "output": "printed\n"}
    assert (workspace / "log.txt").read_text() == "start\nappended\n"


def test_allowed_command_that_writes_is_refused_and_the_workspace_unchanged(workspace):
    (workspace / "a.txt").write_text("a\n")
    started = txn.start(str(workspace), TURN, "c2")
    completed, result = run(started, "cat a.txt > b.txt")
    done = txn.finish(started, verdict="allow", completed=completed, result=result)
    assert done.capture == "read-only-violation" and done.is_error
    assert "tried to change files" in done.text and "create b.txt" in done.text
    assert tree(workspace) == {"a.txt": "a\n"}


def test_timed_out_command_applies_nothing(workspace):
    started = txn.start(str(workspace), TURN, "c3")
    completed, result = run(started, "echo partial > out.txt && sleep 30", timeout=1.5)
    done = txn.finish(started, verdict="ask", completed=completed, result=result)
    assert done.capture == "discarded" and "nothing it changed was applied" in done.text
    assert not (workspace / "out.txt").exists()


def test_preview_then_approval(workspace):
    started = txn.start(str(workspace), TURN, "c4")
    completed, result = run(started, "echo hello > greeting.txt")
    done = txn.finish(started, verdict="ask", completed=completed, result=result, preview=True)
    assert done.capture == "previewed" and "+hello" in done.preview.diff
    assert not (workspace / "greeting.txt").exists()
    assert txn.start(str(workspace), TURN, "c4").mode == "previewed"
    approved = txn.approve_preview(str(workspace), TURN, "c4")
    assert approved.capture == "applied" and (workspace / "greeting.txt").read_text() == "hello\n"


def test_capture_unavailable_runs_direct_and_says_why(workspace, monkeypatch):
    monkeypatch.setenv(overlay.TXN_ENV, "off")
    started = txn.start(str(workspace), TURN, "c5")
    assert started.mode == "direct"
    completed, result = run(started, "echo direct > d.txt")
    done = txn.finish(started, verdict="ask", completed=completed, result=result)
    assert done.metadata == {"capture": "unavailable", "capture_reason": "disabled (AGENT_TOOLS_TXN=off)"}
    assert (workspace / "d.txt").read_text() == "direct\n"


def test_an_overlapping_attempt_of_the_same_call_is_told_to_retry_later(workspace):
    first = txn.start(str(workspace), TURN, "c6")
    assert first.mode == "capture"
    second = txn.start(str(workspace), TURN, "c6")  # a heartbeat timeout while the first still runs
    assert second.mode == "busy" and "still running" in second.reason
    completed, result = run(first, "echo once > once.txt")
    assert txn.finish(first, verdict="ask", completed=completed, result=result).capture == "applied"
    assert txn.start(str(workspace), TURN, "c6").mode == "done"


def test_artifacts_folder_replaced_by_a_symlink_means_no_capture_and_says_why(workspace, tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (workspace / ".agent-artifacts").symlink_to(tmp_path / "elsewhere")
    started = txn.start(str(workspace), TURN, "c7")
    assert started.mode == "direct" and "symlink" in started.reason
    assert list((tmp_path / "elsewhere").iterdir()) == []


def test_names_with_control_characters_are_never_applied(workspace):
    """The file tools refuse such names; a captured command cannot bring them in either."""
    started = txn.start(str(workspace), TURN, "c-ctl")
    completed, result = run(started, "touch \"$(printf 'evil\\033[2Jname')\" \"$(printf 'two\\nlines')\" "
                                     "&& mkdir \"$(printf 'd\\rx')\" && touch \"$(printf 'd\\rx')/in\" && echo ok > ok.txt")
    done = txn.finish(started, verdict="ask", completed=completed, result=result)
    assert done.capture == "applied", done.text
    assert tree(workspace) == {"ok.txt": "ok\n"}
    assert done.text.count("control character") == 3 and "\x1b" not in done.text and "\r" not in done.text


def test_a_changeset_over_the_bound_is_refused_with_a_clear_error(workspace, monkeypatch):
    monkeypatch.setenv(CHANGESET_MB_ENV, "1")
    started = txn.start(str(workspace), TURN, "c-big")
    completed, result = run(started, "head -c 3000000 /dev/zero > big.bin && echo small > s.txt")
    done = txn.finish(started, verdict="ask", completed=completed, result=result)
    assert done.capture == "too-large" and done.is_error, done.text
    # The scan stops at the first file past the bound (it never hashes the rest).
    assert "at least 3,000,000 bytes of new content (at most 1,048,576)" in done.text and "nothing was applied" in done.text
    assert tree(workspace) == {}
    monkeypatch.setenv(CHANGESET_FILES_ENV, "5")
    monkeypatch.delenv(CHANGESET_MB_ENV)
    started = txn.start(str(workspace), TURN, "c-many")
    completed, result = run(started, "for i in 1 2 3 4 5 6 7; do echo $i > f$i; done")
    done = txn.finish(started, verdict="ask", completed=completed, result=result)
    assert done.capture == "too-large" and "at least 6 changed paths (at most 5)" in done.text, done.text
    assert tree(workspace) == {}
