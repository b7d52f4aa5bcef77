"""An Anthropic stream that begins its answer over with a second
message_start (a gateway retrying upstream mid-answer; recorded in
tests/data/recorded_streams/anthropic_generation_restarted.sse): the pure
assembly, for what a recording cannot show."""

from __future__ import annotations

import json
from typing import Any

from core.session.stream_assembly import StreamAssembler


def _start(message_id: str) -> dict[str, Any]:
    return {"type": "message_start", "message": {"id": message_id, "usage": {"input_tokens": 17, "output_tokens": 1}}}


def _call(index: int, call_id: str, arguments: str) -> list[dict[str, Any]]:
    return [{"type": "content_block_start", "index": index,
             "content_block": {"type": "tool_use", "id": call_id, "name": "glob", "input": {}}},
            {"type": "content_block_delta", "index": index,
             "delta": {"type": "input_json_delta", "partial_json": arguments}}]


def test_a_call_that_surfaced_before_the_answer_began_again_stays_and_the_new_ones_follow() -> None:
    assembler = StreamAssembler("anthropic", id_prefix="call_m1")
    assembler.feed(_start("msg_1"))
    assembler.feed({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": "First "}})
    surfaced = assembler.feed_all(_call(1, "toolu_a", '{"pattern": "*.py"}'))
    assert [c.id for c in surfaced] == ["toolu_a"]  # may already be running
    assembler.feed_all(_call(2, "toolu_half", '{"pattern": "*.'))  # cut off by the restart
    assembler.feed(_start("msg_2"))
    assembler.feed({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": "Again."}})
    assembler.feed_all(_call(1, "toolu_b", '{"pattern": "*.md"}'))
    assembler.feed({"type": "content_block_stop", "index": 1})
    assembler.feed({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}})
    assembler.feed({"type": "message_stop"})
    response = assembler.finish()
    assert response.text == "Again."
    assert [(c.position, c.id, json.loads(c.final_arguments)) for c in response.calls] == [
        (0, "toolu_a", {"pattern": "*.py"}), (1, "toolu_b", {"pattern": "*.md"})]
    assert response.response_id == "msg_2"


def test_a_message_start_sent_twice_before_any_content_changes_nothing() -> None:
    assembler = StreamAssembler("anthropic")
    assembler.feed_all([_start("msg_dup"), _start("msg_dup"), *_call(0, "toolu_a", '{"pattern": "*"}'),
                        {"type": "message_stop"}])
    response = assembler.finish()
    assert [(c.id, c.final_arguments) for c in response.calls] == [("toolu_a", '{"pattern": "*"}')]


def test_an_answer_begun_again_must_itself_say_it_is_done() -> None:
    """The first generation's message_stop does not end the second: one cut
    inside a call's arguments is cut, not taken."""
    assembler = StreamAssembler("anthropic")
    assembler.feed_all([_start("msg_1"), {"type": "message_delta", "delta": {"stop_reason": "end_turn"}},
                        {"type": "message_stop"}, _start("msg_2"), *_call(0, "toolu_b", '{"pattern": "*.')])
    assert assembler.cut_short() == "the stream ended inside the arguments of tool call 1 (glob)"
    assert assembler.finish().raw_stop_reason is None
