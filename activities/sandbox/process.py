"""Running one program behind the resource fence.

stdin is /dev/null; the child starts a new session, so its process group can
be killed as a whole (SIGKILL to ``-pgid``) on timeout; afterwards pipes get
a short drain wait, so a grandchild that holds the pipe cannot hang us.
rlimits cap address space, file size, CPU seconds and core dumps (per
process); cgroups cap the number of processes and the memory of all of them
together (activities.sandbox.cgroup); the environment is rebuilt from an
allowlist (activities.sandbox.environment); output is bounded (activities.sandbox.output);
bubblewrap is the physical fence (activities.sandbox.bwrap)."""

from __future__ import annotations

import asyncio
import errno
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

from core.paths import within
from activities.sandbox.settings import (
    CPU_MARGIN_S,
    DRAIN_S,
    HEARTBEAT_EVERY_S,
    MAX_PROCS_ENV,
    TOTAL_MEMORY_ENV,
)
from activities.settings import current as current_settings
from activities.sandbox.cgroup import Cgroup, CgroupBase, cgroup_base
from activities.sandbox.environment import SANDBOX_HOME, command_env, resolve_program
from activities.sandbox.git_config import command_git_settings
from activities.sandbox.scratch import scratch_for
from activities.workspace.paths import WorkspaceError, ensure_artifacts_dir
from activities.sandbox.output import ARTIFACT_MAX_BYTES, ArtifactSink, OutputCollector
from activities.sandbox.bwrap import (
    sandbox_argv,
    sandbox_status,
)

# strerror(EROFS): what a program prints when the read-only workspace refuses a write.
EROFS_TEXT = os.strerror(errno.EROFS).encode()


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


def preexec_for(limits: list[tuple[int, tuple[int, int]]], procs_fds: Sequence[int]) -> Callable[[], None]:
    # Runs in the child between fork and exec: keep it tiny (no locks, no imports).
    def preexec() -> None:
        for fd in procs_fds:
            os.write(fd, b"0")  # "0" = the writing process: join the cgroup before exec
        for res, lim in limits:
            resource.setrlimit(res, lim)

    return preexec


class _Watch:
    """Whether ``needle`` occurs anywhere in a byte stream fed in chunks."""

    def __init__(self, needle: bytes) -> None:
        self.needle, self.carry, self.seen = needle, b"", False

    def feed(self, data: bytes) -> None:
        if self.seen:
            return
        keep = len(self.needle) - 1
        self.seen = self.needle in self.carry + data[:keep] or self.needle in data
        self.carry = (self.carry + data[-keep:])[-keep:]


# --- the cgroups ------------------------------------------------------------------


async def _make_cgroup(outcome: "ExecOutcome", max_procs: int, memory: int) -> Cgroup | None:
    """The command's cgroups (process cap, memory limit), recording in
    ``outcome`` which ones it got and why not."""
    bases: dict[str, CgroupBase] = {}
    reasons: dict[str, str] = {}
    for controller, wanted, setting in (("pids", max_procs, MAX_PROCS_ENV), ("memory", memory, TOTAL_MEMORY_ENV)):
        if not wanted:
            reasons[controller] = f"disabled ({setting}=0)"
            continue
        base, reason = await cgroup_base(controller)
        if base is None:
            reasons[controller] = reason
        else:
            bases[controller] = base
    cgroup = None
    if bases:
        try:
            cgroup = Cgroup(bases, max_procs, memory)
        except OSError as exc:
            for controller, base in bases.items():
                reasons[controller] = f"cannot create a cgroup under {base.path}: {exc.strerror or exc}"
            bases = {}
    if "pids" in bases:
        outcome.process_cap = bases["pids"].kind
    if "memory" in bases:
        outcome.memory_cap = bases["memory"].kind
    outcome.process_cap_reason = reasons.get("pids", "")
    outcome.memory_cap_reason = reasons.get("memory", "")
    return cgroup


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
    memory_cap: str = "none"  # "cgroup-v2" | "cgroup-v1" | "none": the whole command's memory limit
    memory_cap_reason: str = ""
    memory_limit_hit: bool = False  # the kernel killed or refused at that limit
    workspace_access: str = "read-write"  # "read-write" | "read-only" (sandbox) | "read-write (no sandbox)"
    write_blocked: bool = False  # read-only workspace, and the output shows a write refused (EROFS)
    part_exit_codes: str = ""  # a plan's parts (activities.bash.executor): "0|1; -; 0"
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


@dataclass(frozen=True)
class ExecRequest:
    """One command to run behind the fences (see ``run``). ``cwd`` is the
    workspace root; ``workdir`` an absolute folder inside it to run in
    (default: the root). ``read_only`` mounts the workspace read-only in the
    sandbox (a command judged read-only). ``programs``: absolute paths of every
    program the command runs (default: ``argv[0]`` resolved on PATH), so that
    the sandbox shows their folders. ``pass_fds`` stay open in the child
    (redirections the executor opened). ``bind_source`` is the host folder
    bound at the workspace's path (default: the workspace itself), e.g. an
    overlay's merged folder; without the sandbox the command runs in it.
    ``wrap`` turns the final argv (bubblewrap's, or the bare command's) into a
    launcher's (e.g. one mounting an overlay in a private mount namespace).
    ``sandbox`` is auto|required|off (None: AGENT_TOOLS_SANDBOX); the limits
    default to their settings (0 = none)."""

    argv: Sequence[str]
    cwd: str | os.PathLike[str]
    timeout_s: float
    sandbox: str | None = None
    memory_bytes: int | None = None
    file_bytes: int | None = None
    max_procs: int | None = None
    total_memory_bytes: int | None = None
    read_only: bool = False
    workdir: str | None = None
    programs: Sequence[str] | None = None
    pass_fds: Sequence[int] = ()
    bind_source: str | None = None
    wrap: Callable[[list[str]], list[str]] | None = None
    git_dirs: Sequence[str] = ()  # folders named by `git -C DIR`: their config is neutralised too
    network: bool = False  # keep the host's network: approved as needing it, on a worker that opted in
    artifact_root: str | os.PathLike[str] | None = None
    call_id: str = "bash"
    artifact_max_bytes: int = ARTIFACT_MAX_BYTES
    drain_s: float = DRAIN_S
    on_heartbeat: Callable[[dict[str, Any]], None] | None = None
    heartbeat_every_s: float = HEARTBEAT_EVERY_S


async def execute(argv: Sequence[str], cwd: str | os.PathLike[str], timeout_s: float, **options: Any) -> ExecOutcome:
    """``run(ExecRequest(argv, cwd, timeout_s, **options))``."""
    return await run(ExecRequest(argv, cwd, timeout_s, **options))


@dataclass(frozen=True)
class _Limits:
    memory_bytes: int
    file_bytes: int
    max_procs: int
    total_memory_bytes: int
    tmp_bytes: int
    shm_bytes: int


def _limits(request: ExecRequest) -> _Limits:
    """The request's limits, the settings in force where it names none."""
    settings = current_settings()

    def given(value: int | None, default: int) -> int:
        return default if value is None else value

    return _Limits(
        memory_bytes=given(request.memory_bytes, settings.bash_memory_bytes),
        file_bytes=given(request.file_bytes, settings.bash_file_bytes),
        max_procs=given(request.max_procs, settings.bash_max_procs),
        total_memory_bytes=given(request.total_memory_bytes, settings.bash_total_memory_bytes),
        tmp_bytes=settings.bash_tmp_bytes,
        shm_bytes=settings.bash_shm_bytes,
    )


def _describe_fences(outcome: ExecOutcome, limits: _Limits, read_only: bool) -> None:
    outcome.limits = {
        "memory_bytes": str(limits.memory_bytes or "unlimited"),
        "total_memory_bytes": str(limits.total_memory_bytes or "unlimited"),
        "file_bytes": str(limits.file_bytes or "unlimited"),
        "max_procs": str(limits.max_procs or "unlimited"),
    }
    if outcome.sandbox == "bwrap":
        outcome.limits.update(tmp_bytes=str(limits.tmp_bytes or "tmpfs default"),
                              shm_bytes=str(limits.shm_bytes or "tmpfs default"))
        outcome.workspace_access = "read-only" if read_only else "read-write"
    else:
        # Without the sandbox nothing can make the workspace read-only: say so.
        outcome.workspace_access = "read-write (no sandbox)"


def _scratch_env(box: str, workspace: str, scratch: str, git_settings: dict[str, str]) -> dict[str, str]:
    """A throwaway HOME and TMPDIR: dotfiles and caches stay out of the workspace."""
    if box == "bwrap":
        return command_env(workspace, SANDBOX_HOME, "/tmp", git_settings)
    os.mkdir(os.path.join(scratch, "home"))
    os.mkdir(os.path.join(scratch, "tmp"))
    return command_env(workspace, os.path.join(scratch, "home"), os.path.join(scratch, "tmp"), git_settings)


async def _git_settings(request: "ExecRequest", workspace: str, host_run_in: str) -> dict[str, str]:
    """The repository's own program keys (a textconv per driver ...) are
    outranked one by one: read them where the command's git will look."""
    host_root = request.bind_source or workspace
    extra = [os.path.realpath(os.path.join(host_run_in, d)) for d in request.git_dirs]
    extra = [d for d in extra if within(d, os.path.realpath(host_root)) and os.path.isdir(d)]
    return await asyncio.to_thread(command_git_settings, [host_run_in, host_root, *extra], host_root)


def _not_found(outcome: ExecOutcome, program: str, path: str) -> ExecOutcome:
    outcome.exit_code = 127
    outcome.spawn_error = (
        f"command not found: {program!r} (not an executable file" + (")" if "/" in program else f" on PATH {path})")
    )
    outcome.output = outcome.spawn_error
    return outcome


def _worker_folders(request: ExecRequest, workspace: str) -> tuple[str, ...]:
    """What the worker keeps in the workspace (full outputs, offloaded turn
    results) stays read-only to a command that writes the workspace directly
    (no capture: a captured view shows it read-only already)."""
    if request.read_only or request.wrap is not None or request.bind_source is not None:
        return ()
    try:
        return (ensure_artifacts_dir(workspace),)
    except (WorkspaceError, OSError):
        return ()  # a link or a file there: the worker writes nothing into it either


def _full_argv(request: ExecRequest, bwrap: str | None, program: str, workspace: str, run_in: str,
               limits: _Limits, scratch_tmp: str | None = None) -> list[str]:
    """What is started: the command inside bubblewrap (when it works here),
    then inside the request's launcher."""
    if bwrap:
        full = sandbox_argv(
            bwrap, request.argv, workspace=workspace, bind_source=request.bind_source, writable=not request.read_only,
            programs=[p for p in (os.path.abspath(program), *(request.programs or ()))
                      if not (request.bind_source and within(p, request.bind_source))], cwd=run_in,
            tmp_bytes=limits.tmp_bytes, shm_bytes=limits.shm_bytes,
            tmp_source=scratch_tmp, network=request.network, read_only_inside=_worker_folders(request, workspace),
        )
    else:
        full = list(request.argv)
    return request.wrap(full) if request.wrap is not None else full


async def _wait(request: ExecRequest, proto: "_Protocol", outcome: ExecOutcome, collector: OutputCollector,
                started: float, kill_everything: Callable[[], None]) -> None:
    """Until it exits or times out (heartbeating), then kill what is left and
    drain the pipe for a short while."""
    deadline = time.monotonic() + request.timeout_s  # from the spawn: set-up time is not the command's
    exit_wait = asyncio.ensure_future(proto.exited.wait())
    try:
        while not proto.exited.is_set():
            now = time.monotonic()
            if now >= deadline:
                outcome.timed_out = True
                break
            await asyncio.wait({exit_wait}, timeout=min(request.heartbeat_every_s, deadline - now))
            if request.on_heartbeat is not None and not proto.exited.is_set():
                request.on_heartbeat(
                    {"elapsed_s": round(time.monotonic() - started, 1), "output_bytes": collector.total_bytes}
                )
    finally:
        exit_wait.cancel()
    # Timed out: kill it all. Finished: kill what it left behind (a
    # background process must not outlive the call or hold the pipe).
    kill_everything()
    drain_deadline = time.monotonic() + request.drain_s
    try:
        await asyncio.wait_for(proto.exited.wait(), request.drain_s)
        await asyncio.wait_for(proto.eof.wait(), max(0.0, drain_deadline - time.monotonic()))
    except asyncio.TimeoutError:
        outcome.drain_timed_out = True


def _collected(outcome: ExecOutcome, collector: OutputCollector, sink: ArtifactSink) -> None:
    collector.finish()
    sink.finish(collector.truncated)
    outcome.output = collector.render(sink.note())
    outcome.total_lines = collector.total_lines
    outcome.dropped_lines = collector.dropped_lines
    outcome.lines_cut = collector.lines_cut
    outcome.total_bytes = collector.total_bytes
    outcome.artifact = sink.rel
    outcome.artifact_capped = sink.capped


async def run(request: ExecRequest) -> ExecOutcome:
    """Run ``request.argv`` (no shell) behind the resource and physical fences.
    Raises SandboxUnavailable (sandbox required but not working) and
    BadSetting; a command that cannot start is an outcome with spawn_error.
    Cancelling the awaiting task kills everything the command started."""
    argv = request.argv
    if not argv:
        raise ValueError("empty argv")
    started = time.monotonic()
    workspace = str(Path(request.cwd).resolve())
    run_in = request.workdir or workspace  # where the command runs, as it sees it
    # ...and that folder on the host: under bind_source when the workspace is shown through another folder.
    host_run_in = (run_in if not request.bind_source
                   else os.path.join(request.bind_source, os.path.relpath(run_in, workspace)))
    limits = _limits(request)
    box, box_reason, bwrap = await sandbox_status(request.sandbox)

    outcome = ExecOutcome(exit_code=None, output="", duration_s=0.0, sandbox=box, sandbox_reason=box_reason)
    _describe_fences(outcome, limits, request.read_only)
    git_settings = await _git_settings(request, workspace, host_run_in)
    scratch = tempfile.mkdtemp(prefix="agent-bash-")
    env = _scratch_env(box, workspace, scratch, git_settings)

    cgroup: Cgroup | None = None
    try:
        cgroup = await _make_cgroup(outcome, limits.max_procs, limits.total_memory_bytes)

        program = resolve_program(argv[0], env["PATH"], host_run_in)
        if program is None:
            return _not_found(outcome, argv[0], env["PATH"])

        collector = OutputCollector()
        sink = ArtifactSink(
            str(request.artifact_root) if request.artifact_root is not None else None,
            request.call_id, request.artifact_max_bytes,
        )

        erofs = _Watch(EROFS_TEXT)

        def on_data(data: bytes) -> None:
            collector.feed(data)
            sink.write(data)
            erofs.feed(data)

        scratch_tmp = await asyncio.to_thread(scratch_for, workspace) if bwrap else None
        full_argv = _full_argv(request, bwrap, program, workspace, run_in, limits, scratch_tmp)
        rlim = rlimits(limits.memory_bytes, limits.file_bytes, int(request.timeout_s) + CPU_MARGIN_S)
        loop = asyncio.get_running_loop()
        try:
            transport, proto = await loop.subprocess_exec(
                lambda: _Protocol(on_data),
                *full_argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                cwd=host_run_in,
                env=env,
                start_new_session=True,
                close_fds=True,
                pass_fds=tuple(request.pass_fds),
                preexec_fn=preexec_for(rlim, cgroup.procs_fds if cgroup else ()),
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
            await _wait(request, proto, outcome, collector, started, kill_everything)
        except BaseException:  # cancelled (activity cancel, worker shutdown): leave nothing behind
            kill_everything()
            transport.close()
            raise
        finally:
            transport.close()

        outcome.exit_code = transport.get_returncode()
        if cgroup is not None:
            outcome.memory_limit_hit = cgroup.memory_limit_hit()
        if request.read_only and outcome.workspace_access == "read-only":
            outcome.write_blocked = erofs.seen
        _collected(outcome, collector, sink)
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

