"""What an MCP client is asked when a call needs approval. Pure.

The message is the review `agent-turn show` prints (escaped: what a model
wrote cannot drive the approver's screen); the form asks approve or reject
and an optional reason. Any answer but an explicit approve rejects.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Callable

from core.contracts import TurnProgress
from core.tools.formatting import shown
from core.tools.specs import describe_pending_call

APPROVE, REJECT = "approve", "reject"
_FULL_DIGEST = re.compile(r"[0-9a-f]{64}")
DECISION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "decision": {
            "type": "string",
            "title": "Decision",
            "description": "approve runs exactly the call(s) shown; reject tells the agent it was denied",
            "enum": [APPROVE, REJECT],
        },
        "reason": {"type": "string", "title": "Reason", "description": "optional; the agent reads it on a reject"},
    },
    "required": ["decision"],
}


def review_text(progress: TurnProgress, validate: Callable[[str], Any]) -> str:
    lines = [
        f"turn {shown(progress.turn_id)} waits for approval of {len(progress.pending)} call(s)",
        f"batch digest: {shown(progress.batch_digest)}",
        "",
    ]
    for pending in progress.pending:
        lines.append(describe_pending_call(pending, validate))  # with its preview, if any
        lines.append("")
    return "\n".join(lines).rstrip("\n")


def where_to_decide(turn_id: str, ui_link: str | None) -> str:
    where = f"approve with `agent-turn approve {turn_id}` or reject with `agent-turn reject {turn_id} --reason ...`"
    if ui_link:
        where += f", or send the signal 'approve' / 'reject' in the Web UI: {ui_link}"
    return f"turn {turn_id} waits for approval: {where}"


@dataclass(frozen=True)
class Answer:
    approve: bool
    reason: str


def answer_from(action: str, content: dict[str, Any] | None) -> Answer:
    """An elicitation result as a decision: only accept + approve approves."""
    content = content or {}
    reason = content.get("reason")
    reason = reason if isinstance(reason, str) else ""
    if action == "accept" and content.get("decision") == APPROVE:
        return Answer(True, reason)
    if action == "accept":
        return Answer(False, reason or "rejected in the MCP client")
    return Answer(False, reason or f"the MCP client's user chose {action!r} on the approval form")


def encode_state(turn_id: str, digest: str) -> str:
    return json.dumps({"turn_id": turn_id, "digest": digest}, separators=(",", ":"))


def decode_state(text: str) -> tuple[str, str]:
    """(turn id, digest) from an echoed request state; ValueError when it is not one of ours."""
    try:
        data = json.loads(text)
        turn_id, digest = data["turn_id"], data["digest"]
    except (ValueError, TypeError, KeyError):
        raise ValueError("requestState is not one this server issued (expected the turn and digest)") from None
    # The exact digest shown, never a prefix or "": the turn would take
    # those for whatever batch it waits on, which nobody was shown.
    if not isinstance(turn_id, str) or not isinstance(digest, str) or not _FULL_DIGEST.fullmatch(digest):
        raise ValueError("requestState is not one this server issued (expected the turn and digest)")
    return turn_id, digest
