"""Buggy and hostile MCP clients over stdio: whatever a client sends, the
server answers with a clear error (a JSON-RPC error, or a tool result with
isError and text saying what to do), never crashes or hangs, and keeps
serving. HTTP clients: test_mcp_hostile_http.py.

One stdio server process (policy auto) is shared by most cases, spoken to as
raw JSON-RPC so the client can send what no SDK client would.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, WorkflowExecutionStatus

from frontends.mcp.settings import McpSettings
from runtime.api import TurnClient
from tests.mcp.support import mcp_args
from tests.mcp.hostile_support import (  # noqa: F401  (fixtures)
    NORMAL_CALL, Raw, hostile_queue, hostile_worker, hostile_ws, raw, still_serving, tool_text,
)


# ------------------------------------------------------- malformed calls
async def test_unknown_tool_is_a_protocol_error_naming_the_tools(raw: Raw) -> None:
    answer = await raw.call("tools/call", {"name": "rm_rf", "arguments": {}})
    assert answer["error"]["code"] == -32602
    assert "unknown tool 'rm_rf'" in answer["error"]["message"]
    assert "read_file" in answer["error"]["message"]
    await still_serving(raw)


@pytest.mark.parametrize("arguments, expected", [
    ({}, "path"),                                           # a required field missing
    ({"path": 5}, "path"),                                  # wrong type
    ({"path": "hello.txt", "offset": "ten"}, "offset"),     # wrong type, optional field
    ({"path": "hello.txt", "sudo": True}, "sudo"),          # an unknown extra field
    ({"path": ["hello.txt"]}, "path"),
])
async def test_bad_arguments_are_the_models_error(raw: Raw, arguments: dict[str, Any], expected: str) -> None:
    answer = await raw.call("tools/call", {"name": "read_file", "arguments": arguments})
    result = answer["result"]
    assert result["isError"] is True
    assert expected in tool_text(result)
    await still_serving(raw)


async def test_arguments_absent(raw: Raw) -> None:
    answer = await raw.call("tools/call", {"name": "read_file"})
    assert answer["result"]["isError"] is True
    assert "path" in tool_text(answer["result"])
    await still_serving(raw)


@pytest.mark.parametrize("arguments", ["path=hello.txt", ["hello.txt"], 7, True])
async def test_arguments_not_an_object(raw: Raw, arguments: Any) -> None:
    answer = await raw.call("tools/call", {"name": "read_file", "arguments": arguments})
    assert answer["error"]["code"] == -32602, answer
    assert "arguments" in answer["error"]["message"]
    await still_serving(raw)


@pytest.mark.parametrize("params", [None, [], "read_file", {"arguments": {"path": "hello.txt"}}, {"name": 3}])
async def test_call_params_malformed(raw: Raw, params: Any) -> None:
    # Answered at once: a request left unanswered hangs the client.
    answer = await raw.call("tools/call", params, timeout=10)
    assert answer["error"]["code"] in (-32600, -32602), answer
    assert "params" in answer["error"]["message"] or "name" in answer["error"]["message"], answer
    await still_serving(raw)


async def test_unparsable_lines_and_junk_messages(raw: Raw) -> None:
    raw.send(b"\n")                                          # nothing to answer
    raw.send(b"{this is not json\n")
    assert (await raw.unaddressed_error())["code"] == -32700
    raw.send(b'[1, 2, 3]\n')                                 # a batch (not in MCP) or junk
    assert (await raw.unaddressed_error())["code"] == -32600
    raw.send(b'{"jsonrpc": "2.0", "id": "x1"}\n')            # neither request nor answer
    raw.send(b'{"jsonrpc": "2.0", "method": 5}\n')           # a malformed notification
    raw.send(b'{"jsonrpc": "2.0", "id": 999999, "result": {}}\n')  # an answer to nothing
    await still_serving(raw)
    assert raw.unaddressed == []
    # A request the transport cannot read as one still gets an answer with its id.
    raw.send(b'{"jsonrpc": "2.0", "id": "x3", "method": "tools/list", "params": "all"}\n')
    error = (await raw.wait("x3", 10))["error"]
    assert error["code"] == -32600 and "params" in error["message"], error
    raw.send(b'{"jsonrpc": "2.0", "id": "x4", "method": 5}\n')
    error = (await raw.wait("x4", 10))["error"]
    assert error["code"] == -32600 and "method" in error["message"], error
    # A request for a method that does not exist is answered, not dropped.
    answer = await raw.call("tools/delete_everything", {})
    assert answer["error"]["code"] == -32601
    await still_serving(raw)


async def test_a_request_id_with_a_lone_surrogate_does_not_kill_the_server(raw: Raw) -> None:
    """JSON may escape a lone surrogate ("\\udcff"); the SDK's parser refuses
    it, Python's reads it. An answer carrying it as its id cannot be written
    as UTF-8: writing it must not take the server's output down."""
    raw.send(b'{"jsonrpc": "2.0", "id": "\\udcff", "method": "tools/list"}\n')
    error = await raw.unaddressed_error()
    assert error["code"] == -32700 and "surrogate" in error["message"], error
    raw.send(b'{"jsonrpc": "2.0", "id": "ok-\\ud800", "method": "tools/call", "params": {"name": "read_file"}}\n')
    assert (await raw.unaddressed_error())["code"] == -32700
    await still_serving(raw)


async def test_deeply_nested_arguments(raw: Raw) -> None:
    def call_with(depth: int, my_id: str) -> bytes:
        nested = '{"a":[' * depth + '"x"' + ']}' * depth
        return ('{"jsonrpc":"2.0","id":"' + my_id + '","method":"tools/call","params":{"name":"read_file",'
                '"arguments":{"path":"hello.txt","deep":' + nested + '}}}\n').encode()

    # Deep but readable: the tool's validation names the unknown field.
    raw.send(call_with(40, "deep-40"))
    result = (await raw.wait("deep-40", 30))["result"]
    assert result["isError"] is True and "deep" in tool_text(result)
    # Deeper than the SDK reads, but the request can be named: answered.
    raw.send(call_with(150, "deep-150"))
    error = (await raw.wait("deep-150", 10))["error"]
    assert error["code"] == -32600 and "recursion" in error["message"], error
    # Too deep to read as JSON: a parse error (no id could be read).
    raw.send(call_with(100_000, "deep-100000"))
    error = await raw.unaddressed_error()
    assert error["code"] == -32700 and "recursion" in error["message"], error
    await still_serving(raw)


async def test_huge_write_content(raw: Raw, hostile_ws: Path) -> None:
    content = "y" * (20 * 1024 * 1024)
    started = time.monotonic()
    answer = await raw.call("tools/call", {"name": "write_file", "arguments": {"path": "huge.txt", "content": content}},
                            timeout=120)
    assert time.monotonic() - started < 60
    del content
    # Refused before a turn starts (Temporal takes 2 MiB a payload), saying what to do instead.
    result = answer["result"]
    assert result["isError"] is True
    assert "2 MiB" in tool_text(result) and "in parts" in tool_text(result), tool_text(result)
    assert not (hostile_ws / "huge.txt").exists()
    await still_serving(raw)


async def test_paths_outside_the_workspace_are_refused(raw: Raw, hostile_ws: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret\n")
    (hostile_ws / "link").symlink_to(tmp_path)
    for name, arguments in [
        ("read_file", {"path": str(secret)}),
        ("read_file", {"path": os.path.relpath(secret, hostile_ws)}),
        ("read_file", {"path": "link/secret.txt"}),
        ("write_file", {"path": os.path.relpath(tmp_path / "planted.txt", hostile_ws), "content": "x"}),
        ("write_file", {"path": "link/planted.txt", "content": "x"}),
        ("glob", {"pattern": "*", "path": str(tmp_path)}),
        ("grep", {"pattern": "secret", "path": "link"}),
    ]:
        answer = await raw.call("tools/call", {"name": name, "arguments": arguments})
        result = answer["result"]
        assert result["isError"] is True, (name, arguments, tool_text(result))
        assert "top secret" not in tool_text(result)
    assert not (tmp_path / "planted.txt").exists()
    await still_serving(raw)


async def test_nul_in_paths_and_non_finite_numbers(raw: Raw, hostile_ws: Path) -> None:
    """A NUL in a path (the OS refuses it outright), NaN and infinite numbers
    (Python's JSON reads them): each is the model's error, nothing is written."""
    for name, arguments in [
        ("read_file", {"path": "hello.txt\x00.png"}),
        ("write_file", {"path": "nul\x00.txt", "content": "x"}),
        ("edit_file", {"path": "hello.txt\x00", "old_string": "hello", "new_string": "bye"}),
        ("grep", {"pattern": "hello", "path": "\x00"}),
        ("glob", {"pattern": "*\x00"}),
    ]:
        result = (await raw.call("tools/call", {"name": name, "arguments": arguments}))["result"]
        assert result["isError"] is True, (name, tool_text(result))
    for timeout in ("NaN", "Infinity", "-Infinity", "1e999"):
        raw.send(('{"jsonrpc":"2.0","id":"t-' + timeout + '","method":"tools/call","params":{"name":"bash",'
                  '"arguments":{"command":"touch nan-ran","timeout_seconds":' + timeout + '}}}\n').encode())
        result = (await raw.wait("t-" + timeout, 30))["result"]
        assert result["isError"] is True and "timeout_seconds" in tool_text(result), tool_text(result)
    assert not (hostile_ws / "nan-ran").exists() and (hostile_ws / "hello.txt").read_text() == "hello\n"
    await still_serving(raw)


# ------------------------------------------------------------- many calls
async def test_forty_concurrent_safe_calls(raw: Raw, hostile_ws: Path) -> None:
    for i in range(40):
        (hostile_ws / f"c{i}.txt").write_text(f"content {i}\n")
    ids = [raw.start("tools/call", {"name": "read_file", "arguments": {"path": f"c{i}.txt"}}) for i in range(40)]
    answers = await asyncio.gather(*(raw.wait(my_id, 90) for my_id in ids))
    for i, answer in enumerate(answers):
        assert not answer["result"]["isError"], answer
        assert f"content {i}" in tool_text(answer["result"])
    assert len({a["result"]["structuredContent"]["turn_id"] for a in answers}) == 40
    await still_serving(raw)


async def test_a_burst_of_writes_to_one_file_lands_in_arrival_order(raw: Raw, hostile_ws: Path) -> None:
    target = hostile_ws / "burst.txt"
    target.write_text("v-start\n")
    assert not (await raw.call("tools/call", {"name": "read_file", "arguments": {"path": "burst.txt"}}))["result"]["isError"]
    ids = []
    for i in range(8):
        ids.append(raw.start("tools/call", {"name": "write_file", "arguments": {"path": "burst.txt", "content": f"v{i}\n"}}))
        ids.append(raw.start("tools/call", {"name": "read_file", "arguments": {"path": "burst.txt"}}))
    answers = await asyncio.gather(*(raw.wait(my_id, 90) for my_id in ids))
    for i in range(8):
        write, read = answers[2 * i]["result"], answers[2 * i + 1]["result"]
        # Each write had the snapshot of the one before it: none is a conflict.
        assert not write["isError"], tool_text(write)
        # The read sent right after a write sees that write, never a later one.
        assert f"v{i}" in tool_text(read), tool_text(read)
    assert target.read_text() == "v7\n"


# ------------------------------------------------- disconnect, cancellation
def turn_prefix(workspace: Path, task_queue: str, session: str | None = None) -> str:
    return McpSettings(workspace=str(workspace.resolve()), task_queue=task_queue, session=session).turn_prefix


async def turns_of(client: Client, prefix: str) -> dict[str, WorkflowExecutionStatus | None]:
    found = {}
    async for wf in client.list_workflows(f'WorkflowId STARTS_WITH "{prefix}"'):
        found[wf.id] = wf.status
    return found


async def wait_for(predicate: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = await predicate()
        if value:
            return value
        await asyncio.sleep(0.2)
    raise AssertionError(f"not within {timeout} s: {what}")


async def started_command(client: Client, prefix: str, before: set[str]) -> None:
    """Until a new turn runs, then a moment for its command to start (a bash
    call may run captured, so the workspace shows nothing before its end)."""

    async def running() -> bool:
        turns = await turns_of(client, prefix)
        return any(k not in before and v == WorkflowExecutionStatus.RUNNING for k, v in turns.items())

    await wait_for(running, 30, "the long call's turn runs")
    await asyncio.sleep(1.5)


async def paused_turn(client: Client, prefix: str) -> str:
    """The id of the one turn under ``prefix``, once it runs and is paused for approval."""

    async def running() -> list[str]:
        return [k for k, v in (await turns_of(client, prefix)).items() if v == WorkflowExecutionStatus.RUNNING]

    (turn_id,) = await wait_for(running, 30, "the call's turn is running")

    async def is_paused() -> bool:
        return (await TurnClient(client).status(turn_id)).status.value == "paused"

    await wait_for(is_paused, 30, "the call's turn is paused for approval")
    return turn_id


@pytest.mark.parametrize("how", ["stdin-closed", "both-pipes-closed"])
async def test_client_vanishes_mid_call_and_the_turn_stays_durable(
    hostile_worker: Client, hostile_ws: Path, hostile_queue: str, tmp_path: Path, how: str
) -> None:
    """The client goes away in the middle of a long call. It closes its end
    (stdin-closed): the server cancels the call's turn (nobody waits for it
    any more; a command is killed) and exits. It dies (both pipes closed
    under the server): the server exits at once, maybe before it could
    cancel, and the turn ends on its own. Either way the server exits
    cleanly and the turn's end and the session's snapshots are in Temporal
    for the next server."""
    session = f"vanish-{how}"
    (hostile_ws / f"{session}.txt").write_text("kept\n")
    out = hostile_ws / f"{session}.out"
    prefix = turn_prefix(hostile_ws, hostile_queue, session)
    args = mcp_args(hostile_worker, hostile_ws, hostile_queue, "--policy", "auto", "--session", session)
    seconds = 30 if how == "stdin-closed" else 3
    gone = Raw(args, tmp_path / "gone.log")
    try:
        read = await gone.call("tools/call", {"name": "read_file", "arguments": {"path": f"{session}.txt"}})
        assert not read["result"]["isError"]
        before = set(await turns_of(hostile_worker, prefix))
        gone.start("tools/call", {"name": "bash", "arguments": {"command": f"sleep {seconds} && echo done > {out.name}"}})
        await started_command(hostile_worker, prefix, before)
        assert gone.proc.stdin is not None and gone.proc.stdout is not None
        gone.proc.stdin.close()
        if how == "both-pipes-closed":
            gone.proc.stdout.close()
        code = await asyncio.to_thread(gone.proc.wait, 15)
        assert code == 0, gone.stderr()
        assert "Traceback" not in gone.stderr(), gone.stderr()
    finally:
        gone.kill()

    turns = list(await turns_of(hostile_worker, prefix))
    assert len(turns) == 2

    async def all_ended() -> bool:
        for turn_id in turns:
            if (await hostile_worker.get_workflow_handle(turn_id).describe()).status == WorkflowExecutionStatus.RUNNING:
                return False
        return True

    await wait_for(all_ended, 5 if how == "stdin-closed" else 20, "the vanished client's turns ended")
    again = Raw(args, tmp_path / "again.log")
    try:
        statuses = sorted([(await again.call("tasks/get", {"taskId": t}))["result"]["status"] for t in turns])
        if how == "stdin-closed":
            assert statuses == ["cancelled", "completed"]
        if "cancelled" in statuses:
            assert not out.exists()
        else:
            assert out.read_text() == "done\n"
        # What the agent read before is still known: its write is accepted.
        write = await again.call("tools/call", {"name": "write_file",
                                                "arguments": {"path": f"{session}.txt", "content": "changed\n"}})
        assert not write["result"]["isError"], tool_text(write["result"])
    finally:
        again.kill()
    assert (hostile_ws / f"{session}.txt").read_text() == "changed\n"


async def test_cancelled_running_call_ends_its_turn(raw: Raw, hostile_worker: Client, hostile_ws: Path,
                                                    hostile_queue: str) -> None:
    prefix = turn_prefix(hostile_ws, hostile_queue)
    before = set(await turns_of(hostile_worker, prefix))
    my_id = raw.start("tools/call", {"name": "bash", "arguments": {"command": "sleep 30 && echo x > slow-done"}})
    await started_command(hostile_worker, prefix, before)
    raw.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": my_id, "reason": "user hit stop"}})

    async def ended() -> bool:
        turns = {k: v for k, v in (await turns_of(hostile_worker, prefix)).items() if k not in before}
        return bool(turns) and all(s != WorkflowExecutionStatus.RUNNING for s in turns.values())

    await wait_for(ended, 10, "the cancelled call's turn ended")
    assert not (hostile_ws / "slow-done").exists()
    await still_serving(raw)


async def test_cancelled_call_waiting_for_approval_does_not_leave_its_turn_waiting(
    hostile_worker: Client, hostile_ws: Path, hostile_queue: str, tmp_path: Path
) -> None:
    """A call paused for approval, cancelled by a client that cannot be asked:
    nobody would ever decide, so the turn must not wait for ever."""
    prefix = turn_prefix(hostile_ws, hostile_queue, "cancel-paused")
    server = Raw(mcp_args(hostile_worker, hostile_ws, hostile_queue, "--session", "cancel-paused"), tmp_path / "p.log")
    try:
        my_id = server.start("tools/call", {"name": "bash", "arguments": {"command": "touch never-approved"}})

        turn_id = await paused_turn(hostile_worker, prefix)
        server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": my_id}})

        async def ended() -> bool:
            desc = await hostile_worker.get_workflow_handle(turn_id).describe()
            return desc.status != WorkflowExecutionStatus.RUNNING

        await wait_for(ended, 15, "the paused turn of a cancelled call ended")
        assert not (hostile_ws / "never-approved").exists()
        await still_serving(server)
    finally:
        server.kill()


async def test_server_killed_while_a_call_waits_for_approval_the_turn_rejects_itself(
    hostile_worker: Client, hostile_ws: Path, hostile_queue: str, tmp_path: Path
) -> None:
    """SIGKILL of the server while its call's turn is paused: nothing is left
    to reject it at the approval timeout, so the turn carries its own bound
    (the server's timeout and a short grace) on a durable timer."""
    prefix = turn_prefix(hostile_ws, hostile_queue, "killed-paused")
    server = Raw(mcp_args(hostile_worker, hostile_ws, hostile_queue, "--session", "killed-paused",
                          "--approval-timeout", "2"), tmp_path / "k.log")
    try:
        server.start("tools/call", {"name": "bash", "arguments": {"command": "touch never-decided"}})

        turn_id = await paused_turn(hostile_worker, prefix)
    finally:
        server.kill()
    result = await asyncio.wait_for(TurnClient(hostile_worker).result(turn_id), 30)
    decisions = [d for d in [result.decision, *result.call_decisions] if d is not None]
    assert [(d.approve, d.via, d.reason) for d in decisions] == [(False, "timeout", "no decision within 4 s")], result
    assert result.results[0].is_error and "no decision within 4 s" in result.results[0].output, result.results
    assert not (hostile_ws / "never-decided").exists()


# ----------------------------------------------------------------- tasks
async def test_task_ids_of_other_sessions_and_workflows_are_refused(raw: Raw, hostile_ws: Path, hostile_queue: str) -> None:
    ours = McpSettings(workspace=str(hostile_ws.resolve()), task_queue=hostile_queue)
    other = McpSettings(workspace=str(hostile_ws.resolve()), task_queue=hostile_queue, session="someone-else")
    for task_id in (other.turn_prefix + "abc", ours.snapshots_workflow_id, other.snapshots_workflow_id,
                    ours.turn_prefix + "../../x", "", 5, None):
        for method in ("tasks/get", "tasks/result", "tasks/cancel"):
            answer = await raw.call(method, {"taskId": task_id}, timeout=10)
            assert "error" in answer, (method, task_id, answer)
            assert answer["error"]["code"] == -32602
    answer = await raw.call("tasks/list", {"cursor": "!!not-a-cursor!!"}, timeout=10)
    assert answer["error"]["code"] == -32602 and "cursor" in answer["error"]["message"]
    await still_serving(raw)
