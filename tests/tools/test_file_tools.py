"""read_file, write_file and edit_file on real files: confinement, special
files, streaming with flat memory, the snapshot rule, atomic writes, edit
retries, and each tool once as an activity on the real dev server."""

from __future__ import annotations

import hashlib
import os
import re
import resource
import socket
import stat
import tempfile
import threading
import time
import tracemalloc
from contextlib import suppress
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from temporalio.client import Client

import activities.files.read as files
from activities.base import MAX_OUTPUT_CHARS
from activities.files.write import (
    MAX_LINE_CHARS,
    edit_file,
    edit_file_activity,
    read_file,
    read_file_activity,
    write_file,
    write_file_activity,
)
from core.contracts import Snapshot, ToolRequest, ToolResult, ToolStatus
from core.tools.specs import EditFileArgs, ReadFileArgs, WriteFileArgs
from tests.support import run_tool_on_server


# ------------------------------------------------------------------ helpers


def request(ws: Path, tool: str, snapshot: Snapshot | None = None, **arguments: Any) -> ToolRequest:
    return ToolRequest(call_id="call-1", tool=tool, workspace_root=str(ws), arguments=arguments, snapshot=snapshot)


def read(ws: Path, path: str, **kw: Any) -> ToolResult:
    return read_file(request(ws, "read_file", path=path, **kw), ReadFileArgs(path=path, **kw))


def write(ws: Path, path: str, content: str, snapshot: Snapshot | None = None) -> ToolResult:
    return write_file(
        request(ws, "write_file", snapshot, path=path, content=content), WriteFileArgs(path=path, content=content)
    )


def edit(ws: Path, path: str, old: str, new: str, snapshot: Snapshot | None, replace_all: bool = False) -> ToolResult:
    args = dict(path=path, old_string=old, new_string=new, replace_all=replace_all)
    return edit_file(request(ws, "edit_file", snapshot, **args), EditFileArgs(**args))


def snap(ws: Path, path: str) -> Snapshot:
    result = read(ws, path)
    assert result.status == ToolStatus.OK, result.output
    assert result.snapshot is not None
    return result.snapshot


def error(result: ToolResult, *fragments: str) -> str:
    assert result.status == ToolStatus.ERROR and result.is_error, result.output
    assert result.snapshot is None, "an error must never hand out a snapshot"
    for fragment in fragments:
        assert fragment in result.output, (fragment, result.output)
    return result.output


def ok(result: ToolResult) -> ToolResult:
    assert result.status == ToolStatus.OK and not result.is_error, result.output
    return result


def body(result: ToolResult) -> list[str]:
    """The numbered lines of a read, without the trailing note."""
    return [line for line in result.output.split("\n") if re.match(r" *\d+\|", line)]


def leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.rglob("*.tmp")]


def within(seconds: float, fn, *args):
    """Run fn in a thread; fail (not hang) if it does not return in time."""
    box: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: box.setdefault("r", fn(*args)), daemon=True)
    thread.start()
    thread.join(seconds)
    return thread.is_alive(), box.get("r")


# ------------------------------------------------------------ confinement


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text("top secret\n")
    return folder


@pytest.mark.parametrize("path", ["../outside/secret.txt", "src/../../outside/secret.txt", "/etc/passwd",
                                  "/proc/self/root/etc/passwd", "//etc/passwd"])
def test_escapes_are_error_results_for_all_three_tools(workspace: Path, outside: Path, path: str) -> None:
    secret = outside / "secret.txt"
    error(read(workspace, path), "outside the workspace")
    error(write(workspace, path, "pwned\n"), "outside the workspace")
    error(edit(workspace, path, "top", "pwned", None), "outside the workspace")
    assert secret.read_text() == "top secret\n"


def test_absolute_path_outside_and_inside(workspace: Path, outside: Path) -> None:
    error(read(workspace, str(outside / "secret.txt")), "outside the workspace")
    (workspace / "a.txt").write_text("inside\n")
    result = ok(read(workspace, str(workspace / "a.txt")))
    assert body(result) == ["     1|inside"]
    assert result.snapshot is not None and result.snapshot.path == "a.txt"


def test_symlinked_file_pointing_out(workspace: Path, outside: Path) -> None:
    (workspace / "leak.txt").symlink_to(outside / "secret.txt")
    error(read(workspace, "leak.txt"), "outside the workspace")
    error(write(workspace, "leak.txt", "pwned"), "outside the workspace")
    assert (outside / "secret.txt").read_text() == "top secret\n"
    assert (workspace / "leak.txt").is_symlink()


def test_symlinked_folder_pointing_out(workspace: Path, outside: Path) -> None:
    (workspace / "out").symlink_to(outside)
    error(read(workspace, "out/secret.txt"), "outside the workspace")
    error(write(workspace, "out/new.txt", "pwned"), "outside the workspace")
    error(write(workspace, "out/deep/new.txt", "pwned"), "outside the workspace")
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


def test_symlink_loop_and_dotdot_cannot_reach_outside(workspace: Path, outside: Path) -> None:
    (workspace / "loop").symlink_to("loop")
    (workspace / "escape").symlink_to(outside)
    error(read(workspace, "loop/../escape/secret.txt"), "symlink")
    error(write(workspace, "loop/../escape/new.txt", "pwned"), "symlink")
    assert not (outside / "new.txt").exists()


def test_symlink_inside_pointing_inside_reads_and_writes_the_target(workspace: Path) -> None:
    (workspace / "src").mkdir()
    (workspace / "src" / "real.py").write_text("x = 1\n")
    (workspace / "alias.py").symlink_to("src/real.py")
    result = ok(read(workspace, "alias.py"))
    assert result.snapshot is not None and result.snapshot.path == "src/real.py"
    # The snapshot taken through the link is valid for the link and for the target.
    ok(write(workspace, "alias.py", "x = 2\n", result.snapshot))
    assert (workspace / "alias.py").is_symlink()
    assert (workspace / "src" / "real.py").read_text() == "x = 2\n"
    s2 = snap(workspace, "src/real.py")
    ok(edit(workspace, "alias.py", "x = 2", "x = 3", s2))
    assert (workspace / "src" / "real.py").read_text() == "x = 3\n"


@pytest.mark.parametrize("path,fragment", [("a\x00b", "NUL byte"), ("", "path is empty"), ("  ", "path is empty")])
def test_bad_paths(workspace: Path, path: str, fragment: str) -> None:
    error(read(workspace, path), fragment)
    error(write(workspace, path, "x"), fragment)


def test_very_long_names_are_error_results(workspace: Path) -> None:
    error(read(workspace, "x" * 300), "File name too long")
    error(write(workspace, "x" * 300, "data"), "File name too long")
    error(read(workspace, "a/" * 3000 + "x"))
    assert leftovers(workspace) == []


# ------------------------------------------------------------ special files


def test_fifo_is_refused_without_hanging(workspace: Path) -> None:
    fifo = workspace / "pipe"
    os.mkfifo(fifo)
    try:
        for call in (
            lambda: read(workspace, "pipe"),
            lambda: write(workspace, "pipe", "data"),
            lambda: edit(workspace, "pipe", "a", "b", None),
        ):
            hung, result = within(5, call)
            assert not hung, "the tool opened the FIFO and blocked"
            error(result, "FIFO")
        assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    finally:
        # Unblock a reader that might be stuck in open() so no thread lingers.
        with suppress(OSError):
            os.close(os.open(fifo, os.O_RDWR | os.O_NONBLOCK))
    assert leftovers(workspace) == []


def test_devices_are_refused(workspace: Path) -> None:
    (workspace / "zero").symlink_to("/dev/zero")
    hung, result = within(5, read, workspace, "zero")
    assert not hung
    error(result, "outside the workspace")  # confinement refuses it first
    hung, result = within(5, read, workspace, "/dev/zero")
    assert not hung
    error(result, "outside the workspace")
    try:
        os.mknod(workspace / "null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except (PermissionError, OSError):
        return  # not root: cannot make a device node here
    error(read(workspace, "null"), "character device")
    error(write(workspace, "null", "x"), "character device")


def test_socket_is_refused(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(workspace)  # AF_UNIX paths are short: bind relative
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind("sock")
        error(read(workspace, "sock"), "socket")
    finally:
        server.close()


def test_directory_is_refused_with_a_glob_hint(workspace: Path) -> None:
    (workspace / "src").mkdir()
    error(read(workspace, "src"), "is a folder", "glob")
    error(read(workspace, "."), "is a folder")
    error(write(workspace, "src", "x"), "is a folder")
    error(edit(workspace, "src", "a", "b", None), "is a folder")
    assert leftovers(workspace) == []


def test_missing_file(workspace: Path) -> None:
    error(read(workspace, "nope.py"), "file not found: nope.py", "glob")
    error(edit(workspace, "nope.py", "a", "b", None), "file not found", "write_file")
    (workspace / "f.txt").write_text("x")
    error(read(workspace, "f.txt/inner"), "parent of this path is a file")


# ------------------------------------------------------------------- read


def test_binary_files_are_refused(workspace: Path) -> None:
    (workspace / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"rest")
    (workspace / "blob.bin").write_bytes(b"text at first" + b"\x00" * 10 + b"more")
    error(read(workspace, "img.png"), "binary", "PNG")
    (workspace / "notes.md").write_text("ID3 tags and BZh blocks: notes\n")  # looks like magic, is text
    ok(read(workspace, "notes.md"))
    (workspace / "doc.pdf").write_bytes(b"%PDF-1.7\n%text-like header\n")
    error(read(workspace, "doc.pdf"), "PDF")
    error(read(workspace, "blob.bin"), "binary", "NUL")
    error(edit(workspace, "blob.bin", "text", "TEXT", Snapshot(path="blob.bin", mtime_ns=0, size=0, sha256="")),
          "binary")


def test_empty_file(workspace: Path) -> None:
    (workspace / "empty.txt").write_bytes(b"")
    result = ok(read(workspace, "empty.txt"))
    assert result.output == "(empty file)"
    assert result.metadata["total_lines"] == "0"
    assert result.snapshot is not None and result.snapshot.size == 0
    assert result.snapshot.sha256 == hashlib.sha256(b"").hexdigest()


def test_no_trailing_newline_crlf_and_invalid_utf8(workspace: Path) -> None:
    (workspace / "a.txt").write_bytes(b"one\ntwo")
    result = ok(read(workspace, "a.txt"))
    assert body(result) == ["     1|one", "     2|two"]
    assert result.metadata["total_lines"] == "2"

    (workspace / "crlf.txt").write_bytes(b"alpha\r\nbeta\r\n\r\ngamma")
    result = ok(read(workspace, "crlf.txt"))
    assert "\r" not in result.output
    assert body(result) == ["     1|alpha", "     2|beta", "     3|", "     4|gamma"]
    assert result.metadata["line_endings"] == "crlf"

    (workspace / "bad.txt").write_bytes(b"caf\xe9 \xff\xfe ok\n")
    result = ok(read(workspace, "bad.txt"))
    assert body(result) == ["     1|caf\ufffd \ufffd\ufffd ok"]


def test_snapshot_describes_what_was_read(workspace: Path) -> None:
    data = b"x = 1\ny = 2\n"
    (workspace / "m.py").write_bytes(data)
    st = os.stat(workspace / "m.py")
    result = ok(read(workspace, "./m.py", offset=2, limit=1))
    assert result.snapshot == Snapshot(path="m.py", mtime_ns=st.st_mtime_ns, size=len(data),
                                       sha256=hashlib.sha256(data).hexdigest())


def test_long_lines_are_cut_with_a_count(workspace: Path) -> None:
    (workspace / "long.txt").write_text("a" * 50_000 + "\nshort\n" + "\u00e9" * 50_000 + "\r\n")
    result = ok(read(workspace, "long.txt"))
    lines = body(result)
    assert lines[0] == "     1|" + "a" * MAX_LINE_CHARS + " [... 48000 more characters cut]"
    assert lines[1] == "     2|short"
    # Counted in characters (2 bytes each here), and the CR is not one of them.
    assert lines[2] == "     3|" + "\u00e9" * MAX_LINE_CHARS + " [... 48000 more characters cut]"
    assert result.metadata["cut_lines"] == "2"


def test_windowing_and_continuation(workspace: Path) -> None:
    (workspace / "ten.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    result = ok(read(workspace, "ten.txt", offset=3, limit=4))
    assert body(result) == [f"{i:6d}|line {i}" for i in range(3, 7)]
    assert "offset=7" in result.output and "lines 3-6 of 10" in result.output
    assert result.metadata == {"path": "ten.txt", "total_lines": "10", "offset": "3", "lines_returned": "4",
                               "next_offset": "7"}
    last = ok(read(workspace, "ten.txt", offset=10, limit=4))
    assert body(last) == ["    10|line 10"] and "offset=" not in last.output
    error(read(workspace, "ten.txt", offset=11), "offset 11 is past the end of ten.txt, which has 10 lines")
    error(read(workspace, "ten.txt", offset=500), "between 1 and 10")


def test_window_spanning_chunk_boundaries(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(files, "READ_CHUNK", 7)  # lines straddle reads at every offset
    text = "".join(f"{i}:" + "x" * (i % 13) + "\r\n" for i in range(1, 200))
    (workspace / "t.txt").write_text(text)
    expected = [line.rstrip("\r") for line in text.split("\n")]
    for offset, limit in [(1, 5), (17, 30), (198, 5), (199, 1)]:
        result = ok(read(workspace, "t.txt", offset=offset, limit=limit))
        want = expected[offset - 1 : min(offset - 1 + limit, 199)]
        assert body(result) == [f"{offset + i:6d}|{w}" for i, w in enumerate(want)]
        assert result.metadata["total_lines"] == "199"
        assert result.snapshot is not None
        assert result.snapshot.sha256 == hashlib.sha256(text.encode()).hexdigest()


def test_huge_window_of_long_lines_stays_bounded(workspace: Path) -> None:
    (workspace / "wide.txt").write_text(("y" * 5000 + "\n") * 500)
    result = ok(read(workspace, "wide.txt", limit=500))
    assert len(result.output) <= MAX_OUTPUT_CHARS
    returned = int(result.metadata["lines_returned"])
    assert 1 <= returned < 500
    assert f"offset={returned + 1}" in result.output and "output size limit" in result.output
    assert result.metadata["next_offset"] == str(returned + 1)


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def test_1gb_sparse_file_read_at_the_end_with_flat_memory(tmp_path: Path) -> None:
    ws = tmp_path / "big"
    ws.mkdir()
    path = ws / "sparse.txt"
    head = b"".join(b"head %d\n" % i for i in range(2000))  # > 8 KiB of text before the hole
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(1 << 30)
        f.seek(1 << 30)
        f.write(b"tail 1\ntail 2\ntail 3\n")
    rss_before = _rss_mb()
    tracemalloc.start()
    started = time.monotonic()
    try:
        result = ok(read(ws, "sparse.txt", offset=2002, limit=10))
        giant = ok(read(ws, "sparse.txt", offset=2001, limit=1))  # the 1 GB line of NULs itself
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    elapsed = time.monotonic() - started
    assert body(result) == ["  2002|tail 2", "  2003|tail 3"]
    assert result.metadata["total_lines"] == "2003"
    assert result.snapshot is not None and result.snapshot.size == (1 << 30) + 21
    cut = (1 << 30) - len(head) + len("tail 1") - MAX_LINE_CHARS
    assert body(giant) == ["  2001|" + "\x00" * MAX_LINE_CHARS + f" [... {cut} more characters cut]"]
    assert peak < 64 << 20, f"traced peak {peak / 2**20:.1f} MiB"
    assert _rss_mb() - rss_before < 64
    assert elapsed < 30


def test_200mb_file_of_many_lines_windowed_at_the_end(tmp_path: Path) -> None:
    ws = tmp_path / "many"
    ws.mkdir()
    block = b"".join(b"row %07d " % i + b"z" * 51 + b"\n" for i in range(16384))
    assert len(block) == 1 << 20
    hasher = hashlib.sha256()
    with open(ws / "many.txt", "wb") as f:
        for _ in range(200):
            f.write(block)
            hasher.update(block)
    total = 200 * 16384
    rss_before = _rss_mb()
    tracemalloc.start()
    try:
        result = ok(read(ws, "many.txt", offset=total - 49, limit=100))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    lines = body(result)
    assert len(lines) == 50
    assert lines[0] == f"{total - 49:6d}|row {16384 - 50:07d} " + "z" * 51
    assert lines[-1] == f"{total:6d}|row {16383:07d} " + "z" * 51
    assert result.metadata["total_lines"] == str(total) and "next_offset" not in result.metadata
    assert result.snapshot is not None and result.snapshot.sha256 == hasher.hexdigest()
    assert peak < 64 << 20 and _rss_mb() - rss_before < 64


@pytest.mark.parametrize("threaded", [False, True])
def test_hashing_inline_or_in_a_helper_thread_gives_the_same_result(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, threaded: bool
) -> None:
    # The helper thread is used for big files when a core is idle; force each way.
    monkeypatch.setattr(files, "_spare_core", lambda: threaded)
    monkeypatch.setattr(files, "READ_CHUNK", 64 << 10)
    monkeypatch.setattr(files, "THREADED_CHUNK", 64 << 10)
    data = b"".join(b"%d\n" % i for i in range(3_000_000))  # ~20 MiB, lines straddle chunks
    assert len(data) >= files.THREADED_HASH_FROM
    (workspace / "n.txt").write_bytes(data)
    result = ok(read(workspace, "n.txt", offset=1_500_000, limit=3))
    assert body(result) == [f"{n + 1:6d}|{n}" for n in range(1_499_999, 1_500_002)]
    assert result.metadata["total_lines"] == "3000000"
    assert result.snapshot is not None and result.snapshot.sha256 == hashlib.sha256(data).hexdigest()


def test_file_changing_while_read_is_read_again(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = workspace / "live.txt"
    path.write_text("v1\n")
    real_scan = files._scan
    calls = []

    def scan_then_modify(fd, *args):
        out = real_scan(fd, *args)
        calls.append(1)
        if len(calls) == 1:
            path.write_text("version 2\n")  # same inode, new content, after our pass
        return out

    monkeypatch.setattr(files, "_scan", scan_then_modify)
    result = ok(read(workspace, "live.txt"))
    assert len(calls) == 2
    assert body(result) == ["     1|version 2"]
    assert result.snapshot is not None and result.snapshot.sha256 == hashlib.sha256(b"version 2\n").hexdigest()


# ------------------------------------------------------------------ write


def test_write_creates_parents_and_returns_the_snapshot_a_read_would(workspace: Path) -> None:
    result = ok(write(workspace, "a/b/c/new.py", "print('x')\nprint('y')\n"))
    assert result.output == "Created a/b/c/new.py (22 bytes, 2 lines)."
    assert result.metadata["created"] == "true"
    assert (workspace / "a/b/c/new.py").read_text() == "print('x')\nprint('y')\n"
    assert result.snapshot == snap(workspace, "a/b/c/new.py")
    assert leftovers(workspace) == []


def test_new_file_mode_follows_the_umask(workspace: Path) -> None:
    old = os.umask(0o027)
    try:
        ok(write(workspace, "u.txt", "x"))
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(workspace / "u.txt").st_mode) == 0o640


def test_write_without_read_is_refused(workspace: Path) -> None:
    (workspace / "exists.txt").write_text("precious\n")
    error(write(workspace, "exists.txt", "overwritten\n"), "has not been read", "read it first with read_file")
    other = Snapshot(path="other.txt", mtime_ns=1, size=1, sha256="0" * 64)
    error(write(workspace, "exists.txt", "overwritten\n", other), "snapshot this session holds is for 'other.txt'")
    assert (workspace / "exists.txt").read_text() == "precious\n"


def test_overwrite_after_read_keeps_the_mode(workspace: Path) -> None:
    path = workspace / "run.sh"
    path.write_text("#!/bin/sh\necho 1\n")
    path.chmod(0o755)
    result = ok(write(workspace, "run.sh", "#!/bin/sh\necho 2\n", snap(workspace, "run.sh")))
    assert result.metadata["created"] == "false" and result.output.startswith("Overwrote run.sh")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o755
    assert path.read_text() == "#!/bin/sh\necho 2\n"
    assert result.snapshot == snap(workspace, "run.sh")
    assert leftovers(workspace) == []


def test_modification_between_read_and_write_is_a_conflict_with_a_diff(workspace: Path) -> None:
    path = workspace / "c.py"
    path.write_text("a = 1\nb = 2\n")
    held = snap(workspace, "c.py")
    path.write_text("a = 1\nb = 2\nc = 3  # someone else\n")
    out = error(write(workspace, "c.py", "a = 100\nb = 2\n", held),
                "conflict: c.py changed since it was last read", "Nothing was written", "Read it again with read_file")
    assert "--- current file on disk" in out and "+++ content you tried to write" in out
    assert "-c = 3  # someone else" in out and "+a = 100" in out and "-a = 1" in out
    assert path.read_text() == "a = 1\nb = 2\nc = 3  # someone else\n"


def test_conflict_diff_is_short(workspace: Path) -> None:
    path = workspace / "big.txt"
    path.write_text("".join(f"{i}\n" for i in range(500)))
    held = snap(workspace, "big.txt")
    path.write_text("".join(f"{i}!\n" for i in range(500)))
    out = error(write(workspace, "big.txt", "".join(f"{i}?\n" for i in range(500)), held), "conflict")
    diff = out[out.index("--- current file on disk"):]
    assert len(diff.splitlines()) <= 42 and "diff cut at 40 lines" in diff


def test_same_size_rewrite_with_the_old_mtime_is_still_a_conflict(workspace: Path) -> None:
    # Same size, same mtime_ns (as a rewrite within one clock tick would
    # leave it): small files are always hashed, so the change is caught.
    path = workspace / "tick.txt"
    path.write_text("aaaa\n")
    held = snap(workspace, "tick.txt")
    path.write_text("bbbb\n")
    os.utime(path, ns=(held.mtime_ns, held.mtime_ns))
    error(write(workspace, "tick.txt", "cccc\n", held), "conflict")


def test_touch_between_read_and_write_is_not_a_conflict(workspace: Path) -> None:
    path = workspace / "t.txt"
    path.write_text("same\n")
    held = snap(workspace, "t.txt")
    os.utime(path, ns=(held.mtime_ns + 5_000_000_000, held.mtime_ns + 5_000_000_000))
    ok(write(workspace, "t.txt", "new\n", held))
    assert path.read_text() == "new\n"


def test_write_retry_after_a_lost_result_is_idempotent(workspace: Path) -> None:
    path = workspace / "r.txt"
    path.write_text("old\n")
    held = snap(workspace, "r.txt")
    first = ok(write(workspace, "r.txt", "new content\n", held))
    again = ok(write(workspace, "r.txt", "new content\n", held))  # same request: snapshot no longer matches
    assert again.metadata["idempotent_retry"] == "true" and again.snapshot == first.snapshot
    created = ok(write(workspace, "fresh.txt", "hello\n"))
    retry = ok(write(workspace, "fresh.txt", "hello\n"))  # create retried: no snapshot, same content
    assert retry.metadata["idempotent_retry"] == "true" and retry.snapshot == created.snapshot
    error(write(workspace, "fresh.txt", "different\n"), "read it first")


def test_no_temp_file_survives_a_failed_rename(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = workspace / "keep.txt"
    path.write_text("original\n")
    held = snap(workspace, "keep.txt")

    def broken_replace(src, dst, **kw):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "replace", broken_replace)
    out = error(write(workspace, "keep.txt", "new\n", held), "No space left on device")
    assert "keep.txt" in out
    assert path.read_text() == "original\n"
    assert leftovers(workspace) == [] and sorted(p.name for p in workspace.iterdir()) == ["keep.txt"]


def test_write_where_a_parent_is_a_file(workspace: Path) -> None:
    (workspace / "f").write_text("x")
    error(write(workspace, "f/g.txt", "x"), "parent of this path is a file")
    assert leftovers(workspace) == []


def test_write_refuses_lone_surrogates(workspace: Path) -> None:
    error(write(workspace, "s.txt", "ok \ud800 no"), "cannot be written as UTF-8")
    assert not (workspace / "s.txt").exists()


def test_write_recreates_a_file_deleted_since_it_was_read(workspace: Path) -> None:
    (workspace / "gone.txt").write_text("x\n")
    held = snap(workspace, "gone.txt")
    (workspace / "gone.txt").unlink()
    assert "deleted since you read it" in ok(write(workspace, "gone.txt", "y\n", held)).output


# ------------------------------------------------------------------- edit


def test_edit_replaces_once_and_reports_lines(workspace: Path) -> None:
    path = workspace / "e.py"
    path.write_text("def f():\n    return 1\n\n\ndef g():\n    return 2\n")
    path.chmod(0o750)
    result = ok(edit(workspace, "e.py", "    return 2\n", "    x = 2\n    return x\n", snap(workspace, "e.py")))
    assert path.read_text() == "def f():\n    return 1\n\n\ndef g():\n    x = 2\n    return x\n"
    assert "replaced 1 occurrence (starting at line 6)" in result.output
    assert "     6|    x = 2\n     7|    return x" in result.output
    assert result.metadata["first_line"] == "6" and result.metadata["replacements"] == "1"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o750
    assert result.snapshot == snap(workspace, "e.py")
    assert leftovers(workspace) == []


def test_edit_requires_a_read(workspace: Path) -> None:
    (workspace / "n.py").write_text("a\n")
    error(edit(workspace, "n.py", "a", "b", None), "has not been read", "read it first with read_file")
    assert (workspace / "n.py").read_text() == "a\n"


def test_edit_identical_strings_is_an_error(workspace: Path) -> None:
    (workspace / "n.py").write_text("a\n")
    error(edit(workspace, "n.py", "a", "a", snap(workspace, "n.py")), "identical")


def test_edit_conflict(workspace: Path) -> None:
    path = workspace / "c.py"
    path.write_text("x = 1\n")
    held = snap(workspace, "c.py")
    path.write_text("x = 1\ny = 1\n")
    error(edit(workspace, "c.py", "x = 1", "x = 2", held), "conflict: c.py changed since it was last read")
    assert path.read_text() == "x = 1\ny = 1\n"


def test_edit_conflict_that_merely_contains_new_string_is_not_taken_for_a_retry(workspace: Path) -> None:
    path = workspace / "c.py"
    path.write_text("x = 1\n")
    held = snap(workspace, "c.py")
    path.write_text("x = 2\n# someone else was here\n")  # holds new_string, but is not our result
    error(edit(workspace, "c.py", "x = 1", "x = 2", held), "conflict")


@pytest.mark.parametrize(
    "old,new,replace_all",
    [
        ("x = 1\n", "x = 1\ny = 2\n", False),  # new contains old: a blind retry would apply it twice
        ("a", "aa", True),
        ("    print('debug')\n", "", False),  # a deletion
    ],
)
def test_edit_retry_with_the_old_snapshot_is_idempotent(workspace: Path, old: str, new: str, replace_all: bool) -> None:
    path = workspace / "r.py"
    path.write_text("x = 1\nab = 'b'\n    print('debug')\nz = 3\n")
    held = snap(workspace, "r.py")
    first = ok(edit(workspace, "r.py", old, new, held, replace_all))
    after = path.read_text()
    retry = ok(edit(workspace, "r.py", old, new, held, replace_all))
    assert retry.metadata["idempotent_retry"] == "true"
    assert "already holds the result of this edit" in retry.output
    assert path.read_text() == after and retry.snapshot == first.snapshot


def test_a_replace_all_deletion_cannot_be_proven_so_its_retry_is_a_conflict(workspace: Path) -> None:
    # Nothing marks where the deleted text stood: the retry is refused, and
    # above all not applied a second time.
    path = workspace / "r.py"
    path.write_text("abba\n")
    held = snap(workspace, "r.py")
    ok(edit(workspace, "r.py", "b", "", held, replace_all=True))
    error(edit(workspace, "r.py", "b", "", held, replace_all=True), "conflict")
    assert path.read_text() == "aa\n"


def test_repeating_an_applied_edit_with_the_new_snapshot_says_so(workspace: Path) -> None:
    path = workspace / "r.py"
    path.write_text("x = 1\n")
    first = ok(edit(workspace, "r.py", "x = 1", "x = 2", snap(workspace, "r.py")))
    out = error(edit(workspace, "r.py", "x = 1", "x = 2", first.snapshot), "old_string not found")
    assert "new_string already occurs in the file (line 1)" in out


def test_edit_found_n_times_and_replace_all(workspace: Path) -> None:
    path = workspace / "m.py"
    path.write_text("v = 0\nv = 0\nw = 1\nv = 0\n")
    out = error(edit(workspace, "m.py", "v = 0", "v = 9", snap(workspace, "m.py")),
                "found 3 times", "lines 1, 2, 4", "add surrounding context", "replace_all")
    assert "m.py" in out
    result = ok(edit(workspace, "m.py", "v = 0", "v = 9", snap(workspace, "m.py"), replace_all=True))
    assert path.read_text() == "v = 9\nv = 9\nw = 1\nv = 9\n"
    assert "replaced 3 occurrences (starting at lines 1, 2, 4)" in result.output


def test_not_found_tabs_vs_spaces(workspace: Path) -> None:
    (workspace / "t.py").write_text("def f():\n\tif x:\n\t\treturn 1\n")
    out = error(edit(workspace, "t.py", "    if x:\n        return 1", "    return 2", snap(workspace, "t.py")),
                "old_string not found in t.py", "differs only in whitespace", "file indents with tabs")
    assert "lines 2-3" in out and "     2|\tif x:" in out


def test_not_found_trailing_whitespace(workspace: Path) -> None:
    (workspace / "w.py").write_text("a = 1   \nb = 2\n")
    error(edit(workspace, "w.py", "a = 1\nb = 2", "a = 2\nb = 2", snap(workspace, "w.py")),
          "differs only in whitespace", "trailing whitespace")


def test_line_endings_in_a_mixed_file(workspace: Path) -> None:
    path = workspace / "mix.txt"
    path.write_bytes(b"one\r\ntwo\nthree\r\nfour\r\n")
    # Neither as sent nor with every \n as CRLF: the hint names the CRLF.
    error(edit(workspace, "mix.txt", "one\ntwo\nthree", "1\n2\n3", snap(workspace, "mix.txt")),
          "differs only in whitespace", "CRLF")
    # A part that is CRLF throughout matches once converted, and stays CRLF.
    ok(edit(workspace, "mix.txt", "three\nfour\n", "3\n4\n", snap(workspace, "mix.txt")))
    assert path.read_bytes() == b"one\r\ntwo\n3\r\n4\r\n"


def test_not_found_shows_the_closest_lines(workspace: Path) -> None:
    (workspace / "c.py").write_text("import os\n\ndef compute_total(items):\n    return sum(items)\n")
    out = error(edit(workspace, "c.py", "def compute_totals(item):", "def total(items):", snap(workspace, "c.py")),
                "old_string not found", "Closest candidates")
    assert "around line 3" in out and "     3|def compute_total(items):" in out


def test_edit_in_a_crlf_file_keeps_crlf(workspace: Path) -> None:
    path = workspace / "w.txt"
    path.write_bytes(b"first\r\nsecond\r\nthird\r\n")
    result = ok(edit(workspace, "w.txt", "first\nsecond\n", "FIRST\nnew line\nSECOND\n", snap(workspace, "w.txt")))
    assert path.read_bytes() == b"FIRST\r\nnew line\r\nSECOND\r\nthird\r\n"
    assert "CRLF" in result.output and result.metadata["line_endings"] == "crlf"


# -------------------------------------------------------- on the dev server


async def test_the_three_tools_as_activities_on_the_dev_server(client: Client, workspace: Path) -> None:
    acts = [read_file_activity, write_file_activity, edit_file_activity]

    def req(tool: str, snapshot: Snapshot | None = None, **arguments: Any) -> ToolRequest:
        return ToolRequest(call_id=f"srv-{tool}", tool=tool, workspace_root=str(workspace), arguments=arguments,
                           snapshot=snapshot)

    written = await run_tool_on_server(client, acts, req("write_file", path="pkg/mod.py", content="A = 1\nB = 2\n"))
    assert written.status == ToolStatus.OK and written.name == "write_file" and written.elapsed_ms > 0
    got = await run_tool_on_server(client, acts, req("read_file", path="pkg/mod.py"))
    assert got.status == ToolStatus.OK and got.output == "     1|A = 1\n     2|B = 2"
    assert got.snapshot == written.snapshot
    edited = await run_tool_on_server(client, acts, req("edit_file", got.snapshot, path="pkg/mod.py",
                                                        old_string="B = 2", new_string="B = 3"))
    assert edited.status == ToolStatus.OK and edited.snapshot is not None
    assert (workspace / "pkg" / "mod.py").read_text() == "A = 1\nB = 3\n"
    # A confinement failure crosses the boundary as an error result, not a failed workflow.
    escaped = await run_tool_on_server(client, acts, req("read_file", path="../../etc/passwd"))
    assert escaped.is_error and "outside the workspace" in escaped.output
    # Hallucinated arguments are refused by the shared validation.
    bad = await run_tool_on_server(client, acts, req("read_file", path="a.txt", offset=0))
    assert bad.is_error


_TEXT = st.text(alphabet="ab \n", max_size=24)


@settings(max_examples=150, deadline=None)
@given(text=_TEXT, old=st.text(alphabet="ab\n", min_size=1, max_size=3), new=st.text(alphabet="ab\n", max_size=3),
       replace_all=st.booleans(), other=_TEXT)
def test_edit_retry_is_never_applied_twice_nor_taken_for_someone_elses_change(
    text: str, old: str, new: str, replace_all: bool, other: str
) -> None:
    if old == new:
        return
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp)
        path = ws / "f.txt"
        path.write_text(text)
        held = snap(ws, "f.txt")
        first = edit(ws, "f.txt", old, new, held, replace_all)
        if first.is_error:
            assert path.read_text() == text
            return
        result = path.read_text()
        assert result == (text.replace(old, new) if replace_all else text.replace(old, new, 1))
        retry = edit(ws, "f.txt", old, new, held, replace_all)
        assert path.read_text() == result  # never applied twice
        if retry.status == ToolStatus.OK:
            assert retry.metadata["idempotent_retry"] == "true"
        else:
            # A single edit is always proven. replace_all is undone by replacing
            # every new_string back, which cannot tell a new_string that was
            # there before (or overlapping ones, or where a deletion was) from
            # a replaced one: then the retry is a conflict -- refused, never
            # applied twice.
            assert replace_all and (new == "" or result.replace(new, old) != text), retry.output
            assert "conflict" in retry.output
        # Someone else's content: success is claimed only if it *is* the intended
        # result. (Content equal to what was read is no conflict: the edit applies.)
        if other == text:
            return
        path.write_text(other)
        third = edit(ws, "f.txt", old, new, held, replace_all)
        assert path.read_text() == other
        if third.status == ToolStatus.OK:
            assert other == result
