"""Real MCP clients against `agent-turn mcp` processes, on the test dev server."""

from __future__ import annotations

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
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self, timeout: float = 30) -> "HttpServer":
        self._log = open(self.log, "ab")
        self.proc = subprocess.Popen(self.args, cwd=REPO, env=self.env, stdout=self._log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"MCP server exited ({self.proc.returncode}):\n{self.log.read_text()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.3):
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
