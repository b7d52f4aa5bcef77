"""`client.py session ...` as a user runs it: real client processes against
the dev server, a worker for the workspace, the scripted model server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from temporalio.client import Client

from tests.model_server import Reply, ScriptedModelServer, tool
from tests.processes import run_client, server_address
from tests.session.test_session_support import model_server  # noqa: F401  (fixture)
from runtime.worker import build_worker


async def cli(client: Client, *args: str) -> tuple[int, str, str]:
    done = await asyncio.to_thread(run_client, "--address", server_address(client), "session", *args)
    return done.returncode, done.stdout, done.stderr


async def test_session_commands(client: Client, workspace: Path, task_queue: str, model_server: ScriptedModelServer) -> None:
    (workspace / "app.py").write_text("print('hi')\n")
    model_server.add(
        Reply(tool_calls=[tool("read_file", path="app.py")]),
        Reply(text="app.py prints hi."),
        Reply(text="It has one line."),
        Reply(tool_calls=[tool("write_file", path="new.txt", content="x\n")]),
        Reply(text="I was not allowed to write new.txt."),
    )
    code, _, err = await cli(client, "run", "--workspace", str(workspace / "missing"), "--provider", "openai",
                             "--model", "m", "--prompt", "x")
    assert code == 2 and "is not a folder" in err
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        code, out, err = await cli(client, "run", "--workspace", str(workspace), "--task-queue", task_queue,
                                   "--provider", "openai", "--model", "scripted", "--prompt", "what does app.py do?",
                                   "--policy", "auto", "--session-id", "cli-one")
        assert (code, out.strip()) == (0, "app.py prints hi."), err
        assert "session send cli-one" in err
        code, out, err = await cli(client, "send", "cli-one", "how long is it?")
        assert (code, out.strip()) == (0, "It has one line."), err
        code, out, _ = await cli(client, "status", "cli-one", "--json")
        status = json.loads(out)
        assert status["session_id"] == "cli-one" and status["state"] == "waiting_for_user" and status["model_calls"] == 3
        code, out, _ = await cli(client, "transcript", "cli-one")
        assert code == 0 and "[tool_results cli-one/turn-1]" in out and "1|print('hi')" in out
        code, out, _ = await cli(client, "close", "cli-one")
        assert code == 0 and "cli-one: closed" in out

        code, out, err = await cli(client, "run", "--workspace", str(workspace), "--task-queue", task_queue,
                                   "--provider", "anthropic", "--model", "scripted", "--prompt", "write new.txt",
                                   "--policy", "ask-writes", "--no-wait")
        sid = out.strip()
        assert code == 0 and sid.startswith("session-"), err
        for _ in range(100):
            # A status query may time out while a loaded machine holds the
            # session's workflow task (it says so on stderr): ask again.
            code, out, err = await cli(client, "status", sid, "--json")
            if code == 0 and json.loads(out)["waiting_for_approval"]:
                break
            await asyncio.sleep(0.05)
        assert code == 0, err
        view = json.loads(out)
        assert view["current_turn_id"] == f"{sid}/turn-1" and view["pending"][0]["name"] == "write_file"
        code, out, err = await cli(client, "reject", sid, "--reason", "not now")
        assert code == 0 and "rejected the batch" in out, err
        code, out, err = await cli(client, "approve", sid)
        assert code == 1 and ("not waiting for approval" in err or "no turn is waiting" in err), err
        code, out, _ = await cli(client, "cancel", sid, "--json")
        result = json.loads(out)
    assert result["state"] == "cancelled"
    assert not (workspace / "new.txt").exists()
    assert "not now" in json.dumps(model_server.requests[4].body["messages"][-1])
