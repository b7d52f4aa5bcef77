"""Stream assembly (pure): each tool call surfaces when its JSON closes, for
both protocols; malformed and truncated arguments at the end are repaired
only as far as is certainly right; calls stay apart and keep ids of their
own however a compatible server frames them; a whole JSON answer reads as
its stream. Plus the transcript's content addressing and what the requests
carry back (a call's extra fields, the output cap's name)."""

from __future__ import annotations

import json

import pytest

from core.contracts import ToolCall
from core.session.contracts import TranscriptEntry
from core.session.stream_assembly import STOP_MAX_TOKENS, STOP_TOOL_USE, JsonScanner, StreamAssembler, complete_truncated
from core.session.transcript import TranscriptCorrupted, decode_node, encode_node


def openai_chunks(calls: list[tuple[str, str]], text: str = "", size: int = 3, finish: str = "tool_calls") -> list[dict]:
    chunks: list[dict] = [{"id": "c1", "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}}]}]
    for i, (name, args) in enumerate(calls):
        chunks.append({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": i, "id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": ""}}]}}]})
        for k in range(0, len(args), size):
            chunks.append({"choices": [{"index": 0, "delta": {"tool_calls": [
                {"index": i, "function": {"arguments": args[k:k + size]}}]}}]})
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    chunks.append({"choices": [], "usage": {"prompt_tokens": 11, "completion_tokens": 7}})
    return chunks


def anthropic_events(calls: list[tuple[str, str]], size: int = 3, stop: str = "tool_use") -> list[dict]:
    events: list[dict] = [{"type": "message_start", "message": {"id": "m1", "usage": {"input_tokens": 9, "output_tokens": 1}}},
                          {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                          {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "ok"}},
                          {"type": "content_block_stop", "index": 0}]
    for i, (name, args) in enumerate(calls, start=1):
        events.append({"type": "content_block_start", "index": i,
                       "content_block": {"type": "tool_use", "id": f"toolu_{i}", "name": name, "input": {}}})
        for k in range(0, len(args), size):
            events.append({"type": "content_block_delta", "index": i,
                           "delta": {"type": "input_json_delta", "partial_json": args[k:k + size]}})
        events.append({"type": "content_block_stop", "index": i})
    events.append({"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 30}})
    events.append({"type": "message_stop"})
    return events


CALLS = [("read_file", '{"path": "a.py"}'), ("grep", '{"pattern": "x{2}", "path": "src"}'), ("glob", "{}")]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_each_call_surfaces_when_its_json_closes(provider: str) -> None:
    items = openai_chunks(CALLS) if provider == "openai" else anthropic_events(CALLS)
    assembler = StreamAssembler(provider)  # type: ignore[arg-type]
    surfaced: list[tuple[int, str]] = []
    closing_item: dict[str, int] = {}
    for n, item in enumerate(items):
        for call in assembler.feed(item):
            surfaced.append((call.position, call.name))
            closing_item[call.name] = n
    response = assembler.finish()
    assert surfaced == [(0, "read_file"), (1, "grep"), (2, "glob")]
    # read_file surfaced before grep's first fragment arrived: incremental.
    first_grep = next(n for n, it in enumerate(items) if "grep" in json.dumps(it))
    assert closing_item["read_file"] < first_grep
    assert [json.loads(c.final_arguments) for c in response.calls] == [
        {"path": "a.py"}, {"pattern": "x{2}", "path": "src"}, {}]
    assert response.stop_reason == STOP_TOOL_USE
    assert response.usage.output_tokens in (7, 30)


def test_braces_inside_strings_do_not_close_a_call() -> None:
    args = '{"pattern": "}{\\"}", "path": "."}'
    assembler = StreamAssembler("openai")
    closed_at = [n for n, item in enumerate(openai_chunks([("grep", args)], size=1)) if assembler.feed(item)]
    assert len(closed_at) == 1
    assert json.loads(assembler.finish().calls[0].final_arguments)["pattern"] == '}{"}'


def test_malformed_json_is_repaired_at_the_end() -> None:
    assembler = StreamAssembler("openai")
    assembler.feed_all(openai_chunks([("read_file", '{"path": "a.py", "limit": 5,}')]))
    call = assembler.finish().calls[0]
    assert call.repair == "repaired" and json.loads(call.final_arguments) == {"path": "a.py", "limit": 5}


@pytest.mark.parametrize(
    "text, expected",
    [
        ('{"path": "a.py"', {"path": "a.py"}),  # only the closing brace is missing
        ('{"path": "a.py", "content": "half of the fi', {"path": "a.py"}),  # a cut string is dropped, not kept
        ('{"path": "a.py", "limit": 20', {"path": "a.py"}),  # a number may still have been growing
        ('{"a": [1, 2], "b": {"c": "d"', {"a": [1, 2], "b": {"c": "d"}}),
        ('{"command": "pytest -q tests/te', None),  # nothing certain is left
    ],
)
def test_truncated_json_keeps_only_what_is_certain(text: str, expected: dict | None) -> None:
    scanner = JsonScanner()
    scanner.feed(text)
    repaired = complete_truncated(text, scanner)
    if expected is None:
        assert repaired is None or json.loads(repaired) == {}
    else:
        assert repaired is not None and json.loads(repaired) == expected


def test_a_response_cut_at_max_tokens() -> None:
    assembler = StreamAssembler("anthropic")
    surfaced = assembler.feed_all(anthropic_events(
        [("read_file", '{"path": "a.py"}'), ("write_file", '{"path": "b.py", "content": "x = 1\\ny = ')],
        stop="max_tokens"))
    response = assembler.finish()
    assert [c.name for c in surfaced] == ["read_file"]  # the cut call never surfaced
    assert response.stop_reason == STOP_MAX_TOKENS
    cut = response.calls[1]
    assert cut.repair == "truncated" and cut.arguments_object() == {"path": "b.py"}  # validation will ask for content


def test_unparseable_arguments_are_left_for_validation_to_report() -> None:
    assembler = StreamAssembler("openai")
    assembler.feed_all(openai_chunks([("read_file", "{'path': 'a.py'}")]))
    call = assembler.finish().calls[0]
    assert call.repair == "unparsed" and call.final_arguments == "{'path': 'a.py'}"
    assert call.arguments_object() == {}


def _delta(*tool_calls: dict) -> dict:
    return {"choices": [{"index": 0, "delta": {"tool_calls": list(tool_calls)}}]}


def _whole(call_id: str | None, name: str, args: str | dict, index: int | None = None) -> dict:
    tc: dict = {"type": "function", "function": {"name": name, "arguments": args}}
    if call_id is not None:
        tc["id"] = call_id
    if index is not None:
        tc["index"] = index
    return tc


A, B = '{"path": "a.py"}', '{"pattern": "x", "path": "src"}'
# How OpenAI-compatible servers frame two calls of one response. Each must
# come out as two calls, never one call with both argument texts glued.
FRAMINGS = {
    # OpenAI itself: an index per call, the id and name with its first delta.
    "openai": [_delta(_whole("c1", "read_file", "", 0)), _delta({"index": 0, "function": {"arguments": A}}),
               _delta(_whole("c2", "grep", "", 1)), _delta({"index": 1, "function": {"arguments": B}})],
    # Ollama: every call whole, each under index 0.
    "same index, whole calls": [_delta(_whole("c1", "read_file", A, 0)), _delta(_whole("c2", "grep", B, 0))],
    # Both calls in one chunk, both under index 0.
    "same index, one chunk": [_delta(_whole("c1", "read_file", A, 0), _whole("c2", "grep", B, 0))],
    # Gemini: no index; a call's later argument fragments carry no id either.
    "no index": [_delta(_whole("c1", "read_file", A[:5])), _delta({"function": {"arguments": A[5:]}}),
                 _delta(_whole("c2", "grep", B[:7])), _delta({"function": {"arguments": B[7:]}})],
    # No index and one id for both (a server numbering nothing).
    "no index, one id": [_delta(_whole("c1", "read_file", A)), _delta(_whole("c1", "grep", B))],
    # No index, no ids, each call whole: only the names tell them apart.
    "no index, no ids": [_delta(_whole(None, "read_file", A)), _delta(_whole(None, "grep", B))],
    # Arguments sent as an object rather than JSON text.
    "object arguments": [_delta(_whole("c1", "read_file", json.loads(A), 0)), _delta(_whole("c2", "grep", json.loads(B), 1))],
    # Index 0 reused without ids: a name after the held call's JSON closed opens the next.
    "same index, no ids": [_delta(_whole(None, "read_file", A, 0)), _delta(_whole(None, "grep", B, 0))],
}


@pytest.mark.parametrize("framing", list(FRAMINGS))
def test_two_calls_stay_two_however_a_server_numbers_them(framing: str) -> None:
    assembler = StreamAssembler("openai", id_prefix="call_m3")
    surfaced = assembler.feed_all(FRAMINGS[framing] + [{"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}])
    calls = assembler.finish().calls
    assert [(c.name, json.loads(c.final_arguments)) for c in calls] == [("read_file", json.loads(A)), ("grep", json.loads(B))]
    assert all(c.repair == "" for c in calls)
    ids = [c.id for c in calls]
    assert len(set(ids)) == 2 and all(ids)
    if framing == "no index, one id":
        assert ids == ["c1", "call_m3_1"]
    elif "no ids" not in framing:
        assert ids == ["c1", "c2"]
        # each surfaced while streaming, with the arguments it finally has
        assert [(c.id, c.final_arguments) for c in surfaced] == [(c.id, c.final_arguments) for c in calls]
    else:
        assert ids == ["call_m3_0", "call_m3_1"]


def test_what_a_server_adds_to_a_call_goes_back_with_it() -> None:
    from core.session.providers import openai_messages

    signature = {"google": {"thought_signature": "c2lnbmF0dXJl"}}
    assembler = StreamAssembler("openai")
    assembler.feed_all([
        _delta({**_whole("c1", "read_file", A[:4]), "extra_content": signature}),
        _delta({"function": {"arguments": A[4:]}}),
        _delta({"extra_content": signature}),  # a delta that only carries metadata (Gemini sends these)
        _delta(_whole("c2", "grep", B)),
    ])
    calls = assembler.finish().calls
    assert [c.extra for c in calls] == [{"extra_content": signature}, {}]
    entry = TranscriptEntry(kind="assistant", tool_calls=[ToolCall(id=c.id, name=c.name, arguments=c.final_arguments)
                                                          for c in calls],
                            call_extras={c.id: c.extra for c in calls if c.extra})
    sent = openai_messages([entry])[0]["tool_calls"]
    assert sent[0] == {"extra_content": signature, "id": "c1", "type": "function",
                       "function": {"name": "read_file", "arguments": A}}
    assert "extra_content" not in sent[1]
    # An entry without extras encodes as before: old transcript nodes keep their names.
    from core.session.transcript import encode_node
    plain = TranscriptEntry(kind="assistant", tool_calls=entry.tool_calls)
    assert b"call_extras" not in encode_node(None, plain)[1]


@pytest.mark.parametrize(
    "ids, expected",
    [
        (["c1", "c1"], ["c1", "call_m2_1"]),  # a repeated id would answer one call twice
        (["", "c2"], ["call_m2_0", "c2"]),
        (["x" * 300, "c2"], ["call_m2_0", "c2"]),  # longer than a turn accepts
        (["call_m2_1", ""], ["call_m2_1", "call_m2_1_"]),  # a made-up id never repeats a real one
    ],
)
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_every_call_gets_an_id_of_its_own(provider: str, ids: list[str], expected: list[str]) -> None:
    calls = [("read_file", A), ("grep", B)]
    items = openai_chunks(calls) if provider == "openai" else anthropic_events(calls)
    ordinal = 0
    for item in items:  # swap the generated ids for the server's
        for tc in ((item.get("choices") or [{}])[0].get("delta") or {}).get("tool_calls") or []:
            if "id" in tc:
                tc["id"], ordinal = ids[ordinal], ordinal + 1
        block = item.get("content_block") or {}
        if block.get("type") == "tool_use":
            block["id"], ordinal = ids[ordinal], ordinal + 1
    assembler = StreamAssembler(provider, id_prefix="call_m2")  # type: ignore[arg-type]
    assembler.feed_all(items)
    assert [c.id for c in assembler.finish().calls] == expected


def test_transcript_nodes_are_content_addressed_and_verified() -> None:
    entry = TranscriptEntry(kind="user", text="hello")
    digest, data = encode_node(None, entry)
    assert encode_node(None, entry)[0] == digest  # same parent + entry: same node (idempotent append)
    assert encode_node(digest, entry)[0] != digest
    assert decode_node(digest, data) == (None, entry)
    with pytest.raises(TranscriptCorrupted):
        decode_node(digest, data.replace(b"hello", b"hellO"))


def test_the_default_system_prompt_names_every_tool_and_its_rules() -> None:
    from core.session.prompt import default_system_prompt
    from core.tools.specs import TOOLS

    prompt = default_system_prompt()
    for name, spec in TOOLS.items():
        assert f"- {name}: {spec.description}" in prompt
    assert "must be read in this session" in prompt and "approval" in prompt


def test_a_whole_answer_reads_as_the_stream_it_stands_for() -> None:
    from core.session import unstreamed

    completion = {"id": "chatcmpl-1", "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": "Reading.", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": A}},
            # some servers send the arguments as an object
            {"id": "c2", "type": "function", "function": {"name": "grep", "arguments": json.loads(B)}}]}}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 9}}
    message = {"id": "msg_1", "type": "message", "stop_reason": "tool_use", "usage": {"input_tokens": 5, "output_tokens": 9},
               "content": [{"type": "text", "text": "Reading."},
                           {"type": "tool_use", "id": "c1", "name": "read_file", "input": json.loads(A)},
                           {"type": "tool_use", "id": "c2", "name": "grep", "input": json.loads(B)}]}
    for provider, items in (("openai", unstreamed.openai_chunks(completion)), ("anthropic", unstreamed.anthropic_events(message))):
        assembler = StreamAssembler(provider)  # type: ignore[arg-type]
        assembler.feed_all(items)
        response = assembler.finish()
        assert response.text == "Reading." and response.stop_reason == STOP_TOOL_USE, provider
        assert [(c.id, c.name, json.loads(c.final_arguments)) for c in response.calls] == [
            ("c1", "read_file", json.loads(A)), ("c2", "grep", json.loads(B))], provider
        assert (response.usage.input_tokens, response.usage.output_tokens) == (5, 9), provider
    for body in ({"detail": "upstream unavailable"}, "<html>502</html>", {"choices": "none"}):
        with pytest.raises(unstreamed.NotAnAnswer, match="without a stream"):
            unstreamed.openai_chunks(body)
        with pytest.raises(unstreamed.NotAnAnswer, match="without a stream"):
            unstreamed.anthropic_events(body)


def test_a_refusal_is_the_answer() -> None:
    assembler = StreamAssembler("openai")
    assembler.feed_all([{"choices": [{"index": 0, "delta": {"role": "assistant", "refusal": ""}}]},
                        {"choices": [{"index": 0, "delta": {"refusal": "I can't help "}}]},
                        {"choices": [{"index": 0, "delta": {"refusal": "with that."}, "finish_reason": "stop"}]}])
    assert assembler.finish().text == "I can't help with that."


def test_the_output_cap_goes_by_the_name_the_server_knows() -> None:
    from activities.model import openai_chat
    from core.session.contracts import ModelConfig

    config = ModelConfig(provider="openai", model="m", max_output_tokens=512)
    entries = [TranscriptEntry(kind="user", text="hi")]
    compatible = openai_chat.request_arguments(config, entries)
    official = openai_chat.request_arguments(config, entries, openai_api=True)
    assert compatible["max_tokens"] == 512 and "max_completion_tokens" not in compatible
    assert official["max_completion_tokens"] == 512 and "max_tokens" not in official
    client = openai_chat.make_client("k", None)
    assert client.base_url.host == openai_chat.OPENAI_API_HOST  # what the default URL is recognised by


def test_thinking_blocks_are_kept_whole_and_go_back_first() -> None:
    from core.session.providers import anthropic_request

    events = [{"type": "message_start", "message": {"id": "m1", "usage": {}}},
              {"type": "content_block_start", "index": 7, "content_block": {"type": "thinking", "thinking": "", "signature": ""}},
              {"type": "content_block_delta", "index": 7, "delta": {"type": "thinking_delta", "thinking": "look "}},
              {"type": "content_block_delta", "index": 7, "delta": {"type": "thinking_delta", "thinking": "first"}},
              {"type": "content_block_delta", "index": 7, "delta": {"type": "signature_delta", "signature": "c2ln"}},
              {"type": "content_block_stop", "index": 7},
              {"type": "content_block_start", "index": 8, "content_block": {"type": "redacted_thinking", "data": "ZW5j"}},
              {"type": "content_block_stop", "index": 8}]
    assembler = StreamAssembler("anthropic")  # (a real stream numbers blocks in order; any order works)
    assembler.feed_all(events + anthropic_events([("read_file", A)])[1:])
    response = assembler.finish()
    assert response.thinking == [{"type": "thinking", "thinking": "look first", "signature": "c2ln"},
                                 {"type": "redacted_thinking", "data": "ZW5j"}]
    assert response.text == "ok"  # thinking is not the answer
    calls = [ToolCall(id=c.id, name=c.name, arguments=c.arguments_object()) for c in response.calls]
    _, messages = anthropic_request([TranscriptEntry(kind="assistant", text=response.text, tool_calls=calls,
                                                     thinking=response.thinking)])
    assert [b["type"] for b in messages[0]["content"]] == ["thinking", "redacted_thinking", "text", "tool_use"]
    _, only_thought = anthropic_request([TranscriptEntry(kind="assistant", thinking=response.thinking[:1])])
    assert [b["type"] for b in only_thought[0]["content"]] == ["thinking", "text"]  # never ends on thinking


def test_reasoning_details_assemble_by_index_and_go_back_unchanged() -> None:
    from core.session import unstreamed
    from core.session.providers import anthropic_request, openai_messages
    from core.session.transcript import encode_node

    def details(pieces: object) -> dict:
        return {"choices": [{"index": 0, "delta": {"reasoning_details": pieces}}]}

    assembler = StreamAssembler("openai")
    assembler.feed_all([
        details([{"type": "reasoning.encrypted", "id": "r1", "format": "f", "index": 1, "data": "ZW5j"},  # later index first
                 {"type": "reasoning.text", "id": "r0", "format": "f", "index": 0, "text": "look ", "signature": None}]),
        details([{"type": "reasoning.text", "id": None, "format": "other", "index": 0, "text": "first"},
                 {"type": "reasoning.encrypted", "index": 1, "data": "cnlw"}]),
        # what cannot be placed is skipped; the rest of the answer still counts
        details(["junk", None, {"text": "no index"}, {"index": "0", "text": "?"}, {"index": True, "text": "?"},
                 {"type": "reasoning.text", "index": 0, "signature": "c2ln"}]),
        details("not a list"),
        details({"index": 0, "text": "an object"}),
        *openai_chunks([("read_file", A)], text="ok"),
    ])
    response = assembler.finish()
    expected = [{"type": "reasoning.text", "id": "r0", "format": "f", "index": 0, "text": "look first", "signature": "c2ln"},
                {"type": "reasoning.encrypted", "id": "r1", "format": "f", "index": 1, "data": "ZW5jcnlw"}]
    assert response.reasoning_details == expected
    assert response.text == "ok" and [c.name for c in response.calls] == ["read_file"]
    calls = [ToolCall(id=c.id, name=c.name, arguments=c.final_arguments) for c in response.calls]
    entry = TranscriptEntry(kind="assistant", text="ok", tool_calls=calls, reasoning_details=expected)
    assert openai_messages([entry])[0]["reasoning_details"] == expected
    assert "reasoning_details" not in json.dumps(anthropic_request([entry])[1])  # OpenRouter's field, not Anthropic's
    plain = TranscriptEntry(kind="assistant", text="ok", tool_calls=calls)
    assert "reasoning_details" not in openai_messages([plain])[0]
    assert b"reasoning_details" not in encode_node(None, plain)[1]  # old transcript nodes keep their names
    # A whole (unstreamed) answer carries them in its message.
    completion = {"id": "c", "choices": [{"index": 0, "finish_reason": "stop", "message": {
        "role": "assistant", "content": "ok", "reasoning_details": expected}}]}
    whole = StreamAssembler("openai")
    whole.feed_all(unstreamed.openai_chunks(completion))
    assert whole.finish().reasoning_details == expected


def test_a_repeated_call_with_arguments_nested_past_the_parser_is_compared_as_text() -> None:
    from core.session.stream_assembly import _same_json

    deep = "[" * 100_000 + "]" * 100_000  # json.loads raises RecursionError here
    assert _same_json(deep, deep) and not _same_json(deep, "[]")


def test_an_event_nested_past_the_parser_is_no_item() -> None:
    from core.session.unstreamed import event_item

    assert event_item("content_block_delta", "[" * 100_000 + "]" * 100_000) is None
    assert event_item("ping", '{"type": "ping"}') is None
