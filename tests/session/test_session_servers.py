"""What real model servers and proxies send beyond the two APIs' own
documents, through the official SDKs against the scripted server: each must
either read as the answer it stands for or fail as the error it is (retried
or ending the session with its own words), never crash the model call."""

from __future__ import annotations

import json
from typing import Any

import pytest

from core.session import provider_errors as errors
from core.session.contracts import ModelConfig, TranscriptEntry
from tests.model_server import Failure, Reply, ScriptedModelServer, tool
from tests.session.test_session_support import model_server  # noqa: F401  (fixture)


def _url(provider: str, server: ScriptedModelServer) -> str:
    return server.openai_base_url if provider == "openai" else server.anthropic_base_url


async def _stream(provider: str, server: ScriptedModelServer) -> Any:
    from activities.model.activity import stream_model

    return await stream_model(ModelConfig(provider=provider, model="m"), [TranscriptEntry(kind="user", text="hi")],
                              "k", _url(provider, server), lambda calls: None)


async def _classified(provider: str, server: ScriptedModelServer) -> Any:
    """The ApplicationError the next model call fails with."""
    from activities.model.activity import classify

    with pytest.raises(Exception) as raised:
        await _stream(provider, server)
    classified = classify(provider, raised.value)
    assert classified is not None, f"unclassified: {raised.value!r}"
    return classified


@pytest.mark.parametrize("unstreamed", [False, True], ids=["streamed", "whole"])
async def test_content_sent_as_typed_parts_is_read_as_its_text(
    unstreamed: bool, model_server: ScriptedModelServer
) -> None:
    """Mistral sends a message's content as a list of parts, its reasoning
    models' thinking as "thinking" parts before the text: the text parts are
    the answer, the thinking is not part of it."""
    model_server.add(Reply(text="The answer.", reasoning="Let me think.", content_parts=True, unstreamed=unstreamed,
                           tool_calls=[tool("glob", pattern="*.py")]))
    response = await _stream("openai", model_server)
    assert response.text == "The answer."
    assert [(c.name, json.loads(c.final_arguments)) for c in response.calls] == [("glob", {"pattern": "*.py"})]


@pytest.mark.parametrize(
    "provider, body, expected",
    [
        # OpenRouter: the upstream's failure, its HTTP status as the code
        ("openai", {"error": {"message": "Provider returned error", "code": 502}}, errors.SERVER_ERROR),
        ("openai", {"error": {"message": "Rate limit exceeded: slow down", "code": 429}}, errors.RATE_LIMITED),
        ("openai", {"error": {"message": "This model's maximum context length is 8192 tokens.",
                              "type": "invalid_request_error", "code": "context_length_exceeded"}},
         errors.CONTEXT_TOO_LONG),
        ("openai", {"error": {"message": "upstream connect error", "type": "server_error"}}, errors.SERVER_ERROR),
        ("anthropic", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
         errors.SERVER_ERROR),
        ("anthropic", {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}},
         errors.AUTHENTICATION_FAILED),
    ],
)
async def test_an_error_object_answered_with_200_is_classified_by_what_it_says(
    provider: str, body: dict[str, Any], expected: str, model_server: ScriptedModelServer
) -> None:
    """A gateway that answers 200 with the provider's error object (not an
    answer): an overload or a rate limit is retried, the rest ends the
    session with the server's own words, as the same error under its HTTP
    status would."""
    model_server.add(Reply(unstreamed=json.dumps(body)))
    classified = await _classified(provider, model_server)
    assert classified.type == expected and classified.non_retryable == (expected in errors.NON_RETRYABLE)
    assert (body["error"]["message"]) in classified.message


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_an_error_inside_events_labelled_json_is_not_taken_for_the_end(
    provider: str, model_server: ScriptedModelServer
) -> None:
    """Server-sent events labelled application/json that carry an error half
    way: the error, not the half answer before it."""
    model_server.add(Reply(text="a half answer that then fails", stream_content_type="application/json",
                           stream_error=(2, Failure(200, "api_error", "upstream died"))))
    classified = await _classified(provider, model_server)
    assert classified.type == errors.SERVER_ERROR and not classified.non_retryable
    assert "upstream died" in classified.message


async def test_an_error_given_as_a_plain_string_inside_a_stream(model_server: ScriptedModelServer) -> None:
    """{"error": "..."} with a string, not an object: retried as the
    server's failure, its words kept (it was an unclassified crash)."""
    model_server.add(Reply(text="an answer that fails half way",
                           stream_error=(2, json.dumps({"error": "upstream connection reset"}))))
    classified = await _classified("openai", model_server)
    assert classified.type == errors.SERVER_ERROR and not classified.non_retryable
    assert "upstream connection reset" in classified.message


@pytest.mark.parametrize(
    "provider, failure",
    [
        # llama.cpp's server
        ("openai", Failure(400, "exceed_context_size_error", "the request exceeds the available context size, "
                           "try increasing it")),
        # Anthropic, when input and max_tokens together overflow
        ("anthropic", Failure(400, "invalid_request_error", "input length and `max_tokens` exceed context limit: "
                              "195000 + 8192 > 200000, decrease input length or `max_tokens` and try again")),
        # Gemini's compatible API
        ("openai", Failure(400, "INVALID_ARGUMENT", "The input token count (1100000) exceeds the maximum number of "
                           "tokens allowed (1048576).")),
        # a request body over the server's or a proxy's size limit
        ("anthropic", Failure(413, "request_too_large", "Request exceeds the maximum allowed number of bytes.")),
    ],
)
async def test_a_conversation_too_long_is_known_by_each_servers_words(
    provider: str, failure: Failure, model_server: ScriptedModelServer
) -> None:
    """Ends the session saying the conversation outgrew the model's context
    (not that the server may not support tools)."""
    model_server.add(failure)
    classified = await _classified(provider, model_server)
    assert classified.type == errors.CONTEXT_TOO_LONG and classified.non_retryable
    assert failure.message in classified.message


@pytest.mark.parametrize("finish", ["abort", "error"])
async def test_an_answer_the_server_says_it_dropped_is_retried_not_taken(
    finish: str, model_server: ScriptedModelServer
) -> None:
    """vLLM ends a request it aborted with finish_reason "abort" (others
    "error"): what came before is half an answer, asked for again."""
    from activities.model.activity import classify

    model_server.add(Reply(text="half an ans", stop_reason=finish), Reply(text="the whole answer"))
    with pytest.raises(Exception) as raised:
        await _stream("openai", model_server)
    classified = classify("openai", raised.value)
    assert classified is not None and classified.type == errors.SERVER_ERROR and not classified.non_retryable
    assert finish in classified.message
    assert (await _stream("openai", model_server)).text == "the whole answer"


def _openai_chunk(delta: dict[str, Any], finish: str | None = None) -> str:
    return "data: " + json.dumps({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
                                  "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}) + "\n\n"


def _anthropic_event(data: dict[str, Any]) -> str:
    return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n"


_START = {"type": "message_start", "message": {"id": "msg", "type": "message", "role": "assistant", "model": "m",
                                                "content": [], "stop_reason": None, "usage": {"input_tokens": 1}}}


def _anthropic_tool(block: dict[str, Any]) -> list[str]:
    return [_anthropic_event(e) for e in (
        _START, {"type": "content_block_start", "index": 0, "content_block": block},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 5}},
        {"type": "message_stop"})]


@pytest.mark.parametrize(
    "provider, reply",
    [
        # an id that is a number, not a string
        ("openai", Reply(raw_stream=[_openai_chunk({"tool_calls": [{"index": 0, "id": 7, "type": "function", "function": {
            "name": "glob", "arguments": '{"pattern": "*"}'}}]}), _openai_chunk({}, "tool_calls")])),
        # tool_use input as JSON text (OpenAI's arguments), streamed and whole
        ("anthropic", Reply(raw_stream=_anthropic_tool({"type": "tool_use", "id": "toolu_1", "name": "glob",
                                                        "input": '{"pattern": "*"}'}))),
        ("anthropic", Reply(unstreamed=json.dumps({
            "id": "msg", "type": "message", "role": "assistant", "model": "m", "stop_reason": "tool_use",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "glob", "input": '{"pattern": "*"}'}]}))),
    ],
    ids=["numeric id", "input as text", "input as text, whole"],
)
async def test_a_call_in_the_other_apis_types_is_read_as_meant(
    provider: str, reply: Reply, model_server: ScriptedModelServer
) -> None:
    model_server.add(reply)
    response = await _stream(provider, model_server)
    assert [(c.name, json.loads(c.final_arguments), c.repair) for c in response.calls] == [("glob", {"pattern": "*"}, "")]
    assert all(isinstance(c.id, str) and c.id for c in response.calls)


_GLOB = '{"pattern": "*.py"}'
_OPENING = {"index": 0, "id": "call_a", "type": "function", "function": {"name": "glob", "arguments": ""}}
_WHOLE = {"index": 0, "id": "call_a", "type": "function", "function": {"name": "glob", "arguments": _GLOB}}
_REPEATS = {
    # each call streamed in pieces, then sent again whole at the end
    "indexed": [_OPENING, {"index": 0, "function": {"arguments": _GLOB[:9]}},
                {"index": 0, "function": {"arguments": _GLOB[9:]}}, _WHOLE],
    # sent whole, then again whole (its arguments as an object the second time)
    "whole twice": [_WHOLE, {**_WHOLE, "function": {"name": "glob", "arguments": json.loads(_GLOB)}}],
    # Gemini's framing (no index), then the call again
    "no index": [{k: v for k, v in _WHOLE.items() if k != "index"}] * 2,
    # the last delta repeats the id and the name, with no arguments
    "name again": [_WHOLE, {**_OPENING}],
}


@pytest.mark.parametrize("framing", list(_REPEATS))
async def test_a_call_sent_again_whole_runs_once(framing: str, model_server: ScriptedModelServer) -> None:
    """A proxy that turns another API's stream into OpenAI deltas may send a
    finished call once more (same id, same name, same or no arguments): it is
    the same call, not a second one (which would run the command twice)."""
    deltas = [_openai_chunk({"tool_calls": [d]}) for d in _REPEATS[framing]]
    model_server.add(Reply(raw_stream=[_openai_chunk({"role": "assistant", "content": ""}), *deltas,
                                       _openai_chunk({}, "tool_calls"), "data: [DONE]\n\n"]))
    response = await _stream("openai", model_server)
    assert [(c.id, c.name, json.loads(c.final_arguments)) for c in response.calls] == [
        ("call_a", "glob", {"pattern": "*.py"})]


@pytest.mark.parametrize(
    "provider, failure",
    [
        # OpenAI: a 429 that no wait will end
        ("openai", Failure(429, "insufficient_quota", "You exceeded your current quota, please check your plan and "
                           "billing details.", code="insufficient_quota")),
        # DeepSeek, OpenRouter: 402 Payment Required
        ("openai", Failure(402, "invalid_request_error", "Insufficient Balance")),
        ("anthropic", Failure(402, "billing_error", "Your credit balance is too low to access the API.")),
    ],
)
async def test_an_account_out_of_credit_ends_the_session_at_once(
    provider: str, failure: Failure, model_server: ScriptedModelServer
) -> None:
    """Not retried as a rate limit (eight attempts over minutes, then "try
    again later"): the session ends saying the account needs credit."""
    model_server.add(failure)
    classified = await _classified(provider, model_server)
    assert classified.type == "ModelQuotaExhausted" and classified.non_retryable
    assert failure.message in classified.message
    assert "credit" in errors.what_to_do(classified.type, provider, "m")


def _without_event_lines(events: list[str]) -> list[str]:
    return ["".join(line + "\n" for line in e.splitlines() if not line.startswith("event:")) + "\n" for e in events]


async def test_anthropic_events_without_event_lines_are_read_by_their_type(model_server: ScriptedModelServer) -> None:
    """A gateway that sends each event's data without its ``event:`` line
    (the type is in the data): the SDK drops every such event, so the answer
    read as no stream at all, retried until the session failed."""
    text = [_anthropic_event(e) for e in (
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Looking."}},
        {"type": "content_block_stop", "index": 0})]
    call = _anthropic_tool({"type": "tool_use", "id": "toolu_1", "name": "glob", "input": {}})
    call[1:2] = [call[1], _anthropic_event({"type": "content_block_delta", "index": 0, "delta": {
        "type": "input_json_delta", "partial_json": '{"pattern": "*"}'}})]
    events = [call[0], *text, *(e.replace('"index": 0', '"index": 1') for e in call[1:])]
    model_server.add(Reply(raw_stream=_without_event_lines(events)))
    response = await _stream("anthropic", model_server)
    assert response.text == "Looking." and response.stop_reason == "tool_use"
    assert [(c.name, json.loads(c.final_arguments)) for c in response.calls] == [("glob", {"pattern": "*"})]


async def test_an_anthropic_error_without_its_event_line_is_still_the_error(model_server: ScriptedModelServer) -> None:
    start = _anthropic_tool({"type": "tool_use", "id": "toolu_1", "name": "glob", "input": {}})[0]
    error = _anthropic_event({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    model_server.add(Reply(raw_stream=_without_event_lines([start, error])))
    classified = await _classified("anthropic", model_server)
    assert classified.type == errors.SERVER_ERROR and not classified.non_retryable and "Overloaded" in classified.message
