"""Sessions whose model misbehaves the way real models do: tools that do not
exist, arguments of the wrong shape or not JSON at all, paths out of bounds,
huge batches, repeated or missing call ids, lone surrogates, empty
answers. For both
providers, end to end through the official SDKs: the session must neither
crash nor hang, the model must get an error result it can act on, and every
request must stay a transcript the provider would accept.

One worker and one scripted server serve the whole module: each session is
told apart by its prompt, so the sessions of different tests never share a
reply script."""

from __future__ import annotations

import json
import re
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, AsyncIterator

import pytest
import pytest_asyncio
from temporalio.testing import WorkflowEnvironment

from core.session.contracts import SessionState
from core.session.stream_assembly import StreamAssembler
from runtime import session_api as sessions
from runtime.worker import build_worker
from tests.model_server import Failure, Recorded, Reply, ScriptedModelServer, ToolUse, tool
from tests.session.test_session_support import API_KEY

PROVIDERS = ["openai", "anthropic"]
# Anthropic's pattern for a tool_use id; OpenAI needs a non-empty one.
ANTHROPIC_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
FOOTER = re.compile(r"\[(?P<name>.*): (?P<status>\w+), \d+ ms\]\s*$")


class Scripts:
    """Replies per session, keyed by the session's prompt (its first user text)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.replies: dict[str, list[Reply]] = {}
        self.seen: dict[str, list[dict[str, Any]]] = {}

    def __call__(self, recorded: Recorded, index: int) -> Reply | Failure:
        key = _prompt(recorded.body)
        with self._lock:
            self.seen.setdefault(key, []).append(recorded.body)
            queue = self.replies.get(key)
            if not queue:
                return Failure(400, "invalid_request_error", f"no scripted reply left for {key!r}")
            return queue.pop(0)


def _prompt(body: dict[str, Any]) -> str:
    first = next(m for m in body["messages"] if m["role"] == "user")
    content = first["content"]
    return content if isinstance(content, str) else content[0]["text"]


@dataclass
class Rig:
    env: WorkflowEnvironment
    scripts: Scripts
    workspace: Path
    task_queue: str

    async def run(self, provider: str, *replies: Reply, timeout: float = 60) -> tuple[str, list[dict[str, Any]]]:
        """Start a session on these replies, wait for its answer; (id, the request bodies)."""
        prompt = f"scenario {uuid.uuid4().hex[:10]}"
        self.scripts.replies[prompt] = list(replies)
        client = self.env.client
        sid = await sessions.start_session(
            client, workspace=self.workspace, task_queue=self.task_queue, provider=provider,
            model="scripted", prompt=prompt, policy="auto",
        )
        view = await sessions.wait_for_answer(client, sid, timeout=timeout)
        assert view.state == SessionState.WAITING_FOR_USER, view
        bodies = self.scripts.seen[prompt]
        assert len(bodies) == len(replies), "every scripted reply was asked for, no more"
        for body in bodies:
            check_transcript(provider, body)
        return sid, bodies


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def rig(temporal_env: WorkflowEnvironment, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Rig]:
    workspace = tmp_path_factory.mktemp("halluc") / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("alpha\n")
    (workspace / "b.txt").write_text("bravo\n")
    for i in range(60):
        (workspace / f"n{i:02d}.txt").write_text(f"number {i}\n")
    scripts = Scripts()
    task_queue = f"tq-{uuid.uuid4().hex[:12]}"
    with ScriptedModelServer(scripts) as server, pytest.MonkeyPatch.context() as mp:
        for name, value in [("OPENAI_API_KEY", API_KEY), ("ANTHROPIC_API_KEY", API_KEY),
                            ("OPENAI_BASE_URL", server.openai_base_url),
                            ("ANTHROPIC_BASE_URL", server.anthropic_base_url)]:
            mp.setenv(name, value)
        async with build_worker(temporal_env.client, task_queue=task_queue, workspace=str(workspace)):
            yield Rig(temporal_env, scripts, workspace, task_queue)


# ------------------------------------------------------------ the transcript
def check_transcript(provider: str, body: dict[str, Any]) -> None:
    """What the provider's API enforces: every call id non-empty and unique,
    answered exactly once, right after its call, in the calls' order."""
    messages = body["messages"]
    seen: set[str] = set()
    if provider == "openai":
        i = 0
        while i < len(messages):
            message = messages[i]
            assert message["role"] != "tool", f"message {i} answers no call: {message}"
            ids = [c["id"] for c in message.get("tool_calls") or []]
            assert all(ids) and len(set(ids)) == len(ids) and not seen & set(ids), f"bad call ids {ids}"
            seen |= set(ids)
            answers = messages[i + 1 : i + 1 + len(ids)]
            assert [(a["role"], a.get("tool_call_id")) for a in answers] == [("tool", x) for x in ids]
            assert all(isinstance(a["content"], str) for a in answers)
            i += 1 + len(ids)
        return
    previous: list[str] = []
    for i, message in enumerate(messages):
        assert message["role"] == ("user", "assistant")[i % 2], "roles alternate, a user first"
        blocks = message["content"]
        assert blocks, f"message {i} is empty"
        assert all(b["text"].strip() for b in blocks if b["type"] == "text"), "an empty text block"
        answered = [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"]
        assert [b["type"] for b in blocks[: len(previous)]] == ["tool_result"] * len(previous)
        assert answered == previous, f"message {i} answers {answered}, the calls were {previous}"
        previous = [b["id"] for b in blocks if b["type"] == "tool_use"]
        assert all(ANTHROPIC_ID.match(x) for x in previous) and len(set(previous)) == len(previous)
        assert not seen & set(previous), f"a call id used again: {previous}"
        assert all(isinstance(b["input"], dict) for b in blocks if b["type"] == "tool_use")
        seen |= set(previous)
    assert not previous, "the last assistant message's calls are unanswered"


@dataclass
class Result:
    call_id: str
    name: str
    text: str
    is_error: bool


def last_results(provider: str, body: dict[str, Any]) -> list[Result]:
    """The results of the last batch of calls, as the model reads them."""
    messages = body["messages"]
    if provider == "openai":
        at = max(i for i, m in enumerate(messages) if m.get("tool_calls"))
        calls = messages[at]["tool_calls"]
        out = []
        for call, answer in zip(calls, messages[at + 1 : at + 1 + len(calls)]):
            footer = FOOTER.search(answer["content"])
            assert footer, answer["content"]
            out.append(Result(call["id"], call["function"]["name"], answer["content"], footer["status"] != "ok"))
        return out
    at = max(i for i, m in enumerate(messages) if any(b["type"] == "tool_use" for b in m["content"]))
    names = {b["id"]: b["name"] for b in messages[at]["content"] if b["type"] == "tool_use"}
    return [
        Result(b["tool_use_id"], names[b["tool_use_id"]], "\n".join(t["text"] for t in b["content"]), b["is_error"])
        for b in messages[at + 1]["content"]
        if b["type"] == "tool_result"
    ]


def assert_errors(results: list[Result], *expected: str) -> None:
    """Each result is an error whose text says what was wrong (one pattern per result, in order)."""
    assert len(results) == len(expected), [r.text for r in results]
    for result, pattern in zip(results, expected):
        assert result.is_error, result
        assert re.search(pattern, result.text), f"{pattern!r} not in {result.text!r}"
        assert "The tool call failed" in result.text, "no hint on what to do next"


# ------------------------------------------------------------------ the tests
@pytest.mark.parametrize("provider", PROVIDERS)
async def test_unknown_and_misspelled_tool_names_get_errors_naming_the_real_tools(provider: str, rig: Rig) -> None:
    _, bodies = await rig.run(
        provider,
        Reply(tool_calls=[
            tool("run_shell", command="ls"),
            tool("str_replace_editor", command="view", path="a.txt"),
            tool("Read_File", path="a.txt"),
            tool(" read_file", path="a.txt"),
            tool("", path="a.txt"),
            tool("read_file", path="b.txt"),
        ]),
        Reply(text="done"),
    )
    results = last_results(provider, bodies[1])
    unknown = r"unknown tool .*Available tools: .*\bread_file\b"
    assert_errors(results[:5], *[unknown] * 5)
    assert [r.name for r in results] == ["run_shell", "str_replace_editor", "Read_File", " read_file", "", "read_file"]
    # A read that depends on nothing still runs next to the bad calls.
    assert not results[5].is_error and "bravo" in results[5].text


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_arguments_of_the_wrong_shape_are_explained_field_by_field(provider: str, rig: Rig) -> None:
    _, bodies = await rig.run(
        provider,
        Reply(tool_calls=[
            tool("read_file", path=["a.txt"]),
            tool("read_file"),
            tool("read_file", path="a.txt", encoding="utf-8"),
            ToolUse("read_file", '["a.txt"]'),
            ToolUse("read_file", '"a.txt"'),
            tool("glob", pattern=7, path=None),
        ]),
        Reply(text="done"),
    )
    assert_errors(
        last_results(provider, bodies[1]),
        r"path: .*string",
        r"path: required field is missing",
        r"encoding: unknown field \(allowed fields: .*path",
        r"must be a JSON object.*got a JSON list",
        r"must be a JSON object.*got a JSON str",
        r"pattern: .*string",
    )


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_malformed_json_arguments_are_repaired_when_safe_and_reported_when_not(provider: str, rig: Rig) -> None:
    _, bodies = await rig.run(
        provider,
        Reply(tool_calls=[
            ToolUse("read_file", "{path: a.txt}"),
            ToolUse("read_file", '{"path": "a.txt",}'),  # a trailing comma: repaired
            ToolUse("read_file", "```json\n{\"path\": \"b.txt\"}\n```"),  # fenced: repaired
            ToolUse("bash", "ls -la"),
            ToolUse("read_file", '{"path": "a.txt"} {"path": "b.txt"}'),  # two objects run together
        ]),
        Reply(text="done"),
    )
    results = last_results(provider, bodies[1])
    assert [r.is_error for r in results] == [True, False, False, True, True], [r.text for r in results]
    assert "not valid JSON" in results[0].text and "not valid JSON" in results[3].text
    assert "alpha" in results[1].text and "bravo" in results[2].text
    assert "not valid JSON" in results[4].text


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_paths_outside_the_workspace_or_unusable_are_refused_readably(provider: str, rig: Rig) -> None:
    escape = rig.workspace.parent / f"escaped-{provider}.txt"
    _, bodies = await rig.run(
        provider,
        Reply(tool_calls=[
            tool("read_file", path="/etc/passwd"),
            tool("read_file", path="../../x"),
            tool("read_file", path="d/" * 3000 + "x.txt"),
            tool("read_file", path="x" * 5000 + ".txt"),  # longer than a file name may be
            tool("read_file", path="a.txt\x00.png"),
            tool("write_file", path=f"../{escape.name}", content="out\n"),
            tool("read_file", path="a.txt"),
        ]),
        Reply(text="done"),
    )
    results = last_results(provider, bodies[1])
    assert [r.is_error for r in results[:6]] == [True] * 6, [r.text[:200] for r in results]
    assert all("root:" not in r.text for r in results), "a file outside the workspace was read"
    assert re.search(r"outside the workspace", results[0].text) and re.search(r"outside the workspace", results[1].text)
    assert re.search(r"not found|too long", results[2].text) and re.search(r"not found|too long", results[3].text)
    assert len(results[2].text) < 2000 and len(results[3].text) < 2000  # a 6,000-character path is not echoed back
    assert "NUL byte" in results[4].text
    assert "outside the workspace" in results[5].text
    assert not escape.exists()
    assert "alpha" in results[6].text


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_batch_of_sixty_calls_completes_with_results_in_order(provider: str, rig: Rig) -> None:
    _, bodies = await rig.run(
        provider,
        Reply(text="Reading them all.", tool_calls=[tool("read_file", path=f"n{i:02d}.txt") for i in range(60)]),
        Reply(text="done"),
    )
    results = last_results(provider, bodies[1])
    assert len(results) == 60 and "Reading them all." in json.dumps(bodies[1]["messages"])
    for i, result in enumerate(results):
        assert not result.is_error and f"number {i}\n" in result.text + "\n", (i, result.text)


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_repeated_and_missing_call_ids_still_pair_each_call_with_its_own_result(provider: str, rig: Rig) -> None:
    _, bodies = await rig.run(
        provider,
        Reply(tool_calls=[tool("read_file", path="a.txt"), tool("read_file", path="b.txt")], call_ids=["dup", "dup"]),
        Reply(tool_calls=[tool("read_file", path="b.txt"), tool("read_file", path="a.txt")], call_ids=["", None]),
        # The model reuses an id of the previous turn.
        Reply(tool_calls=[tool("read_file", path="a.txt")], call_ids=["dup"]),
        Reply(text="done"),
    )
    # check_transcript (in run) saw unique, answered ids; each result is its own call's.
    assert ["alpha" in r.text for r in last_results(provider, bodies[1])] == [True, False]
    assert ["bravo" in r.text for r in last_results(provider, bodies[1])] == [False, True]
    assert ["bravo" in r.text for r in last_results(provider, bodies[2])] == [True, False]
    assert ["alpha" in r.text for r in last_results(provider, bodies[2])] == [False, True]
    assert "alpha" in last_results(provider, bodies[3])[0].text


@pytest.mark.parametrize("provider", PROVIDERS)
def test_call_ids_are_made_unique_in_the_whole_conversation(provider: str) -> None:
    ids = ["dup", "dup", "", "old", "\ud800"]
    assembler = StreamAssembler(provider, id_prefix="call_m7", taken_ids={"old"})
    assembler.feed_all(_stream_items(provider, ids))
    given = [c.id for c in assembler.finish().calls]
    assert given[0] == "dup"  # a free id is kept
    assert len(set(given)) == 5 and "old" not in given and all(ANTHROPIC_ID.match(i) for i in given), given
    again = StreamAssembler(provider, id_prefix="call_m7", taken_ids={"old"})
    again.feed_all(_stream_items(provider, ids))
    assert [c.id for c in again.finish().calls] == given  # a retried model call names them alike


def _stream_items(provider: str, ids: list[str]) -> list[dict[str, Any]]:
    if provider == "openai":
        return [{"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": i, "id": call_id, "type": "function", "function": {"name": "glob", "arguments": "{}"}}]}}]}
            for i, call_id in enumerate(ids)] + [{"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}]
    items: list[dict[str, Any]] = []
    for i, call_id in enumerate(ids):
        items.append({"type": "content_block_start", "index": i,
                      "content_block": {"type": "tool_use", "id": call_id, "name": "glob", "input": {}}})
        items.append({"type": "content_block_stop", "index": i})
    return items + [{"type": "message_stop"}]


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_an_empty_answer_ends_the_turn_and_the_conversation_goes_on(provider: str, rig: Rig) -> None:
    # The empty answer even claims to stop for tool use, as some servers do.
    claimed = "tool_calls" if provider == "openai" else "tool_use"
    sid, bodies = await rig.run(provider, Reply(tool_calls=[tool("read_file", path="a.txt")]), Reply(stop_reason=claimed))
    view = await sessions.session_status(rig.env.client, sid)
    assert view.last_answer == "" and view.answers == 1
    # Text-only after tools, then the user goes on: every request stays valid.
    prompt = _prompt(bodies[0])
    rig.scripts.replies[prompt] = [Reply(text="read it: alpha"), Reply(text="bye")]
    answered = await sessions.send(rig.env.client, sid, "and?", wait=True)
    assert answered is not None and answered.last_answer == "read it: alpha"
    answered = await sessions.send(rig.env.client, sid, "thanks", wait=True)
    assert answered is not None and answered.last_answer == "bye"
    seen = rig.scripts.seen[prompt]
    assert len(seen) == 4
    for body in seen:
        check_transcript(provider, body)
    last = json.dumps(seen[-1]["messages"])
    assert "and?" in last and "read it: alpha" in last and "thanks" in last
    await sessions.close(rig.env.client, sid)


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_lone_surrogate_in_arguments_or_text_is_reported_not_fatal(provider: str, rig: Rig) -> None:
    # JSON may escape half of a surrogate pair; decoded, it is text that
    # cannot be encoded as UTF-8 (for a payload, the transcript, the next request).
    _, bodies = await rig.run(
        provider,
        Reply(text="Broken \ud83d emoji.", tool_calls=[
            ToolUse("read_file", '{"path": "a\\ud800.txt"}'),
            tool("read_file", path="a.txt"),
        ]),
        Reply(text="done"),
    )
    results = last_results(provider, bodies[1])
    assert_errors(results[:1], r"invalid Unicode \(a lone surrogate")
    assert not results[1].is_error and "alpha" in results[1].text
    assert "Broken \ufffd emoji." in json.dumps(bodies[1]["messages"], ensure_ascii=False)


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_lone_surrogate_in_what_goes_back_unchanged_is_replaced_not_fatal(provider: str, rig: Rig) -> None:
    # Thinking blocks (Anthropic) and a call's extra fields (Gemini's thought
    # signatures, OpenAI-compatible) go back with the next request as they
    # came; one that cannot be encoded would stop every later request.
    broken = "sig \ud800 nature"
    reply = (
        Reply(thinking=broken, tool_calls=[tool("read_file", path="a.txt")]) if provider == "anthropic"
        else Reply(openai_call_extra={"extra_content": {"google": {"thought_signature": broken}}},
                   tool_calls=[tool("read_file", path="a.txt")])
    )
    _, bodies = await rig.run(provider, reply, Reply(text="done"))
    sent = json.dumps(bodies[1]["messages"], ensure_ascii=False)
    assert "sig \ufffd nature" in sent, sent
    assert "alpha" in last_results(provider, bodies[1])[0].text


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_an_answer_of_only_whitespace_goes_back_in_a_shape_the_api_takes(provider: str, rig: Rig) -> None:
    # Models and compatible servers often stream "\n\n" as the text before
    # their tool calls, or answer with nothing but a newline; Anthropic
    # refuses a text block without non-whitespace text in the next request.
    sid, bodies = await rig.run(provider, Reply(text="\n\n", tool_calls=[tool("read_file", path="a.txt")]),
                                Reply(text=" \n"))
    prompt = _prompt(bodies[0])
    rig.scripts.replies[prompt] = [Reply(text="alpha it is")]
    answered = await sessions.send(rig.env.client, sid, "and?", wait=True)
    assert answered is not None and answered.last_answer == "alpha it is"
    for body in rig.scripts.seen[prompt]:
        check_transcript(provider, body)
    assert "alpha" in last_results(provider, bodies[1])[0].text
    await sessions.close(rig.env.client, sid)
