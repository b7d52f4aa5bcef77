"""Preview before approval: run an ``ask`` command in a throwaway overlay,
show its output and the diff of what it would change, and apply exactly that
changeset when approved, with no second run.

``make_preview`` journals the captured changeset in state ``previewed`` (its
contents kept, no pre-images yet: nothing is applied) and renders the diff.
``apply_preview`` applies it only if the workspace is unchanged since the
command started. Which files a command *read* is not recorded (that would
need tracing every open), so "the files it read and changed are unchanged" is
checked conservatively: no inode anywhere in the workspace (the artifacts
folder aside) changed after the command started. Otherwise the result is
``stale``: ask again (run a new preview). ``discard_preview`` drops a preview
that was rejected.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Sequence

from core.tools.formatting import shown
from activities.txn.changeset import FILE, TEXT_DIFF_MAX_BYTES, file_diff, first_listed, summary
from activities.txn.journal import JOURNALED, PREVIEWED, Journal, apply_journal, load, take_preimages, write_journal
from activities.txn.overlay import Capture, Scan, remove_tree
from activities.txn.apply import ApplyReport
from activities.txn.store import WorkspaceReader, call_dir, changed_since

DIFF_MAX_CHARS = 60_000
DIFF_FILE = "diff.txt"


@dataclass
class Preview:
    turn_id: str
    call_id: str
    summary: str = ""
    diff: str = ""
    changes: int = 0
    conflicts: list[str] = field(default_factory=list)  # the preview itself could not be kept
    digest: str = ""  # sha256 of the changeset shown: what an approval binds to

    def text(self) -> str:
        if self.conflicts:
            return "Preview discarded: " + "; ".join(self.conflicts)
        if not self.changes:
            return "The command would change no files."
        return f"The command would make {self.changes} change(s):\n{self.summary}\n\n{self.diff}"


def make_preview(cap: Capture, scan: Scan, *, result: dict | None = None, first: Sequence[str] = ()) -> Preview:
    """Keep the captured changeset for approval and render its diff.
    ``first``: paths listed and diffed ahead of the rest (the effect gate's
    destructive ones: a long changeset must not push them past the cut)."""
    out = write_journal(cap, scan, result=result, preview=True)
    if out.journal is None:
        return Preview(cap.turn_id, cap.call_id, conflicts=out.conflicts)
    j = out.journal
    diff = render_diff(cap.workspace, j, first)
    with open(os.path.join(j.dir, DIFF_FILE), "w", encoding="utf-8") as fh:
        fh.write(diff)
    return Preview(cap.turn_id, cap.call_id, summary(j.changeset, first=first), diff, len(j.changeset.changes),
                   digest=j.changeset.digest())


def _read_bounded(reader: WorkspaceReader, rel: str) -> bytes:
    with os.fdopen(reader.open_file(rel), "rb") as fh:
        return fh.read(TEXT_DIFF_MAX_BYTES + 1)


def render_diff(root: str, j: Journal, first: Sequence[str] = ()) -> str:
    """Unified diffs of text files (old from the workspace, new from the
    journal); a line for binary, large, folder and symlink changes."""
    parts: list[str] = []
    reader = WorkspaceReader(root)
    changes = first_listed(j.changeset.changes, first)
    try:
        for number, c in enumerate(changes):
            old_file = c.old is not None and c.old.kind == FILE
            new_file = c.new is not None and c.new.kind == FILE
            if not (old_file or new_file):
                continue  # folders and symlinks: the summary says it
            old = _read_bounded(reader, c.path) if old_file else None
            new = None
            if new_file:
                with open(os.path.join(j.dir, c.content), "rb") as fh:
                    new = fh.read(TEXT_DIFF_MAX_BYTES + 1)
            parts.append(file_diff(c.path, old, new))
            if sum(map(len, parts)) > DIFF_MAX_CHARS and number + 1 < len(changes):
                rest = [shown(other.path) for other in changes[number + 1 :]]
                listed = ", ".join(rest[:20]) + (f" and {len(rest) - 20} more" if len(rest) > 20 else "")
                parts.append(
                    f"(diff cut at {DIFF_MAX_CHARS:,} characters: the diff of {len(rest)} more file(s) "
                    f"is not shown: {listed})\n"
                )
                break
    finally:
        reader.close()
    return "".join(parts)


def apply_preview(root: str, turn_id: str, call_id: str, expected_digest: str = "") -> ApplyReport:
    """Apply exactly the previewed changeset; status ``stale`` (nothing
    applied) when the workspace changed since the command started.
    ``expected_digest``: the changeset digest the approved preview showed (from
    the workflow history); any other changeset is refused."""
    root = os.path.realpath(root)
    j = load(root, turn_id, call_id)
    if j is None:
        return ApplyReport("refused", refused=[f"no preview for call {call_id!r} of turn {turn_id!r}"])
    if expected_digest and j.changeset.digest() != expected_digest:
        return ApplyReport("refused", refused=[
            f"call {call_id!r}: the changeset kept for approval is not the one the preview showed "
            f"(sha256 {j.changeset.digest()[:12]}, approved {expected_digest[:12]}); nothing applied"])
    if j.applied or j.state == JOURNALED:
        return apply_journal(root, turn_id, call_id)  # approved before (a retry): finish, do not redo
    changed = changed_since(root, j.started_ns)
    if changed:
        return ApplyReport("stale", conflicts=[f"{p}: changed since the preview" for p in changed])
    conflicts = take_preimages(root, j)
    if conflicts:
        return ApplyReport("stale", conflicts=conflicts)
    j.state = JOURNALED
    j.save()
    return apply_journal(root, turn_id, call_id, j)


def discard_preview(root: str, turn_id: str, call_id: str) -> None:
    """Forget a preview (approval rejected, or asking again)."""
    j = load(root, turn_id, call_id)
    if j is not None and j.state == PREVIEWED and not j.applied:
        remove_tree(call_dir(os.path.realpath(root), turn_id, call_id))
