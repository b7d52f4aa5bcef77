"""The pure parts of the MCP front-end: call order, approval answers, request
state, listening rules, answers to malformed messages."""

from __future__ import annotations

import asyncio

import pytest

from frontends.mcp.approval import answer_from, decode_state, encode_state
from frontends.mcp.errors import invalid_params_message, reply_to_unreadable
from frontends.mcp.ordering import CallOrder
from frontends.mcp.tools import is_concurrency_safe
from frontends.mcp.transport import TransportError, check_listen, is_loopback, loopback_security


async def test_unsafe_calls_run_in_arrival_order_and_safe_ones_together() -> None:
    order = CallOrder()
    log: list[str] = []
    gates = {name: asyncio.Event() for name in ("r1", "r2", "w1", "r3", "w2")}

    async def call(name: str, safe: bool) -> None:
        place = order.take(safe)
        await place.ready()
        log.append(f"start {name}")
        await gates[name].wait()
        log.append(f"end {name}")
        place.release()

    tasks = [asyncio.ensure_future(call(n, n.startswith("r"))) for n in ("r1", "r2", "w1", "r3", "w2")]
    await asyncio.sleep(0.05)
    assert log == ["start r1", "start r2"]  # both reads at once; the write waits for them
    gates["r2"].set()
    await asyncio.sleep(0.05)
    assert "start w1" not in log
    gates["r1"].set()
    await asyncio.sleep(0.05)
    assert log[-1] == "start w1" and "start r3" not in log  # the later read waits for the write
    gates["w1"].set()
    await asyncio.sleep(0.05)
    assert log[-1] == "start r3" and "start w2" not in log
    gates["r3"].set()
    gates["w2"].set()
    await asyncio.gather(*tasks)
    assert log[-2:] == ["start w2", "end w2"]


async def test_a_handed_over_place_holds_until_its_turn_ends() -> None:
    order = CallOrder()
    first = order.take(False)
    await first.ready()
    turn_over = asyncio.Event()
    order.hand_over(first, turn_over.wait)
    second = order.take(False)
    waiting = asyncio.ensure_future(second.ready())
    await asyncio.sleep(0.05)
    assert not waiting.done()
    turn_over.set()
    await asyncio.wait_for(waiting, 1)


def test_concurrency_safety_follows_the_tool_specs() -> None:
    assert is_concurrency_safe("read_file", {"path": "a"})
    assert is_concurrency_safe("bash", {"command": "ls -la"})
    assert not is_concurrency_safe("bash", {"command": "rm -rf build"})
    assert not is_concurrency_safe("write_file", {"path": "a", "content": ""})
    assert not is_concurrency_safe("read_file", {"path": "a", "bogus": 1})  # runs alone; its turn says why
    assert not is_concurrency_safe("nope", {})


@pytest.mark.parametrize(
    "action,content,approve",
    [
        ("accept", {"decision": "approve"}, True),
        ("accept", {"decision": "reject"}, False),
        ("accept", {}, False),
        ("accept", {"decision": "APPROVE"}, False),
        ("decline", {"decision": "approve"}, False),
        ("cancel", None, False),
    ],
)
def test_only_an_explicit_approve_approves(action: str, content: dict | None, approve: bool) -> None:
    answer = answer_from(action, content)
    assert answer.approve is approve
    if not approve:
        assert answer.reason  # the agent is told something


def test_request_state_round_trip_and_garbage() -> None:
    assert decode_state(encode_state("t-1", "d" * 64)) == ("t-1", "d" * 64)
    for bad in ("", "null", "[]", '{"turn_id": 1, "digest": "x"}', "{not json",
                # No digest or a prefix: the turn would read either as "whatever is pending".
                encode_state("t-1", ""), encode_state("t-1", "d" * 12), encode_state("t-1", "D" * 64)):
        with pytest.raises(ValueError, match="requestState"):
            decode_state(bad)


def test_listening_needs_a_token_beyond_loopback() -> None:
    for host in ("127.0.0.1", "localhost", "::1", "127.0.0.2"):
        assert is_loopback(host)
        check_listen(host, None)
    for host in ("0.0.0.0", "::", "192.168.1.5", "example.org"):
        assert not is_loopback(host)
        with pytest.raises(TransportError, match="AGENT_TOOLS_MCP_TOKEN"):
            check_listen(host, None)
        check_listen(host, "secret")


def _unreadable(line: str) -> list[dict]:
    import mcp_types as types
    from pydantic import ValidationError

    try:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError as exc:
        return exc.errors(include_url=False)
    raise AssertionError(f"{line!r} is a valid message")


@pytest.mark.parametrize("line, code, request_id", [
    ('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":[]}', -32600, 7),
    ('{"jsonrpc":"2.0","id":"a","method":5}', -32600, "a"),
    ('{"jsonrpc":"2.0","id":"d","method":"m","params":{"x":' + "[" * 300 + "]" * 300 + "}}", -32600, "d"),
    ("{oops", -32700, None),
    ("[1, 2]", -32600, None),
])
def test_an_unreadable_request_is_answered(line: str, code: int, request_id: object) -> None:
    reply = reply_to_unreadable(_unreadable(line))
    assert reply is not None
    assert (reply.error.code, reply.id) == (code, request_id)
    assert "send" in reply.error.message or "request" in reply.error.message


@pytest.mark.parametrize("line", [
    "", "   ",
    '{"jsonrpc":"2.0","method":5}',                 # a notification: JSON-RPC never answers one
    '{"jsonrpc":"2.0","id":[1],"method":5}',      # no usable id
    '{"jsonrpc":"2.0","id":3}',                     # an answer gone wrong
])
def test_unanswerable_lines_get_no_answer(line: str) -> None:
    assert reply_to_unreadable(_unreadable(line)) is None


def test_invalid_params_message_names_the_field_not_the_input() -> None:
    message = invalid_params_message("tools/call", [
        {"loc": ("arguments",), "msg": "Input should be a valid dictionary", "input": "SECRET"},
    ])
    assert message.startswith("invalid params for tools/call: arguments: Input should be a valid dictionary")
    assert "inputSchema" in message and "SECRET" not in message
    many = invalid_params_message("tasks/get", [{"loc": ("taskId",), "msg": "bad"}] * 7)
    assert many.count("taskId: bad") == 5 and "2 more" in many


def test_every_loopback_address_checks_host_and_origin() -> None:
    for host in ("127.0.0.1", "127.0.0.2", "localhost", "::1"):
        security = loopback_security(host)
        assert security is not None and security.enable_dns_rebinding_protection
        assert "localhost:*" in security.allowed_hosts
    assert "127.0.0.2:*" in loopback_security("127.0.0.2").allowed_hosts
    assert "http://[::1]:*" in loopback_security("::1").allowed_origins
    # Elsewhere a token is required (and a web page cannot send it).
    assert loopback_security("0.0.0.0") is None


def test_the_review_shows_a_previewed_change_once() -> None:
    from core.contracts import PendingCall, TurnProgress, TurnStatus
    from core.shell import validate_command
    from frontends.mcp.approval import review_text

    preview = "captured changes:\n  M src/app.py (+1 -0)\n  A notes.txt"
    pending = PendingCall(index=0, tool_call_id="c0", name="bash", reason="writes files",
                          arguments={"command": "make fmt", "timeout_seconds": 5}, preview=preview)
    text = review_text(TurnProgress(turn_id="t1", status=TurnStatus.PAUSED, batch_digest="d" * 64,
                                    pending=[pending]), validate_command)
    assert text.count("M src/app.py (+1 -0)") == 1, text
    assert "make fmt" in text and "d" * 64 in text
