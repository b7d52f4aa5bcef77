"""The file tools against a sandboxed attacker: a script inside the
real bubblewrap sandbox (the bash tool's own ``bwrap_argv``, so it has exactly
the sandbox's powers) keeps swapping a folder of the workspace with a symlink
to an outside folder, while thousands of read_file / write_file / edit_file
calls (and a handful through the real dev server) run against that folder.
Nothing outside may ever be read, written or created."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from temporalio.client import Client

import activities.workspace.root as fs_root
from temporalio.worker import Worker

from activities.bash.tool import bwrap_argv, bwrap_path
from activities.files.write import edit_file, read_file, write_file
from activities.search.grep import glob_files, grep
from core.contracts import Snapshot, ToolRequest, ToolResult, ToolStatus
from core.tools.specs import EditFileArgs, GlobArgs, GrepArgs, ReadFileArgs, WriteFileArgs
from tests.support import SingleToolWorkflow, worker_activities

CALLS = 2000  # per run, across the three tools
MAX_SECONDS = 4.0  # bound on the loop, whatever the machine's speed

# The attacker: swap 'd' (a folder) and 'dlink' (a symlink to the outside
# folder) atomically with renameat2(RENAME_EXCHANGE), as fast as it can, so
# 'd' always exists and is a folder or a link to outside about half the time.
ATTACKER = r"""
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
open("attacker.ready", "w").close()
end = time.monotonic() + float(sys.argv[1])
swaps = 0
while time.monotonic() < end and not os.path.exists("attacker.stop"):
    if libc.renameat2(AT_FDCWD, b"d", AT_FDCWD, b"dlink", RENAME_EXCHANGE) != 0:
        os.rename("d", "d.tmp"); os.rename("dlink", "d"); os.rename("d.tmp", "dlink")
    swaps += 1
open("attacker.swaps", "w").write(str(swaps))
"""


def _request(ws: Path, tool: str, snapshot: Snapshot | None, call_id: str, **arguments: object) -> ToolRequest:
    return ToolRequest(call_id=call_id, tool=tool, workspace_root=str(ws), arguments=arguments, snapshot=snapshot)


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() if p.is_file() else b"<dir>" for p in sorted(folder.rglob("*"))}


@pytest.fixture
def arena(tmp_path: Path) -> tuple[Path, Path]:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    (ws / "d").mkdir(parents=True)
    outside.mkdir()
    (ws / "d" / "secret.txt").write_text("inside secret\n")
    (outside / "secret.txt").write_text("OUTSIDE SECRET\n")
    (outside / "only-outside.txt").write_text("OUTSIDE SECRET\n")
    # The same content on both sides, so a write or an edit that wanders
    # outside passes its snapshot check there and would really land.
    for name in ("w.txt", "e.txt"):
        (ws / "d" / name).write_text("alpha\nbeta\n")
        (outside / name).write_text("alpha\nbeta\n")
    (ws / "dlink").symlink_to(outside)
    return ws, outside


def _start_attacker(ws: Path, seconds: float) -> subprocess.Popen[bytes]:
    bwrap = bwrap_path()
    if bwrap is None:
        pytest.skip("bubblewrap is not installed")
    python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
    argv = bwrap_argv(bwrap, str(ws), [python, "-c", ATTACKER, str(seconds)])
    proc = subprocess.Popen(argv, cwd=ws, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 20
    while not (ws / "attacker.ready").exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            out, err = proc.communicate()
            pytest.fail(f"the sandboxed attacker did not start: {err.decode(errors='replace')}")
        time.sleep(0.01)
    return proc


def _stop_attacker(ws: Path, proc: subprocess.Popen[bytes]) -> int:
    (ws / "attacker.stop").touch()
    proc.communicate(timeout=30)
    swaps = int((ws / "attacker.swaps").read_text())
    # Put 'd' back as the folder so the checks below read the real thing.
    if (ws / "d").is_symlink():
        os.rename(ws / "d", ws / "d.tmp")
        os.rename(ws / "dlink", ws / "d")
        os.rename(ws / "d.tmp", ws / "dlink")
    return swaps


def _snapshot_of(ws: Path, rel: str) -> Snapshot:
    result = read_file(_request(ws, "read_file", None, "snap", path=rel), ReadFileArgs(path=rel))
    assert result.status == ToolStatus.OK and result.snapshot is not None, result.output
    return result.snapshot


@pytest.mark.parametrize("resolution", ["openat2", "component-walk"])
def test_swapping_a_folder_for_a_symlink_never_reaches_outside(
    arena: tuple[Path, Path], resolution: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, outside = arena
    if resolution == "openat2" and not fs_root.openat2_available():
        pytest.skip("no openat2 on this kernel")
    if resolution == "component-walk":
        monkeypatch.setattr(fs_root, "_openat2_works", False)  # as on a kernel without openat2
    before = _tree(outside)
    snaps = {name: _snapshot_of(ws, f"d/{name}") for name in ("w.txt", "e.txt")}
    proc = _start_attacker(ws, MAX_SECONDS + 10)
    counts = {"read_ok": 0, "read_refused": 0, "write_ok": 0, "edit_ok": 0, "refused": 0, "calls": 0}
    leaks: list[str] = []
    started = time.monotonic()
    try:
        i = 0
        while i < CALLS and time.monotonic() - started < MAX_SECONDS:
            i += 1
            kind = i % 4
            if kind in (0, 1):
                result: ToolResult = read_file(
                    _request(ws, "read_file", None, f"r{i}", path="d/secret.txt"), ReadFileArgs(path="d/secret.txt")
                )
                if "OUTSIDE" in result.output:
                    leaks.append(f"read {i}: {result.output[:80]!r}")
                counts["read_ok" if result.status == ToolStatus.OK else "read_refused"] += 1
            elif kind == 2:
                name = "w.txt" if i % 8 == 2 else f"new-{i}.txt"
                content = "alpha\nbeta\n" if name == "w.txt" else f"new {i}\n"
                result = write_file(
                    _request(ws, "write_file", snaps.get(name), f"w{i}", path=f"d/{name}", content=content),
                    WriteFileArgs(path=f"d/{name}", content=content),
                )
                counts["write_ok" if result.status == ToolStatus.OK else "refused"] += 1
            else:
                old, new = ("beta", "gamma") if i % 8 == 3 else ("gamma", "beta")
                result = edit_file(
                    _request(ws, "edit_file", snaps["e.txt"], f"e{i}", path="d/e.txt", old_string=old, new_string=new),
                    EditFileArgs(path="d/e.txt", old_string=old, new_string=new),
                )
                if result.status == ToolStatus.OK and result.snapshot is not None:
                    snaps["e.txt"] = result.snapshot
                    counts["edit_ok"] += 1
                else:
                    counts["refused"] += 1
        counts["calls"] = i
    finally:
        swaps = _stop_attacker(ws, proc)
    elapsed = time.monotonic() - started
    after = _tree(outside)
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    print(f"\nrace ({resolution}): {counts} swaps={swaps} in {elapsed:.1f} s; outside reads={len(leaks)}, "
          f"outside entries created or changed={len(changed)}")
    assert leaks == [], leaks[:5]
    assert changed == [], f"written or created outside the workspace: {changed[:10]}"
    # The race really ran: the attacker swapped throughout, and the tools met
    # the symlink (refusals) as well as the folder (successes).
    assert swaps > 1000
    assert counts["read_refused"] > 0 and counts["read_ok"] > 0, counts
    assert counts["write_ok"] > 0, counts


@pytest.mark.parametrize("engine", ["ripgrep", "python-fallback"])
def test_grep_and_glob_never_read_or_list_outside(
    arena: tuple[Path, Path], engine: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    ws, _ = arena
    if engine != "ripgrep":
        monkeypatch.setenv("AGENT_TOOLS_RG", str(tmp_path / "no-rg"))
    proc = _start_attacker(ws, MAX_SECONDS + 10)
    seen = {"grep_hits": 0, "glob_hits": 0, "calls": 0}
    leaks: list[str] = []
    started = time.monotonic()
    try:
        while seen["calls"] < 400 and time.monotonic() - started < MAX_SECONDS / 2:
            seen["calls"] += 1
            for path in ("d", "."):
                found = grep(_request(ws, "grep", None, "g", pattern="SECRET", path=path),
                             GrepArgs(pattern="SECRET", path=path, ignore_case=True))
                seen["grep_hits"] += "secret.txt" in found.output
                listed = glob_files(_request(ws, "glob", None, "l", pattern="**/*.txt", path=path),
                                    GlobArgs(pattern="**/*.txt", path=path))
                seen["glob_hits"] += "secret.txt" in listed.output
                for result in (found, listed):
                    if "OUTSIDE" in result.output or "only-outside" in result.output:
                        leaks.append(f"{result.name} {path}: {result.output[:120]!r}")
    finally:
        swaps = _stop_attacker(ws, proc)
    print(f"\nrace ({engine}): {seen} swaps={swaps}; outside hits={len(leaks)}")
    assert leaks == [], leaks[:5]
    assert seen["grep_hits"] > 0 and seen["glob_hits"] > 0, seen


async def test_through_the_dev_server_under_the_same_attack(client: Client, arena: tuple[Path, Path]) -> None:
    ws, outside = arena
    before = _tree(outside)
    proc = _start_attacker(ws, 30)
    results: list[ToolResult] = []
    task_queue = f"race-{uuid.uuid4().hex[:8]}"
    try:
        async with Worker(
            client,
            task_queue=task_queue,
            workflows=[SingleToolWorkflow],
            activities=worker_activities(ws, "read_file", "write_file", "edit_file"),
        ):
            for i in range(12):
                if i % 2:
                    req = _request(ws, "write_file", None, f"s{i}", path=f"d/server-{i}.txt", content="x\n")
                else:
                    req = _request(ws, "read_file", None, f"s{i}", path="d/secret.txt")
                results.append(
                    await client.execute_workflow(
                        SingleToolWorkflow.run, req, id=f"race-{uuid.uuid4().hex}", task_queue=task_queue,
                        result_type=ToolResult,
                    )
                )
    finally:
        _stop_attacker(ws, proc)
    assert not any("OUTSIDE" in r.output for r in results)
    assert _tree(outside) == before
    for r in results:  # each call either worked inside or was refused with a reason
        assert r.status == ToolStatus.OK or "outside the workspace" in r.output or "symlink" in r.output, r.output
    shutil.rmtree(ws / "d", ignore_errors=True)


def test_swapping_a_folder_for_a_link_into_git_never_writes_there(tmp_path: Path) -> None:
    """The .git check names the path before the write resolves it again: with
    'd' swapped for a link to .git/hooks in between, a write to d/NAME landed
    in .git/hooks, where a host git runs it. The write must judge the folder it
    really holds."""
    ws = tmp_path / "ws"
    (ws / "d").mkdir(parents=True)
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / "dlink").symlink_to(".git/hooks")
    proc = _start_attacker(ws, MAX_SECONDS + 10)
    tried = 0
    started = time.monotonic()
    try:
        while tried < CALLS and time.monotonic() - started < MAX_SECONDS:
            tried += 1
            args = WriteFileArgs(path=f"d/hook-{tried}", content="#!/bin/sh\n")
            write_file(_request(ws, "write_file", None, f"w{tried}", **args.model_dump()), args)
    finally:
        swaps = _stop_attacker(ws, proc)
    planted = sorted(p.name for p in (ws / ".git" / "hooks").iterdir())
    print(f"\nrace into .git: {tried} calls, swaps={swaps}, planted={len(planted)}")
    assert swaps > 1000
    assert planted == [], f"written into .git/hooks through the swapped link: {planted[:10]}"
