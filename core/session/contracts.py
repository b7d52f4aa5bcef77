"""What crosses the session's boundaries: client <-> AgentSessionWorkflow <->
call_model activity. Pydantic v2 models, pure (the workflow sandbox imports it).

No API key appears anywhere here: workers read keys from their environment.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from core.contracts import PendingCall, Policy, Snapshot, ToolCall, TurnOptions, Workspace

Provider = Literal["openai", "anthropic"]

# Bounds on what the history holds of one model response (the full text is in
# the transcript store).
MAX_ANSWER_CHARS_IN_HISTORY = 16_000


class ModelConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    provider: Provider
    model: str
    # Overrides the worker's OPENAI_BASE_URL / ANTHROPIC_BASE_URL. Never a key.
    base_url: str | None = None
    # Anthropic requires one; for OpenAI-compatible servers None sends nothing.
    max_output_tokens: int | None = None
    temperature: float | None = None

    def output_token_cap(self) -> int | None:
        if self.max_output_tokens is not None:
            return self.max_output_tokens
        return 8192 if self.provider == "anthropic" else None


class SessionLimits(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_model_calls: int = Field(100, ge=1)
    max_tokens: int | None = Field(None, ge=1)  # input + output, summed over the session
    # How long a session waits for the user's next message; None waits for ever.
    idle_timeout_seconds: float | None = 24 * 3600
    # Continue-as-new after this many model calls in one run (also when the
    # server suggests it).
    continue_as_new_every: int = Field(100, ge=1)
    # Attempts of one model call on retryable errors (429, 5xx, connection).
    model_attempts: int = Field(8, ge=1)


class TokenUsage(BaseModel):
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens

    def plus(self, other: "TokenUsage") -> "TokenUsage":
        return TokenUsage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
        )


class TranscriptEntry(BaseModel):
    """One item of the conversation, provider-neutral where it can be.

    kind "system" / "user": text. "assistant": text + tool_calls (arguments as
    the model sent them, repaired). "tool_results": the turn's results in the
    session provider's own shape (OpenAI tool messages or Anthropic
    tool_result blocks, is_error included), plus the turn id. "note": a
    record for people (a cancelled turn, what ran), not sent to the model."""

    kind: Literal["system", "user", "assistant", "tool_results", "note"]
    text: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    turn_id: str = ""
    items: list[dict[str, Any]] = Field(default_factory=list)
    # "assistant", OpenAI-compatible servers: fields a server added to a tool
    # call beyond id, type and function, by call id, sent back with the call
    # (Gemini's thought signatures must come back or the next request fails).
    call_extras: dict[str, dict[str, Any]] = Field(default_factory=dict)
    # "assistant", Anthropic: the answer's thinking blocks (signed), which
    # must come back first in the assistant message when tools were used.
    thinking: list[dict[str, Any]] = Field(default_factory=list)
    # "assistant", OpenAI-compatible servers: the reasoning text by the field
    # it came in (reasoning_content, reasoning), sent back in that field.
    reasoning: dict[str, str] = Field(default_factory=dict)
    # "assistant", OpenRouter: the reasoning_details array as assembled,
    # sent back unchanged with the message.
    reasoning_details: list[dict[str, Any]] = Field(default_factory=list)


class ModelCallRequest(BaseModel):
    session_id: str
    call_number: int  # 1-based over the whole session
    workspace: Workspace
    model: ModelConfig
    # The transcript so far (None: empty) and what to add before calling.
    transcript_head: str | None
    append: list[TranscriptEntry] = Field(default_factory=list)
    # Streaming dispatch: the open turn that gets each tool call as
    # its JSON closes (None: off; the calls run after the response).
    dispatch_to: str | None = None
    # Tokens the session may still use (its max_tokens minus usage): a response
    # that reaches it ends the session, so its batch closes with only the
    # calls that already started (none of the rest runs).
    tokens_left: int | None = None


class ModelResponse(BaseModel):
    """What the history keeps of one model call: bounded."""

    transcript_head: str  # includes the assistant message
    text: str  # cut to MAX_ANSWER_CHARS_IN_HISTORY
    text_truncated: bool = False
    tool_calls: list[ToolCall] = Field(default_factory=list)
    # Per call position: "repaired" / "truncated" / "unparsed" when the
    # arguments were not taken as sent.
    repairs: dict[str, str] = Field(default_factory=dict)
    stop_reason: str = "end"
    usage: TokenUsage = Field(default_factory=TokenUsage)
    response_id: str = ""
    # Streaming dispatch: calls of the response not run because the session
    # stopped at its token limit (tool_calls holds those that had started).
    dropped_calls: int = 0


class TranscriptAppend(BaseModel):
    session_id: str
    workspace: Workspace
    transcript_head: str | None
    append: list[TranscriptEntry]


class SessionState(str, Enum):
    STARTING = "starting"
    CALLING_MODEL = "calling_model"
    RUNNING_TURN = "running_turn"
    WAITING_FOR_USER = "waiting_for_user"
    # Ended:
    CLOSED = "closed"
    IDLE_TIMEOUT = "idle_timeout"
    MAX_MODEL_CALLS = "max_model_calls"
    MAX_TOKENS = "max_tokens"
    MODEL_ERROR = "model_error"
    CANCELLED = "cancelled"

    @property
    def ended(self) -> bool:
        return self not in (
            SessionState.STARTING,
            SessionState.CALLING_MODEL,
            SessionState.RUNNING_TURN,
            SessionState.WAITING_FOR_USER,
        )


class SessionCarry(BaseModel):
    """State handed from one run to the next on continue-as-new."""

    transcript_head: str | None = None
    to_append: list[TranscriptEntry] = Field(default_factory=list)
    queued_messages: list[str] = Field(default_factory=list)
    snapshots: list[Snapshot] = Field(default_factory=list)
    usage: TokenUsage = Field(default_factory=TokenUsage)
    model_calls: int = 0
    turns: int = 0
    answers: int = 0
    runs: int = 1
    waiting_for_user: bool = False
    last_answer: str = ""
    close_requested: str | None = None


class SessionInput(BaseModel):
    workspace: Workspace
    model: ModelConfig
    prompt: str  # the first user message
    system_prompt: str | None = None  # None: core.session.prompt.default_system_prompt()
    policy: Policy | None = None  # None: each turn uses its worker's default
    limits: SessionLimits = Field(default_factory=SessionLimits)
    turn_options: TurnOptions = Field(default_factory=TurnOptions)
    # Start safe tool calls while the model is still streaming.
    streaming_dispatch: bool = True
    carry: SessionCarry | None = None  # set by continue-as-new only


class TurnRecord(BaseModel):
    """One child turn as the session saw it."""

    turn_id: str
    calls: int
    status: str  # the turn's TurnStatus value, or "cancelled"
    errors: int = 0
    ran: list[str] = Field(default_factory=list)  # "name: status" per call that reached a result


class SessionStatus(BaseModel):
    """What the `status` query answers."""

    session_id: str
    state: SessionState
    message: str = ""  # what is going on / what to do, in words
    model_calls: int = 0
    turns: int = 0
    answers: int = 0
    runs: int = 1
    usage: TokenUsage = Field(default_factory=TokenUsage)
    last_answer: str = ""
    current_turn_id: str | None = None
    # The running turn's batch (digest as the turn computes it) so an
    # approval can be bound to it from the session.
    current_batch_digest: str | None = None
    current_calls: list[ToolCall] = Field(default_factory=list)
    queued_messages: int = 0
    transcript_head: str | None = None
    workspace: Workspace
    provider: Provider
    model: str
    last_turn: TurnRecord | None = None


class SessionView(SessionStatus):
    """session_status() of the API: the session's own status plus, while a
    turn waits for approval, what the turn asks (from the child's query)."""

    waiting_for_approval: bool = False
    pending: list[PendingCall] = Field(default_factory=list)


class SessionResult(BaseModel):
    session_id: str
    state: SessionState
    message: str
    final_answer: str = ""
    model_calls: int = 0
    turns: int = 0
    runs: int = 1
    usage: TokenUsage = Field(default_factory=TokenUsage)
    transcript_head: str | None = None
    snapshots: list[Snapshot] = Field(default_factory=list)
    last_turn: TurnRecord | None = None
    error_type: str | None = None  # the model error's type when state is model_error
