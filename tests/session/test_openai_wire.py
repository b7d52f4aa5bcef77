"""The OpenAI request goes out as the body we built, not through the SDK's
per-call walk of every message.

Passed as arguments, ``chat.completions.create`` walks the messages and tool
schemas against its typed dicts on every call (~56 ms of CPU for 300
messages, on the worker's event loop, growing with the conversation). The
body goes as ``extra_body`` instead. That is only right while the walk would
return our body unchanged, which the first test checks for every shape the
transcript produces (reasoning fields, a server's extras on a call, tool
results); the others check what reaches the server and that the walk no
longer sees the transcript."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import openai.resources.chat.completions.completions as completions_module
import pytest
from openai._utils import async_maybe_transform
from openai.types.chat import completion_create_params

from activities.model.openai_chat import make_client, request_arguments, stream_items
from core.contracts import ToolCall
from core.session.contracts import ModelConfig, TranscriptEntry
from tests.model_server import Reply, ScriptedModelServer


def transcript(exchanges: int) -> list[TranscriptEntry]:
    entries = [
        TranscriptEntry(kind="system", text="You are a coding agent."),
        TranscriptEntry(kind="user", text="fix the failing test ✓"),
    ]
    for i in range(exchanges):
        call_id = f"call_{i}"
        entries.append(TranscriptEntry(
            kind="assistant",
            text="" if i % 2 else f"step {i}",
            tool_calls=[ToolCall(id=call_id, name="read_file", arguments={"path": "notes.txt", "limit": i})],
            # A Gemini thought signature on the call, reasoning text and
            # OpenRouter's reasoning_details: fields the SDK's types do not name.
            call_extras={call_id: {"extra_content": {"google": {"thought_signature": "c2ln"}}}},
            reasoning={"reasoning_content": "look first"},
            reasoning_details=[{"type": "reasoning.text", "text": "look first", "format": None}],
        ))
        entries.append(TranscriptEntry(kind="tool_results", turn_id=f"t{i}", items=[
            {"role": "tool", "tool_call_id": call_id, "content": "     1\thello\n"},
        ]))
    entries.append(TranscriptEntry(kind="assistant", text=""))
    return entries


CONFIGS = [
    ModelConfig(provider="openai", model="scripted"),
    ModelConfig(provider="openai", model="scripted", max_output_tokens=512, temperature=0.2),
]


@pytest.mark.parametrize("config", CONFIGS, ids=["plain", "capped"])
@pytest.mark.parametrize("openai_api", [False, True])
def test_the_sdk_walk_would_send_our_body_unchanged(config: ModelConfig, openai_api: bool) -> None:
    body = request_arguments(config, transcript(6), openai_api)
    walked = asyncio.run(async_maybe_transform(body, completion_create_params.CompletionCreateParamsStreaming))
    # If this fails after an SDK upgrade, the SDK now rewrites something our
    # transcript holds (an alias, an encoding): pass that field as an argument.
    assert json.dumps(walked, sort_keys=True) == json.dumps(body, sort_keys=True)


async def test_the_server_receives_the_whole_body_and_the_walk_never_sees_the_transcript(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    walked_messages: list[int] = []
    real_walk = completions_module.async_maybe_transform

    async def counting_walk(data: Any, expected_type: Any) -> Any:
        if isinstance(data, dict):
            walked_messages.append(len(list(data.get("messages") or [])))
        return await real_walk(data, expected_type)

    monkeypatch.setattr(completions_module, "async_maybe_transform", counting_walk)
    config = ModelConfig(provider="openai", model="scripted", max_output_tokens=64, temperature=0.0)
    entries = transcript(40)
    with ScriptedModelServer([Reply(text="done")]) as server:
        client = make_client("sk-test", server.openai_base_url)
        items = [item async for item in stream_items(client, config, entries)]
        await client.close()
    sent = server.requests[0].body
    assert sent == request_arguments(config, entries)
    assert len(sent["messages"]) == 2 + 2 * 40 + 1 and sent["tools"] and sent["stream"] is True
    assert sent["messages"][2]["tool_calls"][0]["extra_content"] == {"google": {"thought_signature": "c2ln"}}
    assert sent["max_tokens"] == 64 and sent["stream_options"] == {"include_usage": True}
    assert server.requests[0].headers.get("authorization") == "Bearer sk-test"
    text = "".join(
        choice.get("delta", {}).get("content") or "" for item in items for choice in item.get("choices", [])
    )
    assert text == "done"
    assert walked_messages == [0]  # the SDK walked an empty list, not 81 messages
