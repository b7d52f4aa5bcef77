"""The durable journal of one call's workspace effects, and pre-images.

States of a call (``journal_state``): ``none`` (no manifest: nothing was
applied, running the command again is safe) -> ``previewed`` (a preview
waiting for approval) -> ``journaled`` (changeset, contents and pre-images
on disk, fsync'd) -> ``applied`` (marker file). A retry that finds
``journaled`` calls ``apply_journal``, which finishes the apply instead of
running the command again; ``applied`` returns the stored result.

Pre-images: before a changeset touches a file, the file's inode is hard-linked
into the journal (``pre/<i>``; a copy when it has other links), so the apply,
which always renames a new inode into place, leaves the old content intact
there. Folders and symlinks are recorded as nodes. Sizes are capped
(``AGENT_TOOLS_TXN_PREIMAGE_MB`` per file, default 64;
``AGENT_TOOLS_TXN_PREIMAGE_CALL_MB`` per call, default 512): a pre-image not
kept is noted in the result and that file cannot be rolled back.

File tools record theirs through the same API: ``record_preimage`` before
writing, ``record_postimage`` after (so rollback can tell whether someone
changed the file since).
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from dataclasses import dataclass, field

from activities.txn import turn_log
from activities.txn.changeset import FILE, SPECIAL_BITS, BadRecord, Changeset, Node, checked_node, checked_rel, node_json
from activities.txn.overlay import Capture, Scan
from activities.txn.apply import ApplyReport, apply_changes
from activities.settings import current as current_settings
from activities.txn.state import id_key
from activities.workspace.paths import WorkspaceError
from core.config import PREIMAGE_CALL_ENV, PREIMAGE_FILE_ENV
from activities.txn.store import (
    APPLIED,
    MANIFEST,
    ThroughSymlink,
    WorkspaceReader,
    call_dir,
    call_folders,
    fsync_dir,
    lock_call,
    node_of,
    open_dir,
    read_json,
    sha256_file,
    split,
    txn_base,
    sha256_fd,
    sync_filesystem,
    touch_durably,
    turn_dir,
    under_artifacts,
    write_json_durably,
)

NONE, PREVIEWED, JOURNALED, STATE_APPLIED = "none", "previewed", "journaled", "applied"
INVALID = "invalid"  # a record is there but does not validate: never run again, never applied


class BadJournal(WorkspaceError):
    """A call's record does not hold what the worker writes."""
KIND_BASH, KIND_FILES = "bash", "files"


@dataclass
class PreImage:
    node: Node | None  # None: the path did not exist
    file: str = ""  # call-folder-relative copy of a file's content
    kept: bool = True
    note: str = ""


@dataclass
class Journal:
    dir: str
    turn_id: str
    call_id: str
    kind: str = KIND_BASH
    state: str = JOURNALED
    created_ns: int = 0
    started_ns: int = 0
    changeset: Changeset = field(default_factory=Changeset)
    preimages: dict[str, PreImage] = field(default_factory=dict)
    posts: dict[str, Node | None] = field(default_factory=dict)  # file tools: recorded after the write
    result: dict = field(default_factory=dict)  # the command's result, returned again on a retry
    # Written by a journal-only attempt: nothing of it was applied by that
    # attempt (the turn applies it next, by the digest its history holds).
    deferred: bool = False

    def save(self) -> None:
        write_json_durably(os.path.join(self.dir, MANIFEST), {
            "version": 1, "turn_id": self.turn_id, "call_id": self.call_id, "kind": self.kind,
            "state": self.state, "created_ns": self.created_ns, "started_ns": self.started_ns,
            "changeset": self.changeset.to_json(),
            "preimages": {p: {"node": node_json(pre.node), "file": pre.file, "kept": pre.kept, "note": pre.note}
                          for p, pre in self.preimages.items()},
            "posts": {p: node_json(n) for p, n in self.posts.items()},
            "result": self.result, "deferred": self.deferred,
        })

    @property
    def applied(self) -> bool:
        return os.path.exists(os.path.join(self.dir, APPLIED))

    def notices(self) -> list[str]:
        return [pre.note for pre in self.preimages.values() if not pre.kept]


def load_dir(path: str) -> Journal | None:
    """The journal in a call folder, validated like any input (paths relative
    and plain, known node kinds, permission bits only); None when absent.
    A record that does not validate raises WorkspaceError and is never acted on."""
    try:
        raw = read_json(os.path.join(path, MANIFEST))
    except FileNotFoundError:
        return None
    except ValueError as exc:
        raise BadJournal(f"the transaction record in {path} is unreadable ({exc}); it is not used") from None
    try:
        if not isinstance(raw, dict) or raw.get("version") != 1:
            raise BadRecord("not a version 1 journal")
        preimages = {}
        for p, d in raw["preimages"].items():
            checked_rel(p)
            if d.get("file"):
                checked_rel(d["file"], "pre-image file")
            preimages[p] = PreImage(checked_node(d["node"]), str(d.get("file", "")), bool(d.get("kept", True)),
                                    str(d.get("note", "")))
        posts = {checked_rel(p): checked_node(d) for p, d in raw.get("posts", {}).items()}
        if raw["kind"] not in (KIND_BASH, KIND_FILES) or raw["state"] not in (PREVIEWED, JOURNALED):
            raise BadRecord(f"kind {raw['kind']!r} / state {raw['state']!r}")
        return Journal(
            dir=path, turn_id=str(raw["turn_id"]), call_id=str(raw["call_id"]), kind=raw["kind"], state=raw["state"],
            created_ns=int(raw["created_ns"]), started_ns=int(raw["started_ns"]),
            changeset=Changeset.from_json(raw["changeset"]), preimages=preimages, posts=posts,
            result=raw.get("result", {}) if isinstance(raw.get("result", {}), dict) else {},
            deferred=raw.get("deferred") is True,
        )
    except (BadRecord, KeyError, TypeError, AttributeError, ValueError) as exc:
        raise BadJournal(f"the transaction record in {path} is not valid ({exc}); it is not used") from None


def load(root: str, turn_id: str, call_id: str) -> Journal | None:
    return load_dir(call_dir(os.path.realpath(root), turn_id, call_id))


def journal_state(root: str, turn_id: str, call_id: str) -> str:
    try:
        j = load(root, turn_id, call_id)
    except BadJournal:
        return INVALID
    if j is None:
        return NONE
    return STATE_APPLIED if j.applied else j.state


# --- writing a bash journal -------------------------------------------------------


@dataclass
class JournalOutcome:
    journal: Journal | None  # None: not journaled (conflict)
    conflicts: list[str] = field(default_factory=list)


def write_journal(cap: Capture, scan: Scan, *, result: dict | None = None, preview: bool = False,
                  deferred: bool = False) -> JournalOutcome:
    """Make a captured changeset durable. A file the changeset touches that
    changed in the workspace after the command started is a conflict: nothing
    is journaled (the layers are discarded). ``preview`` keeps the changeset
    for approval without pre-images (``take_preimages`` runs when approved)."""
    if scan.changed_during:
        cap.discard()
        return JournalOutcome(None, [f"{p}: changed in the workspace while the command ran" for p in scan.changed_during])
    j = Journal(cap.dir, cap.turn_id, cap.call_id, state=PREVIEWED if preview else JOURNALED,
                created_ns=time.time_ns(), started_ns=cap.started_ns(), changeset=scan.changeset,
                result=result or {}, deferred=deferred)
    if not preview:
        conflicts = take_preimages(cap.workspace, j)
        if conflicts:
            cap.discard()
            return JournalOutcome(None, conflicts)
    sync_filesystem(cap.dir)  # contents (upper/) and pre-images on disk before the manifest names them
    j.save()
    cap.discard(keep_upper=True)  # the upper layer holds the new contents the manifest points to
    return JournalOutcome(j)


def take_preimages(root: str, j: Journal) -> list[str]:
    """Keep the current content of every file the changeset replaces or
    deletes (fills ``j.preimages``); conflicts when a file no longer matches."""
    pre_dir = os.path.join(j.dir, "pre")
    os.makedirs(pre_dir, exist_ok=True)
    settings = current_settings()
    per_file, per_call = settings.txn_preimage_file_bytes, settings.txn_preimage_call_bytes
    total, conflicts = 0, []
    reader = WorkspaceReader(root)
    try:
        for i, c in enumerate(j.changeset.changes):
            if c.old is None or c.old.kind != FILE:
                j.preimages[c.path] = PreImage(c.old)
                continue
            if c.old.size > per_file or total + c.old.size > per_call:
                limit = "per-file" if c.old.size > per_file else "per-call"
                j.preimages[c.path] = PreImage(c.old, kept=False, note=(
                    f"pre-image of {c.path} not kept ({c.old.size} bytes over the {limit} cap, "
                    f"{PREIMAGE_FILE_ENV}/{PREIMAGE_CALL_ENV}): it cannot be rolled back"))
                continue
            dst = os.path.join(pre_dir, str(i))
            if not _keep(reader, c.path, dst) or sha256_file(dst) != c.old.sha256:
                conflicts.append(f"{c.path}: changed in the workspace since the command started")
                continue
            total += c.old.size
            j.preimages[c.path] = PreImage(c.old, file=f"pre/{i}")
    finally:
        reader.close()
    return conflicts


def _keep(reader: WorkspaceReader, rel: str, dst: str, link: bool = True) -> bool:
    """Hard-link (or copy, when it has other links or ``link`` is off) the
    workspace file to dst."""
    if os.path.lexists(dst):
        os.unlink(dst)
    parent, name = split(rel)
    try:
        pfd = open_dir(reader.fd, parent)
    except (ThroughSymlink, FileNotFoundError, NotADirectoryError):
        return False
    try:
        try:
            st = os.lstat(name, dir_fd=pfd)
        except FileNotFoundError:
            return False
        if not stat.S_ISREG(st.st_mode):
            return False
        if link and st.st_nlink == 1:
            try:
                os.link(name, dst, src_dir_fd=pfd, follow_symlinks=False)
                return True
            except OSError:
                pass
        fd_in = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=pfd)
        try:
            fd_out = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            try:
                while chunk := os.read(fd_in, 1 << 20):
                    os.write(fd_out, chunk)
                os.fsync(fd_out)
            finally:
                os.close(fd_out)
        finally:
            os.close(fd_in)
        return True
    finally:
        os.close(pfd)


def apply_journal(root: str, turn_id: str, call_id: str, j: Journal | None = None,
                  fresh: bool = False) -> ApplyReport:
    """Apply (or finish applying) a journaled changeset; idempotent. ``j``:
    the journal (saves reading it back); ``fresh``: this attempt just wrote
    it (its contents were hashed by the scan: not re-read before applying)."""
    j = j or load(root, turn_id, call_id)
    if j is None:
        return ApplyReport("refused", refused=[f"no journal for call {call_id!r} of turn {turn_id!r}"])
    if j.state == PREVIEWED:
        return ApplyReport("refused", refused=["this changeset is a preview: apply it with apply_preview"])
    changes = j.changeset.changes
    lock = lock_call(j.dir, wait=True)  # an overlapping attempt applying the same journal: one after the other
    try:
        if j.applied:
            return ApplyReport("applied", already=[c.path for c in changes], notices=j.notices())
        # Copied, never hard-linked: a link would let a later in-place write in
        # the workspace change the journal's copy (and the store is the worker's).
        report = apply_changes(os.path.realpath(root), j.dir, changes, tag=os.path.basename(j.dir)[:16],
                               verify=not fresh)
        if report.ok:
            touch_durably(os.path.join(j.dir, APPLIED))
            report.notices += j.notices()
        return report
    finally:
        os.close(lock)


# --- pre-images for the file tools -------------------------------------------------


def _rel(root: str, path: str) -> str | None:
    rel = os.path.relpath(path, root) if os.path.isabs(path) else os.path.normpath(path)
    rel = rel.replace(os.sep, "/")
    if rel == "." or rel.startswith("../") or rel == ".." or under_artifacts(rel):
        return None
    return rel


def _snapshot(dir_fd: int, name: str, want_data: bool) -> tuple[Node | None, bytes | None, int]:
    """(node, content when small and wanted, descriptor of the file or -1) of
    ``name`` in the folder ``dir_fd``, read once, never through a symlink.
    The caller closes the descriptor (kept for copying a large file)."""
    try:
        st = os.lstat(name, dir_fd=dir_fd)
    except FileNotFoundError:
        return None, None, -1
    if not stat.S_ISREG(st.st_mode):
        return node_of(st, str, lambda: os.readlink(name, dir_fd=dir_fd)), None, -1
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        fst = os.fstat(fd)
        if want_data and fst.st_size <= turn_log.INLINE_MAX:
            data = os.read(fd, turn_log.INLINE_MAX + 1)
            fst = os.fstat(fd)
            node = Node(FILE, stat.S_IMODE(fst.st_mode) & ~SPECIAL_BITS, len(data), hashlib.sha256(data).hexdigest())
            os.close(fd)
            return node, data, -1
        return node_of(fst, lambda: sha256_fd(fd), str), None, fd
    except BaseException:
        os.close(fd)
        raise


def record_preimage(root: str, turn_id: str, call_id: str, rel_path: str, *, durable: bool = True,
                    dir_fd: int | None = None, name: str = "") -> str:
    """Before a file tool writes ``rel_path``: keep what is there now (in the
    turn's log, made durable unless ``durable`` is False) so the turn can be
    rolled back. ``dir_fd``/``name``: the folder the tool already holds open.
    Returns a notice ('' normally; the reason when the pre-image was not kept)."""
    root = os.path.realpath(root)
    rel = _rel(root, rel_path)
    if rel is None:
        return ""
    idx = turn_log.index(turn_dir(root, turn_id, create=True))
    if rel in idx.pres.get(call_id, {}):
        return ""  # the first pre-image of this call is the one that counts
    reader, fd = None, -1
    if dir_fd is None:
        reader = WorkspaceReader(root)
        parent, name = split(rel)
        try:
            dir_fd = reader.dir_fd(parent)
        except (ThroughSymlink, FileNotFoundError, NotADirectoryError):
            dir_fd = -1
    try:
        node, data, fd = _snapshot(dir_fd, name, want_data=True) if dir_fd >= 0 else (None, None, -1)
        pre = turn_log.Pre(node, data=data, time_ns=time.time_ns())
        if node is not None and node.kind == FILE and node.size > current_settings().txn_preimage_file_bytes:
            pre = turn_log.Pre(node, kept=False, time_ns=pre.time_ns, note=(
                f"pre-image of {rel} not kept ({node.size} bytes over the per-file cap, {PREIMAGE_FILE_ENV}): it "
                "cannot be rolled back"))
        elif fd >= 0:
            pre = _keep_large(idx.folder, call_id, rel, node, fd)
    finally:
        if fd >= 0:
            os.close(fd)
        if reader is not None:
            reader.close()
    with idx.lock:
        idx.append(turn_log.pre_record(call_id, rel, pre), durable)
    return pre.note


def _keep_large(folder: str, call_id: str, rel: str, node: Node, fd: int) -> turn_log.Pre:
    """A pre-image too large to travel in its record: copied (fsync'd) into pre/."""
    pre_dir = os.path.join(folder, "pre")
    os.makedirs(pre_dir, 0o700, exist_ok=True)
    name = f"pre/{id_key(call_id)}-{hashlib.sha256(rel.encode('utf-8', 'surrogatepass')).hexdigest()[:16]}"
    dst = os.path.join(folder, name)
    if os.path.lexists(dst):
        os.unlink(dst)
    out = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        while chunk := os.read(fd, 1 << 20):
            os.write(out, chunk)
        os.fsync(out)
    finally:
        os.close(out)
    fsync_dir(pre_dir)
    return turn_log.Pre(node, file=name, time_ns=time.time_ns())


def record_postimage(root: str, turn_id: str, call_id: str, rel_path: str, node: Node | None = None,
                     known: bool = False) -> None:
    """After a file tool wrote ``rel_path``: what it left (for rollback's
    check), appended without a sync (see activities.txn.turn_log). ``node``
    with ``known``: what the tool wrote (saves reading it back)."""
    root = os.path.realpath(root)
    rel = _rel(root, rel_path)
    if rel is None:
        return
    idx = turn_log.index(turn_dir(root, turn_id))
    if rel not in idx.pres.get(call_id, {}):
        return
    if not known:
        reader = WorkspaceReader(root)
        try:
            node = reader.node(rel)
        finally:
            reader.close()
    with idx.lock:
        idx.append(turn_log.post_record(call_id, rel, node), durable=False)


def sync_log(root: str, turn_id: str) -> None:
    """Make the turn's log durable now (records appended with durable=False)."""
    idx = turn_log.index(turn_dir(os.path.realpath(root), turn_id))
    with idx.lock:
        idx.sync()


def prunable(root: str) -> list[str]:
    """Call folders artifact pruning may delete, oldest first: applied ones
    (deleting them gives up rolling back their turn) and leftovers of
    captures that never reached a journal. Journaled and previewed calls are
    never listed: a retry or an approval still needs them."""
    base = txn_base(os.path.realpath(root))
    found: list[tuple[int, str]] = []
    for turn in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        for call in call_folders(os.path.join(base, turn)):
            folder = os.path.join(base, turn, call)
            j = load_dir(folder)
            if j is None or j.applied:
                found.append((j.created_ns if j else int(os.lstat(folder).st_mtime_ns), folder))
    return [folder for _, folder in sorted(found)]
