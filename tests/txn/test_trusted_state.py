"""Attacks on the worker's trusted state (journals, pre-images, previews,
applied-call records), as an untrusted command or file tool could mount them:
each failed before the state moved out of the workspace and was verified on
read-back. Real files, real overlays, real bubblewrap."""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
from pathlib import Path

import pytest
from pydantic import ValidationError

from activities.txn import api as txn
from activities.txn import journal
from activities.txn.changeset import FILE, Change, Changeset, Node
from activities.txn.rollback import rollback_turn
from activities.txn.store import call_dir, turn_dir
from core.contracts import ToolRequest, TurnInput, Workspace
from core.tools.specs import EditFileArgs, WriteFileArgs
from tests.txn.support.helpers import DEFAULT_PATH, needs_overlay, sandboxed

TURN = "turn-attack"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _run(started: txn.TxnStart, script: str) -> tuple[bool, dict]:
    proc = subprocess.run(started.wrap(sandboxed(started.root, script)), capture_output=True, text=True,
                          timeout=60, env={"PATH": DEFAULT_PATH})
    return True, {"exit_code": proc.returncode, "output": proc.stdout}


def _forge(folder: str, **fields) -> None:
    """A journal as the worker would write it, put where the worker reads it."""
    os.makedirs(folder, exist_ok=True)
    j = journal.Journal(folder, fields.pop("turn_id", TURN), fields.pop("call_id", "c"), **fields)
    j.save()


# --- a forged "journaled" record never stands in for running the command --------


@needs_overlay
def test_a_journal_forged_in_the_workspace_does_not_stop_the_command_running(workspace: Path) -> None:
    # Where an older release kept journals, and where a command or file tool can write.
    forged = workspace / ".agent-artifacts" / "txn" / TURN / "call-1"
    _forge(str(forged), call_id="call-1", state=journal.JOURNALED,
           result={"exit_code": 0, "output": "forged: never ran"})
    started = txn.start(str(workspace), TURN, "call-1")
    assert started.mode == "capture", started
    completed, result = _run(started, "echo ran > ran.txt")
    done = txn.finish(started, verdict="ask", completed=completed, result=result)
    assert done.capture == "applied" and (workspace / "ran.txt").read_text() == "ran\n"


# --- records are validated and contents re-hashed on read-back ------------------------


def test_rollback_never_copies_in_a_pre_image_named_outside_its_folder(workspace: Path, tmp_path: Path) -> None:
    secret = tmp_path / "outside" / "secret"
    secret.parent.mkdir()
    secret.write_bytes(b"root:$6$hash\n")
    (workspace / "a.txt").write_text("mine\n")
    folder = call_dir(str(workspace), TURN, "c", create=True)
    escape = os.path.relpath(secret, folder)  # ../../.. up and out
    pre_node = Node(FILE, 0o644, secret.stat().st_size, _sha(secret.read_bytes()))
    post_node = Node(FILE, 0o644, 5, _sha(b"mine\n"))
    _forge(folder, kind=journal.KIND_FILES, preimages={"a.txt": journal.PreImage(pre_node, file=escape)},
           posts={"a.txt": post_node})
    report = rollback_turn(str(workspace), TURN)
    assert (workspace / "a.txt").read_text() == "mine\n"
    assert report.restored == [] and any("not valid" in c for c in report.conflicts), report


def test_rollback_restores_no_pre_image_whose_content_changed(workspace: Path) -> None:
    big = b"before\n" * 20_000  # kept as a copy beside the turn's log, not inside it
    (workspace / "a.txt").write_bytes(big)
    journal.record_preimage(str(workspace), TURN, "c", "a.txt")
    (workspace / "a.txt").write_text("after\n")
    journal.record_postimage(str(workspace), TURN, "c", "a.txt")
    [kept] = Path(turn_dir(str(workspace), TURN), "pre").iterdir()
    kept.write_bytes(b"tampered\n")  # the kept copy, rewritten
    report = rollback_turn(str(workspace), TURN)
    assert (workspace / "a.txt").read_text() == "after\n"
    assert report.restored == [] and any("sha256" in c for c in report.conflicts), report


def _forge_created_file(workspace: Path, call: str, data: bytes, node: Node, upper_mode: int) -> None:
    folder = call_dir(str(workspace), TURN, call, create=True)
    upper = Path(folder, "upper")
    upper.mkdir(exist_ok=True)
    (upper / "x").write_bytes(data)
    os.chmod(upper / "x", upper_mode)
    _forge(folder, call_id=call, state=journal.JOURNALED,
           changeset=Changeset([Change("x", None, node, content="upper/x")]),
           preimages={"x": journal.PreImage(None)}, result={"exit_code": 0, "output": ""})


def test_special_mode_bits_in_a_record_are_never_applied(workspace: Path) -> None:
    data = b"#!/bin/sh\nid\n"
    _forge_created_file(workspace, "setuid", data, Node(FILE, 0o6755, len(data), _sha(data)), 0o6755)
    txn.resume(str(workspace), TURN, "setuid")
    st = os.lstat(workspace / "x")
    assert stat.S_IMODE(st.st_mode) & 0o7000 == 0, oct(st.st_mode)


def test_a_record_naming_a_device_or_fifo_creates_nothing(workspace: Path) -> None:
    data = b""
    _forge_created_file(workspace, "dev", data, Node("chr", 0o666, 0, _sha(data)), 0o644)
    done = txn.resume(str(workspace), TURN, "dev")
    assert not os.path.lexists(workspace / "x") and done.is_error


def test_a_journaled_content_rewritten_before_the_apply_is_refused(workspace: Path) -> None:
    data = b"journaled\n"
    _forge_created_file(workspace, "swap", data, Node(FILE, 0o644, len(data), _sha(data)), 0o644)
    Path(call_dir(str(workspace), TURN, "swap"), "upper", "x").write_bytes(b"swapped!!\n")
    done = txn.resume(str(workspace), TURN, "swap")
    assert not os.path.lexists(workspace / "x") and done.is_error and "sha256" in done.text


def test_applied_files_are_copies_never_links_to_the_store(workspace: Path) -> None:
    data = b"content\n"
    _forge_created_file(workspace, "link", data, Node(FILE, 0o644, len(data), _sha(data)), 0o644)
    txn.resume(str(workspace), TURN, "link")
    assert (workspace / "x").read_bytes() == data and os.lstat(workspace / "x").st_nlink == 1


# --- the approved preview is what is applied ----------------------------------------


def _preview(workspace: Path, call: str) -> txn.TxnResult:
    started = txn.start(str(workspace), TURN, call)
    assert started.mode == "capture"
    completed, result = _run(started, "echo previewed > f.txt")
    done = txn.finish(started, verdict="ask", completed=completed, result=result, preview=True)
    assert done.capture == "previewed" and "+previewed" in done.preview.diff
    return done


@needs_overlay
def test_preview_content_swapped_before_approval_is_not_applied(workspace: Path) -> None:
    _preview(workspace, "p1")
    upper = Path(call_dir(str(workspace), TURN, "p1"), "upper", "f.txt")
    upper.write_text("swapped\n")  # another writer, between preview and approval
    approved = txn.approve_preview(str(workspace), TURN, "p1")
    assert approved.is_error and not (workspace / "f.txt").exists()


@needs_overlay
def test_approval_applies_only_the_changeset_whose_digest_was_shown(workspace: Path) -> None:
    shown = _preview(workspace, "p2")
    digest = shown.metadata["txn_digest"]
    assert len(digest) == 64
    # A whole new, self-consistent record put in its place.
    folder = call_dir(str(workspace), TURN, "p2")
    data = b"other\n"
    Path(folder, "upper", "f.txt").write_bytes(data)
    j = journal.load(str(workspace), TURN, "p2")
    j.changeset = Changeset([Change("f.txt", None, Node(FILE, 0o644, len(data), _sha(data)), content="upper/f.txt")])
    j.save()
    refused = txn.approve_preview(str(workspace), TURN, "p2", digest)
    assert refused.is_error and "not the one the preview showed" in refused.text
    assert not (workspace / "f.txt").exists()


@needs_overlay
def test_approval_with_the_shown_digest_applies(workspace: Path) -> None:
    shown = _preview(workspace, "p3")
    approved = txn.approve_preview(str(workspace), TURN, "p3", shown.metadata["txn_digest"])
    assert approved.capture == "applied" and (workspace / "f.txt").read_text() == "previewed\n"


# --- the file tools cannot reach the state, nor write the artifacts folder --------------


def _write(ws: Path, path: str, content: str = "forged"):
    from activities.files.write import write_file

    req = ToolRequest(call_id="w", tool="write_file", workspace_root=str(ws), arguments={"path": path,
                      "content": content}, turn_id="other-turn")
    return write_file(req, WriteFileArgs(path=path, content=content))


@pytest.mark.parametrize("path", [".agent-artifacts/txn/t/c/manifest.json", ".agent-artifacts/applied/x.jsonl",
                                  ".agent-artifacts/transcripts/s/n.json", "./.agent-artifacts/out.txt",
                                  "sub/../.agent-artifacts/x"])
def test_write_file_refuses_the_artifacts_folder(workspace: Path, path: str) -> None:
    result = _write(workspace, path)
    assert result.is_error and ".agent-artifacts" in result.output
    assert not (workspace / ".agent-artifacts").exists() or not any(
        p.is_file() and p.name != ".gitignore" for p in (workspace / ".agent-artifacts").rglob("*"))


def test_write_and_edit_refuse_the_artifacts_folder_through_a_symlink(workspace: Path) -> None:
    from activities.files.write import edit_file

    (workspace / ".agent-artifacts").mkdir()
    (workspace / ".agent-artifacts" / "out.txt").write_text("full output\n")
    (workspace / "a").symlink_to(".agent-artifacts")
    assert _write(workspace, "a/new.txt").is_error
    req = ToolRequest(call_id="e", tool="edit_file", workspace_root=str(workspace),
                      arguments={"path": "a/out.txt", "old_string": "full", "new_string": "forged"})
    result = edit_file(req, EditFileArgs(path="a/out.txt", old_string="full", new_string="forged"))
    assert result.is_error and (workspace / ".agent-artifacts" / "out.txt").read_text() == "full output\n"


def test_the_state_folder_is_outside_the_workspace(workspace: Path) -> None:
    from activities.model.transcript_store import TranscriptStore
    from activities.txn.applied import journal_path

    ws = os.path.realpath(workspace)
    for path in (call_dir(ws, TURN, "c", create=True), str(journal_path(ws, TURN)),
                 str(TranscriptStore(ws, "session").folder)):
        assert not os.path.realpath(path).startswith(ws + "/"), path
    result = _write(workspace, os.path.join(call_dir(ws, TURN, "c"), "manifest.json"))
    assert result.is_error and "outside the workspace" in result.output


def test_a_state_folder_inside_the_workspace_is_refused(workspace: Path, monkeypatch) -> None:
    from activities.txn.state import STATE_DIR_ENV, state_root
    from activities.workspace.paths import WorkspaceError

    monkeypatch.setenv(STATE_DIR_ENV, str(workspace / "state"))
    with pytest.raises(WorkspaceError, match=STATE_DIR_ENV):
        state_root(str(workspace))


def test_a_workspace_inside_the_state_folder_is_refused(workspace: Path, tmp_path: Path, monkeypatch) -> None:
    # A workspace there would let its commands and file tools write the
    # records the worker trusts: another workspace's journals, say.
    from activities.txn.state import STATE_DIR_ENV, state_root
    from activities.workspace.paths import WorkspaceError

    monkeypatch.setenv(STATE_DIR_ENV, str(tmp_path / "state"))
    others = state_root(str(workspace))  # another workspace's state folder
    with pytest.raises(WorkspaceError, match=STATE_DIR_ENV):
        state_root(others)
    with pytest.raises(WorkspaceError, match=STATE_DIR_ENV):
        state_root(str(tmp_path / "state"))


def test_the_sandbox_hides_the_state_folder_inside_a_shown_program_folder(tmp_path: Path, monkeypatch) -> None:
    from activities.sandbox.bwrap import sandbox_argv
    from activities.txn.state import STATE_DIR_ENV

    prefix = tmp_path / "tools"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "bin" / "prog").write_text("#!/bin/sh\n")
    (prefix / "state").mkdir()
    monkeypatch.setenv(STATE_DIR_ENV, str(prefix / "state"))
    ws = tmp_path / "ws"
    ws.mkdir()
    argv = sandbox_argv("bwrap", ["prog"], workspace=str(ws), programs=[str(prefix / "bin" / "prog")])
    shown = [argv[i + 1] for i, a in enumerate(argv) if a == "--ro-bind"]
    assert str(prefix) in shown
    assert any(argv[i:i + 2] == ["--tmpfs", str(prefix / "state")] for i in range(len(argv))), argv


# --- ids -------------------------------------------------------------------------


def test_call_ids_sharing_a_long_prefix_get_their_own_folders(workspace: Path) -> None:
    first, second = "x" * 96 + "-1", "x" * 96 + "-2"
    assert call_dir(str(workspace), TURN, first) != call_dir(str(workspace), TURN, second)
    assert call_dir(str(workspace), "t" * 96 + "a", "c") != call_dir(str(workspace), "t" * 96 + "b", "c")


def test_over_long_ids_get_a_clear_error(workspace: Path) -> None:
    from activities.base import _check_root
    from core.txn_contracts import RollbackRequest

    ws = Workspace(root=str(workspace), task_queue="q")
    with pytest.raises(ValidationError, match="at most 256"):
        TurnInput(turn_id="t" * 300, workspace=ws, tool_calls=[])
    with pytest.raises(ValidationError, match="tool call id .* at most 256"):
        TurnInput(turn_id="t", workspace=ws, tool_calls=[{"id": "c" * 257, "name": "bash", "arguments": "{}"}])
    with pytest.raises(ValidationError, match="at most 256"):
        RollbackRequest(workspace_root=str(workspace), turn_id="t" * 257)
    req = ToolRequest(call_id="c" * 300, tool="write_file", workspace_root=str(workspace), arguments={},
                      turn_id="t")
    refused = _check_root(req, None)
    assert refused is not None and refused.is_error and "at most 256" in refused.output
    TurnInput(turn_id="t" * 256, workspace=ws, tool_calls=[])  # the limit itself is fine


# --- the turn's log: one sync per write, validated, rebuilt by a new process ------------


def _write_in_turn(ws: Path, path: str, content: str, call: str = "w"):
    from activities.files.write import read_file, write_file
    from core.tools.specs import ReadFileArgs

    snapshot = None
    if (ws / path).exists():
        seen = read_file(ToolRequest(call_id="r", tool="read_file", workspace_root=str(ws),
                                     arguments={"path": path}), ReadFileArgs(path=path))
        snapshot = seen.snapshot
    req = ToolRequest(call_id=call, tool="write_file", workspace_root=str(ws), snapshot=snapshot,
                      arguments={"path": path, "content": content}, turn_id=TURN)
    return write_file(req, WriteFileArgs(path=path, content=content))


def test_a_write_syncs_its_pre_image_then_the_file_and_its_folder_only(workspace: Path, monkeypatch) -> None:
    (workspace / "a.txt").write_text("old\n")
    assert not _write_in_turn(workspace, "warm.txt", "x", call="warm").is_error  # the turn's folder exists
    syncs: list[str] = []
    for name in ("fsync", "fdatasync"):
        real = getattr(os, name)
        monkeypatch.setattr(os, name, lambda fd, _real=real, _name=name: (syncs.append(_name), _real(fd))[1])
    assert not _write_in_turn(workspace, "a.txt", "new\n", call="w1").is_error
    assert not _write_in_turn(workspace, "b.txt", "created\n", call="w2").is_error
    assert len(syncs) == 6, syncs  # per write: the log (its pre-image), the file, its folder
    report = rollback_turn(str(workspace), TURN)
    assert (workspace / "a.txt").read_text() == "old\n" and not (workspace / "b.txt").exists(), report.text()


def test_a_forged_inline_pre_image_is_not_restored(workspace: Path) -> None:
    import base64
    import json

    from activities.txn import turn_log

    (workspace / "a.txt").write_text("mine\n")
    folder = turn_dir(str(workspace), TURN, create=True)
    record = {"k": "pre", "c": "c", "p": "a.txt", "n": {"kind": "file", "mode": 0o644, "size": 5,
              "sha256": _sha(b"real\n"), "target": ""}, "d": base64.b64encode(b"forged-content").decode(), "t": 1}
    post = {"k": "post", "c": "c", "p": "a.txt", "n": {"kind": "file", "mode": 0o644, "size": 5,
            "sha256": _sha(b"mine\n"), "target": ""}}
    Path(folder, turn_log.LOG).write_text(json.dumps(record) + "\n" + json.dumps(post) + "\n{\"k\": \"pre\", \"c")
    turn_log.forget(folder)
    report = rollback_turn(str(workspace), TURN)
    assert (workspace / "a.txt").read_text() == "mine\n" and report.restored == []
    assert any("sha256" in c for c in report.conflicts), report


def test_results_are_found_again_by_a_new_process(workspace: Path) -> None:
    from activities.txn import turn_log
    from activities.txn.applied import record_result, recorded_result
    from core.contracts import ToolResult

    req = ToolRequest(call_id="w", tool="write_file", workspace_root=str(workspace), arguments={}, turn_id=TURN)
    assert recorded_result(req) is None
    record_result(req, ToolResult.ok("w", "write_file", "wrote it"))
    turn_log.forget(turn_dir(str(workspace), TURN))  # as after a restart: rebuilt from the log
    again = recorded_result(req)
    assert again is not None and again.output == "wrote it" and again.metadata["replayed_from_journal"] == "true"
    other = req.model_copy(update={"call_id": "w" * 96 + "x"})
    assert recorded_result(other) is None


def test_transcripts_kept_in_the_workspace_by_an_older_release_are_read_and_verified(
    workspace: Path, monkeypatch
) -> None:
    import shutil

    from activities.model import transcript_store
    from core.session.contracts import TranscriptEntry
    from core.session.transcript import TranscriptCorrupted

    store = transcript_store.TranscriptStore(str(workspace), "sess-1")
    head = store.append(None, [TranscriptEntry(kind="user", text="hello")])
    legacy = workspace / ".agent-artifacts" / "transcripts" / store.folder.name
    legacy.parent.mkdir(parents=True)
    shutil.move(str(store.folder), legacy)  # where an older release kept it
    monkeypatch.setattr(transcript_store, "_cache", transcript_store._NodeCache(1 << 20))
    assert [e.text for e in store.read(head)] == ["hello"]
    monkeypatch.setattr(transcript_store, "_cache", transcript_store._NodeCache(1 << 20))
    [node] = legacy.rglob("*.json")
    node.write_text(node.read_text().replace("hello", "forged"))
    with pytest.raises(TranscriptCorrupted):
        store.read(head)


def test_retention_removes_a_turns_file_log_once_older_than_the_cut(workspace: Path) -> None:
    import time

    from activities.workspace.artifacts import prune_artifacts

    assert not _write_in_turn(workspace, "a.txt", "x\n").is_error
    old = Path(turn_dir(str(workspace), TURN))
    fresh_turn = TURN + "-fresh"
    journal.record_preimage(str(workspace), fresh_turn, "c", "b.txt")
    week_ago = time.time() - 8 * 24 * 3600
    os.utime(old / "files.jsonl", (week_ago, week_ago))
    (workspace / ".agent-artifacts").mkdir()
    pruned = prune_artifacts(str(workspace))
    assert f"txn/{old.name}" in pruned.removed and not old.exists()
    assert Path(turn_dir(str(workspace), fresh_turn), "files.jsonl").exists()


def test_a_rollback_after_retention_says_what_was_removed(workspace: Path) -> None:
    """Retention removed the turn's records: the rollback must not claim the
    turn changed nothing."""
    import time

    from activities.workspace.artifacts import prune_artifacts

    assert not _write_in_turn(workspace, "a.txt", "x\n").is_error
    old = Path(turn_dir(str(workspace), TURN))
    week_ago = time.time() - 8 * 24 * 3600
    os.utime(old / "files.jsonl", (week_ago, week_ago))
    (workspace / ".agent-artifacts").mkdir()
    assert f"txn/{old.name}" in prune_artifacts(str(workspace)).removed
    report = rollback_turn(str(workspace), TURN)
    assert report.restored == [] and "retention removed the write_file/edit_file records" in report.pruned
    assert "no recorded file changes" not in report.text() and "cannot be rolled back" in report.text()
    assert (workspace / "a.txt").read_text() == "x\n"
    other = rollback_turn(str(workspace), TURN + "-never-ran")  # a turn retention never touched
    assert other.pruned == "" and "no recorded file changes" in other.text()
