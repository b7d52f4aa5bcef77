"""Per-tool activity options: how long a call may take, how a dead worker is
noticed, and what is retried.

- Reads (read_file, grep, glob) retry freely: they change nothing.
- write_file / edit_file retry too: their snapshot check and idempotence make
  a repeat harmless (a retried write that already landed reports success).
- bash: turns from before patch ``bash-retry-with-capture`` never retry it (a
  lost worker is an error result saying the command may or may not have
  run). Newer turns retry it after a lost worker: the activity decides from
  what the first attempt left on disk (activities.bash.attempts) whether to finish
  a journaled apply, run again (captured or never launched) or report "may
  or may not have run" (it ran without capture).
- Every tool heartbeats (see activities.base), so a SIGKILLed worker is
  noticed after HEARTBEAT_TIMEOUT rather than after start_to_close.
- An oversized result (PayloadsTooLarge) is never retried: it would fail
  identically every time.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from temporalio.common import RetryPolicy

from core.tools.specs import DEFAULT_BASH_TIMEOUT_S, TOOLS, BashArgs, ToolArgs

HEARTBEAT_TIMEOUT = timedelta(seconds=10)
NON_RETRYABLE = ["PayloadsTooLarge", "ValidationError", "WorkspaceError"]

_RETRY_FREELY = RetryPolicy(
    initial_interval=timedelta(milliseconds=200),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=5),
    maximum_attempts=5,
    non_retryable_error_types=NON_RETRYABLE,
)
_NEVER_RETRY = RetryPolicy(maximum_attempts=1, non_retryable_error_types=NON_RETRYABLE)
# bash after a lost worker; the activity refuses what is unsafe.
_BASH_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=10),
    maximum_attempts=4,
    non_retryable_error_types=NON_RETRYABLE,
)


@dataclass(frozen=True)
class ToolActivityOptions:
    start_to_close: timedelta
    retry: RetryPolicy
    heartbeat: timedelta | None = HEARTBEAT_TIMEOUT
    may_run_locally: bool = True


def options_for(
    tool: str, args: ToolArgs | None = None, *, bash_timeout: int | None = None, bash_retry: bool = False
) -> ToolActivityOptions:
    """The tool's Temporal options, from its ``ToolSpec.activity`` profile.
    ``bash_timeout`` is the command's own timeout as the recorded plan holds
    it (the workflow no longer re-validates arguments to learn it).
    ``bash_retry``: the turn has patch BASH_RETRY_PATCH (a tool whose profile
    says ``after-capture`` is then retried)."""
    spec = TOOLS.get(tool)
    if spec is None:
        raise ValueError(f"no activity options for tool {tool!r}")
    profile = spec.activity
    start_to_close = profile.start_to_close_s
    if profile.own_timeout_margin_s is not None:
        own = bash_timeout or (args.timeout_seconds if isinstance(args, BashArgs) else DEFAULT_BASH_TIMEOUT_S)
        start_to_close = own + profile.own_timeout_margin_s
    if profile.retry == "freely":
        retry = _RETRY_FREELY
    else:
        retry = _BASH_RETRY if bash_retry else _NEVER_RETRY
    return ToolActivityOptions(
        start_to_close=timedelta(seconds=start_to_close), retry=retry, may_run_locally=profile.may_run_locally
    )


# The apply half of a journal-only bash call (bash_apply_journal): idempotent,
# heartbeating, so retried freely; bounded like a rollback.
APPLY_JOURNAL_OPTIONS = ToolActivityOptions(
    start_to_close=timedelta(minutes=10), retry=_RETRY_FREELY, may_run_locally=False
)

# Local activities run inside the workflow's worker: no heartbeats, and their
# start_to_close bounds one attempt.
LOCAL_START_TO_CLOSE = timedelta(seconds=60)
