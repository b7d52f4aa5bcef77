"""Shared pieces of the session tests (no tests here): a scripted model server wired into
the environment the way a real worker reads it."""

from __future__ import annotations

from typing import Iterator

import pytest

from tests.model_server import ScriptedModelServer

API_KEY = "sk-test-secret-never-in-history"


@pytest.fixture
def model_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedModelServer]:
    server = ScriptedModelServer().start()
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
    try:
        yield server
    finally:
        server.stop()
