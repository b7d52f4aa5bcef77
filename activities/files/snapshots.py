"""Snapshots and the optimistic-lock check shared by write_file and edit_file.

A read records what it saw (``Snapshot``: mtime_ns, size, sha256). A write or
edit carries the snapshot the session holds; before touching the file we ask
"is the file on disk still what the snapshot saw?". Same size and mtime is the
fast path; otherwise (and always for small files, see ``RACY_BELOW``) the
content hash decides, so a ``touch`` or a sync tool rewriting identical bytes
is not a conflict. When it is one, the model gets a short diff and is told to
read the file again.

Huge files (over ``SAMPLED_ABOVE``, 2 GiB) are not hashed whole: hashing
300 GiB pinned the worker for minutes. Their snapshot holds a bounded
fingerprint instead, ``sampled:`` + sha256 over size, mtime, inode and the
first and last MiB, and a conflict check compares that same fingerprint: any
rewrite by rename (new inode), change of size or mtime, or of the head or the
tail is seen; an in-place change in the middle that also restores the mtime
is not.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import stat

from activities.workspace.cancel import check
from activities.workspace.root import Location, WorkspaceError, WorkspaceRoot
from core.contracts import Snapshot

HASH_CHUNK = 1 << 20
# Above this size a snapshot is a bounded fingerprint (see the module docstring).
SAMPLED_ABOVE = 2 << 30
SAMPLE_BYTES = 1 << 20
SAMPLED_PREFIX = "sampled:"
# Timestamps are kernel "coarse" time (one tick, ~4 ms): a same-size rewrite
# within the tick of a read keeps mtime_ns unchanged. Hashing a file this small
# costs under a millisecond, so below this size the hash always decides and the
# stat fast path is kept for files where hashing is what it saves.
RACY_BELOW = 1 << 20
MAX_DIFF_LINES = 40
# A diff of bigger texts is slow and would not fit anyway.
MAX_DIFF_INPUT_BYTES = 2 << 20


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_fd(fd: int) -> str:
    """Hash an open file from its current position to the end, in chunks
    (stopping if the attempt is cancelled)."""
    h = hashlib.sha256()
    while chunk := os.read(fd, HASH_CHUNK):
        h.update(chunk)
        check()
    return h.hexdigest()


def is_sampled(size: int) -> bool:
    return size > SAMPLED_ABOVE


def sampled_fingerprint(fd: int, st: os.stat_result) -> str:
    """The bounded fingerprint of a huge file (the descriptor's own stat ``st``)."""
    h = hashlib.sha256(f"{st.st_size}:{st.st_mtime_ns}:{st.st_dev}:{st.st_ino}\n".encode())
    h.update(os.pread(fd, SAMPLE_BYTES, 0))
    h.update(os.pread(fd, SAMPLE_BYTES, max(0, st.st_size - SAMPLE_BYTES)))
    return SAMPLED_PREFIX + h.hexdigest()


def open_regular(loc: Location) -> tuple[int, os.stat_result]:
    """Open the regular file at ``loc`` for reading (never a link, FIFO or device)."""
    fd = loc.open(os.O_RDONLY | os.O_NONBLOCK)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise WorkspaceError(f"{loc.rel} is not a regular file any more")
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def digest_of(loc: Location) -> str:
    """What a snapshot of the file at ``loc`` holds: its sha256, or the bounded fingerprint."""
    fd, st = open_regular(loc)
    try:
        return sampled_fingerprint(fd, st) if is_sampled(st.st_size) else sha256_fd(fd)
    finally:
        os.close(fd)


def make_snapshot(rel: str, st: os.stat_result, sha256: str) -> Snapshot:
    return Snapshot(path=rel, mtime_ns=st.st_mtime_ns, size=st.st_size, sha256=sha256)


def same_stat(a: os.stat_result, b: os.stat_result) -> bool:
    """True when nothing about the file's content can have changed between the two stats."""
    return (a.st_ino, a.st_dev, a.st_size, a.st_mtime_ns, a.st_ctime_ns) == (
        b.st_ino,
        b.st_dev,
        b.st_size,
        b.st_mtime_ns,
        b.st_ctime_ns,
    )


def snapshot_is_for(ws: WorkspaceRoot, snapshot: Snapshot | None, rel: str) -> bool:
    """Whether the held snapshot describes the file whose real path is ``rel``.
    Both sides are resolved, so a snapshot taken through a symlink (or './a.py') still counts."""
    if snapshot is None:
        return False
    try:
        return ws.rel(snapshot.path) == rel
    except (WorkspaceError, OSError):
        return False


def unchanged_since(loc: Location, st: os.stat_result, snapshot: Snapshot) -> bool:
    """Is the regular file at ``loc`` (whose stat is ``st``) still what the snapshot saw?"""
    if st.st_size != snapshot.size:
        return False  # different size: different content, no need to hash
    if snapshot.sha256.startswith(SAMPLED_PREFIX):
        return digest_of(loc) == snapshot.sha256
    if st.st_mtime_ns == snapshot.mtime_ns and st.st_size >= RACY_BELOW:
        return True  # fast path
    return digest_of(loc) == snapshot.sha256


def holds_content(loc: Location, st: os.stat_result, data: bytes) -> bool:
    """Does the file already hold exactly ``data``? (an idempotent retry)"""
    return st.st_size == len(data) and digest_of(loc) == sha256_bytes(data)


def not_read_message(rel: str, snapshot: Snapshot | None, action: str) -> str:
    if snapshot is None:
        why = f"{rel} has not been read in this session"
    else:
        why = f"the snapshot this session holds is for {snapshot.path!r}, not {rel!r}"
    return (
        f"{why}: read it first with read_file, then {action} again "
        "(a file must be read before it is changed, so nobody's work is overwritten unseen)"
    )


def conflict_message(rel: str, snapshot: Snapshot, st: os.stat_result, detail: str = "") -> str:
    size = (
        f"size {snapshot.size} -> {st.st_size} bytes"
        if st.st_size != snapshot.size
        else f"same size ({st.st_size} bytes), different content"
    )
    text = (
        f"conflict: {rel} changed since it was last read ({size}). Nothing was written. "
        f"Read it again with read_file, then redo your change on the current content."
    )
    return text + ("\n\n" + detail if detail else "")


def short_diff(current: bytes, wanted: bytes, *, wanted_label: str, max_lines: int = MAX_DIFF_LINES) -> str:
    """A unified diff from the file on disk to what the call wanted, cut to ``max_lines``."""
    if len(current) > MAX_DIFF_INPUT_BYTES or len(wanted) > MAX_DIFF_INPUT_BYTES:
        return "(no diff shown: the texts are too large to compare inline)"
    a = current.decode("utf-8", "replace").splitlines(keepends=True)
    b = wanted.decode("utf-8", "replace").splitlines(keepends=True)
    lines: list[str] = []
    for line in difflib.unified_diff(a, b, "current file on disk", wanted_label, n=2):
        line = line.rstrip("\r\n")
        lines.append(line if len(line) <= 300 else line[:300] + " [...]")
        if len(lines) > max_lines:
            break
    if not lines:
        return "(no textual difference)"
    if len(lines) > max_lines:
        lines = lines[:max_lines] + [f"[... diff cut at {max_lines} lines]"]
    return "Diff from the current file on disk to the content you sent:\n" + "\n".join(lines)
