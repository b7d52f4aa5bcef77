"""Full sessions through the official SDKs against the scripted model server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from temporalio.client import Client

from core.session.contracts import SessionState
from runtime import session_api as sessions
from tests.model_server import Reply, ScriptedModelServer, tool
from tests.session.test_session_support import API_KEY, model_server  # noqa: F401  (fixture)
from runtime.worker import build_worker


async def _start(client: Client, workspace: Path, task_queue: str, provider: str, prompt: str) -> str:
    return await sessions.start_session(client, workspace=workspace, task_queue=task_queue, provider=provider,
                                        model="scripted-model", prompt=prompt, policy="auto")


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_full_session(
    provider: str, client: Client, workspace: Path, task_queue: str, model_server: ScriptedModelServer
) -> None:
    (workspace / "app.py").write_text("def f():\n    return 1\n")
    model_server.add(
        Reply(text="Let me look.", tool_calls=[tool("read_file", path="app.py"), tool("glob", pattern="*.py")]),
        Reply(tool_calls=[tool("edit_file", path="app.py", old_string="return 1", new_string="return 2")]),
        Reply(text="Changed f to return 2."),
        Reply(text="It returns 2 now."),
    )
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        sid = await _start(client, workspace, task_queue, provider, "Make f return 2")
        view = await sessions.wait_for_answer(client, sid, timeout=60)
        assert view.state == SessionState.WAITING_FOR_USER, view
        assert view.last_answer == "Changed f to return 2."
        assert (workspace / "app.py").read_text() == "def f():\n    return 2\n"
        assert view.model_calls == 3 and view.turns == 2
        answer = await sessions.send(client, sid, "What does f return?", wait=True)
        assert answer is not None and answer.last_answer == "It returns 2 now."
        entries = await sessions.transcript(client, sid)
        result = await sessions.close(client, sid, "done")
        history = await client.get_workflow_handle(sid).fetch_history()
    assert result.state == SessionState.CLOSED
    assert result.usage.input_tokens == 4 * 20 and result.usage.output_tokens > 0
    assert [e.kind for e in entries] == [
        "system", "user", "assistant", "tool_results", "assistant", "tool_results", "assistant", "user", "assistant",
    ]
    # What the SDK sent for call 2: the first turn's results in the provider's shape.
    second = model_server.requests[1].body
    if provider == "openai":
        tool_messages = [m for m in second["messages"] if m["role"] == "tool"]
        assert [m["tool_call_id"] for m in tool_messages] == ["call_0_0", "call_0_1"]
        assert "return 1" in tool_messages[0]["content"]
        assert second["tools"][0]["type"] == "function" and second["stream"] is True
    else:
        last = second["messages"][-1]
        assert last["role"] == "user"
        assert [b["tool_use_id"] for b in last["content"]] == ["toolu_0_0", "toolu_0_1"]
        assert last["content"][0]["is_error"] is False
        assert "input_schema" in second["tools"][0] and second["system"].startswith("You are")
    # The key is in the worker's environment only, never in the history.
    assert API_KEY not in json.dumps(history.to_json_dict())


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_each_tool_call_surfaces_while_the_model_still_streams(
    provider: str, client: Client, workspace: Path, task_queue: str, model_server: ScriptedModelServer
) -> None:
    """The hook streaming dispatch builds on: through the real SDK
    stream, a call is handed over when its JSON closes, before the response ends."""
    from activities.model.activity import session_activities

    seen: list[tuple[int, str, int]] = []  # (position, name, streams still open)

    def on_closed(request: object, call: object) -> None:
        seen.append((call.position, call.name, model_server.streams_in_progress))  # type: ignore[attr-defined]

    model_server.add(
        Reply(tool_calls=[tool("glob", pattern="*.py"), tool("grep", pattern="def f", path=".", include="*.py")],
              tokens_per_second=50),
        Reply(text="ok"),
    )
    (workspace / "a.py").write_text("def f(): pass\n")
    extras = session_activities(str(workspace), on_closed_call=on_closed)
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace), extra_activities=extras):
        sid = await _start(client, workspace, task_queue, provider, "find f")
        view = await sessions.wait_for_answer(client, sid, timeout=60)
    assert view.last_answer == "ok"
    assert [(p, n) for p, n, _ in seen] == [(0, "glob"), (1, "grep")]
    assert seen[0][2] == 1  # glob was complete while the stream was still open


async def test_openai_compatible_servers_that_number_calls_their_own_way(
    client: Client, workspace: Path, task_queue: str, model_server: ScriptedModelServer
) -> None:
    """Through the real openai SDK: a server that sends every call whole
    under index 0 (Ollama) and one that sends no index (Gemini) still get
    two calls run and two results back, one per id; what a server adds to a
    call (Gemini's thought signature) goes back with the call."""
    (workspace / "a.py").write_text("A = 1\n")
    (workspace / "b.py").write_text("B = 2\n")
    calls = [tool("read_file", path="a.py"), tool("read_file", path="b.py")]
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        for n, framing in enumerate(["same_index", "no_index"]):
            signed = {"extra_content": {"google": {"thought_signature": f"sig-{framing}"}}}
            model_server.add(Reply(tool_calls=calls, openai_tool_framing=framing, openai_call_extra=signed),
                             Reply(text=f"read both ({framing})"))
            sid = await _start(client, workspace, task_queue, "openai", "read a.py and b.py")
            view = await sessions.wait_for_answer(client, sid, timeout=60)
            assert view.last_answer == f"read both ({framing})", view
            follow_up = model_server.requests[2 * n + 1].body["messages"]
            assistant = next(m for m in follow_up if m["role"] == "assistant")
            assert [json.loads(c["function"]["arguments"]) for c in assistant["tool_calls"]] == [
                {"path": "a.py"}, {"path": "b.py"}]
            assert [c.get("extra_content") for c in assistant["tool_calls"]] == [signed["extra_content"]] * 2
            answers = [m for m in follow_up if m["role"] == "tool"]
            assert [m["tool_call_id"] for m in answers] == [c["id"] for c in assistant["tool_calls"]]
            assert "A = 1" in answers[0]["content"] and "B = 2" in answers[1]["content"], framing
            await sessions.close(client, sid, "done")


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_a_server_that_answers_a_stream_request_with_one_json_body(
    provider: str, client: Client, workspace: Path, task_queue: str, model_server: ScriptedModelServer
) -> None:
    """Asked to stream, some servers and proxies send the whole answer as
    JSON; the SDK then sees no events. The answer is read all the same, and
    a body that is no answer ends the session saying so, without retrying."""
    from core.session import provider_errors as errors

    (workspace / "a.py").write_text("A = 1\n")
    model_server.add(
        Reply(text="Reading.", tool_calls=[tool("read_file", path="a.py"), tool("glob", pattern="*.py")], unstreamed=True),
        Reply(text="A is 1.", unstreamed=True),
        # Events under the wrong label: still the stream they are.
        Reply(text="Still 1.", tool_calls=[tool("glob", pattern="*.py")], stream_content_type="application/json"),
        Reply(text="Checked."),
        Reply(unstreamed='{"detail": "upstream unavailable"}'),
    )
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        sid = await _start(client, workspace, task_queue, provider, "what is A?")
        view = await sessions.wait_for_answer(client, sid, timeout=60)
        assert view.state == SessionState.WAITING_FOR_USER and view.last_answer == "A is 1.", view
        assert view.turns == 1
        second = json.dumps(model_server.requests[1].body)
        assert "A = 1" in second  # the read ran and its result went back
        labelled = await sessions.send(client, sid, "sure?", wait=True)
        assert labelled is not None and labelled.last_answer == "Checked." and labelled.turns == 2, labelled
        assert "a.py" in json.dumps(model_server.requests[3].body)  # the glob ran
        await sessions.send(client, sid, "and B?", wait=False)
        result = await sessions.result(client, sid)
    assert result.state == SessionState.MODEL_ERROR and result.error_type == errors.BAD_REQUEST
    assert "upstream unavailable" in result.message and "without a stream" in result.message
    assert len(model_server.requests) == 5  # not retried


async def test_anthropic_thinking_goes_back_with_the_tool_calls(
    client: Client, workspace: Path, task_queue: str, model_server: ScriptedModelServer
) -> None:
    """A server that thinks aloud (extended thinking, or a compatible server
    that always does) needs its signed thinking blocks back, first, in the
    assistant message that used tools; they are not part of the answer."""
    (workspace / "a.py").write_text("A = 1\n")
    model_server.add(
        Reply(thinking="I should read a.py first.", tool_calls=[tool("read_file", path="a.py")]),
        Reply(thinking="It says A = 1.", text="A is 1.", unstreamed=True),
    )
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        view = await sessions.wait_for_answer(client, await _start(client, workspace, task_queue, "anthropic", "A?"),
                                              timeout=60)
    assert view.last_answer == "A is 1."
    assistant = [m for m in model_server.requests[1].body["messages"] if m["role"] == "assistant"]
    assert [b["type"] for b in assistant[0]["content"]] == ["thinking", "tool_use"]
    assert assistant[0]["content"][0] == {"type": "thinking", "thinking": "I should read a.py first.", "signature": "sig_0"}


async def test_openai_compatible_reasoning_goes_back_with_the_tool_calls(
    client: Client, workspace: Path, task_queue: str, model_server: ScriptedModelServer
) -> None:
    """DeepSeek's thinking mode streams reasoning_content and refuses the
    next request unless it comes back with the message that used tools."""
    (workspace / "a.py").write_text("A = 1\n")
    model_server.add(
        Reply(reasoning="Read a.py first.", tool_calls=[tool("read_file", path="a.py")]),
        Reply(reasoning="It says A = 1.", text="A is 1.", unstreamed=True),
        Reply(text="Still 1."),
    )
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        sid = await _start(client, workspace, task_queue, "openai", "A?")
        view = await sessions.wait_for_answer(client, sid, timeout=60)
        assert view.last_answer == "A is 1."  # reasoning is not the answer
        await sessions.send(client, sid, "sure?", wait=True)
    assistant = [m for m in model_server.requests[2].body["messages"] if m["role"] == "assistant"]
    assert [m.get("reasoning_content") for m in assistant] == ["Read a.py first.", "It says A = 1."]
    assert assistant[1]["content"] == "A is 1."


async def test_openrouter_reasoning_details_go_back_as_assembled(
    client: Client, workspace: Path, task_queue: str, model_server: ScriptedModelServer
) -> None:
    """OpenRouter streams reasoning_details in pieces by index; the reasoning
    model behind it keeps its chain across tool calls only when the next
    request brings them back unchanged with the assistant message."""
    (workspace / "a.py").write_text("A = 1\n")
    thought = [{"type": "reasoning.text", "text": "Read a.py first, then answer.", "signature": "c2lnbmF0dXJl",
                "id": "rs_0", "format": "anthropic-claude-v1", "index": 0},
               {"type": "reasoning.encrypted", "data": "ZW5jcnlwdGVkIHJlYXNvbmluZw==", "id": "rs_1",
                "format": "anthropic-claude-v1", "index": 1}]
    summary = [{"type": "reasoning.summary", "summary": "It says A = 1.", "id": None, "format": "openai-responses-v1",
                "index": 0}]
    model_server.add(
        Reply(reasoning_details=thought, tool_calls=[tool("read_file", path="a.py")]),
        Reply(reasoning_details=summary, text="A is 1.", unstreamed=True),
        Reply(text="Still 1."),
    )
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        sid = await _start(client, workspace, task_queue, "openai", "A?")
        view = await sessions.wait_for_answer(client, sid, timeout=60)
        assert view.last_answer == "A is 1."
        await sessions.send(client, sid, "sure?", wait=True)
    assistant = [m for m in model_server.requests[2].body["messages"] if m["role"] == "assistant"]
    assert [m.get("reasoning_details") for m in assistant] == [thought, summary]


async def test_reasoning_details_of_a_bad_shape_are_skipped_not_fatal(
    client: Client, workspace: Path, task_queue: str, model_server: ScriptedModelServer
) -> None:
    (workspace / "a.py").write_text("A = 1\n")
    readable = {"type": "reasoning.text", "text": "Broken \ud83d thought.", "id": "rs_0", "format": "unknown", "index": 3}
    model_server.add(
        Reply(reasoning_details=["junk", {"type": "reasoning.text", "text": "no index"}, {"index": "1", "text": "?"},
                                 readable], tool_calls=[tool("read_file", path="a.py")]),
        Reply(reasoning_details="not a list", text="A is 1.", unstreamed=True),
        Reply(reasoning_details={"index": 0, "text": "an object"}, text="Still 1."),
    )
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        sid = await _start(client, workspace, task_queue, "openai", "A?")
        view = await sessions.wait_for_answer(client, sid, timeout=60)
        assert view.last_answer == "A is 1."
        answer = await sessions.send(client, sid, "sure?", wait=True)
        assert answer is not None and answer.last_answer == "Still 1."
    assistant = [m for m in model_server.requests[2].body["messages"] if m["role"] == "assistant"]
    assert assistant[0]["reasoning_details"] == [{**readable, "text": "Broken \ufffd thought."}]  # (invalid Unicode replaced)
    assert "reasoning_details" not in assistant[1]


async def test_a_model_call_heartbeats_while_its_dispatched_calls_are_still_being_sent(
    client: Client, workspace: Path, task_queue: str, model_server: ScriptedModelServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Between the end of the stream and the batch's close the call waits for
    the dispatch signals still on their way; on a loaded server that took
    longer than the 10 s heartbeat timeout, the model call was cancelled and
    retried, and the retry took the next answer for this one."""
    from activities.model.dispatch import StreamDispatcher

    send_all = StreamDispatcher._send_all

    async def slow_send_all(self: StreamDispatcher) -> None:
        await asyncio.sleep(12)  # past the model call's heartbeat timeout
        await send_all(self)

    monkeypatch.setattr(StreamDispatcher, "_send_all", slow_send_all)
    (workspace / "app.py").write_text("x = 1\n")
    model_server.add(
        Reply(text="Looking.", tool_calls=[tool("read_file", path="app.py")]),
        Reply(text="x is 1."),
        Reply(text="(a retried call took this answer)"),
    )
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        sid = await _start(client, workspace, task_queue, "openai", "What is x?")
        view = await sessions.wait_for_answer(client, sid, timeout=90)
    assert view.last_answer == "x is 1." and view.model_calls == 2, view
    assert len(model_server.requests) == 2  # no model call was made twice
