"""The session demo runs to its final answer (no key, no network)."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.client import Client

from core.session.contracts import SessionState
from demo.session import run_session_demo
from runtime.worker import build_worker


async def test_session_demo(client: Client, workspace: Path, task_queue: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.setenv(name, "restored-after-the-test")
    lines: list[str] = []
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        view = await run_session_demo(client, workspace, task_queue, say=lines.append)
    assert view.state == SessionState.WAITING_FOR_USER and view.turns == 3
    assert "divides by `len(values)`" in view.last_answer
    assert (workspace / "stats.py").read_text() == "def mean(values):\n    return sum(values) / len(values)\n"
    assert any("waits for approval" in line for line in lines)
