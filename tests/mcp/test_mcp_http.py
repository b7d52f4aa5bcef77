"""Streamable HTTP: the same semantics as stdio, behind a bearer token."""

from __future__ import annotations

from pathlib import Path
from typing import Any, AsyncIterator

import httpx2
import pytest
import pytest_asyncio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from temporalio.client import Client as TemporalClient

from core.tools.specs import TOOLS
from tests.mcp.support import HttpServer, text
from tests.mcp.test_mcp_approval import Approver

TOKEN = "test-token-" + "x" * 32


@pytest_asyncio.fixture
async def http_server(client: TemporalClient, workspace: Path, task_queue: str, tmp_path: Path) -> AsyncIterator[HttpServer]:
    server = HttpServer(client, workspace, task_queue, tmp_path / "mcp-http.log", token=TOKEN).start()
    try:
        yield server
    finally:
        server.kill()


def connect(server: HttpServer, token: str | None = TOKEN, **kw: Any) -> Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    transport = streamable_http_client(server.url, http_client=create_mcp_http_client(headers=headers))
    return Client(transport, read_timeout_seconds=120, **kw)


async def test_token_required(http_server: HttpServer) -> None:
    for token in (None, "wrong"):
        with pytest.raises(Exception):
            async with connect(http_server, token) as mcp:
                await mcp.list_tools()
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        raw = httpx2.post(http_server.url, headers=headers, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert raw.status_code == 401
        assert "AGENT_TOOLS_MCP_TOKEN" in raw.text
    async with connect(http_server) as mcp:
        assert [t.name for t in (await mcp.list_tools()).tools] == list(TOOLS)


def test_refuses_a_non_loopback_address_without_a_token(
    client: TemporalClient, workspace: Path, task_queue: str, tmp_path: Path
) -> None:
    server = HttpServer(client, workspace, task_queue, tmp_path / "log", host="0.0.0.0")
    assert server.run_to_exit() == 2
    assert "refusing to listen on 0.0.0.0 without a token" in server.output
    assert "AGENT_TOOLS_MCP_TOKEN" in server.output


async def test_read_before_write_over_http(http_server: HttpServer, workspace: Path, mcp_worker: None) -> None:
    (workspace / "w.txt").write_text("one\n")
    approver = Approver("accept", "approve")
    async with connect(http_server, elicitation_callback=approver) as mcp:
        blind = await mcp.call_tool("write_file", {"path": "w.txt", "content": "two\n"})
        assert blind.is_error and (workspace / "w.txt").read_text() == "one\n"
        assert not (await mcp.call_tool("read_file", {"path": "w.txt"})).is_error
        write = await mcp.call_tool("write_file", {"path": "w.txt", "content": "two\n"})
        assert not write.is_error, text(write)
    assert (workspace / "w.txt").read_text() == "two\n"
    # Only the write after the read was put before the approver: the blind
    # one could never run (no snapshot), so it failed when it was planned.
    assert len(approver.asked) == 1


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_elicitation_over_http(http_server: HttpServer, workspace: Path, mcp_worker: None, mode: str) -> None:
    declined = Approver("decline")
    async with connect(http_server, elicitation_callback=declined, mode=mode) as mcp:
        result = await mcp.call_tool("bash", {"command": "touch x"})
    assert result.is_error and result.structured_content["status"] == "denied"
    assert not (workspace / "x").exists()
    accepted = Approver("accept", "approve")
    async with connect(http_server, elicitation_callback=accepted, mode=mode) as mcp:
        result = await mcp.call_tool("bash", {"command": "touch x"})
    assert not result.is_error, text(result)
    assert (workspace / "x").exists()



async def test_a_sealed_request_state_decides_only_the_call_it_was_issued_for(
    http_server: HttpServer, workspace: Path, mcp_worker: None
) -> None:
    """2026-07-28 over HTTP (no sessions): the state an input request carries
    is sealed for that call. Tampered, or sent with other arguments, it is
    refused and nothing is decided; the asked client's own retry decides."""
    import mcp_types as types
    from mcp.shared.exceptions import MCPError

    arguments = {"path": "sealed.txt", "content": "s\n"}
    approve = {"approval": types.ElicitResult(action="accept", content={"decision": "approve"})}
    async with connect(http_server, elicitation_callback=Approver("accept", "approve")) as asked:
        first = await asked.session.call_tool("write_file", arguments, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult) and first.request_state
        state = first.request_state
        tampered = state[:-2] + ("A" if state[-2] != "A" else "B") + state[-1]
        for name, args, sent in [("write_file", arguments, tampered), ("bash", {"command": "touch t"}, state),
                                 ("write_file", {**arguments, "content": "other\n"}, state)]:
            with pytest.raises(MCPError, match="requestState"):
                await asked.session.call_tool(name, args, request_state=sent, input_responses=approve,
                                              allow_input_required=True)
        assert not (workspace / "sealed.txt").exists() and not (workspace / "t").exists()
        done = await asked.session.call_tool("write_file", arguments, request_state=state, input_responses=approve,
                                             allow_input_required=True)
    assert isinstance(done, types.CallToolResult) and not done.is_error, done
    assert (workspace / "sealed.txt").read_text() == "s\n"


async def test_a_task_created_over_stdio_is_answered_over_http(
    http_server: HttpServer, client: TemporalClient, workspace: Path, task_queue: str, mcp_worker: None,
    tmp_path: Path,
) -> None:
    """Another process, another transport: the HTTP server knows the task only
    through Temporal."""
    import asyncio

    import mcp_types as types

    from tests.mcp.support import RawStdio, mcp_args

    raw = RawStdio(mcp_args(client, workspace, task_queue, "--policy", "auto"), tmp_path / "stdio.log")
    try:
        await asyncio.to_thread(raw.initialize)
        task_id = (await raw.call("tools/call", {
            "name": "bash", "arguments": {"command": "echo over-http"}, "task": {},
        }))["task"]["taskId"]
    finally:
        raw.close()
    async with connect(http_server, mode="legacy") as mcp:
        result = await mcp.session.send_request(
            types.GetTaskPayloadRequest(params=types.GetTaskPayloadRequestParams(task_id=task_id)), types.CallToolResult
        )
        got = await mcp.session.send_request(
            types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=task_id)), types.GetTaskResult
        )
    assert not result.is_error and "over-http" in text(result)
    assert got.status == "completed"
