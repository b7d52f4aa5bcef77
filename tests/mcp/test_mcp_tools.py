"""tools/list and tools/call over stdio with the official Python MCP client:
every call a turn, snapshots carried across calls and server restarts."""

from __future__ import annotations

import asyncio
from pathlib import Path

from temporalio.client import Client

from core.tools.specs import TOOLS
from runtime.api import TurnClient
from tests.mcp.support import stdio_client, text



async def test_tools_listed_with_the_cli_schemas_and_annotations(
    client: Client, workspace: Path, task_queue: str
) -> None:
    async with stdio_client(client, workspace, task_queue) as mcp:
        listed = (await mcp.list_tools()).tools
    by_name = {t.name: t for t in listed}
    assert list(by_name) == list(TOOLS)
    for name, spec in TOOLS.items():
        assert by_name[name].input_schema == spec.json_schema()
        assert by_name[name].annotations.open_world_hint is False
    for name in ("read_file", "grep", "glob"):
        assert by_name[name].annotations.read_only_hint is True
    for name in ("bash", "write_file"):
        assert by_name[name].annotations.read_only_hint is False
        assert by_name[name].annotations.destructive_hint is True


async def test_blind_write_refused_then_write_after_read_accepted(
    client: Client, workspace: Path, task_queue: str, mcp_worker: None
) -> None:
    target = workspace / "notes.txt"
    target.write_text("old\n")
    async with stdio_client(client, workspace, task_queue, "--policy", "auto") as mcp:
        blind = await mcp.call_tool("write_file", {"path": "notes.txt", "content": "new\n"})
        assert blind.is_error
        assert blind.structured_content["status"] == "error"
        assert "read" in text(blind).lower()
        assert target.read_text() == "old\n"

        read = await mcp.call_tool("read_file", {"path": "notes.txt"})
        assert not read.is_error and "old" in text(read)
        turn_id = read.structured_content["turn_id"]
        # The call was a turn like any other: the CLI's status sees it.
        progress = await TurnClient(client).status(turn_id)
        assert progress.status.value == "completed"

        write = await mcp.call_tool("write_file", {"path": "notes.txt", "content": "new\n"})
        assert not write.is_error, text(write)
        assert write.structured_content["status"] == "ok"
    assert target.read_text() == "new\n"
    # Like any turn's, an MCP call's changes roll back with agent-turn rollback.
    await TurnClient(client).rollback(write.structured_content["turn_id"])
    assert target.read_text() == "old\n"


async def test_snapshots_survive_a_server_restart_and_catch_a_conflict(
    client: Client, workspace: Path, task_queue: str, mcp_worker: None
) -> None:
    target = workspace / "a.py"
    target.write_text("x = 1\n")
    async with stdio_client(client, workspace, task_queue, "--policy", "auto") as mcp:
        assert not (await mcp.call_tool("read_file", {"path": "a.py"})).is_error
    # Someone else changes the file after the agent read it.
    target.write_text("x = 2\n")
    async with stdio_client(client, workspace, task_queue, "--policy", "auto") as mcp:  # a new server process
        edit = await mcp.call_tool("edit_file", {"path": "a.py", "old_string": "x = 2", "new_string": "x = 3"})
        assert edit.is_error
        assert "changed" in text(edit).lower() or "conflict" in text(edit).lower(), text(edit)
        assert target.read_text() == "x = 2\n"
        # Reading again (in this new process) makes the edit possible.
        assert not (await mcp.call_tool("read_file", {"path": "a.py"})).is_error
        edit = await mcp.call_tool("edit_file", {"path": "a.py", "old_string": "x = 2", "new_string": "x = 3"})
        assert not edit.is_error, text(edit)
    assert target.read_text() == "x = 3\n"


async def test_parallel_safe_calls_run_as_concurrent_turns(
    client: Client, workspace: Path, task_queue: str, mcp_worker: None
) -> None:
    for i in range(4):
        (workspace / f"f{i}.txt").write_text(f"line {i}\n")
    async with stdio_client(client, workspace, task_queue) as mcp:
        results = await asyncio.gather(
            *(mcp.call_tool("read_file", {"path": f"f{i}.txt"}) for i in range(4)),
            mcp.call_tool("grep", {"pattern": "line"}),
        )
    assert all(not r.is_error for r in results)
    assert len({r.structured_content["turn_id"] for r in results}) == 5
    assert "line 3" in text(results[3])


async def test_bad_arguments_come_back_as_the_models_error(
    client: Client, workspace: Path, task_queue: str, mcp_worker: None
) -> None:
    async with stdio_client(client, workspace, task_queue) as mcp:
        bad = await mcp.call_tool("read_file", {"path": "x", "bogus": 1})
    assert bad.is_error
    assert "bogus" in text(bad)
    assert "--- tool pipeline note ---" in text(bad)
