"""The worker's model key goes only where the worker sends it: to the base URL
configured for it (or one the worker allows), never to one a session names
on its own; and key-like strings never reach the history or the worker's log
(a server that echoes the key in a 401 body)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from temporalio.client import Client

from core.session import provider_errors as errors
from core.session.contracts import SessionState
from runtime import session_api as sessions
from runtime.worker import build_worker
from tests.model_server import Failure, Reply, ScriptedModelServer
from tests.session.test_session_support import API_KEY, model_server  # noqa: F401  (fixture)


def test_redact_removes_the_key_and_key_like_strings() -> None:
    text = (f"Incorrect API key provided: {API_KEY}. Also sk-ant-api03-AbCdEf123456, "
            "Authorization: Bearer abcdefgh12345678, api_key=zzzzzzzzzzzz, x-api-key: 'qqqqqqqqqqqqq'")
    out = errors.redact(text, ("a-worker-key-value", API_KEY))
    assert API_KEY not in out and "AbCdEf123456" not in out and "abcdefgh12345678" not in out
    assert "zzzzzzzzzzzz" not in out and "qqqqqqqqqqqqq" not in out
    assert out.startswith("Incorrect API key provided: [redacted].") and "api_key=[redacted]" in out
    assert errors.redact("custom key k-12345", ("k-12345",)) == "custom key [redacted]"
    assert errors.redact("the model gpt-4o is busy") == "the model gpt-4o is busy"


def test_url_refusal_compares_endpoints() -> None:
    assert errors.url_refusal("openai", "http://LOCALHOST:8000/v1/", "http://localhost:8000/v1", "") is None
    assert errors.url_refusal("openai", "https://api.openai.com/v1", None, "") is None
    assert errors.url_refusal("anthropic", "https://evil.example", None, "") is not None
    assert errors.url_refusal("openai", "https://b.example/v1", "http://a/v1", "https://x.example, https://b.example/v1") is None
    refusal = errors.url_refusal("openai", "https://evil.example/v1", "http://a/v1", "")
    assert refusal is not None and "OPENAI_API_KEY" in refusal and errors.ALLOWED_URLS_VARIABLE in refusal


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_a_session_naming_another_base_url_is_refused_before_any_request(
    provider: str, client: Client, workspace: Path, task_queue: str, model_server: ScriptedModelServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    other = ScriptedModelServer().start()
    try:
        other.add(Reply(text="hello from the other server"))
        url = other.openai_base_url if provider == "openai" else other.anthropic_base_url
        async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
            sid = await sessions.start_session(client, workspace=workspace, task_queue=task_queue, provider=provider,
                                               model="scripted", prompt="go", policy="auto", base_url=url)
            result = await sessions.result(client, sid)
        assert result.state == SessionState.MODEL_ERROR and result.error_type == errors.URL_NOT_ALLOWED, result
        assert errors.ALLOWED_URLS_VARIABLE in result.message and url in result.message
        assert other.requests == [] and model_server.requests == []  # the key went nowhere
        # The worker allows it: the session runs there.
        monkeypatch.setenv(errors.ALLOWED_URLS_VARIABLE, f"https://unrelated.example {url}/")
        async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
            sid = await sessions.start_session(client, workspace=workspace, task_queue=task_queue, provider=provider,
                                               model="scripted", prompt="go", policy="auto", base_url=url)
            view = await sessions.wait_for_answer(client, sid, timeout=60)
            await sessions.close(client, sid, "done")
        assert view.last_answer == "hello from the other server" and len(other.requests) == 1
    finally:
        other.stop()


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_a_401_body_echoing_the_key_never_reaches_the_history_or_the_log(
    provider: str, client: Client, workspace: Path, task_queue: str, model_server: ScriptedModelServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    model_server.add(Failure(401, "authentication_error", f"Incorrect API key provided: {API_KEY}. Find your key "
                                                          "at https://example.com.", code="invalid_api_key"))
    caplog.set_level(logging.DEBUG)
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        sid = await sessions.start_session(client, workspace=workspace, task_queue=task_queue, provider=provider,
                                           model="scripted", prompt="go", policy="auto")
        result = await sessions.result(client, sid)
        history = await client.get_workflow_handle(sid).fetch_history()
    assert result.error_type == errors.AUTHENTICATION_FAILED
    assert "Incorrect API key provided: [redacted]" in result.message, result.message
    assert API_KEY not in json.dumps(history.to_json_dict())
    assert API_KEY not in caplog.text
