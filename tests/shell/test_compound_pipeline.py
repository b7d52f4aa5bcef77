"""Compound commands of real agents through the real pipeline: the
turn workflow on the dev server, the worker's bash activity, bubblewrap on.
The commands are shapes taken from the real-command corpus; the expected
outputs are what bash itself prints for them."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from pathlib import Path

import pytest
from temporalio.client import Client

from activities.sandbox.settings import SANDBOX_ENV
from core.contracts import Policy, PolicyRule, ToolStatus, TurnStatus
from runtime.api import TurnClient
from tests.support import call
from tests.turn.test_turn_workflow import run_turn, turn_input
from runtime.worker import build_worker

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")

# Each is also run by real bash below, so the expectation is bash's, not ours.
AGENT_COMMANDS = [
    "grep -rn needle src | head -2",
    "nl -ba src/a.py | sed -n '2,3p'",
    "cd src && ls",
    "wc -l src/*.py",
    "ls missing 2>/dev/null || echo absent",
    "cat src/a.py | grep -c needle && echo counted",
    "python3 - <<'PY'\nprint(sum(range(5)))\nPY",
    "printf '%s\\n' \"$(cat <<'EOF'\nline one\nline two\nEOF\n)\"",
    "false; echo after",
    "echo hi > out.txt && cat out.txt",
]


def _make_project(root: Path) -> None:
    (root / "src").mkdir()
    (root / "src" / "a.py").write_text("import os\nneedle = 1\nprint(needle)\n")
    (root / "src" / "b.py").write_text("needle = 2\n")


def _bash_says(command: str, cwd: Path) -> str:
    """What real bash prints for the command (in a copy of the project)."""
    done = subprocess.run(["bash", "-c", command], cwd=cwd, capture_output=True, text=True, timeout=20)
    return (done.stdout + done.stderr).rstrip("\n")


async def test_agent_compound_commands_run_like_bash(client: Client, workspace: Path, tmp_path: Path,
                                                     task_queue: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SANDBOX_ENV, "required")
    _make_project(workspace)
    twin = tmp_path / "twin"
    twin.mkdir()
    _make_project(twin)
    expected = [_bash_says(c, twin) for c in AGENT_COMMANDS]
    # the expectations are real output, not empty strings that anything matches
    assert expected[0] == "src/a.py:2:needle = 1\nsrc/a.py:3:print(needle)" and expected[6] == "10"
    assert expected[7] == "line one\nline two" and expected[9] == "hi"
    calls = [call(i, "bash", command=c) for i, c in enumerate(AGENT_COMMANDS)]
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        result = await run_turn(client, turn_input(workspace, task_queue, calls, policy=Policy(mode="auto")))
    assert result.status == TurnStatus.COMPLETED
    for command, want, got in zip(AGENT_COMMANDS, expected, result.results):
        assert got.metadata.get("sandbox") == "bwrap", (command, got.metadata)
        assert got.output.split("\n\n--- tool pipeline note")[0].rstrip("\n") == want, (command, got.output)
    # bash's status for `false; echo after` is the last command's
    assert result.results[8].status == ToolStatus.OK
    assert (workspace / "out.txt").read_text() == "hi\n"


async def test_destructive_commands_pause_even_under_auto(client: Client, workspace: Path,
                                                          task_queue: str) -> None:
    (workspace / "keep.txt").write_text("precious\n")
    calls = [call(0, "bash", command="ls"), call(1, "bash", command="rm keep.txt")]
    # An allow rule for rm cannot lower a destructive command below ask.
    policy = Policy(mode="auto", rules=[PolicyRule(action="allow", tool="bash", command_prefix="rm")])
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        handle = await client.start_workflow(
            "AgentTurnWorkflow", turn_input(workspace, task_queue, calls, policy=policy),
            id=f"destructive-{task_queue}", task_queue=task_queue,
        )
        turns = TurnClient(client)
        for _ in range(100):
            progress = await turns.status(handle.id)
            if progress.status == TurnStatus.PAUSED:
                break
            await asyncio.sleep(0.1)
        assert progress.status == TurnStatus.PAUSED
        assert [p.index for p in progress.pending] == [1]
        assert "destructive" in progress.pending[0].reason or "for good" in progress.pending[0].reason
        await turns.reject(handle.id, approver="test", reason="no")
        await handle.result()
    assert (workspace / "keep.txt").read_text() == "precious\n"
