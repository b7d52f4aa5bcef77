"""Readable answers to what a client sends wrong. Pure.

The SDK (mcp 2.3) answers a request whose params fail validation with a bare
"Invalid request parameters" (no detail), and over stdio it drops a line it
cannot read as a JSON-RPC message without any answer, so a client that sent
a malformed request with an id waits for ever. These build the answers the
server sends instead: which field is wrong and what to send.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import mcp_types as types

from core.tools.arguments import has_lone_surrogate, replace_surrogates

MAX_PROBLEMS = 5


def _where(loc: Iterable[Any]) -> str:
    return ".".join(str(part) for part in loc) or "params"


def invalid_params_message(method: str, errors: list[dict[str, Any]]) -> str:
    """The message of an INVALID_PARAMS error, from pydantic's errors (their
    locations and messages only: the client's input is not echoed)."""
    problems = [f"{_where(e.get('loc', ()))}: {e.get('msg', 'invalid')}" for e in errors[:MAX_PROBLEMS]]
    if len(errors) > MAX_PROBLEMS:
        problems.append(f"... {len(errors) - MAX_PROBLEMS} more")
    message = f"invalid params for {method}: " + "; ".join(problems)
    if method == "tools/call":
        message += (" (send params as {\"name\": <a tool from tools/list>, \"arguments\": {...}}, "
                    "arguments a JSON object matching the tool's inputSchema)")
    return message


def _request_id(value: Any) -> str | int | None:
    if isinstance(value, str):
        # Python's JSON parser reads an escaped lone surrogate ("\\udcff"),
        # which no UTF-8 answer can carry: echoing it would make writing the
        # answer fail and take the server's output down with it.
        return value if not has_lone_surrogate(value) else None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return None


def reply_to_unreadable(errors: list[dict[str, Any]]) -> types.JSONRPCError | None:
    """The answer to a line that is not a JSON-RPC message, given the errors
    of validating it as one; None when nothing should be answered (a blank
    line, a malformed notification or answer: JSON-RPC answers neither)."""
    if not errors:
        return None
    if any(e.get("type") == "json_invalid" for e in errors):
        line = str(errors[0].get("input", ""))
        if not line.strip():
            return None
        why = replace_surrogates(next(str(e.get("msg")) for e in errors if e.get("type") == "json_invalid"))
        try:
            # JSON the SDK's parser gives up on (nested deeper than it reads)
            # may still name the request to answer.
            readable = json.loads(line)
        except (ValueError, RecursionError):
            readable = None
        request_id = _request_id(readable.get("id")) if isinstance(readable, dict) and "method" in readable else None
        if request_id is not None and "recursion" in why:
            return types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(
                code=types.INVALID_REQUEST, message=f"invalid request ({why}): nest the params less deeply"))
        if request_id is not None:
            return types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(
                code=types.INVALID_REQUEST, message=f"invalid request ({why}): send the message as valid JSON"))
        return types.JSONRPCError(jsonrpc="2.0", id=None, error=types.ErrorData(
            code=types.PARSE_ERROR, message=f"parse error ({why}): send one JSON-RPC message as JSON on each line"))
    message = next((e["input"] for e in errors if isinstance(e.get("input"), dict)), None)
    if message is None:
        return types.JSONRPCError(jsonrpc="2.0", id=None, error=types.ErrorData(
            code=types.INVALID_REQUEST, message="invalid request: a message is one JSON object (no batches)"))
    request_id = _request_id(message.get("id"))
    if "method" not in message or request_id is None:
        return None
    problems = [f"{_where(e['loc'][1:])}: {e.get('msg', 'invalid')}" for e in errors
                if e.get("loc") and e["loc"][0] == "JSONRPCRequest"][:MAX_PROBLEMS]
    return types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(
        code=types.INVALID_REQUEST,
        message="invalid request: " + ("; ".join(problems) or "not a JSON-RPC 2.0 request")
        + " (a request is {\"jsonrpc\": \"2.0\", \"id\": ..., \"method\": \"...\", \"params\": {...}})"))
