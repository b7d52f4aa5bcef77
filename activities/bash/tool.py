"""The bash tool: running one validated command behind the resource fence and
the physical fence.

``run_bash`` is the tool function (activity type ``bash``): the adapter
between the tool call and the fences. It asks the fail-closed validator
first; a rejected command never runs. Otherwise it runs the validated plan
(``verdict.plan``: pipelines, lists, redirections, globs, heredocs) through
``activities.bash.executor``: a plain command by execve, anything else as a
script rebuilt from the validated, quoted words; never the model's string.
The fences live in their own modules:

- ``activities.bash.executor``: running a plan exactly as validated;
- ``activities.sandbox.process``: spawning, process-group timeouts, rlimits, drain;
- ``activities.sandbox.bwrap``: bubblewrap (the physical fence);
- ``activities.sandbox.environment``: the allowlisted environment;
- ``activities.sandbox.cgroup``: the per-command cgroup (process cap, kill list);
- ``activities.sandbox.output``: bounded output and the full-output artifact;
- ``activities.sandbox.settings``: the settings (environment variables).

Names other modules and tests import from here are re-exported below.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import time
import uuid
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.bash import attempts as bash_txn
from activities.txn import api as txn
from activities.sandbox.settings import (  # noqa: F401 - re-exported
    BWRAP_ENV,
    CPU_MARGIN_S,
    FILE_SIZE_ENV,
    MAX_PROCS_ENV,
    MEMORY_ENV,
    SANDBOX_ENV,
    TOTAL_MEMORY_ENV,
    BadSetting,
    network_on_approval,
    sandbox_mode,
)
from activities.sandbox.environment import command_env, command_path, resolve_program  # noqa: F401 - re-exported
from activities.sandbox.output import OutputCollector  # noqa: F401 - re-exported
from activities.sandbox.process import ExecOutcome, execute  # noqa: F401 - re-exported
from activities.sandbox.bwrap import (  # noqa: F401 - re-exported
    SandboxUnavailable,
    bwrap_argv,
    bwrap_path,
    program_folders,
    sandbox_argv,
    sandbox_status,
)
from activities.txn.preview import discard_preview
from activities.bash.executor import PlanError, execute_plan, plan_from_argv
from activities.workspace.paths import workspace_root
from core.contracts import ToolRequest, ToolResult
from core.tools.specs import BASH, MAX_BASH_TIMEOUT_S, BashArgs
from core.turn.effects import EFFECTS

try:  # the workspace-aware validator (realpaths, repository-configured toolchains)
    from activities.bash import facts as _facts
except ImportError as _missing:  # not on this branch yet: the pure validator
    if getattr(_missing, "name", None) != "activities.bash.facts" and "command_facts" not in str(_missing):
        raise  # the module exists but is broken: fail, never fall back to weaker rules silently
    _facts = None  # type: ignore[assignment]
    from core.shell import validate_command


def _validate(command: str, workspace_root: str):  # type: ignore[no-untyped-def]
    # Looked up at call time, so a deployment (or a test) replacing the rules is followed.
    if _facts is not None:
        return _facts.validate_in_workspace(command, workspace_root)
    return validate_command(command)


log = logging.getLogger(__name__)


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


def _turn_key(request: ToolRequest) -> str:
    """The turn a call's transaction belongs to. Turns from before
    ToolRequest.turn_id: the workflow id (one per turn), else a fresh key."""
    if request.turn_id:
        return request.turn_id
    if activity.in_activity():
        return f"wf-{activity.info().workflow_id}"
    return f"adhoc-{uuid.uuid4().hex}"


def _attempt() -> int:
    return activity.info().attempt if activity.in_activity() else 1


def _refusal(request: ToolRequest, exc: Exception, meta: dict[str, str]) -> ToolResult:
    if isinstance(exc, SandboxUnavailable):
        meta.update(sandbox="none", sandbox_reason=str(exc))
        return ToolResult.error(
            request.call_id,
            BASH,
            f"bash refused to run the command: the OS sandbox is required ({SANDBOX_ENV}=required) "
            f"but unavailable: {exc}. Nothing was run; ask the operator to install a working "
            f"bubblewrap or to change {SANDBOX_ENV}.",
            metadata=meta,
        )
    return ToolResult.error(
        request.call_id, BASH, f"bash refused to run the command: bad worker setting: {exc}. Nothing was run.",
        metadata=meta,
    )


def _from_stored(request: ToolRequest, stored: dict, meta: dict[str, str], extra: str, is_error: bool) -> ToolResult:
    """A result kept by an earlier attempt (journal or direct run), returned again."""
    merged = {**stored.get("metadata", {}), **meta}
    text = bash_txn.join_text(str(stored.get("output", "")), extra)
    make = ToolResult.error if (stored.get("is_error") or is_error) else ToolResult.ok
    return make(request.call_id, BASH, text or "(no output)", metadata=merged)


BUSY_POLL_S = 0.5


async def _start(root: str, turn_id: str, call_id: str, timeout_s: int) -> txn.TxnStart:
    """txn.start, waiting while another attempt of this call (an overlapping
    retry: its worker missed heartbeats but lives) still runs its command;
    then its journal (resume) or its discarded capture (run) decides."""
    deadline = time.monotonic() + timeout_s + 60
    while True:
        started = await asyncio.to_thread(txn.start, root, turn_id, call_id)
        if started.mode != "busy":
            return started
        if time.monotonic() > deadline:
            raise ApplicationError(f"bash call {call_id}: {started.reason}; giving up waiting", type="CallBusy")
        _heartbeat({"waiting_for": "an earlier attempt of this call"})
        await asyncio.sleep(BUSY_POLL_S)


async def run_bash(request: ToolRequest, args: BashArgs) -> ToolResult:
    return await _run_bash(request, args, preview=False)


async def run_bash_preview(request: ToolRequest, args: BashArgs) -> ToolResult:
    """Run an ``ask`` command in a throwaway copy-on-write view before it is
    approved: its output and the diff of what it would change; nothing is
    applied (approval applies exactly that changeset, see txn.approve_preview)."""
    return await _run_bash(request, args, preview=True)


async def _run_bash(request: ToolRequest, args: BashArgs, *, preview: bool) -> ToolResult:
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
    # read-only workspace, so a wrong `allow` costs at most a read (cheaper
    # than a capture; txn's read_only_refusal is the backstop should such a
    # command ever run captured). A command with any part that needed
    # approval runs, approved, as a whole, on a copy-on-write view (txn).
    read_only = verdict.verdict == "allow"
    try:
        box, _, _ = await sandbox_status()
        network = request.network and network_on_approval()
    except (SandboxUnavailable, BadSetting) as exc:
        return _refusal(request, exc, meta)
    if network:
        meta["network"] = "true"
    turn_id, attempt = _turn_key(request), _attempt()
    meta["attempt"] = str(attempt)

    started: txn.TxnStart | None = None
    if read_only and box == "bwrap":
        meta["capture"] = "read-only"
        launch_mode = "read-only"  # nothing in the workspace can change: safe to run again
    else:
        started = await _start(root, turn_id, request.call_id, args.timeout_seconds)
        if request.journal_only and started.mode in ("resume", "done", "previewed"):
            # Left by an earlier attempt whose result the turn never recorded: not trusted.
            why = await asyncio.to_thread(txn.forget_unrecorded, root, turn_id, request.call_id)
            if why:
                meta.update(capture="refused", failure="lost_worker", retry=bash_txn.MAY_HAVE_RUN)
                return ToolResult.error(request.call_id, BASH, UNRECORDED_TEXT.format(why=why), metadata=meta)
            started = await _start(root, turn_id, request.call_id, args.timeout_seconds)
        if started.mode in ("resume", "done"):  # a retry after a lost worker: finish, never run again
            done = await asyncio.to_thread(txn.resume, root, turn_id, request.call_id)
            meta.update(done.metadata, txn_mode=started.mode)
            return _from_stored(request, done.stored, meta, _notes(done), done.is_error)
        if started.mode == "previewed":
            if request.gate is not None and not preview:
                again = await asyncio.to_thread(txn.gated_again, root, turn_id, request.call_id)
                if again is not None:  # a retry of a gated run: the same pause, never an apply
                    shown = await asyncio.to_thread(bash_txn.load_preview, root, turn_id, request.call_id)
                    meta.update(again.metadata)
                    return _from_stored(request, shown[0], meta, shown[1], False)
            return await _previewed(request, root, turn_id, meta, preview)
        nochange = bash_txn.load_nochange_preview(root, turn_id, request.call_id)
        if nochange is not None and not preview:
            if started.capture is not None:
                started.capture.discard()
            meta.update(capture="no-changes", txn_mode="previewed")
            return _from_stored(request, nochange, meta, APPROVED_NO_CHANGES, False)
        if started.mode == "capture" and box != "bwrap":
            # Without bubblewrap's --cap-drop ALL a command running as root could unmount the overlay.
            started.capture.discard()
            started = txn.TxnStart("direct", started.root, turn_id, request.call_id,
                                   reason="no bubblewrap sandbox (capture needs one)")
            log.warning("bash call %s runs without capture (may or may not have run if lost): %s",
                        request.call_id, started.reason)
        launch_mode = "capture" if started.mode == "capture" else "direct"
        if launch_mode == "direct":
            meta.update(capture="unavailable", capture_reason=started.reason)
            if request.gate is not None and request.gate.mode == EFFECTS and not preview:
                # Its effects cannot be seen before they land: ask before it runs.
                started.capture = None
                meta.update(gate=GATE_ASK_FIRST)
                return ToolResult.ok(request.call_id, BASH, f"Not run yet: {GATE_ASK_FIRST_TEXT} ({started.reason}).",
                                     metadata=meta)
            if preview:
                return ToolResult.error(request.call_id, BASH, f"No preview: {PREVIEW_UNAVAILABLE} ({started.reason}).",
                                        metadata=meta)
    if getattr(verdict, "opaque", False):
        meta["opaque"] = "true"
        if launch_mode != "capture":
            # A script's effects are only known from its capture: never run one without.
            if started is not None and started.capture is not None:
                started.capture.discard()
            return ToolResult.error(
                request.call_id, BASH,
                f"Command not run: it is opaque ({verdict.reason.split(';')[0]}) and runs only captured in the "
                "sandbox, which is unavailable on this worker. Write it as plain commands joined with && "
                "(no loops, variables or substitutions), or run each step as its own bash call.",
                metadata=meta,
            )
    if attempt > 1:
        prior = await asyncio.to_thread(bash_txn.prior_attempt, root, turn_id, request.call_id)
        if not prior.safe_to_run:
            if started is not None and started.capture is not None:
                started.capture.discard()
            meta.update(capture="unavailable", failure="lost_worker", retry=bash_txn.MAY_HAVE_RUN)
            if prior.result is not None:
                return _from_stored(request, prior.result, meta, EARLIER_ATTEMPT_NOTE, False)
            log.warning("bash call %s of turn %s: not run again, an earlier attempt ran without capture: %s",
                        request.call_id, turn_id, prior.reason)
            return ToolResult.error(
                request.call_id, BASH, bash_txn.MAY_HAVE_RUN_TEXT.format(why=prior.reason), metadata=meta
            )
    if launch_mode != "read-only":  # a read-only run is safe to repeat: no marker, no fsync
        await asyncio.to_thread(bash_txn.mark_launched, root, turn_id, request.call_id, launch_mode, attempt,
                                started.reason if started is not None else "")
    capture = started.capture if started is not None and started.mode == "capture" else None
    try:
        outcome = await execute_plan(
            plan,
            root,
            args.timeout_seconds,
            read_only=read_only,
            wrap=capture.wrap if capture is not None else None,
            sandboxed=box == "bwrap",
            artifact_root=root,
            call_id=request.call_id,
            on_heartbeat=_heartbeat,
            network=network,
        )
    except BaseException as exc:
        if capture is not None:
            capture.discard()  # cancelled or not run: nothing applied
        if isinstance(exc, PlanError):
            return ToolResult.error(request.call_id, BASH, f"Command not run: {exc}", metadata=meta)
        if isinstance(exc, (SandboxUnavailable, BadSetting)):
            return _refusal(request, exc, meta)
        raise

    text, is_error = _describe_outcome(outcome, args, meta)
    if capture is None:
        if launch_mode == "direct":
            stored = bash_txn.result_dict(text, is_error, meta, outcome.exit_code)
            await asyncio.to_thread(bash_txn.store_direct_result, root, turn_id, request.call_id, stored)
        make = ToolResult.error if is_error else ToolResult.ok
        return make(request.call_id, BASH, text, metadata=meta)
    assert started is not None
    stored = bash_txn.result_dict(text, is_error, meta, outcome.exit_code)
    done = await asyncio.to_thread(
        txn.finish, started, verdict=verdict.verdict,
        completed=_finished(outcome), result=stored, preview=preview,
        gate=None if preview else request.gate, journal_only=request.journal_only and not preview,
    )
    meta.update(done.metadata)
    if done.changed and done.capture == "read-only-violation":
        meta["changed_files"] = str(len(done.changed))
    if preview and done.capture == "no-changes":
        await asyncio.to_thread(bash_txn.store_nochange_preview, root, turn_id, request.call_id, stored)
    extra = done.text if preview or done.capture == "gated" else _notes(done)
    if preview and done.capture == "no-changes":
        extra = bash_txn.join_text(extra, "[Preview: the command would change no files.]")
    make = ToolResult.error if (is_error or done.is_error) else ToolResult.ok
    return make(request.call_id, BASH, bash_txn.join_text(text, extra), metadata=meta)


UNRECORDED_TEXT = (
    "Not run again, and nothing applied: {why}. The workspace may hold part of those changes: check it "
    "(read_file, git status), or roll the turn back, before running the command again."
)
GATE_ASK_FIRST = "ask-first"
GATE_ASK_FIRST_TEXT = (
    "copy-on-write capture is unavailable on this worker, so what the command changes cannot be shown "
    "before it is applied; it needs approval before it runs"
)
APPROVED_NO_CHANGES = "[Approved after a preview in which the command changed no files: it was not run again.]"
EARLIER_ATTEMPT_NOTE = (
    "[This is the result of an earlier attempt of this call, which ran without copy-on-write capture on a "
    "worker that was lost before reporting back; the command was not run again.]"
)
PREVIEW_UNAVAILABLE = "copy-on-write capture is unavailable on this worker, so the command cannot run in a throwaway view"


async def _previewed(request: ToolRequest, root: str, turn_id: str, meta: dict[str, str], preview: bool) -> ToolResult:
    """A preview waits for this call: the preview activity's retry shows it
    again; the bash call (approved) applies exactly it, or reports it stale."""
    if preview:
        shown = await asyncio.to_thread(bash_txn.load_preview, root, turn_id, request.call_id)
        meta.update(capture="previewed", txn_digest=shown[2])
        return _from_stored(request, shown[0], meta, shown[1], False)
    done = await asyncio.to_thread(txn.approve_preview, root, turn_id, request.call_id, request.txn_digest)
    meta.update(done.metadata, txn_mode="previewed")
    if done.capture == "stale":
        await asyncio.to_thread(discard_preview, root, turn_id, request.call_id)
        text = (
            f"{done.text}\n[The approved preview is stale: the workspace changed after the command ran in its "
            "preview, so its changes were NOT applied and the command was not run again. Run the command again "
            "if it is still wanted.]"
        )
        return ToolResult.error(request.call_id, BASH, text, metadata=meta)
    return _from_stored(request, done.stored, meta, _notes(done), done.is_error)


def _notes(done: txn.TxnResult) -> str:
    return done.notes()


def _finished(outcome: ExecOutcome) -> bool:
    """Did the command run to its end? A timed-out command, one killed
    (SIGKILL, directly or as bubblewrap's 128+9, or by the memory limit) or
    one that never started applies nothing of what it changed."""
    killed = outcome.exit_code in (-signal.SIGKILL, 128 + signal.SIGKILL) or outcome.memory_limit_hit
    return not (outcome.timed_out or outcome.spawn_error or killed)


def _describe_outcome(outcome: ExecOutcome, args: BashArgs, meta: dict[str, str]) -> tuple[str, bool]:
    """The result text of a finished run (and fills ``meta``)."""
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
        return outcome.spawn_error, True
    output = outcome.output
    if outcome.write_blocked:
        output = (output + "\n\n" if output else "") + WRITE_BLOCKED_NOTE
    if outcome.memory_limit_hit:
        output = (output + "\n\n" if output else "") + _memory_note(outcome)
    if outcome.timed_out:
        return (output + "\n\n" if output else "") + _timeout_message(args.timeout_seconds), True
    if outcome.exit_code != 0:
        return (output + "\n\n" if output else "") + f"[Command failed: {_describe_exit(outcome)}]", True
    return (output if output else "(no output)"), False



