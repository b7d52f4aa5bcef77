"""Bounded output: the first and last lines of a command's output in bounded
memory, and the full output streamed to a (capped) artifact file only when
something had to be dropped."""

from __future__ import annotations

import os
from collections import deque
from pathlib import Path
from typing import Any

from activities.workspace.artifacts import prune_artifacts
from activities.workspace.paths import open_artifact

HEAD_LINES = 100
TAIL_LINES = 2000
LINE_MAX_BYTES = 2000
HEAD_MAX_BYTES = 8_000
TAIL_MAX_BYTES = 30_000  # head + tail + notices stay under ~40 kB whatever is printed
# The full output of one call is capped: `cat /dev/zero` must not leave 64 MiB per call
# (activities.workspace.artifacts bounds the folder as a whole).
ARTIFACT_MAX_BYTES = 8 << 20
SPOOL_BYTES = 1 << 20  # output kept in memory before the artifact file is opened


def _cut(line: bytes, limit: int) -> bytes:
    """At most ``limit`` bytes, not splitting a UTF-8 sequence."""
    if len(line) <= limit:
        return line
    cut = limit
    while cut > 0 and limit - cut < 3 and (line[cut] & 0xC0) == 0x80:
        cut -= 1
    return line[:cut]


class OutputCollector:
    """Keeps the first lines and the last lines of a byte stream in bounded
    memory, however much flows through. Lines are cut at ``line_max`` bytes."""

    def __init__(
        self,
        head_lines: int = HEAD_LINES,
        tail_lines: int = TAIL_LINES,
        line_max: int = LINE_MAX_BYTES,
        head_max_bytes: int = HEAD_MAX_BYTES,
        tail_max_bytes: int = TAIL_MAX_BYTES,
    ) -> None:
        self.head_lines, self.tail_lines, self.line_max = head_lines, tail_lines, line_max
        self.head_max_bytes, self.tail_max_bytes = head_max_bytes, tail_max_bytes
        self.head: list[bytes] = []
        self.head_bytes = 0
        self.head_full = head_lines == 0
        self.tail: deque[bytes] = deque()
        self.tail_bytes = 0
        self.partial = b""  # the current unfinished line (its first line_max bytes)
        self.partial_len = 0  # its real length
        self.total_bytes = 0
        self.total_lines = 0
        self.lines_cut = 0

    def _cut_line(self, line: bytes, full_len: int) -> bytes:
        self.lines_cut += 1
        kept = _cut(line, self.line_max)
        return kept + b" [... line cut: %d more bytes]" % (full_len - len(kept))

    def _trim_tail(self) -> None:
        while len(self.tail) > self.tail_lines or (self.tail_bytes > self.tail_max_bytes and len(self.tail) > 1):
            self.tail_bytes -= len(self.tail.popleft()) + 1

    def _tail_bulk(self, lines: list[bytes]) -> None:
        """Complete lines once the head is full: same result as _line one by
        one (the tail is the longest suffix within both bounds), at C speed."""
        if not lines:
            return
        self.total_lines += len(lines)
        if max(map(len, lines)) > self.line_max:
            lines = [self._cut_line(x, len(x)) if len(x) > self.line_max else x for x in lines]
        if len(lines) >= self.tail_lines:
            lines = lines[-self.tail_lines:]
            self.tail.clear()
            self.tail_bytes = 0
        self.tail.extend(lines)
        self.tail_bytes += sum(map(len, lines)) + len(lines)
        self._trim_tail()

    def _line(self, line: bytes, full_len: int) -> None:
        self.total_lines += 1
        if full_len > self.line_max:
            line = self._cut_line(line, full_len)
        if not self.head_full:
            if len(self.head) < self.head_lines and self.head_bytes + len(line) <= self.head_max_bytes:
                self.head.append(line)
                self.head_bytes += len(line) + 1
                return
            self.head_full = True
        self.tail.append(line)
        self.tail_bytes += len(line) + 1
        self._trim_tail()

    def _extend_partial(self, data: bytes) -> None:
        if not data:
            return
        room = self.line_max + 4 - len(self.partial)
        if room > 0:
            self.partial += data[:room]
        self.partial_len += len(data)

    def feed(self, data: bytes) -> None:
        if not data:
            return
        self.total_bytes += len(data)
        start = 0
        if self.partial_len:
            nl = data.find(b"\n")
            if nl < 0:
                self._extend_partial(data)
                return
            room = max(0, self.line_max + 4 - len(self.partial))
            line, full_len = self.partial + data[:min(nl, room)], self.partial_len + nl
            self.partial, self.partial_len = b"", 0
            self._line(line, full_len)
            start = nl + 1
        while not self.head_full:
            nl = data.find(b"\n", start)
            if nl < 0:
                break
            self._line(data[start:nl], nl - start)
            start = nl + 1
        rest = data[start:] if start else data
        n = rest.count(b"\n")
        if n == 0:
            self._extend_partial(rest)
            return
        if n > self.tail_lines:
            # Only the last tail_lines complete lines can survive: skip the others
            # without building them.
            pieces = rest.rsplit(b"\n", self.tail_lines + 1)
            self.total_lines += n - self.tail_lines
            lines = pieces[1:-1]
        else:
            pieces = rest.split(b"\n")
            lines = pieces[:-1]
        self._tail_bulk(lines)
        self._extend_partial(pieces[-1])

    def finish(self) -> None:
        if self.partial_len:
            line, full_len = self.partial, self.partial_len
            self.partial, self.partial_len = b"", 0
            self._line(line, full_len)

    @property
    def dropped_lines(self) -> int:
        return self.total_lines - len(self.head) - len(self.tail)

    @property
    def truncated(self) -> bool:
        return self.dropped_lines > 0 or self.lines_cut > 0

    def render(self, saved_note: str) -> str:
        """The kept text; ``saved_note`` says where the full output is."""
        head = b"\n".join(self.head).decode("utf-8", "replace")
        tail = b"\n".join(self.tail).decode("utf-8", "replace")
        if self.dropped_lines:
            notice = (
                f"[... {self.dropped_lines} lines not shown (the first {len(self.head)} and the last "
                f"{len(self.tail)} of {self.total_lines} lines, {self.total_bytes} bytes, are shown); "
                f"{saved_note} ...]"
            )
            return "\n".join(part for part in (head, notice, tail) if part)
        text = "\n".join(part for part in (head, tail) if part)
        if self.lines_cut:
            text += f"\n[{self.lines_cut} long lines were cut; {saved_note}]"
        return text


class ArtifactSink:
    """Streams the full output to a file under the artifacts folder, opened
    only once the output outgrows a small in-memory spool."""

    def __init__(self, root: str | None, call_id: str, cap: int, spool: int = SPOOL_BYTES) -> None:
        self.root, self.call_id, self.cap, self.spool_max = root, call_id, cap, spool
        self.spool = bytearray()
        self.file: Any = None
        self.path: Path | None = None
        self.rel: str | None = None
        self.written = 0
        self.capped = False
        self.error: str | None = None

    def _open(self) -> bool:
        if self.root is None or self.error is not None:
            return False
        try:
            # The command may have replaced the folder with a symlink (the
            # workspace is writable inside the sandbox; we are not sandboxed):
            # open_artifact creates the file through folder descriptors and
            # never follows one.
            fd, rel = open_artifact(self.root, self.call_id, "bash")
            path = Path(self.root) / rel
            self.file = os.fdopen(fd, "wb")
            self.path, self.rel = path, rel
            return True
        except Exception as exc:  # noqa: BLE001 - a failed save must not fail the command
            self.error = str(exc)
            self.rel = None
            return False

    def _write(self, data: bytes | bytearray) -> None:
        room = self.cap - self.written
        if len(data) > room:
            data = data[:room]
            self.capped = True
        if not data:
            return
        try:
            self.file.write(data)
            self.written += len(data)
        except OSError as exc:
            self.error = f"writing {self.rel} failed: {exc.strerror or exc}"
            self.file.close()
            self.file = None

    def write(self, data: bytes) -> None:
        if self.capped or self.error is not None or self.root is None:
            return
        if self.file is None:
            if len(self.spool) + len(data) <= self.spool_max:
                self.spool += data
                return
            if not self._open():
                return
            self._write(self.spool)
            self.spool = bytearray()
            if self.file is None:
                return
        self._write(data)

    def finish(self, needed: bool) -> None:
        if needed and self.file is None and self.rel is None and self._open():
            self._write(self.spool)
        self.spool = bytearray()
        if self.file is not None:
            self.file.close()
            self.file = None
        if not needed and self.path is not None:
            self.path.unlink(missing_ok=True)
            self.path, self.rel = None, None
        if self.rel is not None and self.root is not None:
            prune_artifacts(self.root, keep=self.rel)

    def note(self) -> str:
        if self.rel is None:
            if self.error:
                return f"the full output could not be saved ({self.error})"
            return "the full output was not saved"
        note = f"full output saved to {self.rel} (read it with read_file and offset/limit, or grep it)"
        if self.capped:
            note += f"; that copy stops at the first {self.cap >> 20} MiB ({self.cap} bytes)"
        if self.error:
            note += f"; saving stopped early: {self.error}"
        return note

