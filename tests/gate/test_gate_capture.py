"""The effect gate through run_bash itself (real bubblewrap and overlay, no
server): a destructive changeset is kept, not applied, and shown; approval
(the plain bash call) applies exactly it; a retry of the gated run pauses
again; caches alone pass under `effects`; an in-place edit passes under
`destructive`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from activities.bash.tool import run_bash
from activities.txn.preview import discard_preview
from core.contracts import EffectGate, ToolRequest
from core.tools.specs import BashArgs
from tests.txn.support.helpers import needs_overlay

pytestmark = needs_overlay


def request(ws: Path, command: str, gate: str | None = "destructive", call: str = "c1"):
    req = ToolRequest(call_id=call, tool="bash", workspace_root=str(ws), arguments={"command": command},
                      turn_id="t1", gate=EffectGate(mode=gate) if gate else None)
    return req, BashArgs(command=command)


async def test_cp_dev_null_is_kept_shown_and_applied_only_on_approval(workspace: Path) -> None:
    (workspace / "keep.txt").write_text("precious\n")
    r = await run_bash(*request(workspace, "cp /dev/null keep.txt"))
    assert r.metadata["capture"] == "gated" and r.metadata["gate_destructive"] == "true"
    assert "empties an existing file" in r.metadata["gate_reason"]
    assert "-precious" in r.output  # the diff of what would change
    assert (workspace / "keep.txt").read_text() == "precious\n"  # nothing applied
    again = await run_bash(*request(workspace, "cp /dev/null keep.txt"))  # a retry of the gated run
    assert again.metadata["capture"] == "gated" and again.metadata["gate_digest"] == r.metadata["gate_digest"]
    assert (workspace / "keep.txt").read_text() == "precious\n"
    approved = await run_bash(*request(workspace, "cp /dev/null keep.txt", gate=None))
    assert approved.metadata["capture"] == "applied", approved.output
    assert (workspace / "keep.txt").read_text() == ""


async def test_stale_changeset_is_not_applied(workspace: Path) -> None:
    (workspace / "keep.txt").write_text("precious\n")
    r = await run_bash(*request(workspace, "cp /dev/null keep.txt"))
    assert r.metadata["capture"] == "gated"
    (workspace / "other.txt").write_text("changed meanwhile\n")
    approved = await run_bash(*request(workspace, "cp /dev/null keep.txt", gate=None))
    assert approved.is_error and approved.metadata["capture"] == "stale"
    assert "NOT applied" in approved.output
    assert (workspace / "keep.txt").read_text() == "precious\n"


async def test_sed_i_passes_the_destructive_gate(workspace: Path) -> None:
    (workspace / "a.txt").write_text("hello a world\n")
    r = await run_bash(*request(workspace, "sed -i s/a/b/ a.txt"))
    assert r.metadata["capture"] == "applied", r.output
    assert (workspace / "a.txt").read_text() == "hello b world\n"


async def test_caches_only_pass_the_effects_gate_and_are_applied(workspace: Path) -> None:
    # (bytecode is never applied: tests/gate/test_effect_holes.py)
    (workspace / "script.sh").write_text("mkdir -p .pytest_cache/v && echo {} > .pytest_cache/v/lastfailed\n")
    r = await run_bash(*request(workspace, "sh script.sh", gate="effects"))
    assert r.metadata["capture"] == "applied", r.output
    assert (workspace / ".pytest_cache" / "v" / "lastfailed").exists()


async def test_a_new_file_pauses_under_effects_and_reject_discards(workspace: Path) -> None:
    (workspace / "script.sh").write_text("echo new > made.txt\n")
    r = await run_bash(*request(workspace, "sh script.sh", gate="effects"))
    assert r.metadata["capture"] == "gated" and "gate_destructive" not in r.metadata
    assert "create made.txt" in r.output
    discard_preview(str(workspace), "t1", "c1")
    assert not (workspace / "made.txt").exists()
    assert not os.path.exists(workspace / "made.txt")
