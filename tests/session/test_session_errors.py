"""Model error classification and Retry-After parsing (pure), and the
server's own continue-as-new suggestion followed by a session."""

from __future__ import annotations

import email.utils
import json
import time
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from activities.sandbox.binaries import find_binary
from activities.model.activity import retry_after
from core.session import provider_errors as errors
from core.session.contracts import SessionLimits, SessionState
from runtime import session_api as sessions
from runtime.devserver import DEFAULT_DYNAMIC_CONFIG, dynamic_config_args
from tests.model_server import Failure, Reply, ScriptedModelServer, tool
from tests.session.test_session_support import model_server  # noqa: F401  (fixture)
from runtime.worker import build_worker


@pytest.mark.parametrize(
    "status, message, code, expected",
    [
        (429, "slow down", "rate_limit_exceeded", errors.RATE_LIMITED),
        (500, "oops", None, errors.SERVER_ERROR),
        (529, "Overloaded", "overloaded_error", errors.SERVER_ERROR),
        (408, "timeout", None, errors.SERVER_ERROR),
        (401, "bad key", "invalid_api_key", errors.AUTHENTICATION_FAILED),
        (403, "no access", None, errors.PERMISSION_DENIED),
        (404, "model not found", None, errors.MODEL_NOT_FOUND),
        (400, "This model's maximum context length is 8192 tokens", "context_length_exceeded", errors.CONTEXT_TOO_LONG),
        (400, "prompt is too long: 210000 tokens > 200000 maximum", "invalid_request_error", errors.CONTEXT_TOO_LONG),
        (400, "tools: unsupported", None, errors.BAD_REQUEST),
        (422, "unprocessable", None, errors.BAD_REQUEST),
    ],
)
def test_status_codes_are_classified(status: int, message: str, code: str | None, expected: str) -> None:
    kind = errors.type_for_status(status, message, code)
    assert kind == expected
    assert (kind in errors.RETRYABLE) != (kind in errors.NON_RETRYABLE)


def test_retry_after_in_seconds_milliseconds_and_http_dates() -> None:
    assert retry_after({"Retry-After": "2"}) == timedelta(seconds=2)
    assert retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == timedelta(seconds=1.5)
    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    delay = retry_after({"retry-after": later})
    assert delay is not None and timedelta(seconds=25) < delay <= timedelta(seconds=31)
    assert retry_after({"retry-after": "86400"}) == timedelta(seconds=300)  # capped
    assert retry_after({}) is None and retry_after({"retry-after": "soon"}) is None


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_a_stream_that_stops_before_the_answer_is_done_is_retried_not_taken(
    provider: str, model_server: ScriptedModelServer
) -> None:
    """Through the real SDK: a stream closed cleanly inside a tool call's
    arguments, with no finish_reason / message_stop (a proxy cut it), must
    not run half a call; a stream that only never says it is done, with
    nothing visibly cut, is taken at its word (some servers never do)."""
    from activities.model.activity import StreamCut, classify, stream_model
    from core.session.contracts import ModelConfig, TranscriptEntry

    config = ModelConfig(provider=provider, model="scripted")
    entries = [TranscriptEntry(kind="user", text="hi")]
    url = model_server.openai_base_url if provider == "openai" else model_server.anthropic_base_url
    write = tool("write_file", path="a.py", content="x = 1\n" * 40)
    model_server.add(Reply(text="Writing.", tool_calls=[write], end_early=12),  # cut inside the content
                     Reply(text="Writing.", tool_calls=[write]),
                     Reply(text="done, never said so", tool_calls=[tool("glob", pattern="*")], end_early=True))
    with pytest.raises(StreamCut) as cut:
        await stream_model(config, entries, "k", url, lambda calls: None)
    classified = classify(provider, cut.value)
    assert classified is not None and classified.type == errors.SERVER_ERROR and not classified.non_retryable
    assert "cut" in classified.message and "write_file" in classified.message
    whole = await stream_model(config, entries, "k", url, lambda calls: None)
    assert json.loads(whole.calls[0].final_arguments)["content"] == "x = 1\n" * 40
    unsaid = await stream_model(config, entries, "k", url, lambda calls: None)
    assert unsaid.text == "done, never said so" and json.loads(unsaid.calls[0].final_arguments) == {"pattern": "*"}


@pytest.mark.parametrize(
    "provider, failure, expected",
    [
        ("anthropic", Failure(200, "overloaded_error", "Overloaded"), errors.SERVER_ERROR),
        ("anthropic", Failure(200, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"),
         errors.CONTEXT_TOO_LONG),
        ("openai", Failure(200, "server_error", "The server had an error while processing your request."),
         errors.SERVER_ERROR),
        ("openai", Failure(200, "invalid_request_error", "context_length_exceeded", code="context_length_exceeded"),
         errors.CONTEXT_TOO_LONG),
        # vLLM: the HTTP status it would have answered, as the error's code
        ("openai", Failure(400, "BadRequestError", "This model's maximum context length is 8192 tokens."),
         errors.CONTEXT_TOO_LONG),
        ("openai", Failure(429, "RateLimitError", "slow down"), errors.RATE_LIMITED),
        ("openai", Failure(500, "InternalServerError", "engine died"), errors.SERVER_ERROR),
    ],
)
async def test_an_error_inside_a_stream_is_classified_like_the_status_it_stands_for(
    provider: str, failure: Failure, expected: str, model_server: ScriptedModelServer
) -> None:
    """A server that already answered 200 reports a failure inside the
    stream: it is retried or ends the session by what it says, as the same
    failure answered with an HTTP status would."""
    from activities.model.activity import classify, stream_model
    from core.session.contracts import ModelConfig, TranscriptEntry

    url = model_server.openai_base_url if provider == "openai" else model_server.anthropic_base_url
    model_server.add(Reply(text="an answer that fails half way", stream_error=(2, failure)))
    with pytest.raises(Exception) as raised:
        await stream_model(ModelConfig(provider=provider, model="m"), [TranscriptEntry(kind="user", text="hi")],
                           "k", url, lambda calls: None)
    classified = classify(provider, raised.value)
    assert classified is not None, raised.value
    assert classified.type == expected and classified.non_retryable == (expected in errors.NON_RETRYABLE)
    assert failure.message in classified.message


def test_every_non_retryable_error_says_what_to_do() -> None:
    for kind in errors.NON_RETRYABLE:
        assert errors.what_to_do(kind, "openai", "gpt-x") != errors.what_to_do("unknown", "openai", "gpt-x")


async def test_the_session_continues_as_new_when_the_server_suggests_it(
    workspace: Path, task_queue: str, model_server: ScriptedModelServer
) -> None:
    config = {**DEFAULT_DYNAMIC_CONFIG, "limit.historyCount.suggestContinueAsNew": "40"}
    env = await WorkflowEnvironment.start_local(
        data_converter=pydantic_data_converter, dev_server_existing_path=find_binary("temporal"), ui=False,
        dev_server_extra_args=dynamic_config_args(config),
    )
    model_server.add(*[Reply(tool_calls=[tool("glob", pattern="*")]) for _ in range(5)], Reply(text="done"))
    try:
        async with build_worker(env.client, task_queue=task_queue, workspace=str(workspace)):
            sid = await sessions.start_session(
                env.client, workspace=workspace, task_queue=task_queue, provider="openai", model="scripted",
                prompt="go", policy="auto", limits=SessionLimits(continue_as_new_every=1000),
            )
            view = await sessions.wait_for_answer(env.client, sid, timeout=60)
    finally:
        await env.shutdown()
    assert view.state == SessionState.WAITING_FOR_USER and view.model_calls == 6
    assert view.runs >= 2  # ~15 events per call: the suggestion came after 2-3 calls
