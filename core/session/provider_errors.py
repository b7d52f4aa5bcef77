"""Model API failures, classified. Pure: the activity raises ApplicationErrors
with these types, the workflow decides retries and the session's final
status from them.

Retryable (Temporal retries with backoff, honouring Retry-After): rate
limits, server errors and overload, lost connections and timeouts. Not
retryable (the session ends and says what to do): a missing, wrong or
under-privileged key, an unknown model, a request the API refuses, a
conversation longer than the model's context.
"""

from __future__ import annotations

import re

RATE_LIMITED = "ModelRateLimited"
SERVER_ERROR = "ModelServerError"
CONNECTION_ERROR = "ModelConnectionError"

API_KEY_MISSING = "ModelApiKeyMissing"
AUTHENTICATION_FAILED = "ModelAuthenticationFailed"
PERMISSION_DENIED = "ModelPermissionDenied"
MODEL_NOT_FOUND = "ModelNotFound"
CONTEXT_TOO_LONG = "ModelContextTooLong"
QUOTA_EXHAUSTED = "ModelQuotaExhausted"
BAD_REQUEST = "ModelBadRequest"
TRANSCRIPT_PROBLEM = "TranscriptUnavailable"
URL_NOT_ALLOWED = "ModelUrlNotAllowed"
WRONG_WORKSPACE = "WrongWorkspace"

RETRYABLE = (RATE_LIMITED, SERVER_ERROR, CONNECTION_ERROR)
NON_RETRYABLE = (
    API_KEY_MISSING,
    AUTHENTICATION_FAILED,
    PERMISSION_DENIED,
    MODEL_NOT_FOUND,
    CONTEXT_TOO_LONG,
    QUOTA_EXHAUSTED,
    BAD_REQUEST,
    TRANSCRIPT_PROBLEM,
    WRONG_WORKSPACE,
    URL_NOT_ALLOWED,
)

# The worker option listing further base URLs its keys may be sent to.
from core.config import ALLOWED_MODEL_URLS_ENV as ALLOWED_URLS_VARIABLE  # noqa: E402
# Where each SDK sends requests when no base URL is configured.
DEFAULT_URLS = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com"}
REDACTED = "[redacted]"
# Strings shaped like API keys or credentials, whoever's they are: OpenAI and
# Anthropic keys (sk-..., sk-ant-..., sk-proj-...), bearer tokens, api-key
# header or field values echoed back by a server.
_KEY_LIKE = re.compile(
    r"\bsk-[A-Za-z0-9_\-]{6,}"
    r"|(?i:\bbearer\s+)[A-Za-z0-9._~+/\-]{8,}=*"
    r"|(?i:(?:x-api-key|api[_-]?key|authorization)[\"']?\s*[:=]\s*[\"']?)[A-Za-z0-9._~+/\-]{8,}"
)


def redact(text: str, secrets: tuple[str, ...] = ()) -> str:
    """``text`` without the given secret values (the worker's key) and without
    anything shaped like a key: what may reach a history, a log or a person."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, REDACTED)
    return _KEY_LIKE.sub(lambda m: _keep_label(m.group(0)), text)


def _keep_label(found: str) -> str:
    """A key-like match redacted, keeping an `api_key=` / `Bearer ` label so the message still reads."""
    m = re.match(r"(?i)((?:x-api-key|api[_-]?key|authorization)[\"']?\s*[:=]\s*[\"']?|bearer\s+)", found)
    return (m.group(1) if m else "") + REDACTED


def normal_url(url: str) -> str:
    """A base URL compared as the same endpoint whatever its case of scheme and host, or a trailing slash."""
    text = url.strip()
    scheme, sep, rest = text.partition("://")
    if not sep:
        return text.rstrip("/")
    host, slash, path = rest.partition("/")
    return f"{scheme.lower()}://{host.lower()}{slash}{path}".rstrip("/")


def url_refusal(provider: str, asked: str, configured: str | None, allowed: str) -> str | None:
    """Why a session's base URL may not receive this worker's key, or None.
    The key goes to the URL the worker is configured with (its
    OPENAI_BASE_URL / ANTHROPIC_BASE_URL, else the provider's own API) and to
    the URLs the worker's AGENT_TOOLS_ALLOWED_MODEL_URLS lists."""
    ok = {normal_url(configured or DEFAULT_URLS[provider])}
    ok |= {normal_url(u) for u in re.split(r"[\s,]+", allowed) if u.strip()}
    if normal_url(asked) in ok:
        return None
    return (
        f"the session names the base URL {asked!r}, but this worker sends its {key_variable(provider)} only to "
        f"{configured or DEFAULT_URLS[provider]!r} ({url_variable(provider)}) and the URLs in {ALLOWED_URLS_VARIABLE}"
    )

_CONTEXT = re.compile(
    r"context[_ ]length|context window|maximum context|prompt is too long|too many tokens|"
    r"input is too long|exceeds the model's|reduce the length|"
    # llama.cpp's server; Anthropic when input and max_tokens overflow; Gemini
    r"context size|context limit|input token count",
    re.IGNORECASE,
)


def key_variable(provider: str) -> str:
    return "OPENAI_API_KEY" if provider == "openai" else "ANTHROPIC_API_KEY"


def url_variable(provider: str) -> str:
    return "OPENAI_BASE_URL" if provider == "openai" else "ANTHROPIC_BASE_URL"


def type_for_status(status: int, message: str, code: str | None = None) -> str:
    # Out of credit: OpenAI says so in a 429 that no wait ends, DeepSeek and
    # OpenRouter answer 402 Payment Required.
    if status == 402 or code == "insufficient_quota":
        return QUOTA_EXHAUSTED
    if status == 429:
        return RATE_LIMITED
    if status in (408, 409) or status >= 500:
        return SERVER_ERROR
    if status == 401:
        return AUTHENTICATION_FAILED
    if status == 403:
        return PERMISSION_DENIED
    if status == 404:
        return MODEL_NOT_FOUND
    if status == 413:  # the request body outgrew what the server (or a proxy) takes: the conversation did
        return CONTEXT_TOO_LONG
    if code == "context_length_exceeded" or _CONTEXT.search(message or ""):
        return CONTEXT_TOO_LONG
    return BAD_REQUEST


# Error types Anthropic sends inside a stream (an HTTP 200 that turns bad).
STREAM_ERROR_TYPES = {
    "overloaded_error": SERVER_ERROR,
    "api_error": SERVER_ERROR,
    "rate_limit_error": RATE_LIMITED,
    "authentication_error": AUTHENTICATION_FAILED,
    "permission_error": PERMISSION_DENIED,
    "not_found_error": MODEL_NOT_FOUND,
    "invalid_request_error": BAD_REQUEST,
    "billing_error": QUOTA_EXHAUSTED,
    "insufficient_quota": QUOTA_EXHAUSTED,
}


def type_for_stream_error(message: str, code: str | None) -> str:
    """An error a server sent inside a stream it had answered 200: by its
    type where the provider names one (Anthropic's error events), a
    conversation too long for the model by its words, anything else as the
    server's own failure (retried)."""
    kind = STREAM_ERROR_TYPES.get(code or "")
    if kind is None:
        too_long = type_for_status(400, message, code) == CONTEXT_TOO_LONG
        return CONTEXT_TOO_LONG if too_long else SERVER_ERROR
    return type_for_status(400, message, code) if kind == BAD_REQUEST else kind


def what_to_do(error_type: str, provider: str, model: str) -> str:
    """The session's final message for a non-retryable model error."""
    key = key_variable(provider)
    return {
        API_KEY_MISSING: f"No API key: set {key} in the environment of the worker that serves the workspace "
        f"(any non-empty value for a local server that needs none), restart the worker, then start a new session.",
        AUTHENTICATION_FAILED: f"The model API rejected the key (401): check {key} in the worker's environment "
        f"(and {url_variable(provider)} if you use another server), restart the worker, then start a new session.",
        PERMISSION_DENIED: f"The key may not use model {model!r} (403): use a key with access to it or pick another "
        f"model with --model.",
        MODEL_NOT_FOUND: f"The API does not know model {model!r} or the URL is wrong (404): check --model and "
        f"{url_variable(provider)} / --base-url.",
        CONTEXT_TOO_LONG: "The conversation no longer fits the model's context window: start a new session with a "
        "narrower task (or a model with a larger context), and ask for smaller outputs (read_file offset/limit).",
        QUOTA_EXHAUSTED: "The account behind the key has no quota or credit left: add credit with the provider "
        f"(or use a key of another account in {key}), restart the worker, then start a new session.",
        BAD_REQUEST: "The model API refused the request (400): see the message; a server that is not fully "
        "OpenAI/Anthropic compatible may not support tools or streaming.",
        TRANSCRIPT_PROBLEM: "The session's transcript on the workspace worker is missing or was modified: run the "
        "session on the worker that holds its workspace; the damaged session cannot continue.",
        WRONG_WORKSPACE: "The worker on the workspace's task queue serves another folder: start the session with "
        "the task queue of the worker that holds the workspace.",
        URL_NOT_ALLOWED: f"The worker does not send its key to the base URL this session names: start the session "
        f"without --base-url (the worker's {url_variable(provider)} is used), or have the worker's operator add the "
        f"URL to {ALLOWED_URLS_VARIABLE} and restart the worker.",
    }.get(error_type, "The model call failed; see the message.")
