"""Overlay capture on real mounts with real bubblewrap: the workspace stays
untouched and the upper layer becomes exactly the command's changeset."""

from __future__ import annotations

import os
import subprocess

import pytest

from activities.txn import overlay
from tests.txn.support.helpers import DEFAULT_PATH, SCRIPT, needs_overlay, run_captured, sandboxed, seed, tree

pytestmark = needs_overlay


def _actions(scan) -> dict[str, str]:
    return {c.path: c.action for c in scan.changeset.changes}


def test_command_sees_its_writes_but_the_workspace_is_untouched(workspace):
    (workspace / "a.txt").write_text("one\n")
    before = tree(workspace)
    cap, proc = run_captured(workspace, "echo two >> a.txt && cat a.txt && echo new > b.txt")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "one\ntwo\n"
    assert tree(workspace) == before
    assert cap.mounted()
    assert _actions(overlay.scan(cap)) == {"a.txt": "modify", "b.txt": "create"}


def test_deletes_renames_modes_symlinks_and_replaced_folders(workspace):
    seed(workspace)
    cap, proc = run_captured(workspace, SCRIPT)
    assert proc.returncode == 0, proc.stderr
    scan = overlay.scan(cap)
    assert _actions(scan) == {
        "sub/s": "delete", "sub/deep": "delete", "sub/deep/d": "delete", "sub/z": "create",
        "r": "delete", "r2": "create", "x.sh": "mode", "link": "create", "f": "replace", "f/in": "create",
        "dir2file": "replace", "dir2file/inner": "delete", "keep.txt": "modify",
        "new": "create", "new/a": "create", "new/a/b": "create", "new/a/b/c": "create",
    }
    by_path = {c.path: c for c in scan.changeset.changes}
    assert by_path["r2"].renamed_from == "r"
    assert by_path["x.sh"].new.mode == 0o755
    assert by_path["new/a"].new.mode == 0o500
    assert by_path["link"].new.target == "x.sh"
    assert scan.changed_during == []


def test_user_namespace_mode_captures_too(workspace):
    """What a worker that is not root uses (unshare --user --map-root-user,
    overlay with userxattr: opaque folders are marked user.overlay.opaque)."""
    (workspace / "a").write_text("a\n")
    (workspace / "d").mkdir()
    (workspace / "d" / "x").write_text("x\n")
    cap = overlay.begin(str(workspace), "t", "c")
    cap.mode = "userns"
    proc = subprocess.run(cap.wrap(sandboxed(cap.workspace, "echo b >> a && rm -r d && mkdir d && echo y > d/y")),
                          capture_output=True, text=True, env={"PATH": DEFAULT_PATH}, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert _actions(overlay.scan(cap)) == {"a": "modify", "d/x": "delete", "d/y": "create"}
    assert os.listxattr(os.path.join(cap.upper, "d")) == ["user.overlay.opaque"]


def test_journals_are_hidden_and_artifacts_read_only_inside_the_view(workspace):
    (workspace / ".agent-artifacts").mkdir()
    (workspace / ".agent-artifacts" / "out.txt").write_text("earlier output")
    cap, proc = run_captured(
        workspace, "cat .agent-artifacts/out.txt; ls -A .agent-artifacts/txn; touch .agent-artifacts/forged"
    )
    assert proc.stdout == "earlier output"  # readable, txn/ is empty in the view
    assert "Read-only file system" in proc.stderr
    assert not os.path.exists(workspace / ".agent-artifacts" / "forged")
    assert not overlay.scan(cap).changeset


def test_a_file_changed_in_the_workspace_during_the_command_is_reported(workspace):
    (workspace / "a.txt").write_text("one\n")
    # A concurrent writer (another tool, the user) changes the real file after
    # the command started: its ctime is past the launcher's start marker.
    cap, proc = run_captured(workspace, "echo two >> a.txt")
    (workspace / "a.txt").write_text("someone else\n")
    assert overlay.scan(cap).changed_during == ["a.txt"]


def test_unavailable_is_reported_with_a_reason(workspace, monkeypatch):
    monkeypatch.setenv(overlay.TXN_ENV, "off")
    with pytest.raises(overlay.CaptureUnavailable, match="disabled"):
        overlay.begin(str(workspace), "t", "c")
    odd = workspace / "a,b"
    odd.mkdir()
    monkeypatch.delenv(overlay.TXN_ENV)
    with pytest.raises(overlay.CaptureUnavailable, match="mount options"):
        overlay.begin(str(odd), "t", "c")
