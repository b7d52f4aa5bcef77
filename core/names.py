"""Every name that Temporal writes into a workflow's history, declared once.

A recorded history refers to workflows, activities, signals, updates,
queries and patches by these strings; a worker replays it only if its code
asks for exactly the same ones. So these values must NEVER change, whatever
the modules that use them are called or wherever they move: rename the
constant if you like, never its value (tests/test_names.py pins them).
A new name goes here first; a retired patch id stays here as long as any
history that may still replay carries it.
"""

from __future__ import annotations

# ------------------------------------------------------------------ workflows
TURN_WORKFLOW = "AgentTurnWorkflow"
SESSION_WORKFLOW = "AgentSessionWorkflow"
ROLLBACK_WORKFLOW = "TurnRollbackWorkflow"
MCP_SESSION_WORKFLOW = "McpSessionSnapshots"  # the MCP front-end's snapshot store

# ------------------------------------------------- tools (their activity types)
READ_FILE = "read_file"
WRITE_FILE = "write_file"
EDIT_FILE = "edit_file"
GREP = "grep"
GLOB = "glob"
BASH = "bash"

# --------------------------------------------------------- other activities
PLAN_TURN_ACTIVITY = "plan_turn"
DEFAULT_POLICY_ACTIVITY = "default_policy"
SAVE_RESULT_PART_ACTIVITY = "save_turn_result_part"
BASH_PREVIEW_ACTIVITY = "bash_preview"
DISCARD_PREVIEW_ACTIVITY = "bash_discard_preview"
WRITE_STAGE_ACTIVITY = "write_stage"  # consecutive write_file/edit_file calls as one activity
APPLY_JOURNAL_ACTIVITY = "bash_apply_journal"  # a journal-only bash run's changes, by recorded digest
ROLLBACK_ACTIVITY = "rollback_turn"
CALL_MODEL_ACTIVITY = "call_model"
APPEND_TRANSCRIPT_ACTIVITY = "append_transcript"
DESCRIBE_TURN_ACTIVITY = "describe_turn"
ABANDON_BATCH_ACTIVITY = "abandon_batch"
READ_STAGE_ACTIVITY = "read_stage"  # a parallel stage of reads as one activity

# ------------------------------------------------ signals, updates, queries
# The turn and the session both take approve/reject and answer status.
APPROVE_SIGNAL = "approve"
REJECT_SIGNAL = "reject"
DISPATCH_SIGNAL = "dispatch"  # turn: one streamed call of an open batch
DISPATCH_CALLS_SIGNAL = "dispatch_calls"  # turn: several streamed calls that closed together
SEND_SIGNAL = "send"  # session: the user's next message
CLOSE_SIGNAL = "close"  # session: finish after the current turn
DECIDE_UPDATE = "decide"  # turn: approve or reject, answered
CLOSE_BATCH_UPDATE = "close_batch"  # turn: the open batch is complete
CLOSED_BATCH_QUERY = "closed_batch"  # turn: the batch it closed (None: still open, or not an open batch)
STATUS_QUERY = "status"
MCP_REMEMBER_SIGNAL = "remember_snapshots"  # MCP session: a finished turn's snapshots
MCP_SNAPSHOTS_QUERY = "snapshots"  # MCP session: what its calls have read

# ------------------------------------------------------------------- patches
RECORDED_PLAN_PATCH = "recorded-plan"
BASH_RETRY_PATCH = "bash-retry-with-capture"
PREVIEW_PATCH = "bash-preview"
STREAMING_DISPATCH_PATCH = "streaming-dispatch"
READ_STAGE_PATCH = "read-stage-activity"  # a stage of reads runs as one read_stage activity
EARLY_READ_STAGE_PATCH = "early-read-stage"  # streamed reads planned together start as one read_stage
EFFECT_GATE_PATCH = "effect-gate"  # a captured changeset is judged before it is applied; a pause at a call
FORWARD_CALL_DIGEST_PATCH = "session-forward-call-digest"  # a session forwards a call-level digest to its turn
SESSION_NAMED_DIGEST_PATCH = "session-named-digest"  # a session ignores a decision that names no digest
DECISION_INTEGRITY_PATCH = "decision-integrity"  # a decision counts only for what the turn waits on
SHORT_DIGEST_PATCH = "short-digest"  # a signal may name the short digest the details show
SEARCH_ATTRIBUTES_PATCH = "turn-search-attributes"  # AgentTurnStatus / AgentWorkspace upserts
ROLLBACK_HEARTBEAT_PATCH = "rollback-heartbeat"  # rollback_turn gets a heartbeat timeout
# A turn decides all of the patches above in its first activation (workflows.versions).
TURN_BASELINE_PATCH = "turn-patches-at-start"

TOOL_ACTIVITIES = (READ_FILE, WRITE_FILE, EDIT_FILE, GREP, GLOB, BASH)
