"""The ``call_model`` activity: one streamed model response for a session.

It runs on the workspace's task queue because the transcript lives there:
it appends what the workflow hands it (the user's message, a turn's results)
to the content-addressed store, reads the whole conversation back, streams
the model's answer (heartbeating as it goes), appends that answer and
returns only the new head reference and the bounded response. The
conversation itself never enters the workflow's history.

Keys and base URLs come from this worker's environment (OPENAI_API_KEY /
ANTHROPIC_API_KEY, OPENAI_BASE_URL / ANTHROPIC_BASE_URL); a session may
name a base URL, never a key. Failures become ApplicationErrors typed by
core.session.provider_errors: retryable ones carry the server's Retry-After as the
next retry delay, the others are non-retryable and end the session with a
status that says what to do.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import os
import time
from datetime import timedelta
from typing import Any, Callable

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.workspace.root import serves
from activities.model import anthropic_messages as model_anthropic
from activities.model import openai_chat as model_openai
from activities.model.dispatch import StreamDispatcher, abandon_batch, merged_response
from activities.model.transcript_store import TranscriptMissing, TranscriptStore
from activities.workspace.paths import WorkspaceError
from activities.settings import current as current_settings
from core.session import provider_errors as errors
from core.contracts import ToolCall, TurnProgress
from core.session.contracts import (
    MAX_ANSWER_CHARS_IN_HISTORY,
    ModelCallRequest,
    ModelConfig,
    ModelResponse,
    TokenUsage,
    TranscriptAppend,
    TranscriptEntry,
)
from core.session.providers import transcript_call_ids
from core.tools.arguments import escape_surrogates, input_problem, replace_surrogates
from core.session.stream_assembly import AssembledCall, AssembledResponse, StreamAssembler
from core.session.transcript import TranscriptCorrupted
from core.session.unstreamed import ErrorBody, NotAnAnswer
from core.names import APPEND_TRANSCRIPT_ACTIVITY, CALL_MODEL_ACTIVITY, DESCRIBE_TURN_ACTIVITY, STATUS_QUERY

HEARTBEAT_EVERY_S = 2.0
MAX_RETRY_AFTER_S = 300.0

_PROVIDERS = {"openai": model_openai, "anthropic": model_anthropic}


def _transport_errors() -> tuple[type[BaseException], ...]:
    """The HTTP library's own transport errors: a stream cut in the middle
    surfaces as one of these, not always wrapped by the SDK."""
    found: list[type[BaseException]] = []
    for name in ("httpx2", "httpx"):
        try:
            found.append(__import__(name).TransportError)
        except (ImportError, AttributeError):
            continue
    return tuple(found)


_TRANSPORT_ERRORS = _transport_errors()
_clients: dict[tuple[str, str, str | None], Any] = {}


def _client(provider: str, api_key: str, base_url: str | None) -> Any:
    """One SDK client per (provider, key, URL) for the worker's life: its
    connection pool is reused across model calls."""
    key = (provider, api_key, base_url)
    if key not in _clients:
        _clients[key] = _PROVIDERS[provider].make_client(api_key, base_url)
    return _clients[key]


async def stream_model(
    config: ModelConfig,
    entries: list[TranscriptEntry],
    api_key: str,
    base_url: str | None,
    on_closed: Callable[[list[AssembledCall]], None],
    id_prefix: str = "call",
) -> AssembledResponse:
    """Stream one response; ``on_closed`` gets the calls each item closed.
    Calls the server sent without a usable id (none, or one the conversation
    already holds) are named ``{id_prefix}_{position}``."""
    module = _PROVIDERS[config.provider]
    assembler = StreamAssembler(config.provider, id_prefix, transcript_call_ids(entries))
    async for item in module.stream_items(_client(config.provider, api_key, base_url), config, entries):
        on_closed(assembler.feed(item))
    cut = assembler.cut_short()
    if cut is not None:
        raise StreamCut(f"{cut}, with no finish_reason / message_stop: the server or a proxy cut it")
    failed = assembler.failed()
    if failed is not None:
        raise StreamCut(failed)
    return assembler.finish()


class StreamCut(Exception):
    """The stream closed cleanly, visibly before the answer was done (or
    the server said it had failed)."""


def credentials(config: ModelConfig) -> tuple[str, str | None]:
    """(api key, base URL) from this worker's environment. A session may name
    another base URL only when the worker allows it: the key goes to the URL
    configured for it (its *_BASE_URL, else the provider's API) or to one the
    worker lists in AGENT_TOOLS_ALLOWED_MODEL_URLS, never to one a session
    chose on its own."""
    key = os.environ.get(errors.key_variable(config.provider), "").strip()
    if not key:
        raise ApplicationError(
            f"{errors.key_variable(config.provider)} is not set on the worker that serves this workspace",
            type=errors.API_KEY_MISSING,
            non_retryable=True,
        )
    configured = os.environ.get(errors.url_variable(config.provider), "").strip() or None
    if config.base_url:
        refusal = errors.url_refusal(config.provider, config.base_url, configured,
                                     current_settings().allowed_model_urls)
        if refusal is not None:
            raise ApplicationError(redact(refusal), type=errors.URL_NOT_ALLOWED, non_retryable=True)
    return key, config.base_url or configured


def redact(text: str) -> str:
    """``text`` without this worker's keys or anything shaped like a key."""
    keys = tuple(os.environ.get(errors.key_variable(p), "").strip() for p in _PROVIDERS)
    return errors.redact(text, keys)


def retry_after(headers: dict[str, str]) -> timedelta | None:
    lowered = {k.lower(): v for k, v in headers.items()}
    raw_ms = lowered.get("retry-after-ms")
    seconds: float | None = None
    if raw_ms:
        try:
            seconds = float(raw_ms) / 1000
        except ValueError:
            seconds = None
    raw = lowered.get("retry-after")
    if seconds is None and raw:
        try:
            seconds = float(raw)
        except ValueError:
            try:
                seconds = email.utils.parsedate_to_datetime(raw).timestamp() - time.time()
            except (TypeError, ValueError):
                seconds = None  # neither seconds nor an HTTP date: use the backoff
    if seconds is None or seconds < 0:
        return None
    return timedelta(seconds=min(seconds, MAX_RETRY_AFTER_S))


def classify(provider: str, exc: BaseException) -> ApplicationError | None:
    """The ApplicationError a model failure becomes; None: not a model API
    failure (a bug), let it propagate."""
    module = _PROVIDERS[provider]
    if isinstance(exc, NotAnAnswer):  # a 200 whose body is no answer: asking again gets the same
        return ApplicationError(redact(str(exc))[:2000], type=errors.BAD_REQUEST, non_retryable=True)
    if isinstance(exc, StreamCut):  # as a dropped connection: asking again usually gets the whole answer
        return ApplicationError(str(exc), type=errors.SERVER_ERROR)
    if isinstance(exc, module.connection_errors() + _TRANSPORT_ERRORS):
        return ApplicationError(redact(f"cannot reach the model API: {exc}"), type=errors.CONNECTION_ERROR)
    if isinstance(exc, ErrorBody):  # the provider's error object, answered with 200
        details: tuple[int, str, str | None, dict[str, str]] | None = (exc.status, exc.message, exc.code, {})
    else:
        details = module.error_details(exc)
    if details is None:
        return None
    status, message, code, headers = details
    if status < 400:  # an error event inside a 200 stream
        kind = errors.type_for_stream_error(message, code)
    else:
        kind = errors.type_for_status(status, message, code)
    # A server may echo the key it was sent (a 401 body): never into the history or a log.
    text = redact(f"{provider} API answered {status}: {message}")[:2000]
    if kind in errors.RETRYABLE:
        return ApplicationError(text, type=kind, next_retry_delay=retry_after(headers))
    return ApplicationError(text, type=kind, non_retryable=True)


def _bounded(response: AssembledResponse, provider: str, head: str) -> ModelResponse:
    calls: list[ToolCall] = []
    repairs: dict[str, str] = {}
    for call in response.calls:
        if call.repair:
            repairs[str(call.position)] = call.repair
        # OpenAI keeps the JSON text; Anthropic's tool_use input is an object,
        # except when it could not be parsed or holds what cannot be encoded
        # (a lone surrogate): then the text goes to the turn, whose
        # validation tells the model what was wrong.
        raw = escape_surrogates(call.final_arguments)
        if provider == "anthropic" and call.repair != "unparsed" and input_problem(raw) is None:
            arguments: str | dict[str, Any] = call.arguments_object()
        else:
            arguments = raw
        calls.append(ToolCall(id=call.id, name=replace_surrogates(call.name), arguments=arguments))
    text = response.text
    cut = len(text) > MAX_ANSWER_CHARS_IN_HISTORY
    return ModelResponse(
        transcript_head=head,
        text=text[:MAX_ANSWER_CHARS_IN_HISTORY] if cut else text,
        text_truncated=cut,
        tool_calls=calls,
        repairs=repairs,
        stop_reason=response.stop_reason,
        usage=TokenUsage(
            input_tokens=response.usage.input_tokens,
            output_tokens=response.usage.output_tokens,
            cache_read_tokens=response.usage.cache_read_tokens,
            cache_write_tokens=response.usage.cache_write_tokens,
        ),
        response_id=response.response_id,
    )


def _without_surrogates(value: Any) -> Any:
    """A JSON value with each lone surrogate in its strings (at any depth,
    names too) replaced, as in the answer's text: the transcript and the next
    request must encode. For what goes back as it came (thinking blocks, a
    call's extra fields, reasoning_details), whose signature a server may then
    refuse - a readable error instead of a session that cannot go on."""
    return json.loads(replace_surrogates(json.dumps(value, ensure_ascii=False)))


def _check_root(root: str, allowed_root: str | None) -> None:
    if allowed_root is None:
        return
    allowed = os.path.realpath(allowed_root)
    if not serves(allowed_root, root):
        raise ApplicationError(
            f"this worker serves the workspace {allowed}, not {root}",
            type=errors.WRONG_WORKSPACE,
            non_retryable=True,
        )


def _transcript_error(exc: BaseException) -> ApplicationError:
    return ApplicationError(str(exc), type=errors.TRANSCRIPT_PROBLEM, non_retryable=True)


async def _heartbeat_forever() -> None:
    while True:
        await asyncio.sleep(HEARTBEAT_EVERY_S)
        activity.heartbeat()


def session_activities(
    workspace_root: str | None = None,
    on_closed_call: Callable[[ModelCallRequest, AssembledCall], None] | None = None,
) -> list[Callable[..., Any]]:
    """The session's activities for a workspace worker. ``on_closed_call``
    sees each tool call the moment its JSON closes in the stream (the hook
    for streaming dispatch)."""

    async def _answer(request: ModelCallRequest, config: Any, entries: Any, api_key: Any, base_url: Any,
                      progress: Callable[[list[AssembledCall]], None], dispatcher: StreamDispatcher | None,
                      store: TranscriptStore, head: str) -> ModelResponse:
        """The model's answer to the transcript at ``head``: streamed, bounded,
        merged with what streaming dispatch started, and appended."""
        try:
            response = await stream_model(config, entries, api_key, base_url, progress,
                                          id_prefix=f"call_m{request.call_number}")
        except Exception as exc:
            if dispatcher is not None:  # a retry dispatches again
                dispatcher.cancel()
            classified = classify(config.provider, exc)
            if classified is None:
                raise
            raise classified from None
        # Text the model API decoded from a lone surrogate escape cannot be
        # encoded: not for the history, the transcript or the next request.
        response.text = replace_surrogates(response.text)
        response.reasoning = {k: replace_surrogates(v) for k, v in response.reasoning.items()}
        response.reasoning_details = _without_surrogates(response.reasoning_details)
        response.thinking = _without_surrogates(response.thinking)
        for call in response.calls:
            call.extra = _without_surrogates(call.extra)
        bounded = _bounded(response, config.provider, head)
        if dispatcher is not None:  # the transcript records the merged batch
            over = request.tokens_left is not None and bounded.usage.total >= request.tokens_left
            bounded = merged_response(bounded, await dispatcher.close(bounded.tool_calls, abandon=over))
        # (what only one protocol carries is empty for the other)
        assistant = TranscriptEntry(kind="assistant", text=response.text, tool_calls=bounded.tool_calls,
                                    call_extras={c.id: c.extra for c in response.calls if c.extra},
                                    thinking=response.thinking, reasoning=response.reasoning,
                                    reasoning_details=response.reasoning_details)
        try:
            bounded.transcript_head = await asyncio.to_thread(store.append, head, [assistant])
        except (TranscriptMissing, TranscriptCorrupted, WorkspaceError) as exc:
            raise _transcript_error(exc) from None
        return bounded

    @activity.defn(name=CALL_MODEL_ACTIVITY)
    async def call_model(request: ModelCallRequest) -> ModelResponse:
        _check_root(request.workspace.root, workspace_root)
        config = request.model
        api_key, base_url = credentials(config)
        try:
            store = TranscriptStore(request.workspace.root, request.session_id)
            head = await asyncio.to_thread(store.append, request.transcript_head, request.append)
            entries = await asyncio.to_thread(store.read, head)
        except (TranscriptMissing, TranscriptCorrupted, WorkspaceError) as exc:
            raise _transcript_error(exc) from None
        dispatcher = StreamDispatcher.for_activity(request.dispatch_to, config.provider)
        def progress(closed: list[AssembledCall]) -> None:
            activity.heartbeat()  # the SDK throttles these to a fraction of the timeout
            if dispatcher is not None:
                for call in closed:
                    # A lone surrogate cannot go into a signal; such a call
                    # is an error result at the close anyway.
                    if input_problem(call.final_arguments) is None and input_problem(call.name) is None:
                        dispatcher.closed(call)
            if on_closed_call is not None:
                for call in closed:
                    on_closed_call(request, call)

        # Until the activity returns, not only while the model streams: after
        # the stream the close waits for the dispatch signals still on their
        # way and for the turn to take the batch, which a loaded server may
        # stretch past the heartbeat timeout (the call would be retried).
        beat = asyncio.create_task(_heartbeat_forever())
        try:
            return await _answer(request, config, entries, api_key, base_url, progress, dispatcher, store, head)
        finally:
            beat.cancel()

    @activity.defn(name=APPEND_TRANSCRIPT_ACTIVITY)
    async def append_transcript(request: TranscriptAppend) -> str | None:
        _check_root(request.workspace.root, workspace_root)
        if not request.append:
            return request.transcript_head
        try:
            store = TranscriptStore(request.workspace.root, request.session_id)
            return await asyncio.to_thread(store.append, request.transcript_head, request.append)
        except (TranscriptMissing, TranscriptCorrupted, WorkspaceError) as exc:
            raise _transcript_error(exc) from None

    @activity.defn(name=DESCRIBE_TURN_ACTIVITY)
    async def describe_turn(turn_id: str) -> TurnProgress | None:
        """The final progress of a turn that ended without a result (it was
        cancelled): which calls ran and how they ended. Queries the closed
        turn through this worker's client."""
        handle = activity.client().get_workflow_handle(turn_id)
        try:
            return await handle.query(STATUS_QUERY, result_type=TurnProgress)
        except Exception as exc:  # the record is best effort; the session still ends
            activity.logger.warning("could not read the final status of turn %s: %s", turn_id, exc)
            return None

    return [call_model, append_transcript, describe_turn, abandon_batch]  # abandon_batch: streaming dispatch
