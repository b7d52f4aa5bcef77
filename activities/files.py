"""The file tools: read_file, write_file, edit_file.

Each is a plain function ``(request, args) -> ToolResult`` (testable without
Temporal) and an activity of the same name. Paths are confined with
``resolve_inside`` and every file operation uses the *resolved* real path, so
no symlink is followed out of the workspace, by readers or writers.

read_file streams: one pass over the file in large binary chunks hashes it
(for the snapshot), counts its lines with ``bytes.count`` and keeps only the
requested window, so memory does not grow with the file. Writes are atomic
(temp file in the same real folder, fsync, rename) and guarded by the
snapshot check in ``activities.snapshots``.
"""

from __future__ import annotations

import difflib
import errno
import hashlib
import os
import queue
import secrets
import stat
import threading
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

from activities.base import MAX_OUTPUT_CHARS, bound_output, tool_activity
from activities.snapshots import (
    MAX_DIFF_INPUT_BYTES,
    conflict_message,
    holds_content,
    make_snapshot,
    not_read_message,
    same_stat,
    sha256_bytes,
    short_diff,
    snapshot_is_for,
    unchanged_since,
)
from activities.workspace import WorkspaceError, relative_to_root, resolve_inside
from core.contracts import Snapshot, ToolRequest, ToolResult
from core.tool_specs import EDIT_FILE, READ_FILE, WRITE_FILE, EditFileArgs, ReadFileArgs, WriteFileArgs

READ_CHUNK = 1 << 20
# From this size on, hash in a helper thread while the main thread counts
# lines, in bigger chunks (fewer GIL hand-offs: measured fastest at 3 x 4 MiB).
THREADED_HASH_FROM = 8 << 20
THREADED_CHUNK = 4 << 20
MAX_LINE_CHARS = 2000
# Enough bytes for MAX_LINE_CHARS characters of any UTF-8 width, plus one.
_LINE_CAP_BYTES = MAX_LINE_CHARS * 4 + 4
_UTF8_CONTINUATION = bytes(range(0x80, 0xC0))
SNIFF_BYTES = 8192
# What the numbered lines of one read may take; the rest is left for the next page.
READ_OUTPUT_BUDGET = MAX_OUTPUT_CHARS - 500
# The whole file is held in memory to edit it.
MAX_EDIT_BYTES = 64 << 20
# The idempotent-retry proof hashes candidate originals; cap the work.
_RETRY_HASH_BUDGET = 256 << 20
_OPEN_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC

# Compressed and most binary formats hold a NUL within 8 KiB anyway; these
# name the common ones, and catch those whose start can pass for text (PDF).
# No short ASCII magic ('BZh', 'ID3'): a text file may well start that way.
_SIGNATURES: list[tuple[bytes, str]] = [
    (b"\x89PNG\r\n\x1a\n", "PNG image"),
    (b"\xff\xd8\xff", "JPEG image"),
    (b"GIF87a", "GIF image"),
    (b"GIF89a", "GIF image"),
    (b"%PDF-", "PDF document"),
    (b"PK\x03\x04", "ZIP archive (or jar/docx/wheel)"),
    (b"PK\x05\x06", "ZIP archive"),
    (b"\x1f\x8b", "gzip archive"),
    (b"\xfd7zXZ\x00", "xz archive"),
    (b"\x28\xb5\x2f\xfd", "zstd archive"),
    (b"7z\xbc\xaf\x27\x1c", "7-zip archive"),
    (b"Rar!\x1a\x07", "RAR archive"),
    (b"\x7fELF", "ELF executable"),
    (b"\xcf\xfa\xed\xfe", "Mach-O executable"),
    (b"\xca\xfe\xba\xbe", "Java class or Mach-O binary"),
    (b"\x00asm", "WebAssembly module"),
    (b"SQLite format 3\x00", "SQLite database"),
    (b"\xff\xfe", "UTF-16 (little-endian) text; read_file shows UTF-8 text only"),
    (b"\xfe\xff", "UTF-16 (big-endian) text; read_file shows UTF-8 text only"),
    (b"\x1aE\xdf\xa3", "Matroska/WebM video"),
]
_KIND_NAMES = {
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
}


class _Refusal(Exception):
    """A business failure found deep in a helper; becomes an error result."""

    def __init__(self, message: str, **metadata: str) -> None:
        super().__init__(message)
        self.metadata = metadata


# ----------------------------------------------------------------- shared


def _error(request: ToolRequest, message: str, **metadata: str) -> ToolResult:
    return ToolResult.error(request.call_id, request.tool, message, metadata=metadata)


def _guarded(impl):
    """Turn confinement errors, refusals and OS errors (permission denied, name
    too long, disk full, ...) into error results, also when called directly."""

    def wrapper(request: ToolRequest, args):
        try:
            return impl(request, args)
        except WorkspaceError as exc:
            return _error(request, str(exc))
        except _Refusal as exc:
            return _error(request, str(exc), **exc.metadata)
        except OSError as exc:
            what = exc.strerror or exc.__class__.__name__
            if exc.errno == errno.ENAMETOOLONG:
                what += ": use a shorter path"
            shown = args.path if len(args.path) <= 200 else args.path[:200] + "..."
            return _error(request, f"{request.tool} failed on {shown!r}: {what}", errno=str(exc.errno))

    wrapper.__name__ = impl.__name__
    wrapper.__doc__ = impl.__doc__
    wrapper.__wrapped__ = impl  # type: ignore[attr-defined]
    return wrapper


def _stat_target(real: Path, rel: str) -> os.stat_result | None:
    """stat the resolved path; None if it does not exist."""
    try:
        return os.stat(real)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        raise _Refusal(f"{rel}: a parent of this path is a file, not a folder; check the path") from None


def _refuse_non_regular(st: os.stat_result, rel: str, tool: str) -> None:
    if stat.S_ISREG(st.st_mode):
        return
    if stat.S_ISDIR(st.st_mode):
        if tool == READ_FILE:
            hint = f"use the glob tool to list its files (e.g. pattern '{rel.rstrip('/')}/*')"
        else:
            hint = "give the path of a file inside it"
        raise _Refusal(f"{rel} is a folder, not a file: {hint}", kind="directory")
    kind = _KIND_NAMES.get(stat.S_IFMT(st.st_mode), "not a regular file")
    raise _Refusal(
        f"{rel} is {kind}, not a regular file; {tool} only works on regular files",
        kind="special",
    )


def _binary_reason(head: bytes) -> str | None:
    for magic, name in _SIGNATURES:
        if head.startswith(magic):
            return name
    if b"\x00" in head[:SNIFF_BYTES]:
        return "contains NUL bytes"
    return None


def _count_lines(data: bytes) -> int:
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def _display_line(raw: bytes, overflow_chars: int = 0) -> tuple[str, bool]:
    """Decode one line (without its line ending); cut it to
    MAX_LINE_CHARS with a marker. ``overflow_chars`` counts characters that
    were not kept in ``raw``. Returns (text, was_cut)."""
    text = raw.decode("utf-8", "replace")
    total = len(text) + overflow_chars
    if total <= MAX_LINE_CHARS:
        return text, False
    return f"{text[:MAX_LINE_CHARS]} [... {total - MAX_LINE_CHARS} more characters cut]", True


def _numbered(number: int, text: str) -> str:
    return f"{number:6d}|{text}"


def _atomic_write(
    real: Path,
    rel: str,
    data: bytes,
    *,
    like: os.stat_result | None,
    expect_absent: bool = False,
) -> os.stat_result:
    """Write ``data`` to ``real`` atomically: temp file in the same (real)
    folder, write, fsync, rename. ``like``: the existing file, whose mode (and,
    where allowed, owner) the new one keeps; it must still be that file just
    before the rename, else a conflict is raised. New files get the default
    0o666 minus the umask, as open() would. ``expect_absent``: create only,
    never replace a file that appeared meanwhile. The temp file never survives
    a failure. Returns the stat of the file as written."""
    tmp = real.parent / f".{real.name[:100]}.{secrets.token_hex(6)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if like is not None:
                os.fchmod(fd, stat.S_IMODE(like.st_mode))
                if (like.st_uid, like.st_gid) != (os.geteuid(), os.getegid()):
                    with suppress(OSError):
                        os.fchown(fd, like.st_uid, like.st_gid)
            os.fsync(fd)
            written = os.fstat(fd)
        finally:
            os.close(fd)
        if expect_absent:
            try:
                os.link(tmp, real)  # fails if the file appeared meanwhile
            except FileExistsError:
                raise _Refusal(
                    f"{rel} was created by someone else while this call ran; "
                    "read it with read_file, then write again",
                    conflict="true",
                ) from None
            except OSError:
                os.replace(tmp, real)  # file system without hard links
            else:
                os.unlink(tmp)
        else:
            if like is not None:
                now = _stat_target(real, rel)
                if now is None or not same_stat(now, like):
                    raise _Refusal(
                        f"conflict: {rel} changed while this call was writing it. Nothing was "
                        "written. Read it again with read_file, then redo your change.",
                        conflict="true",
                    )
            os.replace(tmp, real)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise
    with suppress(OSError):  # make the rename itself durable
        dir_fd = os.open(real.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    return written


def _resolve(request: ToolRequest, path: str) -> tuple[Path, str]:
    real = resolve_inside(request.workspace_root, path)
    return real, relative_to_root(request.workspace_root, real)


# ------------------------------------------------------------------ read


@dataclass
class _Scan:
    sha256: str = ""
    total_lines: int = 0
    lines: list[str] = field(default_factory=list)
    cut_lines: int = 0
    binary: str | None = None
    crlf: bool = False
    stopped_for_budget: bool = False


class _Reader:
    """Reads a file into a few reused buffers and sha256-hashes every byte.

    With ``threaded``, the hashing runs in a helper thread (hashlib releases
    the GIL on large updates) while the caller counts lines in the next
    buffer; a buffer goes back to the pool once hashed, which bounds memory to
    ``_BUFFERS`` chunks. Without, it hashes inline with one buffer."""

    _BUFFERS = 3

    def __init__(self, fd: int, threaded: bool) -> None:
        self._fd = fd
        self._h = hashlib.sha256()
        self._free: queue.SimpleQueue[bytearray] = queue.SimpleQueue()
        for _ in range(self._BUFFERS if threaded else 1):
            self._free.put(bytearray(THREADED_CHUNK if threaded else READ_CHUNK))
        self._work: queue.SimpleQueue[tuple[bytearray, bytearray] | None] | None = None
        if threaded:
            self._work = queue.SimpleQueue()
            self._thread = threading.Thread(target=self._run, name="read_file-sha256", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        assert self._work is not None
        while (item := self._work.get()) is not None:
            buf, data = item
            self._h.update(data)
            self._free.put(buf)

    def next_chunk(self) -> bytearray | None:
        """The next chunk (read-only for the caller until the next call), already
        queued for hashing; None at the end of the file."""
        buf = self._free.get()
        n = os.readv(self._fd, [buf])
        if n == 0:
            self._free.put(buf)
            return None
        chunk = buf if n == len(buf) else buf[:n]
        if self._work is not None:
            self._work.put((buf, chunk))
        else:
            self._h.update(chunk)
            self._free.put(buf)
        return chunk

    def hexdigest(self) -> str:
        self.close()
        return self._h.hexdigest()

    def close(self) -> None:
        if self._work is not None:
            self._work.put(None)
            self._thread.join()
            self._work = None


def _spare_core() -> bool:
    """The helper thread pays only when the machine is not saturated: measured
    on 2 cores, it halves the time at a load average around 1 but is ~1.5x
    slower than hashing inline at a load of 5 and more (its GIL hand-offs
    then wait for CPU)."""
    try:
        return os.getloadavg()[0] < (os.cpu_count() or 1)
    except OSError:
        return False


def _scan(fd: int, offset: int, limit: int, budget: int, size_hint: int = 0) -> _Scan:
    reader = _Reader(fd, threaded=size_hint >= THREADED_HASH_FROM and _spare_core())
    try:
        return _scan_with(reader, offset, limit, budget)
    finally:
        reader.close()


def _scan_with(reader: _Reader, offset: int, limit: int, budget: int) -> _Scan:
    """One pass over the file: hash every byte, count every line, and render
    the lines ``offset .. offset+limit-1`` (1-based), stopping early when their
    rendering would pass ``budget`` characters. Memory: a few chunks plus the window."""
    out = _Scan()
    newlines = 0  # '\n' seen in the bytes processed so far
    last = 10  # the file's last byte ('\n' for an empty file: no unterminated line)
    # phase 0: before the window; 1: inside it; 2: after it (hash and count only)
    phase = 0 if offset > 1 else 1
    line = bytearray()  # the window line being built, capped at _LINE_CAP_BYTES
    line_last = -1  # its last byte (13 = CR), whether kept or not
    overflow_chars = 0  # characters beyond the cap
    used = 0

    def add(segment: bytes) -> None:
        nonlocal line_last, overflow_chars
        if not segment:
            return
        line_last = segment[-1]
        room = _LINE_CAP_BYTES - len(line)
        if room >= len(segment):
            line.extend(segment)
            return
        if room > 0:
            line.extend(segment[:room])
            segment = segment[room:]
        # UTF-8: every byte but a continuation byte starts a character.
        overflow_chars += len(segment.translate(None, _UTF8_CONTINUATION))

    def finish() -> bool:
        """Close the current line; False when it does not fit the budget."""
        nonlocal line_last, overflow_chars, used
        raw, extra = bytes(line), overflow_chars
        if line_last == 13:  # CRLF (or a stray CR before the end): never shown
            out.crlf = True
            if extra:
                extra -= 1
            else:
                raw = raw[:-1]
        text, cut = _display_line(raw, extra)
        line.clear()
        line_last, overflow_chars = -1, 0
        rendered = len(text) + max(6, len(str(offset + len(out.lines)))) + 2  # "%6d|" and "\n"
        if out.lines and used + rendered > budget:
            out.stopped_for_budget = True
            return False
        used += rendered
        out.lines.append(text)
        out.cut_lines += cut
        return True

    first = True
    while (chunk := reader.next_chunk()) is not None:
        if first:
            first = False
            out.binary = _binary_reason(bytes(chunk[:SNIFF_BYTES]))
            if out.binary:
                return out
        last = chunk[-1]
        pos = 0
        if phase == 0:
            need = offset - 1 - newlines  # newlines to pass before the window starts
            n = chunk.count(b"\n")
            if n < need:
                newlines += n
                continue
            idx = -1
            for _ in range(need):
                idx = chunk.find(b"\n", idx + 1)
            newlines += need
            pos = idx + 1
            phase = 1
        if phase == 1:
            while True:
                nl = chunk.find(b"\n", pos)
                if nl < 0:
                    add(chunk[pos:])
                    break
                add(chunk[pos:nl])
                newlines += 1
                pos = nl + 1
                if not finish() or len(out.lines) == limit:
                    phase = 2
                    break
        if phase == 2:
            newlines += chunk.count(b"\n", pos)
    if phase == 1 and (line or overflow_chars):  # a last line without a final newline
        finish()
    out.total_lines = newlines + (last != 10)
    out.sha256 = reader.hexdigest()
    return out


@_guarded
def read_file(request: ToolRequest, args: ReadFileArgs) -> ToolResult:
    """Numbered lines ``offset .. offset+limit-1`` of a text file, and its snapshot."""
    real, rel = _resolve(request, args.path)
    st = _stat_target(real, rel)
    if st is None:
        name = real.name or rel
        raise _Refusal(
            f"file not found: {rel}. Check the path; the glob tool can find it (e.g. pattern '**/{name}')",
            kind="missing",
        )
    _refuse_non_regular(st, rel, READ_FILE)  # before opening: a FIFO is never opened
    fd = os.open(real, _OPEN_READ)
    try:
        before = os.fstat(fd)
        _refuse_non_regular(before, rel, READ_FILE)  # swapped in after the stat
        with suppress(OSError, AttributeError):
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_SEQUENTIAL)
        for _attempt in range(3):
            scan = _scan(fd, args.offset, args.limit, READ_OUTPUT_BUDGET, before.st_size)
            after = os.fstat(fd)
            if scan.binary or same_stat(before, after):
                break
            # Changed while we read it: read again so the lines and the hash agree.
            os.lseek(fd, 0, os.SEEK_SET)
            before = after
        # If it kept changing, the snapshot still holds the stat from *before*
        # the last pass, so a later write sees a difference and re-checks.
    finally:
        os.close(fd)
    if scan.binary:
        raise _Refusal(
            f"{rel} looks like a binary file ({scan.binary}); read_file only shows text. "
            f"To learn what it is, run the bash command 'file {rel}'",
            kind="binary",
        )
    snapshot = make_snapshot(rel, before, scan.sha256)
    meta = {
        "path": rel,
        "total_lines": str(scan.total_lines),
        "offset": str(args.offset),
        "lines_returned": str(len(scan.lines)),
    }
    if scan.total_lines == 0:
        return ToolResult.ok(request.call_id, request.tool, "(empty file)", snapshot=snapshot, metadata=meta)
    if not scan.lines:
        return _error(
            request,
            f"offset {args.offset} is past the end of {rel}, which has {scan.total_lines} lines; "
            f"use an offset between 1 and {scan.total_lines}",
            **meta,
        )
    last = args.offset + len(scan.lines) - 1
    text = "\n".join(_numbered(args.offset + i, line) for i, line in enumerate(scan.lines))
    if scan.crlf:
        meta["line_endings"] = "crlf"
    if scan.cut_lines:
        meta["cut_lines"] = str(scan.cut_lines)
    if last < scan.total_lines:
        meta["next_offset"] = str(last + 1)
        why = " (the output size limit was reached)" if scan.stopped_for_budget else ""
        text += (
            f"\n\n[lines {args.offset}-{last} of {scan.total_lines}{why}; "
            f"{scan.total_lines - last} more lines: call read_file with offset={last + 1} to continue]"
        )
    text, extra = bound_output(text, request, "read_file")
    meta.update(extra)
    return ToolResult.ok(request.call_id, request.tool, text, snapshot=snapshot, metadata=meta)


# ----------------------------------------------------------------- write


def _encode(text: str, what: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise _Refusal(
            f"{what} contains a character that cannot be written as UTF-8 "
            f"({text[exc.start]!r} at index {exc.start}, a lone surrogate); remove it and try again"
        ) from None


def _summary(data: bytes) -> str:
    lines = _count_lines(data)
    return f"{len(data)} bytes, {lines} line{'s' if lines != 1 else ''}"


@_guarded
def write_file(request: ToolRequest, args: WriteFileArgs) -> ToolResult:
    """Create a file or replace its whole content, atomically, under the snapshot rule."""
    real, rel = _resolve(request, args.path)
    data = _encode(args.content, "content")
    st = _stat_target(real, rel)
    held = request.snapshot

    def ok(message: str, file_st: os.stat_result, **meta: str) -> ToolResult:
        return ToolResult.ok(
            request.call_id,
            request.tool,
            message,
            snapshot=make_snapshot(rel, file_st, sha256_bytes(data)),
            metadata={"path": rel, "bytes": str(len(data)), **meta},
        )

    if st is None:
        try:
            os.makedirs(real.parent, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            raise _Refusal(f"cannot create {rel}: a parent of this path is a file, not a folder") from None
        written = _atomic_write(real, rel, data, like=None, expect_absent=True)
        gone = " (it had been deleted since you read it)" if snapshot_is_for(request.workspace_root, held, real) else ""
        return ok(f"Created {rel} ({_summary(data)}){gone}.", written, created="true")

    _refuse_non_regular(st, rel, WRITE_FILE)
    if not snapshot_is_for(request.workspace_root, held, real):
        if holds_content(real, st, data):  # e.g. a retry of our own create
            return ok(f"{rel} already holds exactly this content ({_summary(data)}); nothing to write.",
                      st, idempotent_retry="true")
        raise _Refusal(not_read_message(rel, held, "call write_file"), not_read="true")
    assert held is not None
    if not unchanged_since(real, st, held):
        current = _read_bytes(real, rel, WRITE_FILE)[0] if st.st_size <= MAX_DIFF_INPUT_BYTES else None
        if (current == data) if current is not None else holds_content(real, st, data):
            # The rename happened but the result was lost: a retry.
            return ok(f"{rel} already holds exactly this content ({_summary(data)}); nothing to write.",
                      st, idempotent_retry="true")
        diff = (
            short_diff(current, data, wanted_label="content you tried to write")
            if current is not None
            else "(no diff shown: the file is too large to compare inline)"
        )
        raise _Refusal(conflict_message(rel, held, st, diff), conflict="true")
    written = _atomic_write(real, rel, data, like=st)
    return ok(f"Overwrote {rel} ({_summary(data)}; was {st.st_size} bytes).", written, created="false")


# ------------------------------------------------------------------ edit


def _read_bytes(real: Path, rel: str, tool: str) -> tuple[bytes, os.stat_result]:
    """The whole content of a regular file (never opening anything else) and its fstat."""
    fd = os.open(real, _OPEN_READ)
    try:
        fst = os.fstat(fd)
        _refuse_non_regular(fst, rel, tool)
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks), fst
    finally:
        os.close(fd)


def _read_whole(real: Path, rel: str, st: os.stat_result) -> tuple[bytes, os.stat_result]:
    """Content and fstat of a text file to edit."""
    if st.st_size > MAX_EDIT_BYTES:
        raise _Refusal(
            f"{rel} is {st.st_size} bytes, more than edit_file handles ({MAX_EDIT_BYTES} bytes); "
            "change it with write_file in smaller files, or with a command"
        )
    data, fst = _read_bytes(real, rel, EDIT_FILE)
    reason = _binary_reason(data[:SNIFF_BYTES])
    if reason:
        raise _Refusal(f"{rel} looks like a binary file ({reason}); edit_file only edits text", kind="binary")
    return data, fst


def _pure_crlf(data: bytes) -> bool:
    crlf = data.count(b"\r\n")
    return crlf > 0 and crlf == data.count(b"\n")


def _to_crlf(b: bytes) -> bytes:
    return b.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")


def _variants(data: bytes, old: bytes, new: bytes) -> list[tuple[bytes, bytes, bool]]:
    """(old, new, converted) pairs to try, best first. In a file whose every line
    ends in CRLF, the model's '\\n' means the file's '\\r\\n' (both in what it
    looks for and in what it inserts), so line endings stay consistent."""
    raw = (old, new, False)
    conv = (_to_crlf(old), _to_crlf(new), True)
    if conv[:2] == raw[:2]:
        return [raw]
    if _pure_crlf(data):
        return [conv, raw]
    if b"\r\n" in data:
        return [raw, conv]
    return [raw]


def _apply(data: bytes, old: bytes, new: bytes, replace_all: bool) -> bytes:
    return data.replace(old, new) if replace_all else data.replace(old, new, 1)


def _proven_retry(
    current: bytes, pairs: list[tuple[bytes, bytes, bool]], replace_all: bool, snapshot: Snapshot
) -> bool:
    """Is ``current`` exactly what this edit makes of the file the snapshot saw?

    Undo the edit on the current content (put old back where new stands) and
    accept only if the undone text hashes to the snapshot *and* redoing the
    edit on it (uniqueness rule included) gives the current content back. The
    hashing work is capped; past the cap the answer is "not proven"."""
    budget = _RETRY_HASH_BUDGET

    def redoes(original: bytes, old: bytes, new: bytes) -> bool:
        nonlocal budget
        if len(original) != snapshot.size:
            return False
        budget -= len(original)
        if sha256_bytes(original) != snapshot.sha256:
            return False
        count = original.count(old)
        return (count >= 1 if replace_all else count == 1) and _apply(original, old, new, replace_all) == current

    for old, new, _ in pairs:
        if replace_all:
            # A replace_all that deleted text cannot be undone: nothing marks where.
            if new and new in current and redoes(current.replace(new, old), old, new):
                return True
            continue
        if len(current) - len(new) + len(old) != snapshot.size:
            continue
        for q in _undo_positions(current, new):
            if budget <= 0:
                return False
            if redoes(current[:q] + old + current[q + len(new) :], old, new):
                return True
    return False


def _undo_positions(current: bytes, new: bytes):
    """Where new_string may stand in the edited text: its occurrences; for a
    deletion every position, line starts first."""
    if new:
        at = current.find(new)
        while at >= 0:
            yield at
            at = current.find(new, at + 1)
        return
    yield 0
    at = current.find(b"\n")
    while at >= 0:
        yield at + 1
        at = current.find(b"\n", at + 1)
    for q in range(1, len(current) + 1):
        if current[q - 1] != 10:
            yield q


def _line_of(data: bytes, pos: int) -> int:
    return data.count(b"\n", 0, pos) + 1


def _snippet(data: bytes, first: int, last: int, context: int = 2, max_lines: int = 14) -> str:
    """Numbered lines first-context .. last+context of ``data`` (at most max_lines)."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    lo = max(1, first - context)
    hi = min(len(lines), last + context, lo + max_lines - 1)
    out = []
    for n in range(lo, hi + 1):
        raw = lines[n - 1]
        text, _ = _display_line(raw[:-1] if raw.endswith(b"\r") else raw)
        out.append(_numbered(n, text))
    if hi < min(len(lines), last + context):
        out.append("   ...")
    return "\n".join(out)


def _squash(s: str) -> str:
    return "".join(s.split())


def _leading_ws(s: str) -> str:
    return s[: len(s) - len(s.lstrip(" \t"))]


def _trailing_ws(s: str) -> str:
    return s[len(s.rstrip(" \t")) :]


def _whitespace_hint(file_lines: list[str], old: str) -> str | None:
    """If old_string is in the file once whitespace is ignored, say how the
    whitespace differs (CRLF, tabs vs spaces, trailing whitespace) and show
    those lines; None if it is not."""
    old_lines = old.split("\n")
    keys = [_squash(x) for x in old_lines]
    if not any(keys):
        return None
    n = len(old_lines)
    fkeys = [_squash(x) for x in file_lines]
    for i in range(len(file_lines) - n + 1):
        if n == 1:
            if keys[0] not in fkeys[i]:
                continue
        elif not (
            fkeys[i].endswith(keys[0])
            and fkeys[i + n - 1].startswith(keys[-1])
            and fkeys[i + 1 : i + n - 1] == keys[1:-1]
        ):
            continue
        return _describe_whitespace(file_lines[i : i + n], old_lines, i + 1)
    return None


def _describe_whitespace(region: list[str], old_lines: list[str], first: int) -> str:
    n = len(old_lines)
    reasons: list[str] = []
    # Lines that old_string ends with '\n' (all but its last).
    if any(x.endswith("\r") for x in region[: n - 1]) and not any(o.endswith("\r") for o in old_lines[: n - 1]):
        reasons.append("line endings: the file ends these lines with CRLF (\\r\\n), your old_string with \\n")
    elif any(o.endswith("\r") for o in old_lines[: n - 1]) and not any(x.endswith("\r") for x in region[: n - 1]):
        reasons.append("line endings: your old_string ends lines with CRLF (\\r\\n), the file with \\n")
    clean = [x[:-1] if x.endswith("\r") else x for x in region]
    leads = [
        (_leading_ws(f), _leading_ws(o))
        for k, (f, o) in enumerate(zip(clean, old_lines))
        if f.strip() and o.strip() and (k > 0 or _leading_ws(o))
    ]
    differing = [(f, o) for f, o in leads if f != o]
    if differing:
        f_lead, o_lead = differing[0]
        if "\t" in f_lead and "\t" not in o_lead:
            reasons.append("indentation: the file indents with tabs where your old_string has spaces")
        elif "\t" in o_lead and "\t" not in f_lead:
            reasons.append("indentation: the file indents with spaces where your old_string has tabs")
        else:
            reasons.append(f"indentation: {len(f_lead)} leading characters in the file, {len(o_lead)} in your old_string")
    if any(
        _trailing_ws(f) != _trailing_ws(o)
        for k, (f, o) in enumerate(zip(clean, old_lines))
        if k < n - 1 or _trailing_ws(o)
    ):
        reasons.append("trailing whitespace: spaces or tabs at the end of lines differ")
    if not reasons:
        reasons.append("whitespace inside the lines differs (spaces, tabs or line breaks)")
    last = first + n - 1
    shown = "\n".join(_numbered(first + k, _display_line(x.encode())[0]) for k, x in enumerate(clean[:12]))
    text = (
        f"old_string matches line{'s' if n > 1 else ''} {first}{f'-{last}' if n > 1 else ''} "
        f"if whitespace is ignored; it differs only in whitespace: " + "; ".join(reasons) + ".\n" + shown
    )
    pair = next(((first + k, f, o) for k, (f, o) in enumerate(zip(region, old_lines)) if f != o and (n == 1 or o.strip())), None)
    if pair:
        num, f, o = pair
        text += f"\nline {num} in the file:    {f[:200]!r}\nthe same line in old_string: {o[:200]!r}"
    return text + "\nCopy the text exactly as the file has it (read_file shows it) and try again."


def _closest_lines(file_lines: list[str], old: str, top: int = 3) -> str:
    old_lines = old.split("\n")
    anchor_idx = next((k for k, x in enumerate(old_lines) if x.strip()), 0)
    anchor = old_lines[anchor_idx].strip()
    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2(anchor)
    scored: list[tuple[float, int]] = []
    cutoff = 0.5
    for i, line in enumerate(file_lines):
        matcher.set_seq1(line.strip())
        if matcher.real_quick_ratio() >= cutoff and matcher.quick_ratio() >= cutoff:
            r = matcher.ratio()
            if r >= cutoff:
                scored.append((r, i))
    if not scored:
        return "No similar lines were found: read the file again to see its current text."
    scored.sort(key=lambda t: (-t[0], t[1]))
    span = min(len(old_lines), 6)
    parts = []
    for ratio, i in scored[:top]:
        start = max(0, i - anchor_idx)
        lines = file_lines[start : start + span]
        body = "\n".join(_numbered(start + k + 1, _display_line(x.rstrip("\r").encode())[0]) for k, x in enumerate(lines))
        parts.append(f"around line {i + 1} ({ratio:.0%} similar):\n{body}")
    return "Closest candidates in the file:\n" + "\n".join(parts)


def _not_found_message(rel: str, data: bytes, old: bytes, new: bytes) -> str:
    msg = f"old_string not found in {rel}."
    if new and new in data:
        msg += (
            f" Note: new_string already occurs in the file (line {_line_of(data, data.find(new))}); "
            "the edit may already have been made."
        )
    text = data.decode("utf-8", "replace")
    file_lines = text.split("\n")[:200_000]
    old_s = old.decode("utf-8", "replace")
    hint = _whitespace_hint(file_lines, old_s) or _closest_lines(file_lines, old_s)
    return f"{msg}\n{hint}"


@_guarded
def edit_file(request: ToolRequest, args: EditFileArgs) -> ToolResult:
    """Replace old_string by new_string (exactly once, or everywhere with replace_all)."""
    if args.old_string == args.new_string:
        raise _Refusal("old_string and new_string are identical: there is nothing to change")
    real, rel = _resolve(request, args.path)
    old = _encode(args.old_string, "old_string")
    new = _encode(args.new_string, "new_string")
    held = request.snapshot
    st = _stat_target(real, rel)
    if st is None:
        if snapshot_is_for(request.workspace_root, held, real):
            raise _Refusal(
                f"{rel} no longer exists: it was deleted or moved since you read it. "
                "Find it with glob, or create it with write_file",
                conflict="true",
            )
        raise _Refusal(f"file not found: {rel}. edit_file changes existing files; create new ones with write_file",
                       kind="missing")
    _refuse_non_regular(st, rel, EDIT_FILE)
    if not snapshot_is_for(request.workspace_root, held, real):
        raise _Refusal(not_read_message(rel, held, "call edit_file"), not_read="true")
    assert held is not None
    data, fst = _read_whole(real, rel, st)
    pairs = _variants(data, old, new)
    current_sha = sha256_bytes(data)
    meta = {"path": rel}

    if current_sha != held.sha256:
        if _proven_retry(data, pairs, args.replace_all, held):
            return ToolResult.ok(
                request.call_id,
                request.tool,
                f"{rel} already holds the result of this edit (a retry of an edit that was applied); "
                "nothing was changed.",
                snapshot=make_snapshot(rel, fst, current_sha),
                metadata={**meta, "idempotent_retry": "true"},
            )
        still = max((data.count(o) for o, _, _ in pairs), default=0)
        detail = (
            f"old_string occurs {still} time{'s' if still != 1 else ''} in the current file."
            if still
            else "old_string does not occur in the current file any more."
        )
        raise _Refusal(conflict_message(rel, held, fst, detail), conflict="true")

    chosen = None
    for o, n, converted in pairs:
        count = data.count(o)
        if count:
            chosen = (o, n, converted, count)
            break
    if chosen is None:
        raise _Refusal(_not_found_message(rel, data, old, new), not_found="true")
    o, n, converted, count = chosen
    if count > 1 and not args.replace_all:
        positions, at = [], data.find(o)
        while at >= 0 and len(positions) < 10:
            positions.append(_line_of(data, at))
            at = data.find(o, at + 1)
        more = ", ..." if count > len(positions) else ""
        raise _Refusal(
            f"old_string found {count} times in {rel} (at lines {', '.join(map(str, positions))}{more}); "
            "add surrounding context to make it unique, or set replace_all to true to replace every occurrence",
            found=str(count),
        )
    result = _apply(data, o, n, args.replace_all)
    written = _atomic_write(real, rel, result, like=fst)

    # Where the replacements landed in the new content.
    starts, shift, at = [], len(n) - len(o), data.find(o)
    while at >= 0 and len(starts) < 20:
        starts.append(at + shift * len(starts))
        at = data.find(o, at + len(o))
    first_line = _line_of(result, starts[0])
    last_line = first_line + max(0, n.count(b"\n") - n.endswith(b"\n"))
    lines_note = ", ".join(str(_line_of(result, s)) for s in starts[:10]) + (", ..." if count > 10 else "")
    what = f"replaced {count} occurrence{'s' if count > 1 else ''} (starting at line{'s' if count > 1 else ''} {lines_note})"
    crlf = " (matched with the file's CRLF line endings)" if converted else ""
    text = (
        f"Edited {rel}: {what}{crlf}. The file now reads, around the "
        f"{'first change' if count > 1 else 'change'}:\n"
        + _snippet(result, first_line, max(first_line, last_line))
    )
    text, extra = bound_output(text, request, "edit_file")
    return ToolResult.ok(
        request.call_id,
        request.tool,
        text,
        snapshot=make_snapshot(rel, written, sha256_bytes(result)),
        metadata={**meta, "replacements": str(count), "first_line": str(first_line), **extra,
                  **({"line_endings": "crlf"} if converted else {})},
    )


read_file_activity = tool_activity(READ_FILE, read_file)
write_file_activity = tool_activity(WRITE_FILE, write_file)
edit_file_activity = tool_activity(EDIT_FILE, edit_file)
