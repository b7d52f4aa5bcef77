"""Real MCP clients against `agent-turn mcp` processes, on the test dev server."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator

import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.processes import REPO, server_address


def mcp_args(client: Any, workspace: Path, task_queue: str, *extra: str) -> list[str]:
    return [
        str(REPO / "client.py"), "--address", server_address(client), "mcp",
        "--workspace", str(workspace), "--task-queue", task_queue, *extra,
    ]


def stdio_params(client: Any, workspace: Path, task_queue: str, *extra: str) -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "PYTHONPATH", "TMPDIR")}
    return StdioServerParameters(
        command=sys.executable, args=mcp_args(client, workspace, task_queue, *extra), cwd=str(REPO), env=env
    )


@asynccontextmanager
async def stdio_client(
    client: Any, workspace: Path, task_queue: str, *extra: str, mode: str = "auto", **kw: Any
) -> AsyncIterator[Client]:
    async with Client(stdio_params(client, workspace, task_queue, *extra), mode=mode, read_timeout_seconds=120, **kw) as c:
        yield c


def text(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class HttpServer:
    """`agent-turn mcp --transport http` as a process."""

    def __init__(self, client: Any, workspace: Path, task_queue: str, log: Path, *extra: str,
                 host: str = "127.0.0.1", token: str | None = None) -> None:
        self.port = free_port()
        self.host = host
        self.log = log
        env = dict(os.environ)
        env.pop("AGENT_TOOLS_MCP_TOKEN", None)
        if token:
            env["AGENT_TOOLS_MCP_TOKEN"] = token
        self.env = env
        self.args = [sys.executable, *mcp_args(client, workspace, task_queue, "--transport", "http",
                                                "--host", host, "--port", str(self.port), *extra)]
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        """Where a client on this machine reaches the server."""
        return self.host if self.host.startswith("127.") else "127.0.0.1"

    @property
    def url(self) -> str:
        return f"http://{self.address}:{self.port}/mcp"

    def start(self, timeout: float = 30) -> "HttpServer":
        self._log = open(self.log, "ab")
        self.proc = subprocess.Popen(self.args, cwd=REPO, env=self.env, stdout=self._log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"MCP server exited ({self.proc.returncode}):\n{self.log.read_text()}")
            try:
                with socket.create_connection((self.address, self.port), timeout=0.3):
                    return self
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"MCP server not listening in {timeout} s:\n{self.log.read_text()}")

    def run_to_exit(self, timeout: float = 30) -> int:
        self.proc = subprocess.Popen(self.args, cwd=REPO, env=self.env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        out, _ = self.proc.communicate(timeout=timeout)
        self.output = out.decode(errors="replace")
        return self.proc.returncode

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


class RawStdio:
    """A bare JSON-RPC client over the server's stdio, as a client we have
    never seen would speak it. The official Python client (mcp 2.3) validates
    every tools/call answer as a CallToolResult, so it cannot make a
    task-augmented call; this one can. ``answer`` replies to the server's own
    requests (elicitation/create)."""

    def __init__(self, args: list[str], stderr_log: Path) -> None:
        self._err = open(stderr_log, "ab")
        self.proc = subprocess.Popen([sys.executable, *args], cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._err, start_new_session=True)
        self._next = 0
        self.answer: Any = None
        self.seen: list[dict[str, Any]] = []

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any] | None = None, timeout: float = 120) -> dict[str, Any]:
        self._next += 1
        my_id = self._next
        self._send({"jsonrpc": "2.0", "id": my_id, "method": method, "params": params or {}})
        deadline = time.monotonic() + timeout
        assert self.proc.stdout is not None
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"server closed stdout (exit {self.proc.poll()})")
            message = json.loads(line)
            self.seen.append(message)
            if message.get("id") == my_id and "method" not in message:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"]
            if "method" in message and "id" in message:  # the server asks us
                result = self.answer(message) if self.answer else {"action": "cancel"}
                self._send({"jsonrpc": "2.0", "id": message["id"], "result": result})
        raise TimeoutError(method)

    async def call(self, method: str, params: dict[str, Any] | None = None, timeout: float = 120) -> dict[str, Any]:
        """``request`` off the event loop (the test's worker runs on that loop)."""
        return await asyncio.to_thread(self.request, method, params, timeout)

    def initialize(self, capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
        result = self.request("initialize", {
            "protocolVersion": "2025-11-25", "capabilities": capabilities or {},
            "clientInfo": {"name": "raw-test-client", "version": "0"},
        })
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return result

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()
