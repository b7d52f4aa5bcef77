"""One append-only log per turn: the file tools' pre- and post-images and
every unsafe file tool's result (the applied-calls journal), in the turn's
transaction folder in the worker's state folder (``<turn>/files.jsonl``).

Why one log: a write used to cost nine fsyncs (a manifest rewritten before
and after, an "applied" marker, a journal line) and re-read JSON on every
call. Now a write costs one ``fdatasync`` of this log (before the write: its
pre-image, and whatever was appended lazily since) plus the write's own two
(the file and its folder):

- a pre-image is appended and made durable *before* the write: a crash never
  loses what rollback needs to put back. A small file's content travels in
  the record itself (base64, up to ``INLINE_MAX``); a larger one is copied
  into ``pre/`` and fsync'd first;
- the post-image and the result are appended after the write without a sync:
  a process crash keeps them (the page cache survives it); a machine crash may
  lose the last call's, which then costs only what it always cost: rollback
  lists that file as restored "unchecked", and a retry of that call finds no
  record and falls back on the tool's own idempotence (no later call has
  touched the file: the next call's pre-image sync made earlier lines durable).

An in-process index per turn answers look-ups without re-reading: it follows
the file by offset (another process may append too), and is rebuilt from the
log when absent (a new worker). Every line is validated when read: a line that
does not validate is ignored and reported (``bad``), never acted on.
"""

from __future__ import annotations

import base64
import json
import os
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field

from activities.txn.changeset import BadRecord, Node, checked_node, checked_rel, node_json

LOG = "files.jsonl"
INLINE_MAX = 64 * 1024  # pre-images up to this size travel inside their record


@dataclass
class Pre:
    node: Node | None  # None: the path did not exist
    file: str = ""  # turn-folder-relative copy of the content (large files)
    data: bytes | None = None  # the content itself (small files)
    kept: bool = True
    note: str = ""
    time_ns: int = 0


@dataclass
class TurnIndex:
    folder: str
    offset: int = 0
    pres: dict[str, dict[str, Pre]] = field(default_factory=dict)  # call -> path -> first pre-image
    posts: dict[str, dict[str, Node | None]] = field(default_factory=dict)
    results: dict[str, dict] = field(default_factory=dict)
    bad: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    fd: int = -1

    def _take(self, raw: dict) -> None:
        kind, call = raw["k"], str(raw["c"])
        if kind == "res":
            if not isinstance(raw["r"], dict):
                raise BadRecord("result is not an object")
            self.results[call] = raw["r"]
            return
        path = checked_rel(raw["p"])
        node = checked_node(raw["n"])
        if kind == "post":
            self.posts.setdefault(call, {})[path] = node
        elif kind == "pre":
            data = base64.b64decode(raw["d"], validate=True) if raw.get("d") is not None else None
            f = checked_rel(raw["f"], "pre-image file") if raw.get("f") else ""
            pre = Pre(node, f, data, bool(raw.get("kept", True)), str(raw.get("note", "")), int(raw.get("t", 0)))
            self.pres.setdefault(call, {}).setdefault(path, pre)  # the call's first pre-image counts
        else:
            raise BadRecord(f"unknown record kind {kind!r}")

    def refresh(self) -> None:
        """Read what was appended since (by us or another process)."""
        path = os.path.join(self.folder, LOG)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            return
        try:
            if os.fstat(fd).st_size <= self.offset:
                return
            os.lseek(fd, self.offset, os.SEEK_SET)
            chunks = []
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
        finally:
            os.close(fd)
        data = b"".join(chunks)
        end = data.rfind(b"\n") + 1  # a torn last line (a crash mid-append) is left for later
        for line in data[:end].splitlines():
            try:
                self._take(json.loads(line))
            except (BadRecord, ValueError, KeyError, TypeError, AttributeError) as exc:
                self.bad.append(f"a record of the turn's file log is not valid ({exc}); it is not used")
        self.offset += end

    def append(self, record: dict, durable: bool) -> None:
        line = (json.dumps(record, separators=(",", ":"), ensure_ascii=True) + "\n").encode()
        if self.fd < 0:
            self.fd = os.open(os.path.join(self.folder, LOG),
                              os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        os.write(self.fd, line)
        if durable:
            os.fdatasync(self.fd)  # this line and every lazy one before it
        self.refresh()

    def sync(self) -> None:
        if self.fd >= 0:
            os.fdatasync(self.fd)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


_CACHE = 256
_lock = threading.Lock()
_indexes: OrderedDict[str, TurnIndex] = OrderedDict()


def index(folder: str) -> TurnIndex:
    """The turn's index, up to date with its log (rebuilt when absent)."""
    with _lock:
        idx = _indexes.pop(folder, None)
        if idx is None:
            idx = TurnIndex(folder)
            while len(_indexes) >= _CACHE:
                _indexes.popitem(last=False)[1].close()
        _indexes[folder] = idx
    with idx.lock:
        idx.refresh()
    return idx


def forget(folder: str) -> None:
    """The turn's folder was removed (retention): drop its index."""
    with _lock:
        idx = _indexes.pop(folder, None)
    if idx is not None:
        idx.close()


def pre_record(call: str, path: str, pre: Pre) -> dict:
    record = {"k": "pre", "c": call, "p": path, "n": node_json(pre.node), "kept": pre.kept, "note": pre.note,
              "t": pre.time_ns or time.time_ns()}
    if pre.file:
        record["f"] = pre.file
    if pre.data is not None:
        record["d"] = base64.b64encode(pre.data).decode()
    return record


def post_record(call: str, path: str, node: Node | None) -> dict:
    return {"k": "post", "c": call, "p": path, "n": node_json(node)}


def result_record(call: str, result: dict) -> dict:
    return {"k": "res", "c": call, "r": result}
