"""A session under control: model errors classified (retried or ended with a
clear status), approvals from the session and on the child, limits, cancel."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest
from temporalio.client import Client

from core.session import provider_errors as errors
from core.contracts import ApprovalDecision
from core.session.contracts import SessionLimits, SessionState
from runtime import session_api as sessions
from tests.model_server import Failure, Reply, ScriptedModelServer, context_too_long, rate_limited, server_error, tool, unauthorized
from tests.session.test_session_support import model_server, session_paused  # noqa: F401  (fixture)
from runtime.worker import build_worker
from workflows.session import AgentSessionWorkflow
from tests.txn.support.helpers import written
from tests.cli.test_turn_visibility import listed


async def _start(client: Client, workspace: Path, task_queue: str, provider: str = "openai", **kw: object) -> str:
    kw.setdefault("policy", "auto")
    return await sessions.start_session(
        client, workspace=workspace, task_queue=task_queue, provider=provider, model="scripted", prompt="go", **kw
    )


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_broken_stream_server_error_and_rate_limit_are_retried_honouring_retry_after(
    provider: str, client: Client, workspace: Path, task_queue: str, model_server: ScriptedModelServer
) -> None:
    model_server.add(
        Reply(text="this stream breaks " * 5, drop_after_pieces=3), server_error(), rate_limited(retry_after_s=1.5),
        Reply(text="made it"),
    )
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        sid = await _start(client, workspace, task_queue, provider)
        view = await sessions.wait_for_answer(client, sid, timeout=60)
        entries = await sessions.transcript(client, sid)
    assert view.state == SessionState.WAITING_FOR_USER and view.last_answer == "made it"
    assert view.model_calls == 1 and len(model_server.requests) == 4
    assert [e.kind for e in entries] == ["system", "user", "assistant"]  # nothing of the broken attempts
    gap = model_server.requests[3].received_at - model_server.requests[2].received_at
    assert gap >= 1.4, f"the retry came {gap:.2f} s after a 429 that said Retry-After: 1.5"


@pytest.mark.parametrize(
    "provider, failure, kind, advice",
    [
        ("openai", unauthorized(), errors.AUTHENTICATION_FAILED, "OPENAI_API_KEY"),
        ("anthropic", unauthorized(), errors.AUTHENTICATION_FAILED, "ANTHROPIC_API_KEY"),
        ("anthropic", context_too_long(), errors.CONTEXT_TOO_LONG, "context window"),
        ("openai", Failure(429, "insufficient_quota", "You exceeded your current quota.", code="insufficient_quota"),
         errors.QUOTA_EXHAUSTED, "no quota or credit left"),
    ],
)
async def test_a_non_retryable_model_error_ends_the_session_saying_what_to_do(
    provider: str, failure: object, kind: str, advice: str,
    client: Client, workspace: Path, task_queue: str, model_server: ScriptedModelServer,
) -> None:
    model_server.add(failure)  # type: ignore[arg-type]
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        sid = await _start(client, workspace, task_queue, provider)
        result = await sessions.result(client, sid)
        view = await sessions.session_status(client, sid)
    assert len(model_server.requests) == 1  # not retried
    assert result.state == SessionState.MODEL_ERROR and result.error_type == kind
    assert advice in result.message
    assert view.state == SessionState.MODEL_ERROR and advice in view.message


async def test_a_missing_key_ends_the_session_before_any_request(
    client: Client, workspace: Path, task_queue: str, model_server: ScriptedModelServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        result = await sessions.result(client, await _start(client, workspace, task_queue))
    assert result.error_type == errors.API_KEY_MISSING and "set OPENAI_API_KEY" in result.message
    assert model_server.requests == []


async def test_approval_inside_a_session_from_the_session_and_on_the_child(
    client: Client, workspace: Path, task_queue: str, model_server: ScriptedModelServer
) -> None:
    model_server.add(
        Reply(tool_calls=[tool("write_file", path="one.txt", content="1\n")]),
        Reply(tool_calls=[tool("write_file", path="two.txt", content="2\n")]),
        Reply(tool_calls=[tool("write_file", path="three.txt", content="3\n")]),
        Reply(text="two files written, the third was refused"),
    )
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        sid = await _start(client, workspace, task_queue, policy="ask-writes")
        # 1. Through the session API (the child's update, validated).
        view = await session_paused(client, sid)
        assert view.current_turn_id == f"{sid}/turn-1"
        assert [p.name for p in view.pending] == ["write_file"] and view.pending[0].reason
        # The session's turns carry its workspace: the Web UI list finds them paused.
        await listed(client, f"AgentTurnStatus='paused' AND AgentWorkspace='{workspace}'", view.current_turn_id)
        record = await sessions.approve(client, sid, approver="alice", reason="fine")
        assert record.approve and record.batch_digest == view.current_batch_digest
        # 2. Directly on the child, as the Web UI's "Send a Signal" does.
        view = await session_paused(client, sid)
        assert view.current_turn_id == f"{sid}/turn-2"
        await client.get_workflow_handle(view.current_turn_id).signal(
            "approve", ApprovalDecision(batch_digest=view.current_batch_digest or "", approver="web-ui")
        )
        # 3. A rejection signalled to the session, which forwards it to the turn.
        view = await session_paused(client, sid)
        assert view.current_turn_id == f"{sid}/turn-3"
        await client.get_workflow_handle(sid).signal(
            AgentSessionWorkflow.reject, ApprovalDecision(batch_digest=view.current_batch_digest or "", approver="bob")
        )
        done = await sessions.wait_for_answer(client, sid, timeout=60)
        with pytest.raises(sessions.SessionError, match="no turn is waiting"):
            await sessions.approve(client, sid)
        await sessions.close(client, sid)
    assert done.last_answer == "two files written, the third was refused"
    assert (workspace / "one.txt").exists() and (workspace / "two.txt").exists()
    assert not (workspace / "three.txt").exists()
    # The model heard the denial as an error result in its own protocol.
    denial = [m for m in model_server.requests[3].body["messages"] if m["role"] == "tool"][-1]
    assert "denied" in denial["content"]


async def test_limits_end_the_session_with_a_status_that_says_which(
    client: Client, workspace: Path, task_queue: str, model_server: ScriptedModelServer
) -> None:
    model_server.add(
        Reply(tool_calls=[tool("glob", pattern="*")]),
        Reply(tool_calls=[tool("glob", pattern="*")]),
        Reply(input_tokens=50, output_tokens=10, tool_calls=[tool("write_file", path="never.txt", content="x")]),
    )
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        by_calls = await sessions.result(client, await _start(client, workspace, task_queue, max_model_calls=2))
        by_tokens = await sessions.result(
            client, await _start(client, workspace, task_queue, limits=SessionLimits(max_tokens=40))
        )
        entries = await sessions.transcript(client, by_calls.session_id)
    assert by_calls.state == SessionState.MAX_MODEL_CALLS and "2 model calls" in by_calls.message
    assert by_calls.turns == 2
    # The last turn's results were recorded even though no model call followed.
    assert [e.kind for e in entries][-2:] == ["tool_results", "note"]
    assert by_tokens.state == SessionState.MAX_TOKENS and "limit is 40" in by_tokens.message
    assert by_tokens.usage.total == 60 and not (workspace / "never.txt").exists()


async def test_cancelling_a_session_cancels_its_turn_and_records_what_ran(
    client: Client, workspace: Path, task_queue: str, model_server: ScriptedModelServer
) -> None:
    script = f"slow_{uuid.uuid4().hex[:8]}.py"  # unique: found again in the process table
    (workspace / script).write_text("import time\nopen('started.txt', 'w')\ntime.sleep(60)\nopen('finished.txt', 'w')\n")
    model_server.add(Reply(tool_calls=[tool("read_file", path=script), tool("bash", command=f"python3 {script}")]))
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        sid = await _start(client, workspace, task_queue)
        for _ in range(400):
            if written(workspace, "started.txt"):  # captured writes show in the upper layer
                break
            await asyncio.sleep(0.05)
        assert _running(script), "the command should be running now"
        result = await sessions.cancel(client, sid)
        entries = await sessions.transcript(client, sid)
    assert result.state == SessionState.CANCELLED
    assert result.last_turn is not None and result.last_turn.turn_id == f"{sid}/turn-1"
    assert result.last_turn.ran[0] == "read_file: ok"
    assert result.last_turn.ran[1].startswith("bash: ")
    assert "read_file: ok" in result.message
    assert entries[-1].kind == "note" and "cancelled" in entries[-1].text
    for _ in range(100):  # the command's process is gone (killed, not left running)
        if not _running(script):
            break
        await asyncio.sleep(0.05)
    else:
        raise AssertionError(f"python3 {script} still runs after the session was cancelled")
    assert not (workspace / "finished.txt").exists()


def _running(marker: str) -> bool:
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and marker.encode() in (proc / "cmdline").read_bytes():
                return True
        except OSError:
            continue
    return False


async def test_a_finished_sessions_id_is_not_started_again(
    client: Client, workspace: Path, task_queue: str, model_server: ScriptedModelServer
) -> None:
    # Its turns would be `<id>/turn-1` ... again, and the worker keys a turn's
    # records by its id: the second session's writes would be answered from
    # the first one's records without running.
    model_server.add(Reply(tool_calls=[tool("write_file", path="a.txt", content="one\n")]), Reply(text="done"))
    sid = f"s-{uuid.uuid4().hex[:8]}"
    start = dict(workspace=workspace, task_queue=task_queue, provider="openai", model="scripted-model",
                 prompt="write", policy="auto")
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        await sessions.start_session(client, session_id=sid, **start)
        await sessions.wait_for_answer(client, sid, timeout=60)
        await sessions.close(client, sid, "done")
        model_server.add(Reply(tool_calls=[tool("write_file", path="a.txt", content="two\n")]), Reply(text="done"))
        with pytest.raises(sessions.SessionError) as refused:
            await sessions.start_session(client, session_id=sid, **start)
    assert f"session {sid} already exists" in str(refused.value), refused.value
    assert (workspace / "a.txt").read_text() == "one\n"
