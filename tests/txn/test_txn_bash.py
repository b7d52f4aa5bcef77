"""The bash tool's transactional outcomes, through run_bash itself (real
bubblewrap and overlay, no server): applied once, a killed command applies
nothing, a read-only command runs on the read-only bind, a retry after a
direct run returns the kept result instead of running again."""

from __future__ import annotations

from pathlib import Path

import pytest

from activities.bash.tool import run_bash
from core.contracts import ToolRequest
from core.tools.specs import BashArgs
from tests.txn.support.helpers import needs_overlay

pytestmark = needs_overlay


def request(ws: Path, command: str, call: str = "c1") -> tuple[ToolRequest, BashArgs]:
    req = ToolRequest(call_id=call, tool="bash", workspace_root=str(ws), arguments={"command": command}, turn_id="t1")
    return req, BashArgs(command=command)


async def test_a_command_killed_by_sigkill_applies_nothing(workspace: Path) -> None:
    (workspace / "log.txt").write_text("start\n")
    (workspace / "die.sh").write_text("echo appended >> log.txt\nkill -9 $$\n")
    r = await run_bash(*request(workspace, "sh die.sh"))
    assert r.is_error and r.metadata["capture"] == "discarded", r
    assert "nothing it changed was applied" in r.output
    assert (workspace / "log.txt").read_text() == "start\n"


async def test_applied_once_and_a_second_call_of_the_same_id_returns_the_first_result(workspace: Path) -> None:
    (workspace / "log.txt").write_text("start\n")
    (workspace / "append.sh").write_text("echo appended >> log.txt\necho done\n")
    first = await run_bash(*request(workspace, "sh append.sh"))
    again = await run_bash(*request(workspace, "sh append.sh"))  # as a retry would: journal says applied
    assert first.metadata["capture"] == "applied" and "done" in first.output
    assert again.metadata["txn_mode"] == "done" and "done" in again.output
    assert (workspace / "log.txt").read_text() == "start\nappended\n"


async def test_read_only_commands_use_the_read_only_bind(workspace: Path) -> None:
    (workspace / "f.txt").write_text("x\n")
    r = await run_bash(*request(workspace, "ls"))
    assert not r.is_error and r.metadata["capture"] == "read-only" and r.metadata["workspace_access"] == "read-only"


async def test_without_capture_the_result_is_marked_and_kept(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from activities.bash import attempts as bash_txn

    monkeypatch.setenv("AGENT_TOOLS_TXN", "off")
    (workspace / "append.sh").write_text("echo appended >> log.txt\n")
    r = await run_bash(*request(workspace, "sh append.sh"))
    assert r.metadata["capture"] == "unavailable" and "AGENT_TOOLS_TXN=off" in r.metadata["capture_reason"]
    prior = bash_txn.prior_attempt(str(workspace), "t1", "c1")
    assert not prior.safe_to_run and prior.result is not None and prior.result["exit_code"] == 0


async def test_a_preview_that_changes_nothing_is_not_run_again_on_approval(workspace: Path) -> None:
    from activities.bash.tool import run_bash_preview

    (workspace / "quiet.sh").write_text("od -An -N8 -tx8 /dev/urandom\n")
    shown = await run_bash_preview(*request(workspace, "sh quiet.sh"))
    assert shown.metadata["capture"] == "no-changes" and "would change no files" in shown.output
    approved = await run_bash(*request(workspace, "sh quiet.sh"))
    assert approved.metadata["txn_mode"] == "previewed" and "not run again" in approved.output
    assert shown.output.split()[0] == approved.output.split()[0]  # the same random number: one run


async def test_a_preview_shows_the_diff_and_approval_applies_it(workspace: Path) -> None:
    from activities.bash.tool import run_bash_preview

    (workspace / "log.txt").write_text("start\n")
    shown = await run_bash_preview(*request(workspace, "echo appended >> log.txt"))
    assert shown.metadata["capture"] == "previewed" and "+appended" in shown.output
    assert (workspace / "log.txt").read_text() == "start\n"
    again = await run_bash_preview(*request(workspace, "echo appended >> log.txt"))  # a retried preview
    assert "+appended" in again.output
    approved = await run_bash(*request(workspace, "echo appended >> log.txt"))
    assert approved.metadata["capture"] == "applied", approved
    assert (workspace / "log.txt").read_text() == "start\nappended\n"


async def test_without_capture_a_command_cannot_write_the_workers_artifacts(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Full outputs and offloaded turn results live there; a command writing
    the workspace directly (no capture) must not rewrite or plant them."""
    monkeypatch.setenv("AGENT_TOOLS_TXN", "off")
    (workspace / ".agent-artifacts").mkdir()
    (workspace / ".agent-artifacts" / "result-part-0.json").write_text("the worker's\n")
    (workspace / "tamper.sh").write_text(
        "echo forged > .agent-artifacts/result-part-0.json\n"
        "echo planted > .agent-artifacts/planted.txt\n"
        "rm -f .agent-artifacts/result-part-0.json\n"
        "echo changed > mine.txt\n"
    )
    r = await run_bash(*request(workspace, "sh tamper.sh"))
    assert r.metadata["capture"] == "unavailable", r
    assert "Read-only file system" in r.output, r.output
    assert (workspace / ".agent-artifacts" / "result-part-0.json").read_text() == "the worker's\n"
    assert not (workspace / ".agent-artifacts" / "planted.txt").exists()
    assert (workspace / "mine.txt").read_text() == "changed\n"  # the rest of the workspace stays writable
