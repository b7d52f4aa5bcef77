"""The data that crosses boundaries: model <-> workflow <-> activities <-> client.

Every type here is a pydantic v2 model and travels through Temporal with the
pydantic data converter. This module is pure (no I/O) so the workflow sandbox
can import it.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator

# Turn and call ids key the worker's state folders (hashed) and travel in every
# request: bounded, so a runaway id is refused with a clear message up front.
MAX_ID_CHARS = 256


def id_problem(value: str, what: str) -> str | None:
    """Why ``value`` is not usable as a turn or call id (None: it is)."""
    if len(value) > MAX_ID_CHARS:
        return (f"{what} is {len(value)} characters long; at most {MAX_ID_CHARS} are allowed: "
                f"use a shorter {what}")
    return None


def check_id(value: str, what: str) -> str:
    problem = id_problem(value, what)
    if problem:
        raise ValueError(problem)
    return value


class ToolStatus(str, Enum):
    OK = "ok"
    ERROR = "error"
    SKIPPED = "skipped"
    DENIED = "denied"
    CANCELLED = "cancelled"


class TurnStatus(str, Enum):
    RUNNING = "running"
    PAUSED = "paused"
    COMPLETED = "completed"
    REJECTED = "rejected"
    FAILED = "failed"  # the turn raised (refused whole, planning failed): nothing of it ran


class ToolCall(BaseModel):
    """One call as the model emitted it.

    `arguments` is a JSON string (OpenAI) or an already-decoded object
    (Anthropic). Anything else is kept as is and reported as bad arguments.
    """

    id: str
    name: str
    arguments: str | dict[str, Any] | None = None


class Snapshot(BaseModel):
    """What a read saw of a file: the basis of the optimistic-lock check."""

    path: str  # relative to the workspace root, normalised with "/"
    mtime_ns: int
    size: int
    sha256: str


class ToolResult(BaseModel):
    tool_call_id: str
    name: str = ""
    status: ToolStatus = ToolStatus.OK
    is_error: bool = False
    output: str = ""
    metadata: dict[str, str] = Field(default_factory=dict)
    # What the file looked like after a read/write/edit (None for other tools).
    snapshot: Snapshot | None = None
    elapsed_ms: float = 0.0

    @classmethod
    def ok(cls, call_id: str, name: str, output: str, **kw: Any) -> "ToolResult":
        return cls(tool_call_id=call_id, name=name, output=output, **kw)

    @classmethod
    def error(cls, call_id: str, name: str, output: str, **kw: Any) -> "ToolResult":
        kw.setdefault("status", ToolStatus.ERROR)
        return cls(tool_call_id=call_id, name=name, output=output, is_error=True, **kw)


class ToolRequest(BaseModel):
    """What the workflow hands to a tool activity."""

    call_id: str
    tool: str
    workspace_root: str
    arguments: dict[str, Any]
    # The snapshot this session holds for the target path (write/edit only).
    snapshot: Snapshot | None = None
    # The turn (workflow id) this call belongs to: with call_id, the key under
    # which an unsafe tool journals that it has applied its effect, so a retry
    # after a crash can tell it already happened.
    turn_id: str = ""
    # bash after an approved preview: the sha256 of the changeset the preview
    # showed (as its result recorded it in the history); only that changeset
    # is applied.
    txn_digest: str = ""
    # bash: judge the captured changeset before applying it (None: apply as before).
    gate: "EffectGate | None" = None
    # bash: approved as needing the network (honoured only by a worker that opted in).
    network: bool = False
    # bash: run captured and journal the changeset, but do not apply it: the
    # result carries its digest (txn_digest), which the turn records in its
    # history before it applies the journal (activity bash_apply_journal).
    journal_only: bool = False


class EffectGate(BaseModel):
    """What the bash activity does with a captured changeset before applying it:
    ``destructive`` keeps (does not apply) one that is destructive by effect,
    ``effects`` also one with any change that is not a declared cache; a kept
    changeset waits for a person (the turn pauses at that call)."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["destructive", "effects"] = "destructive"
    cache_paths: list[str] = Field(default_factory=list)
    max_files: int = 1000
    max_bytes: int = 100 << 20


class Workspace(BaseModel):
    root: str
    # Task queue of the worker that holds the workspace's files. Activities are
    # routed there; the workflow itself may run anywhere.
    task_queue: str


class PolicyRule(BaseModel):
    """Allow, ask or deny by tool name, optionally narrowed by a bash command prefix."""

    model_config = ConfigDict(extra="forbid")

    action: Literal["allow", "ask", "deny"]
    tool: str  # a tool name, or "*"
    command_prefix: str | None = None  # bash only: matched on whole words


# The approval modes, in the order the command lines list them.
PolicyMode = Literal["auto", "ask-writes", "ask-all"]
POLICY_MODES: tuple[str, ...] = get_args(PolicyMode)


class Policy(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mode: PolicyMode = "ask-writes"
    rules: list[PolicyRule] = Field(default_factory=list)
    # Silence for this long turns into a rejection; None waits for ever.
    approval_timeout_seconds: float | None = None
    # an `ask` bash call runs first in a throwaway copy-on-write
    # view; the pending call shows its output and diff, and approval applies
    # exactly that changeset (no second run).
    preview_bash: bool = False
    # The effect gate: a captured bash changeset that is destructive by effect
    # pauses in every mode; under ask-writes a bash call that asks only because
    # it may write or runs project code runs captured first and pauses only if
    # it changed something besides the cache paths.
    effect_gate: bool = True
    # None: the defaults (__pycache__, .pytest_cache, .mypy_cache, .ruff_cache, ...).
    cache_paths: list[str] | None = None
    effect_max_files: int = Field(default=1000, ge=1)
    effect_max_bytes: int = Field(default=100 << 20, ge=1)


class TurnOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # "local": fast tools (all but bash) run as local activities inside the
    # workflow's own worker: a few ms per call instead of a server round trip.
    # Only right when the workflow runs on the workspace's task queue, which
    # the starter knows (client.py sets it then). The worker still refuses
    # paths outside the workspace it serves.
    # "remote": regular activities on the workspace's task queue.
    # (The choice lives in the input, not in workflow.info(), so that replay
    # on another queue, e.g. the Replayer's, makes the same decision.)
    execution: Literal["local", "remote"] = "remote"


class TurnInput(BaseModel):
    turn_id: str
    workspace: Workspace
    tool_calls: list[ToolCall]
    snapshots: list[Snapshot] = Field(default_factory=list)
    # None: use the default policy of the worker that runs the workflow.
    policy: Policy | None = None
    options: TurnOptions = Field(default_factory=TurnOptions)
    # Streaming dispatch: the calls arrive by the signal `dispatch`
    # and the update `close_batch` (tool_calls starts empty); see workflows/turn_dispatch.py.
    open_batch: bool = False
    # The starter's own bound on a pause, applied over whichever policy the
    # turn plans with (the shorter wins): a front-end that waits for a person
    # and may vanish (an MCP server) sets it, so the turn rejects itself on a
    # durable timer instead of waiting for ever. Kept out of TurnOptions
    # (extra="forbid") so that workers of earlier builds ignore it.
    approval_timeout_seconds: float | None = Field(default=None, gt=0)

    @field_validator("turn_id")
    @classmethod
    def _turn_id_bounded(cls, value: str) -> str:
        return check_id(value, "turn id")

    @field_validator("tool_calls")
    @classmethod
    def _call_ids_bounded(cls, calls: list[ToolCall]) -> list[ToolCall]:
        for call in calls:
            check_id(call.id, "tool call id")
        return calls


class ApprovalDecision(BaseModel):
    batch_digest: str
    approve: bool = True
    approver: str = "web-ui"  # a signal sent from the Web UI need not name one
    reason: str = ""


class DecisionRecord(BaseModel):
    batch_digest: str
    approve: bool
    approver: str
    reason: str
    decided_at: str  # ISO-8601, workflow time
    via: Literal["signal", "update", "timeout"]


class PendingCall(BaseModel):
    index: int
    tool_call_id: str
    name: str
    arguments: dict[str, Any]
    reason: str
    # bash with Policy.preview_bash: its output and the diff it would apply.
    preview: str = ""
    # edit/write: the diff of the whole file, escaped, read when planned.
    review: str = ""


class CallProgress(BaseModel):
    index: int
    tool_call_id: str
    name: str
    state: Literal["pending", "running", "done"]
    status: ToolStatus | None = None


class TurnProgress(BaseModel):
    """What the `status` query answers."""

    turn_id: str
    status: TurnStatus
    batch_digest: str
    pending: list[PendingCall] = Field(default_factory=list)
    calls: list[CallProgress] = Field(default_factory=list)
    decision: DecisionRecord | None = None
    # A decision the turn ignored (wrong digest, already decided), and why.
    ignored_decision: str = ""


class TurnResult(BaseModel):
    turn_id: str
    status: TurnStatus
    batch_digest: str
    results: list[ToolResult]
    # OpenAI chat shape: {"role": "tool", "tool_call_id", "content"}
    messages: list[dict[str, Any]]
    # Anthropic shape: {"type": "tool_result", "tool_use_id", "content", "is_error"}
    anthropic_blocks: list[dict[str, Any]]
    snapshots: list[Snapshot]
    decision: DecisionRecord | None = None
    # Decisions taken at single calls (the effect gate's pauses), in order.
    call_decisions: list[DecisionRecord] = Field(default_factory=list)
    # Set when the full result did not fit in one Temporal payload: results,
    # messages and blocks are then empty here and the whole TurnResult's JSON
    # is in this folder of the workspace (parts in name order; see
    # runtime.api.load_offloaded). ``result_counts`` summarises it.
    results_artifact: str | None = None
    result_counts: dict[str, int] = Field(default_factory=dict)
    # sha256 of that JSON, as the history records it: what is read back from
    # the workspace is checked against it.
    results_digest: str = ""


class PlannedCall(BaseModel):
    """One call as the recorded plan settled it. Everything here was decided
    by code that may change between builds (argument repair and validation,
    the shell validator, the risk policy, the tool specs); the workflow only
    reads it back."""

    index: int
    call_id: str
    name: str
    # The validated arguments when they differ from what json.loads(call
    # arguments) gives (repaired JSON); None: decode the call's own arguments.
    # Keeps the recorded plan small for big batches.
    arguments: dict[str, Any] | None = None
    concurrency_safe: bool = False
    action: Literal["allow", "ask", "deny"] = "allow"
    reason: str = ""
    verdict: str | None = None  # bash: allow | ask | reject
    bash_timeout_seconds: int | None = None
    path: str | None = None  # the file tool's path argument (snapshots)
    # Set when the call is settled without running (bad input, rejection, denial).
    early_result: ToolResult | None = None
    # edit/write that asks: the file's diff as planned (core.tools.display).
    review: str = ""
    # bash under ask-writes that asks only because it may write or runs
    # project code: runs captured before approval, its effects decide.
    by_effects: bool = False
    # bash on a worker with network on approval: needs the network, asks in every mode.
    network: bool = False

    @property
    def needs_approval(self) -> bool:
        return self.early_result is None and self.action == "ask"


class PlannedStage(BaseModel):
    parallel: bool
    indices: list[int]


class TurnPlan(BaseModel):
    """The recorded plan of a turn (the result of the plan_turn local activity)."""

    batch_digest: str
    policy: Policy
    calls: list[PlannedCall]
    stages: list[PlannedStage]
    # Which rules made the plan, for the operator reading a history.
    planned_by: str = ""

ToolRequest.model_rebuild()
