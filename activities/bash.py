"""The bash tool: running one validated command behind the resource fence and
the physical fence (DESIGN.md §4).

``run_bash`` is the tool function (activity type ``bash``): the adapter
between the tool call and the fences. It asks the fail-closed validator
first; a rejected command never runs. Otherwise it runs the validated plan
(``verdict.plan``: pipelines, lists, redirections, globs, heredocs) through
``activities.shell_exec``: a plain command by execve, anything else as a
script rebuilt from the validated, quoted words; never the model's string.
The fences live in their own modules:

- ``activities.shell_exec``: running a plan exactly as validated;
- ``activities.process``: spawning, process-group timeouts, rlimits, drain;
- ``activities.sandbox``: bubblewrap (the physical fence);
- ``activities.command_env``: the allowlisted environment;
- ``activities.cgroup``: the per-command cgroup (process cap, kill list);
- ``activities.output``: bounded output and the full-output artifact;
- ``activities.bash_settings``: the settings (environment variables).

Names other modules and tests import from here are re-exported below.
"""

from __future__ import annotations

import signal
from typing import Any

from temporalio import activity

from activities.base import tool_activity
from activities.bash_settings import (  # noqa: F401 - re-exported
    BWRAP_ENV,
    CPU_MARGIN_S,
    FILE_SIZE_ENV,
    MAX_PROCS_ENV,
    MEMORY_ENV,
    SANDBOX_ENV,
    TOTAL_MEMORY_ENV,
    BadSetting,
    sandbox_mode,
)
from activities.command_env import command_env, command_path, resolve_program  # noqa: F401 - re-exported
from activities.output import OutputCollector  # noqa: F401 - re-exported
from activities.process import ExecOutcome, execute  # noqa: F401 - re-exported
from activities.sandbox import (  # noqa: F401 - re-exported
    SandboxUnavailable,
    bwrap_argv,
    bwrap_path,
    program_folders,
    sandbox_argv,
    sandbox_status,
)
from activities.shell_exec import PlanError, execute_plan, plan_from_argv
from activities.workspace import workspace_root
from core.contracts import ToolRequest, ToolResult
from core.tool_specs import BASH, MAX_BASH_TIMEOUT_S, BashArgs

try:  # the workspace-aware validator (realpaths, repository-configured toolchains)
    from activities.command_facts import validate_in_workspace as _validate
except ModuleNotFoundError as _missing:  # not on this branch yet: the pure validator
    if _missing.name != "activities.command_facts":
        raise  # the module exists but is broken: fail, never fall back to weaker rules silently
    from core.shell_validator import validate_command

    def _validate(command: str, workspace_root: str):  # type: ignore[no-untyped-def]
        return validate_command(command)


def _heartbeat(details: dict[str, Any]) -> None:
    if activity.in_activity() and not activity.info().is_local:
        activity.heartbeat(details)


_SIGNAL_HINTS = {
    signal.SIGXCPU: "it used up its CPU-time limit",
    signal.SIGXFSZ: "it tried to write a file larger than the file-size limit",
    signal.SIGKILL: "killed: perhaps its CPU-time limit, or the machine ran out of memory",
    signal.SIGSEGV: "a crash; the address-space limit can also cause this",
}


def _describe_exit(outcome: ExecOutcome) -> str:
    code = outcome.exit_code
    if code is None:
        return "no exit status"
    signo = -code if code < 0 else code - 128 if code > 128 else 0
    try:
        sig = signal.Signals(signo)
    except ValueError:
        return f"exit code {code}"
    hint = _SIGNAL_HINTS.get(sig, "")
    if code < 0:
        return f"killed by signal {sig.name}" + (f" ({hint})" if hint else "")
    # 128+N is how shells (and bubblewrap) report death by signal N.
    return f"exit code {code} (perhaps signal {sig.name}" + (f": {hint})" if hint else ")")


WRITE_BLOCKED_NOTE = (
    "[This command was judged read-only, so it ran with the workspace mounted read-only, and it tried to "
    "write: its output reports 'Read-only file system'. Nothing in the workspace was changed. If it must "
    "write, that is a different command: say so, and it will be judged (and approved) as one.]"
)


def _memory_note(outcome: ExecOutcome) -> str:
    limit = outcome.limits.get("total_memory_bytes", "")
    size = f"{int(limit) >> 20} MiB" if limit.isdigit() else limit
    return (
        f"[The command reached its memory limit ({size} for all its processes together, "
        "including files in its /tmp) and the kernel stopped it.]"
    )


def _timeout_message(timeout_s: int) -> str:
    return (
        f"[Command killed after {timeout_s} s: it did not finish within timeout_seconds={timeout_s}. "
        "It may be interactive (waiting for input that will never come: stdin is closed) or long-running. "
        "Use a non-interactive flag (e.g. --yes, -y, --no-input, --batch) or, if it just needs longer, "
        f"call again with a larger timeout_seconds (at most {MAX_BASH_TIMEOUT_S}).]"
    )


async def run_bash(request: ToolRequest, args: BashArgs) -> ToolResult:
    root = str(workspace_root(request.workspace_root))
    # Re-validated here with this build's rules, whatever the planner decided.
    verdict = _validate(args.command, root)
    meta: dict[str, str] = {"verdict": verdict.verdict}
    if verdict.program:
        meta["program"] = verdict.program
    if verdict.verdict == "reject":
        text = f"Command rejected, nothing was run: {verdict.reason}"
        if verdict.hint:
            text += f"\nHint: {verdict.hint}"
        return ToolResult.error(request.call_id, BASH, text, metadata=meta)
    if getattr(verdict, "destructive", False):
        meta["destructive"] = "true"
    plan = getattr(verdict, "plan", None)
    if plan is None:  # a validator from before Verdict.plan: its argv is the one command
        argv = tuple(getattr(verdict, "argv", ()) or ())
        if not argv:
            return ToolResult.error(
                request.call_id, BASH, "Command rejected, nothing was run: the validator found no program to run",
                metadata=meta,
            )
        plan = plan_from_argv(argv)
    # Defence in depth: a command judged read-only (every part `allow`) gets a
    # read-only workspace, so a wrong `allow` costs at most a read. A command
    # with any part that needed approval runs, approved, as a whole.
    read_only = verdict.verdict == "allow"
    try:
        outcome = await execute_plan(
            plan,
            root,
            args.timeout_seconds,
            read_only=read_only,
            artifact_root=root,
            call_id=request.call_id,
            on_heartbeat=_heartbeat,
        )
    except PlanError as exc:
        return ToolResult.error(request.call_id, BASH, f"Command not run: {exc}", metadata=meta)
    except SandboxUnavailable as exc:
        meta.update(sandbox="none", sandbox_reason=str(exc))
        return ToolResult.error(
            request.call_id,
            BASH,
            f"bash refused to run the command: the OS sandbox is required ({SANDBOX_ENV}=required) "
            f"but unavailable: {exc}. Nothing was run; ask the operator to install a working "
            f"bubblewrap or to change {SANDBOX_ENV}.",
            metadata=meta,
        )
    except BadSetting as exc:
        return ToolResult.error(
            request.call_id, BASH, f"bash refused to run the command: bad worker setting: {exc}. Nothing was run.",
            metadata=meta,
        )

    meta.update(
        exit_code="" if outcome.exit_code is None else str(outcome.exit_code),
        duration_s=f"{outcome.duration_s:.3f}",
        sandbox=outcome.sandbox,
        process_cap=outcome.process_cap,
        dropped_lines=str(outcome.dropped_lines),
        total_lines=str(outcome.total_lines),
        timed_out="true" if outcome.timed_out else "false",
        workspace_access=outcome.workspace_access,
        part_exit_codes=outcome.part_exit_codes,
        pipefail="false",
        memory_cap=outcome.memory_cap,
    )
    if outcome.memory_cap_reason:
        meta["memory_cap_reason"] = outcome.memory_cap_reason
    if outcome.memory_limit_hit:
        meta["memory_limit_hit"] = "true"
    if outcome.write_blocked:
        meta["write_blocked"] = "true"
    if outcome.sandbox_reason:
        meta["sandbox_reason"] = outcome.sandbox_reason
    if outcome.process_cap_reason:
        meta["process_cap_reason"] = outcome.process_cap_reason
    if outcome.artifact:
        meta["full_output"] = outcome.artifact
    if outcome.artifact_capped:
        meta["full_output_capped"] = "true"

    if outcome.spawn_error:
        return ToolResult.error(request.call_id, BASH, outcome.spawn_error, metadata=meta)
    output = outcome.output
    if outcome.write_blocked:
        output = (output + "\n\n" if output else "") + WRITE_BLOCKED_NOTE
    if outcome.memory_limit_hit:
        output = (output + "\n\n" if output else "") + _memory_note(outcome)
    if outcome.timed_out:
        return ToolResult.error(
            request.call_id, BASH, (output + "\n\n" if output else "") + _timeout_message(args.timeout_seconds),
            metadata=meta,
        )
    if outcome.exit_code != 0:
        return ToolResult.error(
            request.call_id, BASH, (output + "\n\n" if output else "") + f"[Command failed: {_describe_exit(outcome)}]",
            metadata=meta,
        )
    return ToolResult.ok(request.call_id, BASH, output if output else "(no output)", metadata=meta)


bash_activity = tool_activity(BASH, run_bash, in_thread=False)

