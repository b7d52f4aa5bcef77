"""A scripted model server on loopback that speaks the OpenAI Chat Completions
and the Anthropic Messages HTTP APIs, faithfully enough for the official SDKs.

    server = ScriptedModelServer([Reply(tool_calls=[tool("read_file", path="a.py")]),
                                  Reply(text="Done.")]).start()
    # OPENAI_BASE_URL=server.openai_base_url   ANTHROPIC_BASE_URL=server.anthropic_base_url
    ...
    server.requests  # what the SDKs sent, in order
    server.stop()

Each request takes the next entry of the script (a list, or a function of the
request). A ``Reply`` is rendered in the protocol of the path it was asked on:
``POST /v1/chat/completions`` (JSON, or SSE chunks with ``tool_calls`` deltas
when ``stream: true``) or ``POST /v1/messages`` (JSON, or SSE
``message_start`` / ``content_block_*`` with ``input_json_delta`` /
``message_delta`` / ``message_stop``). A ``Failure`` answers with the HTTP
status and error body each API uses (429 with Retry-After, 500, 529, 401,
403, 400 and the context-too-long 400). Tokens can be paced to measure
streaming. Pure stdlib: asyncio in a thread of its own, so a test that blocks
its own loop (starting a worker process) does not stall the stream.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

OPENAI_PATH = "/v1/chat/completions"
ANTHROPIC_PATH = "/v1/messages"


@dataclass
class ToolUse:
    name: str
    # A dict is sent as its JSON; a str is sent verbatim (malformed JSON on purpose).
    arguments: dict[str, Any] | str


def tool(name: str, **arguments: Any) -> ToolUse:
    return ToolUse(name, arguments)


@dataclass
class Reply:
    text: str = ""
    tool_calls: list[ToolUse] = field(default_factory=list)
    input_tokens: int = 20
    output_tokens: int | None = None  # default: one per streamed piece
    # "length" (OpenAI) / "max_tokens" (Anthropic) to simulate a cut-off response.
    stop_reason: str | None = None
    tokens_per_second: float | None = None  # None: as fast as possible
    chars_per_token: int = 4
    first_token_delay_s: float = 0.0
    # Close the connection after this many streamed pieces (a broken stream).
    drop_after_pieces: int | None = None
    # How a streamed OpenAI answer frames its tool calls: "indexed" (OpenAI:
    # an index per call, id and name in its first delta), "same_index" (each
    # call whole under index 0, as Ollama sends them) or "no_index" (no
    # index; later fragments carry no id, as Gemini's compatible API sends them).
    openai_tool_framing: str = "indexed"
    # Extra fields in each streamed OpenAI tool call's first delta (Gemini's
    # compatible API adds {"extra_content": {"google": {"thought_signature": ...}}}).
    openai_call_extra: dict[str, Any] | None = None
    # Answer with one JSON body even when the request asks for a stream (as
    # some compatible servers and proxies do); a str is sent as the body verbatim.
    unstreamed: bool | str = False
    # End the stream cleanly but without the answer saying it is done (no
    # finish_reason chunk; no message_delta / message_stop); a number: also
    # after that many pieces, as a proxy that cuts a stream may.
    end_early: bool | int = False
    # The Content-Type of a streamed answer (None: text/event-stream; some
    # servers label their events application/json).
    stream_content_type: str | None = None
    # Anthropic: a thinking block (signed "sig_{request index}") before the answer.
    thinking: str | None = None
    # OpenAI: reasoning streamed in delta.reasoning_content before the answer (DeepSeek).
    reasoning: str | None = None
    # OpenAI: OpenRouter's reasoning_details, whole as they should assemble.
    # Streamed, each detail with an int index comes in pieces of its text,
    # summary, data and signature (see _detail_deltas), interleaved with the
    # other details' pieces; anything else (a bad shape) is sent as it is.
    reasoning_details: Any = None
    # An error sent inside the stream (HTTP 200) after this many pieces, in
    # the provider's shape (OpenAI: a chunk {"error": ...}; Anthropic: an
    # ``error`` event); the stream ends there. (pieces, Failure); a str is
    # the event's data verbatim (OpenAI: e.g. {"error": "a plain string"}).
    stream_error: "tuple[int, Failure | str] | None" = None
    # The stream's body verbatim, a write per string (what no field renders).
    raw_stream: list[str] | None = None
    # OpenAI: the content as a list of typed parts, as Mistral sends it
    # (``reasoning`` as {"type": "thinking", "thinking": [parts]} first).
    content_parts: bool = False
    # The tool calls' ids, one per call, as a misbehaving server sends them
    # (repeated, empty; None: no id field at all). None: unique generated ids.
    call_ids: list[str | None] | None = None


@dataclass
class Failure:
    status: int
    kind: str  # an error type of the provider, e.g. "rate_limit_error"
    message: str
    retry_after_s: float | None = None
    code: str | None = None  # OpenAI error code, e.g. "context_length_exceeded"


def rate_limited(retry_after_s: float = 1.0) -> Failure:
    return Failure(429, "rate_limit_error", "Rate limit reached; slow down.", retry_after_s, "rate_limit_exceeded")


def server_error() -> Failure:
    return Failure(500, "api_error", "The server had an error while processing your request.")


def overloaded() -> Failure:
    return Failure(529, "overloaded_error", "Overloaded")


def unauthorized() -> Failure:
    return Failure(401, "authentication_error", "Incorrect API key provided.", code="invalid_api_key")


def forbidden() -> Failure:
    return Failure(403, "permission_error", "Your API key does not have permission to use this model.")


def context_too_long() -> Failure:
    return Failure(
        400,
        "invalid_request_error",
        "prompt is too long: 210000 tokens > 200000 maximum "
        "(This model's maximum context length is 200000 tokens.)",
        code="context_length_exceeded",
    )


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    received_at: float


Script = list[Reply | Failure] | Callable[[Recorded, int], Reply | Failure]


class ScriptedModelServer:
    def __init__(self, script: Script | None = None, *, host: str = "127.0.0.1") -> None:
        self._script = script if script is not None else []
        self._host = host
        self._lock = threading.Lock()
        self.requests: list[Recorded] = []
        self.streams_in_progress = 0
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._stopped: asyncio.Event | None = None
        self._connections: set[asyncio.Task[None]] = set()

    # ---------------------------------------------------------- lifecycle
    @property
    def base_url(self) -> str:
        return f"http://{self._host}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        return f"{self.base_url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.base_url

    def start(self) -> "ScriptedModelServer":
        self._thread = threading.Thread(target=self._run_thread, name="scripted-model-server", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("scripted model server did not start")
        return self

    def stop(self) -> None:
        if self._loop is not None and self._stopped is not None:
            self._loop.call_soon_threadsafe(self._stopped.set)
        if self._thread is not None:
            self._thread.join(10)

    def __enter__(self) -> "ScriptedModelServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def add(self, *entries: Reply | Failure) -> None:
        with self._lock:
            assert isinstance(self._script, list), "add() needs a list script"
            self._script.extend(entries)

    def wait_for_requests(self, count: int, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while len(self.requests) < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"model server got {len(self.requests)} requests, expected {count}")
            time.sleep(0.02)

    def _run_thread(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        loop.run_until_complete(self._serve())
        loop.close()

    async def _serve(self) -> None:
        self._stopped = asyncio.Event()
        server = await asyncio.start_server(self._connection, self._host, 0)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        async with server:
            await self._stopped.wait()
        server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)

    # -------------------------------------------------------------- HTTP
    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        sock = writer.get_extra_info("socket")
        if sock is not None:  # small SSE writes must not wait for delayed ACKs (Nagle)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            while True:  # keep-alive: the SDKs reuse connections
                request_line = await reader.readline()
                if not request_line:
                    return
                method, path, _ = request_line.decode("latin-1").split(" ", 2)
                headers: dict[str, str] = {}
                while True:
                    line = await reader.readline()
                    if line in (b"\r\n", b"\n", b""):
                        break
                    name, _, value = line.decode("latin-1").partition(":")
                    headers[name.strip().lower()] = value.strip()
                body = await reader.readexactly(int(headers.get("content-length", "0") or 0))
                keep = await self._handle(method, path.split("?")[0], headers, body, writer)
                if not keep:
                    return
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            return
        finally:
            self._connections.discard(task)
            try:
                writer.close()
            except Exception:
                pass

    async def _handle(
        self, method: str, path: str, headers: dict[str, str], raw: bytes, writer: asyncio.StreamWriter
    ) -> bool:
        if method != "POST" or path not in (OPENAI_PATH, ANTHROPIC_PATH):
            await _send_json(writer, 404, {"error": {"type": "not_found_error", "message": f"no route {method} {path}"}})
            return True
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            await _send_json(writer, 400, {"error": {"type": "invalid_request_error", "message": "body is not JSON"}})
            return True
        recorded = Recorded(path, headers, body, time.monotonic())
        with self._lock:
            self.requests.append(recorded)
            index = len(self.requests) - 1
            entry = self._next(recorded, index)
        provider = "openai" if path == OPENAI_PATH else "anthropic"
        if isinstance(entry, Failure):
            await _send_failure(writer, provider, entry)
            return True
        if isinstance(entry.unstreamed, str):
            writer.write(f"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
                         f"{len(entry.unstreamed.encode())}\r\n\r\n".encode() + entry.unstreamed.encode())
            await writer.drain()
            return True
        if body.get("stream") and not entry.unstreamed:
            with self._lock:
                self.streams_in_progress += 1
            try:
                return await self._stream(writer, provider, entry, index, body)
            finally:
                with self._lock:
                    self.streams_in_progress -= 1
        await asyncio.sleep(entry.first_token_delay_s)
        payload = _openai_json(entry, index, body) if provider == "openai" else _anthropic_json(entry, index, body)
        await _send_json(writer, 200, payload)
        return True

    def _next(self, recorded: Recorded, index: int) -> Reply | Failure:
        if callable(self._script):
            return self._script(recorded, index)
        if not self._script:
            return Failure(400, "invalid_request_error", "scripted model server: the script has no reply left")
        return self._script.pop(0)

    async def _stream(
        self, writer: asyncio.StreamWriter, provider: str, reply: Reply, index: int, body: dict[str, Any]
    ) -> bool:
        content_type = reply.stream_content_type or "text/event-stream; charset=utf-8"
        writer.write(
            f"HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\n".encode()
            + b"cache-control: no-cache\r\ntransfer-encoding: chunked\r\n"
            + f"x-request-id: req_{index}\r\n".encode()
            + b"\r\n"
        )
        await writer.drain()
        await asyncio.sleep(reply.first_token_delay_s)
        events = _openai_events(reply, index, body) if provider == "openai" else _anthropic_events(reply, index, body)
        if reply.raw_stream is not None:
            events = [(text, False) for text in reply.raw_stream]
        if reply.end_early is not False:
            events = [e for e in events if not any(mark in e[0] for mark in
                                                   ('"finish_reason": "', "message_delta", "message_stop"))]
            if reply.end_early is not True:
                piece_at = [i for i, (_, is_piece) in enumerate(events) if is_piece]
                if len(piece_at) > reply.end_early:
                    events = events[:piece_at[reply.end_early]]
        delay = 1.0 / reply.tokens_per_second if reply.tokens_per_second else 0.0
        pieces = 0
        for text, is_piece in events:
            if is_piece and reply.stream_error is not None and pieces >= reply.stream_error[0]:
                data = _stream_error(provider, reply.stream_error[1]).encode()
                writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n0\r\n\r\n")
                await writer.drain()
                return True
            if is_piece:
                if reply.drop_after_pieces is not None and pieces >= reply.drop_after_pieces:
                    writer.transport.abort()  # a broken stream, as a dropped connection looks
                    return False
                pieces += 1
                if delay:
                    await asyncio.sleep(delay)
            data = text.encode()
            writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            await writer.drain()
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        return True


# ------------------------------------------------------------ rendering
def _stream_error(provider: str, failure: Failure | str) -> str:
    if isinstance(failure, str):
        return f"data: {failure}\n\n"
    if provider == "openai":
        error: dict[str, Any] = {"message": failure.message, "type": failure.kind, "code": failure.code}
        if failure.status != 200:  # as vLLM sends it: the HTTP status it would have answered
            error["code"] = failure.status
        return f"data: {json.dumps({'error': error})}\n\n"
    return _sse("error", {"type": "error", "error": {"type": failure.kind, "message": failure.message}})


def _pieces(text: str, size: int) -> list[str]:
    size = max(1, size)
    return [text[i : i + size] for i in range(0, len(text), size)]


def _detail_deltas(details: Any, size: int) -> list[Any]:
    """The delta.reasoning_details of successive chunks, as OpenRouter
    streams them: a detail's first piece brings its other fields, later
    pieces repeat its type and index (and an id of null); what is not a
    detail with an int index goes first, as it is."""
    if not isinstance(details, list):
        return [details]
    readable = [d for d in details if isinstance(d, dict) and isinstance(d.get("index"), int)]
    split: list[list[dict[str, Any]]] = []
    for detail in readable:
        grows = {k: _pieces(v, size) for k, v in detail.items()
                 if k in ("text", "summary", "data", "signature") and isinstance(v, str) and v}
        later = {k: None if k == "id" else detail[k] for k in ("type", "index", "id") if k in detail}
        pieces = [{k: v for k, v in detail.items() if k not in grows}]
        pieces += [dict(later) for _ in range(max(map(len, grows.values()), default=1) - 1)]
        for key, parts in grows.items():  # a shorter field ends with the detail (a signature comes last)
            for piece, part in zip(pieces[len(pieces) - len(parts):], parts):
                piece[key] = part
        split.append(pieces)
    chunks = [[pieces[n] for pieces in split if n < len(pieces)] for n in range(max(map(len, split), default=0))]
    unreadable = [d for d in details if not any(d is r for r in readable)]
    return [unreadable + (chunks[0] if chunks else [])] + chunks[1:]


def _arguments_text(call: ToolUse) -> str:
    return call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)


_ABSENT = object()


def _call_id(reply: Reply, prefix: str, index: int, i: int) -> object:
    """The id of the reply's i-th call (``_ABSENT``: send no id field)."""
    if reply.call_ids is None:
        return f"{prefix}_{index}_{i}"
    given = reply.call_ids[i]
    return _ABSENT if given is None else given


def _with_id(fields: dict[str, Any], call_id: object) -> dict[str, Any]:
    return fields if call_id is _ABSENT else {"id": call_id, **fields}


def _output_tokens(reply: Reply) -> int:
    if reply.output_tokens is not None:
        return reply.output_tokens
    chars = len(reply.text) + sum(len(_arguments_text(c)) + len(c.name) for c in reply.tool_calls)
    return max(1, chars // max(1, reply.chars_per_token))


def _openai_finish(reply: Reply) -> str:
    return reply.stop_reason or ("tool_calls" if reply.tool_calls else "stop")


def _anthropic_stop(reply: Reply) -> str:
    return reply.stop_reason or ("tool_use" if reply.tool_calls else "end_turn")


def _openai_usage(reply: Reply) -> dict[str, int]:
    out = _output_tokens(reply)
    return {"prompt_tokens": reply.input_tokens, "completion_tokens": out, "total_tokens": reply.input_tokens + out}


def _openai_json(reply: Reply, index: int, body: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None, "refusal": None}
    if reply.content_parts:
        message["content"] = ([{"type": "thinking", "thinking": [{"type": "text", "text": reply.reasoning}]}]
                              if reply.reasoning else []) + [{"type": "text", "text": reply.text}]
    elif reply.reasoning is not None:
        message["reasoning_content"] = reply.reasoning
    if reply.reasoning_details is not None:
        message["reasoning_details"] = reply.reasoning_details
    if reply.tool_calls:
        message["tool_calls"] = [
            _with_id({"type": "function", "function": {"name": c.name, "arguments": _arguments_text(c)}},
                     _call_id(reply, "call", index, i))
            for i, c in enumerate(reply.tool_calls)
        ]
    return {
        "id": f"chatcmpl-{index}",
        "object": "chat.completion",
        "created": 1_700_000_000 + index,
        "model": body.get("model", "scripted"),
        "choices": [{"index": 0, "message": message, "finish_reason": _openai_finish(reply), "logprobs": None}],
        "usage": _openai_usage(reply),
    }


def _openai_events(reply: Reply, index: int, body: dict[str, Any]) -> list[tuple[str, bool]]:
    """(SSE text, is a paced piece) pairs."""
    base = {
        "id": f"chatcmpl-{index}",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000 + index,
        "model": body.get("model", "scripted"),
    }

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
        data = {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}], **extra}
        return f"data: {json.dumps(data)}\n\n"

    events = [(chunk({"role": "assistant", "content": ""}), False)]
    for piece in _pieces(reply.reasoning or "", reply.chars_per_token):
        thought = {"type": "thinking", "thinking": [{"type": "text", "text": piece}]}
        events.append((chunk({"content": [thought]} if reply.content_parts else {"reasoning_content": piece}), True))
    if reply.reasoning_details is not None:
        for details in _detail_deltas(reply.reasoning_details, reply.chars_per_token):
            events.append((chunk({"reasoning_details": details}), True))
    for piece in _pieces(reply.text, reply.chars_per_token):
        content: Any = [{"type": "text", "text": piece}] if reply.content_parts else piece
        events.append((chunk({"content": content}), True))
    for i, call in enumerate(reply.tool_calls):
        call_id, arguments = _call_id(reply, "call", index, i), _arguments_text(call)
        extra = reply.openai_call_extra or {}
        if reply.openai_tool_framing == "same_index":
            whole = {"index": 0, **_with_id({"type": "function", "function": {"name": call.name, "arguments": arguments}},
                                            call_id), **extra}
            events.append((chunk({"tool_calls": [whole]}), True))
            continue
        numbered = {} if reply.openai_tool_framing == "no_index" else {"index": i}
        opening = {**numbered, **_with_id({"type": "function", "function": {"name": call.name, "arguments": ""}}, call_id),
                   **extra}
        events.append((chunk({"tool_calls": [opening]}), True))
        for piece in _pieces(arguments, reply.chars_per_token):
            events.append((chunk({"tool_calls": [{**numbered, "function": {"arguments": piece}}]}), True))
    events.append((chunk({}, _openai_finish(reply)), False))
    if (body.get("stream_options") or {}).get("include_usage"):
        events.append((f"data: {json.dumps({**base, 'choices': [], 'usage': _openai_usage(reply)})}\n\n", False))
    events.append(("data: [DONE]\n\n", False))
    return events


def _anthropic_json(reply: Reply, index: int, body: dict[str, Any]) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if reply.thinking is not None:
        content.append({"type": "thinking", "thinking": reply.thinking, "signature": f"sig_{index}"})
    if reply.text:
        content.append({"type": "text", "text": reply.text})
    for i, call in enumerate(reply.tool_calls):
        args = call.arguments if isinstance(call.arguments, dict) else {}
        content.append({"type": "tool_use", **_with_id({"name": call.name, "input": args}, _call_id(reply, "toolu", index, i))})
    return {
        "id": f"msg_{index}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "scripted"),
        "content": content,
        "stop_reason": _anthropic_stop(reply),
        "stop_sequence": None,
        "usage": {"input_tokens": reply.input_tokens, "output_tokens": _output_tokens(reply)},
    }


def _sse(event: str, data: dict[str, Any]) -> str:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n"


def _anthropic_events(reply: Reply, index: int, body: dict[str, Any]) -> list[tuple[str, bool]]:
    start = {
        "type": "message_start",
        "message": {
            "id": f"msg_{index}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "scripted"),
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": reply.input_tokens, "output_tokens": 1},
        },
    }
    events = [(_sse("message_start", start), False), (_sse("ping", {"type": "ping"}), False)]
    block = 0
    if reply.thinking is not None:
        opening = {"type": "thinking", "thinking": "", "signature": ""}
        events.append((_sse("content_block_start", {"type": "content_block_start", "index": block,
                                                     "content_block": opening}), False))
        for piece in _pieces(reply.thinking, reply.chars_per_token):
            events.append((_sse("content_block_delta", {"type": "content_block_delta", "index": block,
                                                         "delta": {"type": "thinking_delta", "thinking": piece}}), True))
        events.append((_sse("content_block_delta", {"type": "content_block_delta", "index": block,
                                                     "delta": {"type": "signature_delta", "signature": f"sig_{index}"}}), False))
        events.append((_sse("content_block_stop", {"type": "content_block_stop", "index": block}), False))
        block += 1
    if reply.text:
        events.append((_sse("content_block_start", {"type": "content_block_start", "index": block,
                                                     "content_block": {"type": "text", "text": ""}}), False))
        for piece in _pieces(reply.text, reply.chars_per_token):
            events.append((_sse("content_block_delta", {"type": "content_block_delta", "index": block,
                                                         "delta": {"type": "text_delta", "text": piece}}), True))
        events.append((_sse("content_block_stop", {"type": "content_block_stop", "index": block}), False))
        block += 1
    for i, call in enumerate(reply.tool_calls):
        opening = {"type": "tool_use", **_with_id({"name": call.name, "input": {}}, _call_id(reply, "toolu", index, i))}
        events.append((_sse("content_block_start", {"type": "content_block_start", "index": block,
                                                     "content_block": opening}), True))
        for piece in _pieces(_arguments_text(call), reply.chars_per_token):
            events.append((_sse("content_block_delta", {"type": "content_block_delta", "index": block,
                                                         "delta": {"type": "input_json_delta", "partial_json": piece}}), True))
        events.append((_sse("content_block_stop", {"type": "content_block_stop", "index": block}), False))
        block += 1
    events.append((_sse("message_delta", {"type": "message_delta",
                                          "delta": {"stop_reason": _anthropic_stop(reply), "stop_sequence": None},
                                          "usage": {"output_tokens": _output_tokens(reply)}}), False))
    events.append((_sse("message_stop", {"type": "message_stop"}), False))
    return events


async def _send_json(writer: asyncio.StreamWriter, status: int, payload: dict[str, Any],
                     extra_headers: dict[str, str] | None = None) -> None:
    data = json.dumps(payload).encode()
    head = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}", "content-type: application/json",
            f"content-length: {len(data)}"]
    head += [f"{k}: {v}" for k, v in (extra_headers or {}).items()]
    writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + data)
    await writer.drain()


async def _send_failure(writer: asyncio.StreamWriter, provider: str, failure: Failure) -> None:
    headers: dict[str, str] = {}
    if failure.retry_after_s is not None:
        headers["retry-after"] = f"{failure.retry_after_s:g}"
    if provider == "openai":
        payload = {"error": {"message": failure.message, "type": failure.kind, "param": None, "code": failure.code}}
    else:
        payload = {"type": "error", "error": {"type": failure.kind, "message": failure.message}}
    await _send_json(writer, failure.status, payload, headers)


_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
            429: "Too Many Requests", 500: "Internal Server Error", 529: "Overloaded"}
