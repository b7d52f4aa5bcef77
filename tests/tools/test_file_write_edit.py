"""write_file and edit_file on real files: the snapshot rule, atomic writes,
edit retries, and the three tools once as activities on the real dev server."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from temporalio.client import Client

import activities.files.read as files
from activities.files.write import edit_file, read_file, write_file
from core.contracts import Snapshot, ToolRequest, ToolStatus
from tests.support import run_tool_on_server, worker_activities
from tests.tools.file_helpers import edit, error, leftovers, ok, read, snap, write


# ------------------------------------------------------------------ write


def test_write_creates_parents_and_returns_the_snapshot_a_read_would(workspace: Path) -> None:
    result = ok(write(workspace, "a/b/c/new.py", "print('x')\nprint('y')\n"))
    assert result.output == "Created a/b/c/new.py (22 bytes, 2 lines)."
    assert result.metadata["created"] == "true"
    assert (workspace / "a/b/c/new.py").read_text() == "print('x')\nprint('y')\n"
    assert result.snapshot == snap(workspace, "a/b/c/new.py")
    assert leftovers(workspace) == []


def test_write_creates_a_deep_new_tree(workspace: Path) -> None:
    """150 new nested folders (750 characters, far under PATH_MAX): the bound
    on folder creation is for one folder a racing script keeps deleting, not
    for the depth of a legitimate path (it failed at 101 folders, saying they
    "keep disappearing", and left them behind)."""
    path = "/".join(["d"] * 150) + "/f.txt"
    ok(write(workspace, path, "deep\n"))
    assert (workspace / path).read_text() == "deep\n"


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
    acts = worker_activities(workspace, "read_file", "write_file", "edit_file")

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
