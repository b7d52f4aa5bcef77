"""The turn as the Temporal Web UI shows it (summary and details, markdown). Pure.

What a person needs to approve from the Web UI alone: each call that asks,
with its full command and the validator's verdict, or the diff of the edit
or write with real hunk lines, or the changeset a previewed command would
apply; the short digest to send back; and, when a decision was ignored, why.
All content goes through the one escaping path (``core.tools.display`` and
``shown``) and sits in code fences longer than any backtick run inside, so
it cannot turn into markup.
"""

from __future__ import annotations

import re
from typing import Sequence

from core.contracts import DecisionRecord, PendingCall, ToolCall
from core.tools.display import short_digest
from core.tools.formatting import shown
from core.tools.specs import describe_pending_call

DETAILS_MAX_CHARS = 60_000  # the Web UI renders it on every visit


def fenced(text: str, lang: str = "") -> str:
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{text}\n{fence}"


def static_summary(calls: Sequence[ToolCall], workspace: str) -> str:
    names: dict[str, int] = {}
    for c in calls:
        names[c.name] = names.get(c.name, 0) + 1
    listed = ", ".join(f"{n}×{shown(name)}" if n > 1 else shown(name) for name, n in names.items())
    return f"agent turn: {len(calls)} call(s) ({listed}) in {shown(workspace)}"[:400]


def static_details(calls: Sequence[ToolCall], workspace: str) -> str:
    """What the model asked for, as sent (before any planning)."""
    lines = [f"**Workspace** `{shown(workspace).replace('`', '')}`", ""]
    for i, c in enumerate(calls):
        args = c.arguments if isinstance(c.arguments, str) else repr(c.arguments)
        lines.append(f"**#{i + 1}** `{shown(c.name).replace('`', '')}`")
        lines.append(fenced(shown(args, keep="\n")[:2000], "json"))
    return _bounded("\n".join(lines))


def pending_details(
    turn_id: str,
    pending: Sequence[PendingCall],
    digest: str,
    verdicts: dict[int, tuple[str, str]],
    ignored: str = "",
) -> str:
    """``verdicts``: index -> (verdict, reason) as the plan recorded them (the
    details show the recorded verdict, never one recomputed here)."""
    lines = [f"**Waiting for approval** of {len(pending)} call(s). Short digest: `{short_digest(digest)}`", ""]
    if ignored:
        lines += [f"**Last decision ignored:** {shown(ignored)}", ""]
    for p in pending:
        lines.append(f"### #{p.index + 1} `{shown(p.name).replace('`', '')}` — {shown(p.reason)}")
        verdict, why = verdicts.get(p.index, ("ask", p.reason))
        lines.append(fenced(describe_pending_call(p, lambda _c, v=verdict, w=why: _Verdict(v, w)), "diff"))
        lines.append("")
    lines += [
        "**Approve** here: More Actions → Send a Signal → `approve` (or `reject`) with data",
        f'`{{"batch_digest": "{short_digest(digest)}", "reason": "ok"}}`',
        "(the approver defaults to `web-ui`; add `\"approver\": \"your name\"`), "
        f"or `agent-turn approve {shown(turn_id)}`, or the page of `agent-turn console`.",
    ]
    return _bounded("\n".join(lines))


def finished_details(status: str, decision: DecisionRecord | None, ignored: str = "") -> str:
    text = f"Turn {status}."
    if decision is not None:
        verb = "approved" if decision.approve else "rejected"
        text += f" {verb.capitalize()} by {shown(decision.approver)} via {decision.via}"
        text += f": {shown(decision.reason)}" if decision.reason else "."
    if ignored:
        text += f"\n\n**Last decision ignored:** {shown(ignored)}"
    return text


class _Verdict:
    def __init__(self, verdict: str, reason: str) -> None:
        self.verdict, self.reason, self.destructive = verdict, reason, False


def _bounded(text: str) -> str:
    if len(text) <= DETAILS_MAX_CHARS:
        return text
    cut = text[:DETAILS_MAX_CHARS].rsplit("\n", 1)[0]
    if cut.count("```") % 2:
        cut += "\n```"
    return cut + f"\n\n(details cut at {DETAILS_MAX_CHARS:,} characters: `agent-turn show` prints everything)"
