"""The transcript store on the workspace worker's disk: append-only,
content-addressed nodes under ``<state>/transcripts/`` in the worker's state
folder (activities.txn.state: outside the workspace, out of every command's
and file tool's reach).

Nodes are immutable and named by their hash, so a process-wide cache of
decoded nodes is always right, and reading a transcript of n entries costs
n dictionary look-ups once warm. Every node read from disk is verified
against its name: a bash command that edits the folder is detected, not
fed to the model.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from pathlib import Path

from activities.txn.state import state_root
from activities.workspace.paths import ARTIFACTS_DIR, WorkspaceError, workspace_root
from core.session.contracts import TranscriptEntry
from core.session.transcript import TranscriptCorrupted, decode_node, encode_node, is_digest, session_folder_name

TRANSCRIPTS_DIR = "transcripts"
_CACHE_BYTES = 64 * 1024 * 1024


class TranscriptMissing(Exception):
    """A node the history references is not on this worker's disk."""


class _NodeCache:
    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._size = 0
        self._nodes: OrderedDict[str, tuple[str | None, TranscriptEntry, int]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, digest: str) -> tuple[str | None, TranscriptEntry] | None:
        with self._lock:
            hit = self._nodes.get(digest)
            if hit is None:
                return None
            self._nodes.move_to_end(digest)
            return hit[0], hit[1]

    def put(self, digest: str, parent: str | None, entry: TranscriptEntry, size: int) -> None:
        with self._lock:
            if digest in self._nodes:
                return
            self._nodes[digest] = (parent, entry, size)
            self._size += size
            while self._size > self._limit and self._nodes:
                _, (_, _, dropped) = self._nodes.popitem(last=False)
                self._size -= dropped


_cache = _NodeCache(_CACHE_BYTES)


def _safe_dir(path: Path) -> Path:
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        raise WorkspaceError(f"{path} is a symlink or not a folder; remove it so the transcript can be kept there")
    path.mkdir(exist_ok=True)
    return path


class TranscriptStore:
    def __init__(self, root: str, session_id: str) -> None:
        self.root = workspace_root(root)
        self.session_id = session_id
        self._folder = Path(state_root(str(self.root))) / TRANSCRIPTS_DIR / session_folder_name(session_id)

    @property
    def folder(self) -> Path:
        return self._folder

    def _node_path(self, digest: str, create: bool) -> Path:
        if not is_digest(digest):
            raise TranscriptCorrupted(f"{digest!r} is not a transcript reference")
        if create:
            shard = _safe_dir(_safe_dir(_safe_dir(self._folder.parent) / self._folder.name) / digest[:2])
        else:
            shard = self._folder / digest[:2]
        return shard / f"{digest}.json"

    def append(self, head: str | None, entries: list[TranscriptEntry]) -> str:
        for entry in entries:
            digest, data = encode_node(head, entry)
            path = self._node_path(digest, create=True)
            if not path.exists():
                tmp = path.with_name(f".{digest}.{os.getpid()}.{threading.get_ident()}.tmp")
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                    fh.flush()
                    os.fsync(fh.fileno())
                os.replace(tmp, path)
            _cache.put(digest, head, entry, len(data))
            head = digest
        assert head is not None or not entries
        return head  # type: ignore[return-value]

    def _node(self, digest: str) -> tuple[str | None, TranscriptEntry]:
        hit = _cache.get(digest)
        if hit is not None:
            return hit
        path = self._node_path(digest, create=False)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            fd = -1
        if fd < 0:
            # Kept in the workspace by an older release: safe to read, as every
            # node is checked against its digest (which the history holds).
            legacy = self.root / ARTIFACTS_DIR / TRANSCRIPTS_DIR / self._folder.name / digest[:2] / f"{digest}.json"
            try:
                fd = os.open(legacy, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
            except OSError:
                fd = -1
        if fd < 0:
            raise TranscriptMissing(
                f"transcript node {digest[:16]}… of session {self.session_id} is missing from {self._folder}; "
                "the session must run on the worker that holds its workspace (and its state folder)"
            ) from None
        with os.fdopen(fd, "rb") as fh:
            data = fh.read()
        parent, entry = decode_node(digest, data)
        _cache.put(digest, parent, entry, len(data))
        return parent, entry

    def read(self, head: str | None) -> list[TranscriptEntry]:
        entries: list[TranscriptEntry] = []
        seen: set[str] = set()
        while head is not None:
            if head in seen:
                raise TranscriptCorrupted(f"transcript chain loops at {head[:16]}…")
            seen.add(head)
            head, entry = self._node(head)
            entries.append(entry)
        entries.reverse()
        return entries
