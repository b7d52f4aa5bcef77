"""How a turn reports a call that did not run as planned: an activity lost
to infrastructure, or a bash command the current rules refuse. Pure."""

from __future__ import annotations

from temporalio.exceptions import ActivityError, ApplicationError, TimeoutError as TemporalTimeoutError

from core.contracts import PlannedCall, ToolResult
from core.tools.specs import TOOLS

# Set on a bash result that the plan accepted but the activity's own (newer)
# rules refused: the command was not run, and it counts as a failed unsafe call.
REFUSED_BY_CURRENT_RULES = "refused_by_current_rules"


def _describe_infrastructure_failure(call: PlannedCall, err: BaseException) -> ToolResult:
    """An activity that failed for infrastructure reasons, as a result the
    model can read. A tool whose effects are then unknown (bash) says so in
    its own words (``ToolSpec.lost_worker_text``)."""
    cause = err.cause if isinstance(err, ActivityError) else err
    name = call.name
    spec = TOOLS.get(name)
    if isinstance(cause, ApplicationError) and cause.type == "PayloadsTooLarge":
        text = (
            f"The {name} result was too large to pass back through Temporal (limit 2 MiB). "
            "Ask for less: a smaller limit/offset window, a narrower pattern or path."
        )
        kind = "payload_too_large"
    elif spec is not None and spec.lost_worker_text:
        text = spec.lost_worker_text
        kind = "lost_worker" if isinstance(cause, TemporalTimeoutError) else "infrastructure"
    else:
        text = f"The {name} call failed for an infrastructure reason: {cause}. It may be retried."
        kind = "infrastructure"
    return ToolResult.error(call.call_id, name, text, metadata={"failure": kind, "detail": str(cause)[:300]})


def refused_by_current_rules(result: ToolResult) -> ToolResult:
    """A bash call the recorded plan accepted, refused by the validator of the
    build that ran it: say so plainly (nothing ran)."""
    if result.metadata.get(REFUSED_BY_CURRENT_RULES) != "true":
        result.output = (
            "This command was accepted when the turn was planned (under older rules) and is refused "
            "by the current rules of the worker that was to run it, so it was not run.\n" + result.output
        )
    result.metadata[REFUSED_BY_CURRENT_RULES] = "true"
    return result
