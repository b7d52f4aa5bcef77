"""The client configuration entries in docs/mcp.md work as written: each
entry's command starts a server (with --dev-server: here it finds the test's
Temporal server through TEMPORAL_ADDRESS and starts its own worker) that lists
the tools and reads a file."""

from __future__ import annotations

import json
import re
import sys
import tomllib
import uuid
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from temporalio.client import Client as TemporalClient

from core.tools.specs import TOOLS
from tests.mcp.support import text
from tests.processes import REPO, server_address

DOC = (REPO / "docs" / "mcp.md").read_text()


def _blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", DOC, flags=re.S)


def _entries() -> dict[str, tuple[str, list[str]]]:
    found: dict[str, tuple[str, list[str]]] = {}
    for block in _blocks("json"):
        data = json.loads(block)
        if "mcpServers" in data:
            entry = data["mcpServers"]["agent-tools"]
            found["claude-code"] = (entry["command"], entry["args"])
        elif "servers" in data:
            entry = data["servers"]["agent-tools"]
            found["vscode"] = (entry["command"], entry["args"])
    for block in _blocks("toml"):
        entry = tomllib.loads(block)["mcp_servers"]["agent-tools"]
        found["codex"] = (entry["command"], entry["args"])
    return found


def test_the_doc_has_the_three_entries() -> None:
    entries = _entries()
    assert set(entries) == {"claude-code", "vscode", "codex"}
    for command, args in entries.values():
        assert command == "agent-turn"
        assert args[0] == "mcp" and "--dev-server" in args and "--workspace" in args


@pytest.mark.parametrize("name", ["claude-code", "vscode", "codex"])
async def test_entry_starts_a_working_server(name: str, client: TemporalClient, tmp_path: Path) -> None:
    workspace = tmp_path / "project"
    workspace.mkdir()
    (workspace / "README").write_text("configured by the docs\n")
    _, args = _entries()[name]
    args = [workspace.as_posix() if a in ("${workspaceFolder}", "/home/me/project") else a for a in args]
    params = StdioServerParameters(
        command=sys.executable,
        # A queue of its own: another test's worker may poll the default one.
        args=[str(REPO / "client.py"), *args, "--task-queue", f"docs-{uuid.uuid4().hex[:8]}"],
        cwd=str(workspace),  # where Claude Code starts a project's servers
        env={"TEMPORAL_ADDRESS": server_address(client), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    async with Client(params, read_timeout_seconds=120) as mcp:
        assert [t.name for t in (await mcp.list_tools()).tools] == list(TOOLS)
        result = await mcp.call_tool("read_file", {"path": "README"})
    assert not result.is_error, text(result)
    assert "configured by the docs" in text(result)
