"""read_file, write_file and edit_file on real files: confinement, special
files, and streaming reads with flat memory (writes and edits:
test_file_write_edit.py)."""

from __future__ import annotations

import hashlib
import os
import resource
import socket
import stat
import time
import tracemalloc
from contextlib import suppress
from pathlib import Path

import pytest
from hypothesis import strategies as st

import activities.files.read as files
from activities.base import MAX_OUTPUT_CHARS
from activities.files.write import MAX_LINE_CHARS, edit_file, read_file, write_file
from core.contracts import Snapshot
from tests.tools.file_helpers import body, edit, error, leftovers, ok, read, snap, within, write


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
