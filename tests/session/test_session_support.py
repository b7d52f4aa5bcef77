"""Shared pieces of the session tests (no tests here): a scripted model server wired into
the environment the way a real worker reads it."""

from __future__ import annotations

import asyncio
from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterator

import pytest

from tests.model_server import Script, ScriptedModelServer

if TYPE_CHECKING:
    from temporalio.client import Client

    from core.session.contracts import SessionView

API_KEY = "sk-test-secret-never-in-history"


@contextmanager
def serving(monkeypatch: pytest.MonkeyPatch, script: Script | None = None) -> Iterator[ScriptedModelServer]:
    """A scripted model server, named in the environment the worker processes inherit."""
    server = ScriptedModelServer(script).start()
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def model_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedModelServer]:
    with serving(monkeypatch) as server:
        yield server


async def session_paused(client: "Client", sid: str) -> "SessionView":
    """The session's view once its turn waits for approval (fails if the session ends first)."""
    from runtime import session_api as sessions

    for _ in range(1200):
        view = await sessions.session_status(client, sid)
        if view.waiting_for_approval:
            return view
        assert not view.state.ended, view
        await asyncio.sleep(0.05)
    raise AssertionError("the session's turn never paused")
