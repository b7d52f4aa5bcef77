"""Turn rollback: put back every file a turn changed, from the pre-images.

Everything comes from disk (``<state>/txn/<turn>/*/manifest.json`` in the
worker's state folder, each record validated and each pre-image re-hashed),
so it works after restarts and from any process. For each path the turn
touched: the target is the pre-image recorded by the turn's *first* call that
touched it (the state before the turn), and the expected current state is
what its *last* call left. A file whose current state is neither (someone
changed it since) is left alone and listed; a path already back in its
pre-turn state counts as done (so an interrupted rollback can simply be run
again). The restore goes through the same check-then-apply engine as bash
(folder descriptors, O_NOFOLLOW, temporary name + rename), copying the
pre-images so the journal stays intact.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from activities.txn.changeset import FILE, Change, Node, same
from activities.txn.journal import KIND_FILES, PREVIEWED, PreImage, load_dir
from activities.txn.apply import apply_changes
from activities.txn import turn_log
from activities.txn.retention import pruned_text
from activities.txn.store import WorkspaceReader, call_folders, lock_call, turn_dir
from activities.workspace.paths import WorkspaceError


@dataclass
class RollbackReport:
    turn_id: str
    restored: list[str] = field(default_factory=list)
    already: list[str] = field(default_factory=list)  # already in their pre-turn state
    conflicts: list[str] = field(default_factory=list)  # changed since by someone else: left as they are
    not_restorable: list[str] = field(default_factory=list)  # no pre-image kept (size cap)
    unchecked: list[str] = field(default_factory=list)  # restored without a "changed since?" check
    pruned: str = ""  # what retention removed of the turn's records (they cannot be rolled back)

    def text(self) -> str:
        if not (self.restored or self.already or self.conflicts or self.not_restorable):
            if self.pruned:
                return f"Turn {self.turn_id}: nothing rolled back: {self.pruned}."
            return f"Turn {self.turn_id}: no recorded file changes to roll back."
        parts = [f"Turn {self.turn_id}: restored {len(self.restored)} path(s)."]
        if self.pruned:
            parts.append(f"Not rolled back: {self.pruned}.")
        parts += [f"  restored {p}" for p in self.restored]
        if self.already:
            parts.append(f"{len(self.already)} path(s) were already in their state before the turn.")
        if self.conflicts:
            parts.append("Not restored, changed since the turn by someone else:")
            parts += [f"  {c}" for c in self.conflicts]
        if self.not_restorable:
            parts.append("Not restorable (no pre-image kept):")
            parts += [f"  {p}" for p in self.not_restorable]
        if self.unchecked:
            parts.append("Restored without checking for later changes (no post-image was recorded):")
            parts += [f"  {p}" for p in self.unchecked]
        return "\n".join(parts)


@dataclass
class _Touch:
    order: tuple[int, int]
    pre: PreImage | None
    content: str | bytes  # the pre-image's content: turn-folder-relative file, or the bytes themselves
    post: Node | None
    post_known: bool


def _touches(folder: str, bad: list[str]) -> dict[str, list[_Touch]]:
    """What each path went through in the turn; records that do not validate
    are left out and named in ``bad``."""
    by_path: dict[str, list[_Touch]] = {}
    for name in call_folders(folder):
        try:
            j = load_dir(os.path.join(folder, name))
        except WorkspaceError as exc:
            bad.append(f"(a call's record): {exc}")
            continue
        if j is None or j.state == PREVIEWED:
            continue  # a preview never reached the workspace
        if j.kind == KIND_FILES:
            items = [(p, pre, j.posts.get(p), p in j.posts) for p, pre in j.preimages.items()]
        else:
            items = [(c.path, j.preimages.get(c.path), c.new, True) for c in j.changeset.changes]
        for i, (path, pre, post, known) in enumerate(items):
            content = f"{name}/{pre.file}" if pre is not None and pre.file else ""
            by_path.setdefault(path, []).append(_Touch((j.created_ns, i), pre, content, post, known))
    if os.path.exists(os.path.join(folder, turn_log.LOG)):  # write_file and edit_file
        idx = turn_log.index(folder)
        with idx.lock:
            bad.extend(idx.bad)
            for call, pres in idx.pres.items():
                posts = idx.posts.get(call, {})
                for i, (path, p) in enumerate(pres.items()):
                    pre = PreImage(p.node, p.file, p.kept, p.note)
                    content: str | bytes = p.data if p.data is not None else p.file
                    by_path.setdefault(path, []).append(
                        _Touch((p.time_ns, i), pre, content, posts.get(path), path in posts))
    for touches in by_path.values():
        touches.sort(key=lambda t: t.order)
    return by_path


def _materialize(folder: str, n: int, data: bytes) -> str:
    """Write a pre-image kept inline to a file the apply can copy (and verify)."""
    os.makedirs(os.path.join(folder, "rollback-pre"), 0o700, exist_ok=True)
    rel = f"rollback-pre/{n}"
    with open(os.path.join(folder, rel), "wb") as fh:
        fh.write(data)
    return rel


def rollback_turn(root: str, turn_id: str) -> RollbackReport:
    """Restore what the turn changed (write_file, edit_file and bash alike).

    Two rollbacks of one turn (two clients, or a retry while the first
    attempt still runs) take turns on the turn folder's lock: the second then
    finds every path back and reports it as already restored, instead of
    both restoring the same paths (each claiming them) and one rewriting the
    inline pre-images (``rollback-pre/``) the other is copying from.

    It also waits for every call's own lock: an apply whose activity was
    cancelled (the turn cancelled mid-apply) goes on copying in its thread,
    and a rollback reading the journal meanwhile would find the paths not
    yet copied "already" back, then see them land after it."""
    root = os.path.realpath(root)
    folder = turn_dir(root, turn_id)
    locks = [lock_call(folder, wait=True)] if os.path.isdir(folder) else []
    try:
        locks += [lock_call(os.path.join(folder, name), wait=True) for name in call_folders(folder)]
        return _rollback(root, folder, turn_id)
    finally:
        for fd in locks:
            if fd is not None:
                os.close(fd)


def _rollback(root: str, folder: str, turn_id: str) -> RollbackReport:
    report = RollbackReport(turn_id)
    changes: list[Change] = []
    bad: list[str] = []
    reader = WorkspaceReader(root)
    try:
        for path, touches in sorted(_touches(folder, bad).items()):
            first, last = touches[0], touches[-1]
            pre = first.pre
            if pre is None:
                continue  # the call never kept its pre-images (it ended in a conflict)
            if pre.node is not None and pre.node.kind == FILE and not pre.kept:
                report.not_restorable.append(f"{path}: {pre.note}")
                continue
            expected = last.post
            if not last.post_known:
                expected = reader.node(path)
                report.unchecked.append(path)
            elif same(expected, pre.node):
                continue  # the turn left it as it found it
            content = first.content
            if isinstance(content, bytes):  # a small pre-image kept inside its record
                content = _materialize(folder, len(changes), content)
            changes.append(Change(path, expected, pre.node, content=content))
    finally:
        reader.close()
    applied = apply_changes(root, folder, changes, tag="rollback", partial=True)
    report.restored = applied.applied
    report.already = applied.already
    report.conflicts = applied.conflicts + applied.refused + bad
    report.unchecked = [p for p in report.unchecked if p in applied.applied]
    report.pruned = pruned_text(root, turn_id)
    return report
