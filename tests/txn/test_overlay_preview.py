"""Preview before approval on real overlays: the command runs once in a
throwaway view, its diff is shown, approval applies exactly that changeset,
and a workspace changed since means asking again."""

from __future__ import annotations

from activities.txn import journal
from activities.txn import overlay
from activities.txn.preview import apply_preview, discard_preview, make_preview
from tests.txn.support.helpers import needs_overlay, run_captured, tree

pytestmark = needs_overlay

TURN, CALL = "turn-p", "call-p"
SCRIPT = "echo appended >> log.txt && cp src.txt copy.txt && printf '\\000\\001' > blob.bin && echo run >> runs"


def previewed(ws):
    (ws / "log.txt").write_text("start\n")
    (ws / "src.txt").write_text("source\n")
    (ws / "runs").write_text("")
    cap, proc = run_captured(ws, SCRIPT, TURN, CALL)
    assert proc.returncode == 0, proc.stderr
    return make_preview(cap, overlay.scan(cap), result={"exit_code": 0, "output": proc.stdout})


def test_preview_shows_the_diff_and_approval_applies_exactly_that_without_a_second_run(workspace):
    p = previewed(workspace)
    before = tree(workspace)
    assert journal.journal_state(str(workspace), TURN, CALL) == journal.PREVIEWED
    assert "--- a/log.txt\n+++ b/log.txt\n" in p.diff and "+appended\n" in p.diff
    assert "--- /dev/null\n+++ b/copy.txt\n" in p.diff
    assert "Binary or large file blob.bin: 0 -> 2 bytes" in p.diff
    assert "create copy.txt" in p.summary and p.changes == 4
    assert tree(workspace) == before  # nothing applied while waiting

    report = apply_preview(str(workspace), TURN, CALL)
    assert report.ok, report.text()
    assert (workspace / "log.txt").read_text() == "start\nappended\n"
    assert (workspace / "runs").read_text() == "run\n"  # ran once: in the preview
    assert apply_preview(str(workspace), TURN, CALL).applied == []  # a retried approval does nothing twice
    assert (workspace / "runs").read_text() == "run\n"


def test_a_file_the_command_read_changed_since_the_preview_means_asking_again(workspace):
    previewed(workspace)
    (workspace / "src.txt").write_text("edited after the preview\n")  # read by cp, not changed by it
    report = apply_preview(str(workspace), TURN, CALL)
    assert report.status == "stale" and "src.txt: changed since the preview" in report.text()
    assert not (workspace / "copy.txt").exists()
    discard_preview(str(workspace), TURN, CALL)
    assert journal.journal_state(str(workspace), TURN, CALL) == journal.NONE  # free to preview again


def test_a_preview_is_not_applied_by_the_plain_journal_path(workspace):
    previewed(workspace)
    assert journal.apply_journal(str(workspace), TURN, CALL).status == "refused"
    assert not (workspace / "copy.txt").exists()
