"""Incremental assembly of a streamed model response. Pure: no I/O, no SDK.

Feed it OpenAI Chat Completions chunks or Anthropic Messages stream events as
plain dicts (``chunk.model_dump()`` / ``event.to_dict()``); it accumulates the
text, the usage and the tool calls, and ``feed`` returns each tool call at the
moment its arguments' JSON object closes, so a caller can start work while
the model is still writing (streaming dispatch hooks in there).
``finish`` returns the whole response; arguments that never closed or do not
parse go through the repair of ``core.tools.arguments`` first, with truncation
handled conservatively (see ``complete_truncated``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable, Literal

from core.contracts import MAX_ID_CHARS
from core.tools.arguments import has_lone_surrogate, repair_json

Provider = Literal["openai", "anthropic"]

# Normalised stop reasons.
STOP_TOOL_USE = "tool_use"
STOP_END = "end"
STOP_MAX_TOKENS = "max_tokens"
_STOP_NAMES = {
    "tool_calls": STOP_TOOL_USE, "tool_use": STOP_TOOL_USE, "function_call": STOP_TOOL_USE,
    "stop": STOP_END, "end_turn": STOP_END, "stop_sequence": STOP_END,
    "length": STOP_MAX_TOKENS, "max_tokens": STOP_MAX_TOKENS,
}

# finish_reasons by which a server says it failed or dropped the request
# (vLLM: "abort"; others: "error"): what streamed before is half an answer.
_FAILED_STOPS = frozenset({"abort", "error"})

# What OpenAI's own tool_calls deltas hold; anything else a server adds is kept.
_OPENAI_CALL_FIELDS = frozenset({"index", "id", "type", "function"})
# Where OpenAI-compatible servers stream a reasoning model's thinking
# (DeepSeek and vLLM: reasoning_content; OpenRouter and newer vLLM: reasoning).
_REASONING_FIELDS = ("reasoning_content", "reasoning")
# OpenRouter also streams delta.reasoning_details: objects numbered by index,
# each streamed in pieces; these fields grow piece by piece, every other
# field arrives once (later pieces repeat it or send null).
_DETAIL_TEXT_FIELDS = frozenset({"text", "summary", "data", "signature"})


class JsonScanner:
    """Tracks where a growing JSON text stands: inside a string or not, the
    open brackets, and whether the top-level value has closed."""

    def __init__(self) -> None:
        self.stack: list[str] = []
        self.in_string = False
        self._escape = False
        self.started = False
        self.closed = False
        self.position = 0
        # (offset of a ',' outside strings, the open brackets there): the
        # places a truncated text can be cut back to.
        self.commas: list[tuple[int, tuple[str, ...]]] = []

    def feed(self, text: str) -> bool:
        """Consume more text; True when the top-level value closed in it."""
        closed_now = False
        for ch in text:
            offset = self.position
            self.position += 1
            if self.closed:
                continue
            if self.in_string:
                if self._escape:
                    self._escape = False
                elif ch == "\\":
                    self._escape = True
                elif ch == '"':
                    self.in_string = False
                continue
            if ch == '"':
                self.in_string = True
            elif ch in "{[":
                self.stack.append("}" if ch == "{" else "]")
                self.started = True
            elif ch in "}]":
                if self.stack:
                    self.stack.pop()
                if self.started and not self.stack:
                    self.closed = closed_now = True
            elif ch == ",":
                self.commas.append((offset, tuple(self.stack)))
        return closed_now


def complete_truncated(text: str, scanner: JsonScanner) -> str | None:
    """A JSON object for text that was cut off, or None.

    Only what is certainly complete is kept: the text as it stands when it
    ends right after a complete string, object or array (closing brackets
    are added), otherwise the text cut back to the last member separator, so
    an unfinished member (a string or number that was still growing) is
    dropped rather than guessed. A dropped required field then fails
    validation with a message the model can act on; nothing runs with half
    an argument."""
    candidates: list[tuple[str, tuple[str, ...]]] = []
    stripped = text.rstrip()
    if not scanner.in_string and stripped[-1:] in ('"', "}", "]"):
        candidates.append((stripped, tuple(scanner.stack)))
    for offset, stack in reversed(scanner.commas):
        candidates.append((text[:offset], stack))
    for prefix, stack in candidates:
        candidate = prefix + "".join(reversed(stack))
        repaired = repair_json(candidate)
        if repaired is not None and isinstance(json.loads(repaired), dict):
            return repaired
    return None


@dataclass
class AssembledCall:
    position: int  # 0-based place in the response's batch of calls
    id: str
    name: str
    raw_arguments: str = ""
    # The arguments' JSON closed in the stream and parses as an object.
    complete: bool = False
    # How the final arguments were obtained: "" (as sent), "repaired", "truncated", "unparsed".
    repair: str = ""
    final_arguments: str = ""
    # Fields the server added to the call beyond index, id, type and function
    # (OpenAI-compatible servers; sent back with the call).
    extra: dict[str, Any] = field(default_factory=dict)
    _scanner: JsonScanner = field(default_factory=JsonScanner, repr=False)
    _yielded: bool = field(default=False, repr=False)
    _sent_id: str = field(default="", repr=False)  # the id the server gave it (``id`` may be replaced)

    def arguments_object(self) -> dict[str, Any]:
        """The arguments as an object (Anthropic's tool_use.input needs one);
        {} when they could not be parsed at all."""
        try:
            value = json.loads(self.final_arguments or "{}")
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}


@dataclass
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


@dataclass
class AssembledResponse:
    text: str
    calls: list[AssembledCall]
    usage: Usage
    stop_reason: str
    raw_stop_reason: str | None
    response_id: str = ""
    # Anthropic: the thinking and redacted_thinking blocks, whole and in
    # order; they go back unchanged with the answer's text and tool calls.
    thinking: list[dict[str, Any]] = field(default_factory=list)
    # OpenAI-compatible servers that reason aloud: the reasoning text by the
    # field it came in (reasoning_content, reasoning); DeepSeek refuses the
    # next request unless it goes back with the message that used tools.
    reasoning: dict[str, str] = field(default_factory=dict)
    # OpenRouter: reasoning_details assembled by index, in index order; a
    # reasoning model behind it (Anthropic, Gemini, OpenAI) keeps its chain
    # across tool calls only when they go back unchanged.
    reasoning_details: list[dict[str, Any]] = field(default_factory=list)


class StreamAssembler:
    """``id_prefix`` names the calls a server sent without a usable id (none;
    one the conversation (``taken_ids``) or this response already used, as
    servers that send "call_0" every time do; longer than a call id may be;
    invalid Unicode): each gets ``{id_prefix}_{position}``, so every result
    pairs with its own call and both APIs accept the next request. Make the
    prefix unique in the conversation (the model call's number). A call gets
    its final id when it surfaces, before anything can start under it;
    a retried model call names the calls alike."""

    def __init__(self, provider: Provider, id_prefix: str = "call", taken_ids: Iterable[str] = ()) -> None:
        self.provider = provider
        self._id_prefix = id_prefix
        self._ids_given: set[str] = set(taken_ids)
        self._text: list[str] = []
        self._calls: dict[int, AssembledCall] = {}  # by the stream's own index (OpenAI: see _openai_key)
        self._openai_keys: dict[int, int] = {}  # a tool_calls index -> the call it currently names
        self._thinking: dict[int, dict[str, Any]] = {}  # Anthropic thinking blocks by the stream's index
        self._reasoning: dict[str, list[str]] = {}  # OpenAI-compatible reasoning text by field name
        self._reasoning_details: dict[int, dict[str, Any]] = {}  # OpenRouter's, by their own index
        self.usage = Usage()
        self._stop: str | None = None
        # The stream said it was done (a finish_reason; message_stop): a
        # stream that ends without it was cut, whatever the connection says.
        self._ended = False
        self._fed = False
        self._response_id = ""
        self._message_started = False  # Anthropic: a message_start was read

    # ------------------------------------------------------------- feeding
    def feed(self, item: dict[str, Any]) -> list[AssembledCall]:
        """One chunk (OpenAI) or event (Anthropic); returns the calls whose
        arguments closed with it, each exactly once."""
        self._fed = True
        if self.provider == "openai":
            self._feed_openai(item)
        else:
            self._feed_anthropic(item)
        return self._newly_complete()

    def feed_all(self, items: Iterable[dict[str, Any]]) -> list[AssembledCall]:
        out: list[AssembledCall] = []
        for item in items:
            out.extend(self.feed(item))
        return out

    def _call_for(self, key: int, call_id: str | None, name: str | None) -> AssembledCall:
        call = self._calls.get(key)
        if call is None:
            # after a restarted answer (_begin_again) the kept calls' places are taken
            position = max((c.position for c in self._calls.values()), default=-1) + 1
            call = AssembledCall(position=position, id=call_id or "", name=name or "", _sent_id=call_id or "")
            self._calls[key] = call
        else:
            if call_id and not call.id:
                call.id = call._sent_id = call_id
            if name and not call.name:
                call.name = name
        return call

    def _append_arguments(self, call: AssembledCall, piece: str) -> None:
        if not piece:
            return
        call.raw_arguments += piece
        if call._scanner.feed(piece):
            call.complete = _parses_as_object(call.raw_arguments)

    def _feed_openai(self, chunk: dict[str, Any]) -> None:
        self._response_id = self._response_id or chunk.get("id") or ""
        usage = chunk.get("usage") or _groq_usage(chunk)
        if isinstance(usage, dict) and usage:
            self.usage.input_tokens = usage.get("prompt_tokens") or 0
            self.usage.output_tokens = usage.get("completion_tokens") or 0
            details = usage.get("prompt_tokens_details") or {}
            self.usage.cache_read_tokens = details.get("cached_tokens") or 0
        for choice in chunk.get("choices") or []:
            if choice.get("index", 0) != 0:
                continue  # we ask for one choice
            delta = choice.get("delta") or {}
            self._text.extend(_texts(delta.get("content")))
            # a refusal streams here instead of content: it is the answer
            self._text.extend(_texts(delta.get("refusal")))
            for name in _REASONING_FIELDS:
                if isinstance(delta.get(name), str) and delta[name]:
                    self._reasoning.setdefault(name, []).append(delta[name])
            self._merge_reasoning_details(delta.get("reasoning_details"))
            for tc in delta.get("tool_calls") or []:
                function = tc.get("function") or {}
                call_id, name = _text_or_none(tc.get("id")), _text_or_none(function.get("name"))
                arguments = function.get("arguments") or ""
                if not isinstance(arguments, str):  # some servers send the object itself
                    arguments = json.dumps(arguments)
                call = self._repeated(tc.get("index"), call_id, name, arguments)
                if call is None:
                    call = self._call_for(self._openai_key(tc.get("index"), call_id, name), call_id, name)
                    self._append_arguments(call, arguments)
                call.extra.update((k, v) for k, v in tc.items() if k not in _OPENAI_CALL_FIELDS)
            if choice.get("finish_reason"):
                self._stop = choice["finish_reason"]
                self._ended = True

    def _merge_reasoning_details(self, pieces: Any) -> None:
        """Adds one delta's reasoning_details pieces to the details they
        continue. A piece that cannot be placed (not an object, no integer
        index) is skipped: the rest of the answer still counts."""
        if not isinstance(pieces, list):
            return
        for piece in pieces:
            if not isinstance(piece, dict) or not _is_index(piece.get("index")):
                continue
            detail = self._reasoning_details.setdefault(piece["index"], {})
            for key, value in piece.items():
                held = detail.get(key)
                if key in _DETAIL_TEXT_FIELDS and isinstance(held, str) and isinstance(value, str):
                    detail[key] = held + value
                elif held is None:
                    detail[key] = value

    def _openai_key(self, index: Any, call_id: str | None, name: str | None) -> int:
        """Which call a ``tool_calls`` delta continues or opens.

        OpenAI numbers each call of a response and sends the id and name only
        with a call's first delta. Compatible servers differ: some send every
        call whole under index 0 (Ollama), some send no index at all (Gemini).
        Merging those would run one call with two calls' arguments glued
        together and drop the other, so a delta opens a new call when it
        brings an id other than the one its index holds, or a name after the
        held call's arguments closed; a delta without an index continues the
        call its id names, else the latest one."""
        if isinstance(index, int):
            key = self._openai_keys.get(index)
            if key is None or self._starts_another(self._calls[key], call_id, name):
                key = self._openai_keys[index] = len(self._calls)
            return key
        if call_id:
            for key, call in self._calls.items():
                if call.id == call_id and not (name and call._scanner.closed):  # an id used twice: another call
                    return key
            return len(self._calls)
        if self._calls:
            latest = max(self._calls)
            return len(self._calls) if self._starts_another(self._calls[latest], call_id, name) else latest
        return 0

    def _repeated(self, index: Any, call_id: str | None, name: str | None, arguments: str) -> AssembledCall | None:
        """The closed call a delta only repeats, or None. A proxy that turns
        another API's stream into OpenAI deltas may send a finished call again
        whole at the end: its index (or none), id, name (or none) and
        arguments (or none). Taken for a new call, it would run twice. (Two
        calls under two indexes are two, whatever their ids say.)"""
        if not call_id:
            return None
        if _is_index(index):
            held = self._openai_keys.get(index)
            candidates = [] if held is None else [self._calls[held]]
        else:
            candidates = list(self._calls.values())
        for call in candidates:
            if (call._sent_id == call_id and call._scanner.closed and (not name or name == call.name)
                    and (not arguments.strip() or _same_json(arguments, call.final_arguments or call.raw_arguments))):
                return call
        return None

    @staticmethod
    def _starts_another(held: AssembledCall, call_id: str | None, name: str | None) -> bool:
        if call_id and held.id and call_id != held.id:
            return True
        return bool(name) and held._scanner.closed

    def _feed_anthropic(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "message_start":
            if self._message_started:
                self._begin_again()
            self._message_started = True
            message = event.get("message") or {}
            self._response_id = message.get("id") or ""
            self._anthropic_usage(message.get("usage") or {})
        elif kind == "content_block_start":
            block = event.get("content_block") or {}
            if block.get("type") == "tool_use":
                call = self._call_for(event.get("index", 0), _text_or_none(block.get("id")),
                                      _text_or_none(block.get("name")))
                given = block.get("input")
                if given:  # a server may send the whole input at once, some as JSON text (OpenAI's way)
                    self._append_arguments(call, given if isinstance(given, str) else json.dumps(given))
            elif block.get("type") == "text" and block.get("text"):
                self._text.append(block["text"])
            elif block.get("type") in ("thinking", "redacted_thinking"):
                self._thinking[event.get("index", 0)] = dict(block)
        elif kind == "content_block_delta":
            delta = event.get("delta") or {}
            if delta.get("type") == "text_delta":
                self._text.append(delta.get("text") or "")
            elif delta.get("type") in ("thinking_delta", "signature_delta"):
                thought = self._thinking.get(event.get("index", 0))
                if thought is not None:
                    if delta["type"] == "thinking_delta":
                        thought["thinking"] = thought.get("thinking", "") + (delta.get("thinking") or "")
                    else:
                        thought["signature"] = thought.get("signature", "") + (delta.get("signature") or "")
            elif delta.get("type") == "input_json_delta":
                call = self._calls.get(event.get("index", 0))
                if call is not None:
                    self._append_arguments(call, delta.get("partial_json") or "")
        elif kind == "content_block_stop":
            call = self._calls.get(event.get("index", 0))
            if call is not None and not call.raw_arguments.strip():
                call.raw_arguments = "{}"  # a tool without arguments streams no delta
                call.complete = True
        elif kind == "message_stop":
            self._ended = True
        elif kind == "message_delta":
            delta = event.get("delta") or {}
            if delta.get("stop_reason"):
                self._stop = delta["stop_reason"]
            self._anthropic_usage(event.get("usage") or {})

    def _begin_again(self) -> None:
        """A second message_start: the server began the answer over inside
        one stream (a gateway retrying upstream mid-answer), numbering its
        blocks from 0 again. What the first generation left and had not yet
        surfaced (text, thinking, calls whose arguments had not closed) is
        dropped, so its half arguments are not glued to the new ones; a call
        that already surfaced may already be running, so it stays, under a
        key no new block can take."""
        surfaced = sorted((c for c in self._calls.values() if c._yielded), key=lambda c: c.position)
        self._calls = {-1 - i: call for i, call in enumerate(surfaced)}
        self._text.clear()
        self._thinking.clear()
        # the new generation says for itself how and whether it ended
        self._stop, self._ended = None, False

    def _anthropic_usage(self, usage: dict[str, Any]) -> None:
        # message_delta's counts are cumulative: take the latest, not a sum.
        if usage.get("input_tokens"):
            self.usage.input_tokens = usage["input_tokens"]
        if usage.get("output_tokens"):
            self.usage.output_tokens = usage["output_tokens"]
        if usage.get("cache_read_input_tokens"):
            self.usage.cache_read_tokens = usage["cache_read_input_tokens"]
        if usage.get("cache_creation_input_tokens"):
            self.usage.cache_write_tokens = usage["cache_creation_input_tokens"]

    def _newly_complete(self) -> list[AssembledCall]:
        out = []
        for call in self._calls.values():
            if call.complete and not call._yielded and call.id and call.name:
                call._yielded = True
                call.final_arguments = call.raw_arguments
                self._settle_id(call)
                out.append(call)
        return out

    def _settle_id(self, call: AssembledCall) -> None:
        if not call.id or len(call.id) > MAX_ID_CHARS or call.id in self._ids_given or has_lone_surrogate(call.id):
            call.id = f"{self._id_prefix}_{call.position}"
            while call.id in self._ids_given:
                call.id += "_"
        self._ids_given.add(call.id)

    # ------------------------------------------------------------ finishing
    def cut_short(self) -> str | None:
        """Why the stream, now over, was visibly cut (None: it was not).

        A stream that said it was done (a finish_reason, message_stop) is
        whole. One that did not is cut when it brought nothing at all or
        left a tool call's arguments open: running such a call would run
        half of it. Otherwise it is taken at its word: some servers never
        say they are done, and text alone cannot tell."""
        if self._ended:
            return None
        if not self._fed:
            return "the stream ended without a single event"
        for call in self._calls.values():
            if call.raw_arguments.strip() and not (call.complete or call._scanner.closed):
                return f"the stream ended inside the arguments of tool call {call.position + 1} ({call.name or '?'})"
        return None

    def failed(self) -> str | None:
        """Why the server, by its own finish_reason, did not finish the answer (None: it did)."""
        if self._stop in _FAILED_STOPS:
            return f"the server ended the answer with finish_reason {self._stop!r}: it failed or dropped the request"
        return None

    def finish(self) -> AssembledResponse:
        calls = sorted(self._calls.values(), key=lambda c: c.position)
        for call in calls:
            if not call._yielded:
                _finalise(call)
                self._settle_id(call)
        stop = _STOP_NAMES.get(self._stop or "", self._stop or STOP_END)
        return AssembledResponse(
            text="".join(self._text),
            calls=calls,
            usage=self.usage,
            stop_reason=stop,
            raw_stop_reason=self._stop,
            response_id=self._response_id,
            thinking=[self._thinking[i] for i in sorted(self._thinking)],
            reasoning={name: "".join(parts) for name, parts in self._reasoning.items()},
            reasoning_details=[self._reasoning_details[i] for i in sorted(self._reasoning_details)],
        )


def _texts(content: Any) -> list[str]:
    """The answer's text in a delta's content: a string, or a list of typed
    parts as Mistral sends it, whose "text" parts are the answer (its
    reasoning models' "thinking" parts are not; Mistral needs them not back)."""
    if isinstance(content, str):
        return [content] if content else []
    if not isinstance(content, list):
        return []
    return [part["text"] for part in content
            if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)]


def _same_json(a: str, b: str) -> bool:
    try:
        return bool(json.loads(a) == json.loads(b))
    except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser goes
        return a == b


def _groq_usage(chunk: dict[str, Any]) -> Any:
    """Groq puts a stream's usage in ``x_groq.usage`` of its last chunk (its
    newer responses also at the top, where OpenAI puts it); read only at the
    top, a Groq answer counted no tokens at all."""
    extra = chunk.get("x_groq")
    return extra.get("usage") if isinstance(extra, dict) else None


def _text_or_none(value: Any) -> str | None:
    """An id or a name as a string; one of another type (a number) is as
    good as none: the call gets an id of its own."""
    return value if isinstance(value, str) else None


def _is_index(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _parses_as_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def _finalise(call: AssembledCall) -> None:
    raw = call.raw_arguments
    if call.complete or (_parses_as_object(raw)):
        call.final_arguments = raw
        return
    if not raw.strip():
        call.final_arguments, call.repair = "{}", ""
        return
    repaired = repair_json(raw) if call._scanner.closed else None
    if repaired is not None and _parses_as_object(repaired):
        call.final_arguments, call.repair = repaired, "repaired"
        return
    completed = None if call._scanner.closed else complete_truncated(raw, call._scanner)
    if completed is not None:
        call.final_arguments, call.repair = completed, "truncated"
        return
    # Left as the model sent it: the turn's validation reports the parse
    # error to the model, which is the most useful thing to do with it.
    call.final_arguments, call.repair = raw, "unparsed"
