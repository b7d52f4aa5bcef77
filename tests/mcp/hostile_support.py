"""Shared pieces of the hostile-client tests (no tests here): a raw JSON-RPC
client for one stdio server process, and the worker and workspace they share."""
from __future__ import annotations

import asyncio
import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any, AsyncIterator, Iterator

import pytest
import pytest_asyncio
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from core.contracts import Policy
from runtime.worker import build_worker
from tests.mcp.support import mcp_args
from tests.processes import REPO

NORMAL_CALL = {"name": "read_file", "arguments": {"path": "hello.txt"}}


class Raw:
    """JSON-RPC over a server's stdio, as a careless or hostile client writes
    it. A reader thread files every answer by id, so a test can send without
    waiting and wait without blocking the event loop for long."""

    def __init__(self, args: list[str], stderr_log: Path, protocol: str = "2025-11-25") -> None:
        self.stderr_log = stderr_log
        self._err = open(stderr_log, "ab")
        self.proc = subprocess.Popen([sys.executable, *args], cwd=REPO, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self._err, start_new_session=True)
        self._ids = itertools.count(1)
        self._answers: dict[Any, dict[str, Any]] = {}
        self._cond = threading.Condition()
        self._lock = threading.Lock()
        self.eof = False
        self.unaddressed: list[dict[str, Any]] = []
        threading.Thread(target=self._read, daemon=True).start()
        self.request("initialize", {"protocolVersion": protocol, "capabilities": {},
                                    "clientInfo": {"name": "hostile", "version": "0"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _read(self) -> None:
        try:
            self._read_lines()
        except (ValueError, OSError):  # the test closed our end of the pipe (a client that vanishes)
            pass
        with self._cond:
            self.eof = True
            self._cond.notify_all()

    def _read_lines(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                message = {"unparsable": line.decode(errors="replace")}
            if "method" in message and "id" in message:  # the server asks us: we never say yes
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": {"action": "cancel"}})
                continue
            with self._cond:
                if message.get("id") is None:  # an answer to a message without a readable id
                    self.unaddressed.append(message)
                else:
                    self._answers.setdefault(message.get("id"), message)
                self._cond.notify_all()

    def send(self, message: dict[str, Any] | bytes) -> None:
        data = message if isinstance(message, bytes) else (json.dumps(message) + "\n").encode()
        assert self.proc.stdin is not None
        with self._lock:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()

    def start(self, method: str, params: Any = None) -> int:
        my_id = next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": my_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return my_id

    def answer(self, my_id: Any, timeout: float = 60) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        with self._cond:
            while my_id not in self._answers:
                left = deadline - time.monotonic()
                if self.eof:
                    raise RuntimeError(f"server closed stdout (exit {self.proc.poll()}):\n{self.stderr()}")
                if left <= 0:
                    raise TimeoutError(f"no answer to request {my_id!r}")
                self._cond.wait(left)
            return self._answers.pop(my_id)

    def request(self, method: str, params: Any = None, timeout: float = 60) -> dict[str, Any]:
        return self.answer(self.start(method, params), timeout)

    async def wait(self, my_id: Any, timeout: float = 60) -> dict[str, Any]:
        """``answer`` without a thread: the test's worker shares the default
        executor, and many blocked waits would starve its activities."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._cond:
                if my_id in self._answers:
                    return self._answers.pop(my_id)
                if self.eof:
                    raise RuntimeError(f"server closed stdout (exit {self.proc.poll()}):\n{self.stderr()}")
            await asyncio.sleep(0.02)
        raise TimeoutError(f"no answer to request {my_id!r}")

    async def unaddressed_error(self, timeout: float = 10) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._cond:
                if self.unaddressed:
                    return self.unaddressed.pop(0)["error"]
            await asyncio.sleep(0.02)
        raise TimeoutError("no answer to the unreadable message")

    async def call(self, method: str, params: Any = None, timeout: float = 60) -> dict[str, Any]:
        return await self.wait(self.start(method, params), timeout)

    def stderr(self) -> str:
        self._err.flush()
        return self.stderr_log.read_text(errors="replace")

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def tool_text(result: dict[str, Any]) -> str:
    return "\n".join(c["text"] for c in result.get("content", []) if c.get("type") == "text")


async def still_serving(raw: Raw) -> None:
    answer = await raw.call("tools/call", NORMAL_CALL)
    assert "result" in answer, answer
    assert not answer["result"].get("isError"), answer
    assert "hello" in tool_text(answer["result"])
    assert raw.proc.poll() is None


# ---------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def hostile_ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile") / "ws"
    root.mkdir()
    (root / "hello.txt").write_text("hello\n")
    return root


@pytest.fixture(scope="module")
def hostile_queue() -> str:
    return f"tq-hostile-{uuid.uuid4().hex[:8]}"


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def hostile_worker(temporal_env: WorkflowEnvironment, hostile_ws: Path, hostile_queue: str) -> AsyncIterator[Client]:
    client = temporal_env.client
    async with build_worker(client, task_queue=hostile_queue, workspace=str(hostile_ws),
                            default_policy=Policy(mode="ask-writes")):
        yield client


@pytest.fixture(scope="module")
def raw(hostile_worker: Client, hostile_ws: Path, hostile_queue: str,
        tmp_path_factory: pytest.TempPathFactory) -> Iterator[Raw]:
    server = Raw(mcp_args(hostile_worker, hostile_ws, hostile_queue, "--policy", "auto"),
                 tmp_path_factory.mktemp("hostile-log") / "stdio.log")
    try:
        yield server
    finally:
        server.kill()

