"""Connecting waits for a server that is still starting up (its port is
open but its frontend answers "not healthy yet"), and fails at once, with
what to do, when nothing answers."""

from __future__ import annotations

import socket

import pytest
from temporalio.client import Client

import runtime.connection as connection


async def test_a_server_still_starting_up_is_waited_for(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    sentinel = object()

    async def starting(**settings: object) -> object:
        calls.append(1)
        if len(calls) < 3:
            raise RuntimeError('Failed client connect: Status { code: Unavailable, message: "Frontend is not healthy yet" }')
        return sentinel

    monkeypatch.setattr(Client, "connect", staticmethod(starting))
    assert await connection.connect("127.0.0.1:7233") is sentinel
    assert len(calls) == 3


async def test_nothing_listening_fails_at_once_saying_what_to_do() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(connection.ConnectionFailed, match="agent-worker --dev-server"):
        await connection.connect(f"127.0.0.1:{port}")
