"""Tasks (MCP 2025-11-25) backed by Temporal: the task id is the turn's
workflow id, and no task state lives in the server process."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from temporalio.client import Client

from tests.mcp.support import RawStdio, mcp_args, stdio_client


async def _server(client: Client, workspace: Path, task_queue: str, tmp_path: Path, *extra: str) -> RawStdio:
    raw = RawStdio(mcp_args(client, workspace, task_queue, *extra), tmp_path / "mcp-stderr.log")
    caps = await asyncio.to_thread(raw.initialize, {"elicitation": {}})
    assert caps["capabilities"]["tasks"]["requests"] == {"tools": {"call": {}}}
    return raw


async def _wait_status(raw: RawStdio, task_id: str, wanted: set[str], timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        task = await raw.call("tasks/get", {"taskId": task_id})
        if task["status"] in wanted:
            return task
        await asyncio.sleep(0.2)
    raise AssertionError(f"task {task_id} never reached {wanted}: last {task}")


async def test_task_completes_through_a_new_server_after_sigkill(
    client: Client, workspace: Path, task_queue: str, mcp_worker: None, tmp_path: Path
) -> None:
    first = await _server(client, workspace, task_queue, tmp_path, "--policy", "auto")
    try:
        listed = (await first.call("tools/list"))["tools"]
        assert all(t["execution"]["taskSupport"] == "optional" for t in listed)
        created = (await first.call("tools/call", {
            "name": "bash", "arguments": {"command": "sleep 2 && echo finished > done.txt && echo ok"},
            "task": {"ttl": 600000},
        }))["task"]
        task_id = created["taskId"]
        assert created["status"] == "working"
        # The task id is the turn: visible to Temporal (and agent-turn status).
        assert (await client.get_workflow_handle(task_id).describe()).id == task_id
    finally:
        first.kill()  # mid-call: the bash command is still sleeping
    second = await _server(client, workspace, task_queue, tmp_path)
    try:
        done = await _wait_status(second, task_id, {"completed", "failed", "cancelled"})
        assert done["status"] == "completed"
        result = await second.call("tasks/result", {"taskId": task_id})
        assert result["isError"] is False
        assert "ok" in result["content"][0]["text"]
        assert result["structuredContent"]["turn_id"] == task_id
        assert result["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task_id}
    finally:
        second.close()
    assert (workspace / "done.txt").read_text() == "finished\n"
    # The official client reads the same task through yet another process.
    async with stdio_client(client, workspace, task_queue, mode="legacy") as mcp:
        got = await mcp.session.send_request(
            types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=task_id)), types.GetTaskResult
        )
    assert got.status == "completed"


async def test_task_input_required_while_paused_then_approved_by_elicitation(
    client: Client, workspace: Path, task_queue: str, mcp_worker: None, tmp_path: Path
) -> None:
    raw = await _server(client, workspace, task_queue, tmp_path)  # the worker's ask-writes policy
    try:
        task_id = (await raw.call("tools/call", {
            "name": "write_file", "arguments": {"path": "t.txt", "content": "task\n"}, "task": {},
        }))["task"]["taskId"]
        paused = await _wait_status(raw, task_id, {"input_required"})
        assert f"agent-turn approve {task_id}" in paused["statusMessage"]
        asked: list[dict[str, Any]] = []

        def answer(message: dict[str, Any]) -> dict[str, Any]:
            asked.append(message)
            return {"action": "accept", "content": {"decision": "approve"}}

        raw.answer = answer
        result = await raw.call("tasks/result", {"taskId": task_id})
        assert asked and asked[0]["method"] == "elicitation/create"
        assert "t.txt" in asked[0]["params"]["message"]
        assert result["isError"] is False
        assert (await raw.call("tasks/get", {"taskId": task_id}))["status"] == "completed"
    finally:
        raw.close()
    assert (workspace / "t.txt").read_text() == "task\n"


async def test_task_cancel_cancels_the_turn(
    client: Client, workspace: Path, task_queue: str, mcp_worker: None, tmp_path: Path
) -> None:
    raw = await _server(client, workspace, task_queue, tmp_path, "--policy", "auto")
    try:
        task_id = (await raw.call("tools/call", {
            "name": "bash", "arguments": {"command": "sleep 60"}, "task": {},
        }))["task"]["taskId"]
        await _wait_status(raw, task_id, {"working"})
        cancelled = await raw.call("tasks/cancel", {"taskId": task_id})
        assert cancelled["status"] == "cancelled"
        assert (await _wait_status(raw, task_id, {"cancelled", "completed", "failed"}, timeout=60))["status"] == "cancelled"
        # What ran is recorded: the killed command's result, an error.
        started = time.monotonic()
        result = await raw.call("tasks/result", {"taskId": task_id})
        assert result["isError"] is True
        assert time.monotonic() - started < 30  # not the 60 s of the sleep
        # Only this server's turns are tasks.
        try:
            await raw.call("tasks/get", {"taskId": "some-other-workflow"})
        except RuntimeError as exc:
            assert "no task" in str(exc)
        else:
            raise AssertionError("a foreign workflow id was answered as a task")
    finally:
        raw.close()


async def test_tasks_list_pages_through_this_servers_turns_only(
    client: Client, workspace: Path, task_queue: str, mcp_worker: None, tmp_path: Path
) -> None:
    raw = await _server(client, workspace, task_queue, tmp_path, "--policy", "auto")
    try:
        created = []
        for i in range(23):  # more than one page
            created.append((await raw.call("tools/call", {
                "name": "read_file", "arguments": {"path": f"missing-{i}.txt"}, "task": {},
            }))["task"]["taskId"])
        for task_id in created:
            await _wait_status(raw, task_id, {"completed"})
        seen: list[dict[str, Any]] = []
        cursor = None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # the visibility store lags a little behind the turns
            seen, cursor, pages = [], None, 0
            while True:
                page = await raw.call("tasks/list", {"cursor": cursor} if cursor else {})
                pages += 1
                seen += page["tasks"]
                cursor = page.get("nextCursor")
                if not cursor:
                    break
            if {t["taskId"] for t in seen} >= set(created):
                break
            await asyncio.sleep(0.5)
        assert pages >= 2 and {t["taskId"] for t in seen} == set(created), (pages, len(seen))
        assert all(t["status"] == "completed" and "ttl" in t for t in seen)
        with pytest.raises(RuntimeError, match="bad cursor"):
            await raw.call("tasks/list", {"cursor": "%%%"})
    finally:
        raw.close()
    # The official client sends tasks/list too.
    async with stdio_client(client, workspace, task_queue, mode="legacy") as mcp:
        listed = await mcp.session.send_request(types.ListTasksRequest(), types.ListTasksResult)
    assert {t.task_id for t in listed.tasks} <= set(created) and len(listed.tasks) == 20
