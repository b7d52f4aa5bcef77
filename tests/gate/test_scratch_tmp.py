"""The sandbox's /tmp is the workspace's scratch folder: kept across calls
(and turns), outside the workspace and its changeset, separate per
workspace, bounded, pruned by age."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from core.config import SCRATCH_ENV, STATE_DIR_ENV
from activities.bash.tool import run_bash
from activities.sandbox import scratch
from core.contracts import ToolRequest
from core.tools.specs import BashArgs
from tests.txn.support.helpers import needs_overlay

pytestmark = needs_overlay

WRITE = "python3 -c \"open('/tmp/patch.py', 'w').write('print(40 + 2)')\""
RUN = "python3 /tmp/patch.py"


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(STATE_DIR_ENV, str(tmp_path / "state"))
    return tmp_path / "state"


def request(ws: Path, command: str, call: str, turn: str = "t1"):
    return (ToolRequest(call_id=call, tool="bash", workspace_root=str(ws), arguments={"command": command},
                        turn_id=turn), BashArgs(command=command))


async def test_tmp_is_kept_across_calls_and_turns_and_outside_the_changeset(tmp_path: Path, state: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    first = await run_bash(*request(ws, WRITE, "c1"))
    assert not first.is_error, first.output
    assert first.metadata["capture"] == "no-changes"  # /tmp is not the workspace
    later = await run_bash(*request(ws, RUN, "c2", turn="t2"))  # a later turn
    assert later.output.strip() == "42", later.output
    folder = scratch.scratch_for(str(ws))
    assert folder is not None and folder.startswith(str(state)) and os.path.exists(os.path.join(folder, "patch.py"))
    assert not os.path.exists(ws / "patch.py")

    other = tmp_path / "other"
    other.mkdir()
    elsewhere = await run_bash(*request(other, RUN, "c3"))  # another workspace has its own /tmp
    assert elsewhere.is_error and "No such file" in elsewhere.output


def test_bound_deletes_the_oldest(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    folder.mkdir()
    for i in range(4):
        (folder / f"f{i}").write_bytes(b"x" * 100)
        os.utime(folder / f"f{i}", (1000 + i, 1000 + i))
    assert scratch.bound(str(folder), max_bytes=250) <= 125
    assert sorted(os.listdir(folder)) == ["f3"]


def test_retention_removes_unused_folders(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    folder = scratch.scratch_for(str(ws))
    assert folder is not None
    (Path(folder) / "link").symlink_to(ws)  # never followed when removing
    (ws / "keep.txt").write_text("k")
    assert scratch.prune_scratch(max_age_s=3600, now=time.time()) == []
    assert scratch.prune_scratch(max_age_s=3600, now=time.time() + 7200) == [folder]
    assert not os.path.exists(folder) and (ws / "keep.txt").exists()


def test_off_gives_a_private_tmpfs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(SCRATCH_ENV, "off")
    assert scratch.scratch_for(str(tmp_path)) is None
