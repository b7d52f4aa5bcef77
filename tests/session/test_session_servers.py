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
