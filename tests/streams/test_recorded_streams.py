"""Streams recorded from real servers, replayed byte for byte.

Each file in tests/data/recorded_streams is a streamed response as a real
server sent it (index.json names its source, provider and what it shows).
The scripted model server answers with those exact bytes under the recorded
Content-Type, once in one write and once cut into small writes that split
lines and events, through the official SDK and ``stream_model``; the test
asserts what a reader of the recording knows the answer to be: the text,
each call's id, name and arguments, the reasoning, the usage, the stop."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from core.session import provider_errors as errors
from core.session.contracts import ModelConfig, TranscriptEntry
from tests.model_server import Reply, ScriptedModelServer

RECORDED = Path(__file__).resolve().parents[1] / "data" / "recorded_streams"
INDEX = {entry["file"]: entry for entry in json.loads((RECORDED / "index.json").read_text())}


@dataclass
class Text:
    """A long text by its start, its end and its length."""
    start: str
    end: str
    length: int


@dataclass
class Known:
    text: str | Text = ""
    calls: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)  # (id, name, arguments)
    usage: tuple[int, int, int, int] = (0, 0, 0, 0)  # input, output, cache read, cache write
    stop: str | None = None  # the server's own stop reason
    reasoning: dict[str, Text] = field(default_factory=dict)
    thinking: list[tuple[str, str]] = field(default_factory=list)  # (type, the thinking or the data's start)
    details: list[tuple[str, str]] = field(default_factory=list)  # reasoning_details: (text, signature's start)
    response_id: str = ""
    error: str | None = None  # the error class the model call fails with


KNOWN: dict[str, Known] = {
    "openai_parallel_calls_no_arguments.sse": Known(
        calls=[("call_q2UyBRP7eXNTzAoR8lEhjc9Z", "get_country", {}),
               ("call_b51ijcpFkDiTQG1bQzsrmtW5", "get_product_name", {})],
        usage=(364, 40, 0, 0), stop="tool_calls", response_id="chatcmpl-C2QD1kGWsTW5OWiqAtOSFEAOfPfQH"),
    "openai_parallel_calls_with_arguments.sse": Known(
        calls=[("call_NS4iQj14cDFwc0BnrKqDHavt", "get_weather", {"city": "Mexico City"}),
               ("call_SkGkkGDvHQEEk0CGbnAh2AQw", "get_product_name", {})],
        usage=(417, 44, 0, 0), stop="tool_calls", response_id="chatcmpl-CMKAuuvC6E26nL6HLZzTrysEvC8Ln"),
    "openai_call_arguments_in_many_fragments.sse": Known(
        calls=[("call_CCGIWaMeYWmxOQ91orkmTvzn", "final_result", {"answers": [
            {"label": "Capital", "answer": "The capital of Mexico is Mexico City."},
            {"label": "Weather", "answer": "The weather in Mexico City is currently sunny."},
            {"label": "Product Name", "answer": "The product name is Pydantic AI."}]})],
        usage=(448, 62, 0, 0), stop="tool_calls", response_id="chatcmpl-C2QD4vblfNcSDeoXmULJR4umoKNqY"),
    "groq_usage_in_x_groq.sse": Known(
        text=Text("The weather in San Francisco today is partly cloudy",
                  "and a humidity level of 90-94%.", 200),
        reasoning={"reasoning": Text("<think>\nTo find the current weather in San Francisco",
                                     "61°F (17°C) and high humidity.", 6255)},
        usage=(5003, 359, 0, 0), stop="stop", response_id="chatcmpl-03ea1ed2-c2dc-4f8d-ba51-54e08ca9287c"),
    "groq_error_mid_stream.sse": Known(error=errors.SERVER_ERROR),
    "groq_reasoning_and_call.sse": Known(
        calls=[("fc_bfb39741-3748-4def-9886-a93fc9c64a90", "get_something_by_name", {"name": "example"})],
        reasoning={"reasoning": Text('We need to call the function with correct parameter "name".',
                                     'Provide a name, e.g., "example".', 92)},
        usage=(304, 49, 0, 0), stop="tool_calls", response_id="chatcmpl-e35442a8-12c0-4fb4-8be4-0e51727ce7b7"),
    "deepseek_reasoning_content.sse": Known(
        text="Hello there! 😊 How can I help you today?",
        reasoning={"reasoning_content": Text('Hmm, the user just said "Hello".',
                                             "not reply further - and that's okay too.", 882)},
        usage=(6, 212, 0, 0), stop="stop", response_id="33be18fc-3842-486c-8c29-dd8e578f7f20"),
    "openrouter_error_mid_stream.sse": Known(error=errors.BAD_REQUEST),  # {"code": 400, "Token limit reached"}
    "openrouter_reasoning_details.sse": Known(
        text="2 + 2 = 4",
        reasoning={"reasoning": Text("This is a simple arithmetic question.", "2+2 equals 4.", 51)},
        details=[("This is a simple arithmetic question. 2+2 equals 4.", "Et0BCkgIChACGAIqQA2s")],
        usage=(43, 36, 0, 0), stop="stop", response_id="gen-1765226419-AGrwjunAftQIAgweibL8"),
    "mistral_thinking_parts.sse": Known(
        text=Text("To cross the street safely, follow these steps:\n\n1. Look both ways",
                  "By following these steps, you can ensure a safe crossing.", 607),
        usage=(10, 232, 0, 0), stop="stop", response_id="9f9d90210f194076abeee223863eaaf0"),
    "zai_reasoning_content.sse": Known(
        text="4",
        reasoning={"reasoning_content": Text("\n1.  **Analyze the User's Request:**",
                                             '**Draft the final response:** "4".', 2173)},
        usage=(13, 564, 0, 0), stop="stop", response_id="202607010739425543ff9439144b2c"),
    "snowflake_no_finish_reason.sse": Known(
        text="15 × 27 = **405**\n\nHere's the breakdown:\n- 15 × 20 = 300\n- 15 × 7 = 105\n- 300 + 105 = **405**",
        details=[("15 * 27 = 405", "")], usage=(45, 73, 0, 0), stop=None),
    "novita_via_huggingface.sse": Known(
        text="Paris", usage=(40, 2, 0, 0), stop="stop", response_id="ebafdc26c3296ed027c5cd6565fa1bce"),
    "anthropic_call_after_server_tool.sse": Known(
        text=Text("Let me search for a tool that can provide current exchange rate information.",
                  "Let me fetch the current USD to EUR exchange rate for you.", 158),
        calls=[("toolu_01EFn5wTNBYA8Reni8rbmnHT", "get_exchange_rate", {"from_currency": "USD", "to_currency": "EUR"})],
        usage=(1591, 175, 0, 0), stop="tool_use", response_id="msg_01E3Wn1NynZw9FALZ68znj9S"),
    "anthropic_redacted_thinking.sse": Known(
        text=Text("I notice that you've sent what appears to be some kind of test string",
                  "assist you today with a legitimate task or question?", 359),
        thinking=[("redacted_thinking", "EqkECkYIBxgCKkA8AZ4n"), ("redacted_thinking", "EtgBCkYIBxgCKkDQfGkw")],
        usage=(92, 189, 0, 0), stop="end_turn", response_id="msg_018XZkwvj9asBiffg3fXt88s"),
    "anthropic_cache_usage.sse": Known(
        text="Hello! 👋", usage=(181, 8, 55096, 0), stop="end_turn", response_id="msg_011CduoCRono7pFKoTWpPAia"),
    "deepseek_reasoning_then_call.sse": Known(
        calls=[("call_00_ioIn7yN9p1ZOMNpDLwd4MgAF", "weather", {"location": "San Francisco"})],
        reasoning={"reasoning_content": Text("The user is asking for the weather in San Francisco.",
                                             'location parameter set to "San Francisco".', 191)},
        usage=(339, 83, 320, 0), stop="tool_calls", response_id="cca85624-4056-401f-b220-d77601d1f70d"),
    "xai_reasoning_then_call.sse": Known(
        calls=[("call_79382389", "weather", {"location": "San Francisco"})],
        reasoning={"reasoning_content": Text("First, the user is asking about the weather in San Francisco",
                                             "for now, this is the logical next step.", 1069)},
        usage=(307, 26, 306, 0), stop="tool_calls", response_id="7027d986-3c59-a37a-9a5f-50713e01c8a6"),
    "glm_call_with_empty_name_continuation.sse": Known(
        calls=[("chatcmpl-tool-9f149c74c42f265b", "webSearchTool", {"query": "current Berlin weather"})],
        usage=(171, 14, 128, 0), stop="tool_calls", response_id="735e434874a24f68a2390b3cab149242"),
    "mistral_whole_call.sse": Known(
        calls=[("gSIMJiOkT", "weather", {"location": "San Francisco"})],
        usage=(124, 22, 0, 0), stop="tool_calls", response_id="b3999b8c93e04e11bcbff7bcab829667"),
    "alibaba_call.sse": Known(
        calls=[("call_eee11723464a4b9eb8cee71d", "weather", {"location": "San Francisco"})],
        usage=(295, 22, 0, 0), stop="tool_calls", response_id="chatcmpl-8e243c57-23b3-9db2-a02e-e3c53929c368"),
    "groq_whole_call_with_both_usages.sse": Known(
        calls=[("tk85n1k4m", "weather", {})],
        usage=(210, 15, 0, 0), stop="tool_calls", response_id="chatcmpl-b610d559-f156-4aca-8827-24b4fe6af54f"),
    "gateway_call_at_index_one.sse": Known(
        text="Reading it.", calls=[("toolu_sanitized", "read_file", {"path": "a.txt"})],
        stop="tool_calls", response_id="msg_sanitized"),
    "anthropic_call_without_arguments.sse": Known(
        text="I'll update the issue list for you.", calls=[("toolu_01QE1WLsSVp5hy5Q3GmGTmjP", "updateIssueList", {})],
        usage=(565, 48, 0, 0), stop="tool_use", response_id="msg_01GE2RKp1VYsPzdFs3sS9z5S"),
    "anthropic_text_then_call.sse": Known(
        text="I'll invoke the JSON response tool.",
        calls=[("toolu_01KFbKqPYSuAKujiL6mTfzYA", "json",
                {"elements": [{"location": "San Francisco", "temperature": 58, "condition": "sunny"}]})],
        usage=(849, 47, 0, 0), stop="tool_use", response_id="msg_01K2JbSUMYhez5RHoK9ZCj9U"),
    "anthropic_input_tokens_in_message_delta.sse": Known(
        text="pong", usage=(61, 2, 0, 0), stop="end_turn", response_id="msg_3196a1cc08de4d76b85b8f5777c0d42b"),
    "kimi_call_sent_twice_no_finish_reason.sse": Known(
        calls=[("0", "llm_version", {})], usage=(57, 17, 0, 0), stop=None,
        response_id="gen-1753242299-QZRAt5HJHd1ptY8sdS0s"),
    "kimi_call_id_with_colon.sse": Known(
        calls=[("llm_version:0", "llm_version", {})], usage=(56, 12, 0, 0), stop="tool_calls",
        response_id="gen-1753248108-FGOxpkEzFEwhNKSPpI4a"),
    "ollama_parallel_calls.sse": Known(
        calls=[("call_wteop8bt", "run_command", {"command": "ls"}), ("call_rk2xye1l", "run_command", {"command": "ls -l"})],
        stop="tool_calls", response_id="chatcmpl-18"),
    "azure_filter_results_and_empty_first_chunk.sse": Known(
        text="Capital of Denmark.", usage=(15, 78, 0, 0), stop="stop", response_id="chatcmpl-CYPS1lijGoK8gd9lYzY3r9Sx50nbt"),
    # The second message_start begins the answer over: only the second generation is the answer.
    "anthropic_generation_restarted.sse": Known(
        calls=[("toolu_second", "test-tool", {"value": "Sparkle Day"})],
        thinking=[("thinking", "Let me call the tool.")],
        usage=(17, 65, 0, 0), stop="tool_use", response_id="msg_second"),
}


def test_every_recording_is_indexed_and_known() -> None:
    on_disk = {p.name for p in RECORDED.glob("*.sse")}
    assert on_disk == set(INDEX) == set(KNOWN)
    for entry in INDEX.values():
        assert entry["source"].startswith("github:") and entry["provider"] and entry["shows"]


def _pieces(body: str, split: bool) -> list[str]:
    # 61 characters: the writes cut lines, JSON and "data:" prefixes in the middle
    return [body[i:i + 61] for i in range(0, len(body), 61)] if split else [body]


async def _replay(name: str, split: bool) -> Any:
    from activities.model.activity import stream_model

    entry = INDEX[name]
    body = (RECORDED / name).read_bytes().decode("utf-8")
    with ScriptedModelServer([Reply(raw_stream=_pieces(body, split), stream_content_type=entry["content_type"])]) as server:
        url = server.openai_base_url if entry["api"] == "openai" else server.anthropic_base_url
        return await stream_model(ModelConfig(provider=entry["api"], model="m"),
                                  [TranscriptEntry(kind="user", text="hi")], "k", url, lambda calls: None)


def _rest(got: str, start: str) -> str:
    """What follows ``start`` in ``got`` when got begins with it (the part a test names only by its start)."""
    return got[len(start):] if got.startswith(start) else ""


def _check_text(got: str, known: str | Text) -> None:
    if isinstance(known, Text):
        assert (got[:len(known.start)], got[-len(known.end):], len(got)) == (known.start, known.end, known.length)
    else:
        assert got == known


@pytest.mark.parametrize("split", [False, True], ids=["whole", "in-pieces"])
@pytest.mark.parametrize("name", sorted(KNOWN))
async def test_a_recorded_stream_reads_as_the_answer_it_holds(name: str, split: bool) -> None:
    known = KNOWN[name]
    if known.error is not None:
        from activities.model.activity import classify

        with pytest.raises(Exception) as raised:
            await _replay(name, split)
        classified = classify(INDEX[name]["api"], raised.value)
        assert classified is not None and classified.type == known.error, raised.value
        return
    response = await _replay(name, split)
    _check_text(response.text, known.text)
    assert [(c.id, c.name, json.loads(c.final_arguments), c.repair) for c in response.calls] == \
        [(call_id, tool, arguments, "") for call_id, tool, arguments in known.calls]
    usage = response.usage
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens) == known.usage
    assert response.raw_stop_reason == known.stop
    assert set(response.reasoning) == set(known.reasoning)
    for field_name, text in known.reasoning.items():
        _check_text(response.reasoning[field_name], text)
    # thinking blocks and reasoning details by their text and the start of their signature or data
    assert [(t["type"], t.get("thinking") or t.get("data") or "") for t in response.thinking] == \
        [(kind, text + _rest(t.get("thinking") or t.get("data") or "", text))
         for (kind, text), t in zip(known.thinking, response.thinking)]
    assert [(d.get("text"), d.get("signature") or "") for d in response.reasoning_details] == \
        [(text, sig + _rest(d.get("signature") or "", sig)) for (text, sig), d in zip(known.details, response.reasoning_details)]
    assert response.response_id == known.response_id
