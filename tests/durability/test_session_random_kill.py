"""SIGKILL the worker of a streaming session at seeded random moments (mid-
stream, mid-dispatch, mid-turn, between turns), once or twice, and let a new worker
finish: every edit and write lands once, every tool result reaches the model
once and in order, and the session ends with the scripted answer.

The model's script is a function of the conversation it is sent (how many
assistant messages it holds), not of the request's index: a model call
retried after a kill is sent the same conversation and gets the same answer.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
from temporalio.client import Client

from core.session.contracts import SessionState
from runtime import session_api as sessions
from tests.model_server import Recorded, Reply, ScriptedModelServer, tool
from tests.processes import WorkerProcess, server_address
from tests.session.test_session_support import serving

BIG = "big.txt"  # 80 MB of text: a read near its end scans for a while, so a kill can land mid-turn
# Captured (copy-on-write), so a command lost with its worker runs again,
# and its effect is applied once; the sleep gives a kill time to land in it.
COMMAND = "sleep 1 && echo ran >> bash.log"
FINAL = "Done: log.txt has lines 0 to 4, new.txt and second.txt are written."


def _append(n: int) -> Any:
    """An edit that appends line n: its old_string is the current last line,
    so applying it twice leaves a duplicate line."""
    return tool("edit_file", path="log.txt", old_string=f"line {n - 1}\n", new_string=f"line {n - 1}\nline {n}\n")


def _slow_read() -> Any:
    return tool("read_file", path=BIG, offset=1_999_000, limit=1)


# Reads first: they start while the model still streams (streaming
# dispatch); the writes after them wait for the whole response.
STEPS = [
    [tool("read_file", path="log.txt"), _slow_read(), tool("write_file", path="new.txt", content="created\n"),
     _append(1)],
    [tool("read_file", path="new.txt"), _slow_read(), tool("bash", command=COMMAND), _append(2), _append(3)],
    [tool("read_file", path="log.txt"), tool("write_file", path="second.txt", content="second\n"), _append(4)],
]
CALLS = [call for step in STEPS for call in step]


def _answer(request: Recorded, index: int) -> Reply:
    step = sum(1 for m in request.body["messages"] if m.get("role") == "assistant")
    if step < len(STEPS):
        return Reply(text=f"Step {step}: reading, then changing the files. " * 2, tool_calls=STEPS[step],
                     tokens_per_second=60)
    return Reply(text=FINAL, tokens_per_second=60)


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedModelServer]:
    with serving(monkeypatch, _answer) as server:
        yield server


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(block.get("text", "") for block in content if isinstance(block, dict))


def _calls_and_results(body: dict[str, Any]) -> tuple[list[tuple[str, str, dict[str, Any]]], list[tuple[str, str]]]:
    """What the model was sent: its tool calls (id, name, arguments) and the
    tool results (call id, text), each in conversation order, in either API's shape."""
    calls: list[tuple[str, str, dict[str, Any]]] = []
    results: list[tuple[str, str]] = []
    for m in body["messages"]:
        if m["role"] == "assistant":
            for c in m.get("tool_calls") or []:  # OpenAI
                calls.append((c["id"], c["function"]["name"], json.loads(c["function"]["arguments"])))
            for b in m["content"] if isinstance(m.get("content"), list) else []:  # Anthropic
                if b.get("type") == "tool_use":
                    calls.append((b["id"], b["name"], b["input"]))
        elif m["role"] == "tool":
            results.append((m["tool_call_id"], _text(m["content"])))
        elif m["role"] == "user" and isinstance(m["content"], list):
            results += [(b["tool_use_id"], _text(b["content"])) for b in m["content"] if b.get("type") == "tool_result"]
    return calls, results


async def _kill_at_a_random_moment(rng: random.Random, server: ScriptedModelServer, worker: WorkerProcess,
                                   seen: int, client: Client, sid: str) -> int:
    """Wait for the next model request (a retry or the next call), then kill
    the worker either within its stream (so during the reads it dispatched)
    or within 1.5 s after the stream ended (in the turn's reads, command and
    edits, or between the turn and the next call). Returns the requests seen."""
    deadline = time.monotonic() + 60
    while len(server.requests) <= seen:
        assert time.monotonic() < deadline, worker.log_path.read_text()[-3000:]
        if len(server.requests) > len(STEPS) and not server.streams_in_progress:
            try:
                view = await sessions.session_status(client, sid)
            except sessions.SessionNotAnswering:  # queries still go to the killed worker, as wait_for_answer knows
                continue
            if view.state == SessionState.WAITING_FOR_USER:  # the final answer is in: nothing left to kill
                print("the session finished before this kill")
                return seen
        await asyncio.sleep(0.05)
    after_stream = rng.random() < 0.5
    if after_stream:
        while server.streams_in_progress:
            await asyncio.sleep(0.01)
    await asyncio.sleep(rng.uniform(0.0, 1.5))
    seen, streaming = len(server.requests), server.streams_in_progress
    worker.kill()
    print(f"at {time.monotonic() - server.requests[0].received_at:.2f} s: killed after {seen} model requests, "
          f"{'mid-stream' if streaming else 'between streams'}{' (aimed after the stream)' if after_stream else ''}")
    return seen


@pytest.mark.parametrize("provider, seed, kills", [("openai", 101, 2), ("anthropic", 202, 1), ("openai", 303, 2)])
async def test_a_session_killed_at_random_moments_applies_and_reports_each_call_once(
    client: Client, workspace: Path, task_queue: str, tmp_path: Path, scripted: ScriptedModelServer,
    provider: str, seed: int, kills: int,
) -> None:
    seed += int(os.environ.get("SESSION_KILL_SEED_OFFSET", "0"))  # a soak run: other moments
    print(f"seed={seed} provider={provider} kills={kills}")
    rng = random.Random(seed)
    (workspace / "log.txt").write_text("line 0\n")
    (workspace / BIG).write_bytes(b"a line of text that is there to be scanned\n" * 2_000_000)
    address = server_address(client)
    worker = WorkerProcess(address, workspace, task_queue, tmp_path / "worker0.log").start()
    try:
        sid = await sessions.start_session(
            client, workspace=workspace, task_queue=task_queue, provider=provider, model="scripted",
            prompt="append lines 1 to 4 to log.txt", policy="auto",
        )
        seen = 0
        for kill in range(1, kills + 1):
            seen = await _kill_at_a_random_moment(rng, scripted, worker, seen, client, sid)
            worker.stop()
            worker = WorkerProcess(address, workspace, task_queue, tmp_path / f"worker{kill}.log").start()
        view = await sessions.wait_for_answer(client, sid, timeout=120)
        entries = await sessions.transcript(client, sid)
        await sessions.close(client, sid)
    finally:
        worker.stop()
    t0 = scripted.requests[0].received_at
    print("model requests at (s)", [round(r.received_at - t0, 2) for r in scripted.requests])

    assert view.state == SessionState.WAITING_FOR_USER and view.last_answer == FINAL, view
    # A model call retried after a kill is one call; so is a turn.
    assert view.model_calls == len(STEPS) + 1 and view.turns == len(STEPS), view
    # Each edit and write landed exactly once.
    assert (workspace / "log.txt").read_text() == "".join(f"line {n}\n" for n in range(5))
    assert (workspace / "new.txt").read_text() == "created\n"
    assert (workspace / "second.txt").read_text() == "second\n"
    assert (workspace / "bash.log").read_text() == "ran\n"

    # The model's last request: each call once, in the scripted order, and
    # each call's result once, in the calls' order.
    final_request = scripted.requests[-1].body
    assert sum(1 for m in final_request["messages"] if m["role"] == "assistant") == len(STEPS)
    calls, results = _calls_and_results(final_request)
    assert [(name, args) for _, name, args in calls] == [(c.name, c.arguments) for c in CALLS]
    assert [call_id for call_id, _ in results] == [call_id for call_id, _, _ in calls]
    assert len({call_id for call_id, _ in results}) == len(CALLS)
    texts = [text for _, text in results]
    assert "line 0" in texts[0] and "line 1" not in texts[0]  # read before this turn's edit
    assert "created" in texts[4]
    assert all(t.count(f"line {n}") == 1 for t in [texts[9]] for n in range(4)) and "line 4" not in texts[9], texts[9]
    failed = [(CALLS[i].name, t) for i, t in enumerate(texts) if "error" in t.lower() or "conflict" in t.lower()]
    assert not failed, failed
    assert [e.kind for e in entries] == ["system", "user"] + ["assistant", "tool_results"] * len(STEPS) + ["assistant"]
