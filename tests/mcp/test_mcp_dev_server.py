"""`agent-turn mcp --dev-server`: one line in a client's configuration starts
the dev server and a worker in the MCP server's own process."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from runtime.devserver import port_open
from tests.mcp.support import free_port, text
from tests.processes import REPO


async def test_dev_server_and_worker_started_in_process(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "hello.txt").write_text("hello from the workspace\n")
    port = free_port()
    params = StdioServerParameters(
        command=sys.executable,
        args=[str(REPO / "client.py"), "--address", f"127.0.0.1:{port}", "mcp", "--workspace", str(workspace),
              "--dev-server", "--ui-port", "0", "--data-dir", str(tmp_path / "data"), "--task-queue", "devq"],
        cwd=str(REPO),
    )
    async with Client(params, read_timeout_seconds=120) as mcp:
        result = await mcp.call_tool("read_file", {"path": "hello.txt"})
        assert not result.is_error, text(result)
        assert "hello from the workspace" in text(result)
        assert port_open("127.0.0.1", port)
    # Leaving the MCP server stops the dev server it started.
    deadline = time.monotonic() + 20
    while port_open("127.0.0.1", port) and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    assert not port_open("127.0.0.1", port)
    # The dev server's state is outside the workspace (the agent must not see it).
    assert (tmp_path / "data" / "temporal.sqlite").exists()
    assert not any(p.name.startswith("temporal") for p in workspace.iterdir())
