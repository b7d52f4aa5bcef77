"""Running one program behind the resource fence.

stdin is /dev/null; the child starts a new session, so its process group can
be killed as a whole (SIGKILL to ``-pgid``) on timeout; afterwards pipes get
a short drain wait, so a grandchild that holds the pipe cannot hang us.
rlimits cap address space, file size, CPU seconds and core dumps; a cgroup
caps processes (activities.cgroup); the environment is rebuilt from an
allowlist (activities.command_env); output is bounded (activities.output);
bubblewrap is the physical fence (activities.sandbox)."""

from __future__ import annotations

import asyncio
import fcntl
import os
import resource
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from activities.bash_settings import (
    CPU_MARGIN_S,
    DEFAULT_FILE_BYTES,
    DEFAULT_MAX_PROCS,
    DEFAULT_MEMORY_BYTES,
    DRAIN_S,
    FILE_SIZE_ENV,
    HEARTBEAT_EVERY_S,
    MAX_PROCS_ENV,
    MEMORY_ENV,
    int_setting,
)
from activities.cgroup import Cgroup, cgroup_base
from activities.command_env import SANDBOX_HOME, command_env, resolve_program
from activities.output import ARTIFACT_MAX_BYTES, ArtifactSink, OutputCollector
from activities.sandbox import bwrap_argv, sandbox_status


# --- rlimits -----------------------------------------------------------------------


def rlimits(memory_bytes: int, file_bytes: int, cpu_s: int) -> list[tuple[int, tuple[int, int]]]:
    wanted = [(resource.RLIMIT_CORE, 0), (resource.RLIMIT_CPU, cpu_s)]
    if memory_bytes:
        wanted.append((resource.RLIMIT_AS, memory_bytes))
    if file_bytes:
        wanted.append((resource.RLIMIT_FSIZE, file_bytes))
    limits = []
    for res, value in wanted:
        _, hard = resource.getrlimit(res)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)  # an unprivileged worker cannot raise a hard limit
        if res == resource.RLIMIT_CPU:
            # SIGXCPU at the soft limit, SIGKILL at the hard one.
            limits.append((res, (value, min(value + 5, hard) if hard != resource.RLIM_INFINITY else value + 5)))
        else:
            limits.append((res, (value, value)))
    return limits


def preexec_for(limits: list[tuple[int, tuple[int, int]]], procs_fd: int | None) -> Callable[[], None]:
    # Runs in the child between fork and exec: keep it tiny (no locks, no imports).
    def preexec() -> None:
        if procs_fd is not None:
            os.write(procs_fd, b"0")  # "0" = the writing process: join the cgroup before exec
        for res, lim in limits:
            resource.setrlimit(res, lim)

    return preexec


# --- running one command -------------------------------------------------------------


@dataclass
class ExecOutcome:
    exit_code: int | None  # None: it never started; negative: killed by that signal
    output: str  # bounded: head, a dropped-lines notice, tail
    duration_s: float
    timed_out: bool = False
    spawn_error: str | None = None
    total_lines: int = 0
    dropped_lines: int = 0
    lines_cut: int = 0
    total_bytes: int = 0
    artifact: str | None = None  # path relative to the workspace root
    artifact_capped: bool = False
    drain_timed_out: bool = False  # something kept the pipe open after the kill/exit
    sandbox: str = "none"  # "bwrap" | "none"
    sandbox_reason: str = ""
    process_cap: str = "none"  # "cgroup-v2" | "cgroup-v1" | "none"
    process_cap_reason: str = ""
    limits: dict[str, str] = field(default_factory=dict)


class _Protocol(asyncio.SubprocessProtocol):
    def __init__(self, on_data: Callable[[bytes], None]) -> None:
        self.on_data = on_data
        self.exited = asyncio.Event()
        self.eof = asyncio.Event()

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        self.on_data(data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        self.eof.set()

    def process_exited(self) -> None:
        self.exited.set()


def _killpg(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


_background: set[asyncio.Task[Any]] = set()
_F_SETPIPE_SZ = 1031  # Linux fcntl


def _widen_pipe(transport: asyncio.SubprocessTransport) -> None:
    """A 1 MiB pipe instead of 64 KiB: fewer, larger reads when output floods."""
    try:
        pipe = transport.get_pipe_transport(1)
        fileobj = pipe.get_extra_info("pipe") if pipe is not None else None
        if fileobj is not None:
            fcntl.fcntl(fileobj.fileno(), _F_SETPIPE_SZ, 1 << 20)
    except (OSError, ValueError, AttributeError):
        pass  # best effort (e.g. above /proc/sys/fs/pipe-max-size for an unprivileged worker)


async def execute(
    argv: Sequence[str],
    cwd: str | os.PathLike[str],
    timeout_s: float,
    *,
    sandbox: str | None = None,
    memory_bytes: int | None = None,
    file_bytes: int | None = None,
    max_procs: int | None = None,
    artifact_root: str | os.PathLike[str] | None = None,
    call_id: str = "bash",
    artifact_max_bytes: int = ARTIFACT_MAX_BYTES,
    drain_s: float = DRAIN_S,
    on_heartbeat: Callable[[dict[str, Any]], None] | None = None,
    heartbeat_every_s: float = HEARTBEAT_EVERY_S,
) -> ExecOutcome:
    """Run ``argv`` (no shell) in ``cwd`` behind the resource and physical fences.

    ``sandbox`` is auto|required|off (None: AGENT_TOOLS_SANDBOX); the limits
    default to their settings (0 = none). ``cwd`` is the writable workspace.
    Raises SandboxUnavailable (sandbox required but not working) and
    BadSetting; a command that cannot start is an outcome with spawn_error.
    Cancelling the awaiting task kills everything the command started."""
    if not argv:
        raise ValueError("empty argv")
    started = time.monotonic()
    workspace = str(Path(cwd).resolve())
    memory_bytes = int_setting(MEMORY_ENV, DEFAULT_MEMORY_BYTES, 1 << 20) if memory_bytes is None else memory_bytes
    file_bytes = int_setting(FILE_SIZE_ENV, DEFAULT_FILE_BYTES, 1 << 20) if file_bytes is None else file_bytes
    max_procs = int_setting(MAX_PROCS_ENV, DEFAULT_MAX_PROCS) if max_procs is None else max_procs
    box, box_reason, bwrap = await sandbox_status(sandbox)

    outcome = ExecOutcome(exit_code=None, output="", duration_s=0.0, sandbox=box, sandbox_reason=box_reason)
    outcome.limits = {
        "memory_bytes": str(memory_bytes or "unlimited"),
        "file_bytes": str(file_bytes or "unlimited"),
        "max_procs": str(max_procs or "unlimited"),
    }

    # A throwaway HOME and TMPDIR: dotfiles and caches stay out of the workspace.
    scratch = tempfile.mkdtemp(prefix="agent-bash-")
    if box == "bwrap":
        env = command_env(workspace, SANDBOX_HOME, "/tmp")
    else:
        os.mkdir(os.path.join(scratch, "home"))
        os.mkdir(os.path.join(scratch, "tmp"))
        env = command_env(workspace, os.path.join(scratch, "home"), os.path.join(scratch, "tmp"))

    cgroup: Cgroup | None = None
    try:
        if max_procs:
            base, cap_reason = await cgroup_base()
            if base is not None:
                try:
                    cgroup = Cgroup(base, max_procs)
                    outcome.process_cap = base.kind
                except OSError as exc:
                    cap_reason = f"cannot create a cgroup under {base.path}: {exc.strerror or exc}"
            outcome.process_cap_reason = cap_reason if cgroup is None else ""
        else:
            outcome.process_cap_reason = f"disabled ({MAX_PROCS_ENV}=0)"

        if resolve_program(argv[0], env["PATH"], workspace) is None:
            outcome.exit_code = 127
            outcome.spawn_error = (
                f"command not found: {argv[0]!r} (not an executable file"
                + (")" if "/" in argv[0] else f" on PATH {env['PATH']})")
            )
            outcome.output = outcome.spawn_error
            return outcome

        collector = OutputCollector()
        sink = ArtifactSink(
            str(artifact_root) if artifact_root is not None else None, call_id, artifact_max_bytes
        )

        def on_data(data: bytes) -> None:
            collector.feed(data)
            sink.write(data)

        full_argv = bwrap_argv(bwrap, workspace, argv, env["PATH"]) if bwrap else list(argv)
        limits = rlimits(memory_bytes, file_bytes, int(timeout_s) + CPU_MARGIN_S)
        loop = asyncio.get_running_loop()
        try:
            transport, proto = await loop.subprocess_exec(
                lambda: _Protocol(on_data),
                *full_argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                cwd=workspace,
                env=env,
                start_new_session=True,
                close_fds=True,
                preexec_fn=preexec_for(limits, cgroup.procs_fd if cgroup else None),
            )
        except (OSError, subprocess.SubprocessError) as exc:
            outcome.exit_code = 126 if isinstance(exc, PermissionError) else 127
            outcome.spawn_error = f"could not start {argv[0]!r}: {exc}"
            outcome.output = outcome.spawn_error
            return outcome

        pgid = transport.get_pid()  # session leader: its pid is the group id
        _widen_pipe(transport)

        def kill_everything() -> None:
            _killpg(pgid)
            if cgroup is not None:
                cgroup.kill_all()

        try:
            deadline = time.monotonic() + timeout_s  # from the spawn: set-up time is not the command's
            exit_wait = asyncio.ensure_future(proto.exited.wait())
            try:
                while not proto.exited.is_set():
                    now = time.monotonic()
                    if now >= deadline:
                        outcome.timed_out = True
                        break
                    await asyncio.wait({exit_wait}, timeout=min(heartbeat_every_s, deadline - now))
                    if on_heartbeat is not None and not proto.exited.is_set():
                        on_heartbeat(
                            {"elapsed_s": round(time.monotonic() - started, 1), "output_bytes": collector.total_bytes}
                        )
            finally:
                exit_wait.cancel()
            # Timed out: kill it all. Finished: kill what it left behind (a
            # background process must not outlive the call or hold the pipe).
            kill_everything()
            drain_deadline = time.monotonic() + drain_s
            try:
                await asyncio.wait_for(proto.exited.wait(), drain_s)
                await asyncio.wait_for(proto.eof.wait(), max(0.0, drain_deadline - time.monotonic()))
            except asyncio.TimeoutError:
                outcome.drain_timed_out = True
        except BaseException:  # cancelled (activity cancel, worker shutdown): leave nothing behind
            kill_everything()
            transport.close()
            raise
        finally:
            transport.close()

        outcome.exit_code = transport.get_returncode()
        collector.finish()
        sink.finish(collector.truncated)
        outcome.output = collector.render(sink.note())
        outcome.total_lines = collector.total_lines
        outcome.dropped_lines = collector.dropped_lines
        outcome.lines_cut = collector.lines_cut
        outcome.total_bytes = collector.total_bytes
        outcome.artifact = sink.rel
        outcome.artifact_capped = sink.capped
        return outcome
    except BaseException:
        if cgroup is not None:  # cancelled: finish the clean-up in the background
            task = asyncio.ensure_future(cgroup.remove())
            _background.add(task)
            task.add_done_callback(_background.discard)
            cgroup = None
        raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if cgroup is not None:
            await cgroup.remove()
        outcome.duration_s = round(time.monotonic() - started, 3)

