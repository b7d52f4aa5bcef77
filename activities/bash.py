"""The bash tool: running one validated command behind the resource fence and
the physical fence (DESIGN.md §4).

``run_bash`` is the tool function (activity type ``bash``). It asks the
fail-closed validator first; a rejected command never runs. Otherwise it
executes the validator's ``argv`` directly (execve, no shell) through
``execute``, which tests can also call with any argv to exercise the fences
on their own:

- **Resource fence.** stdin is /dev/null; the child starts a new session, so
  its process group can be killed as a whole (SIGKILL to ``-pgid``) on
  timeout; afterwards pipes get a short drain wait, so a grandchild that
  holds the pipe cannot hang us. rlimits cap address space, file size, CPU
  seconds and core dumps. A process cap that also binds root (RLIMIT_NPROC
  does not) comes from a ``pids`` cgroup, v2 or v1, created per command when
  the cgroup filesystem is writable; it doubles as a complete kill list for
  processes that left the process group (``setsid``). The environment is
  rebuilt from an allowlist, so no host secret reaches the command. Output is
  read in chunks into a bounded head + tail; everything is streamed to an
  artifact file (capped) when something had to be dropped.
- **Physical fence.** Where bubblewrap works, the command runs inside it with
  all capabilities dropped, the root read-only, only the workspace writable,
  a private /tmp, no network and its own PID namespace (so killing bwrap
  kills everything the command started). ``AGENT_TOOLS_SANDBOX`` decides:
  ``auto`` (default) uses it where it works, ``required`` refuses to run
  without it, ``off`` never uses it. ``AGENT_TOOLS_BWRAP`` names the binary.

Other settings, read at call time: ``AGENT_TOOLS_BASH_MEMORY_MB`` (address
space, default 4096, 0 = unlimited), ``AGENT_TOOLS_BASH_FILE_MB`` (largest
file a command may write, default 1024), ``AGENT_TOOLS_BASH_MAX_PROCS``
(processes + threads, default 512, 0 = no cap).
"""

from __future__ import annotations

import asyncio
import fcntl
import logging
import os
import resource
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from temporalio import activity

from activities.base import tool_activity
from activities.workspace import ARTIFACTS_DIR, artifacts_path, workspace_root
from core.contracts import ToolRequest, ToolResult
from core.shell_validator import validate_command
from core.tool_specs import BASH, MAX_BASH_TIMEOUT_S, BashArgs

log = logging.getLogger(__name__)

# --- settings ---------------------------------------------------------------

SANDBOX_ENV = "AGENT_TOOLS_SANDBOX"
BWRAP_ENV = "AGENT_TOOLS_BWRAP"
MEMORY_ENV = "AGENT_TOOLS_BASH_MEMORY_MB"
FILE_SIZE_ENV = "AGENT_TOOLS_BASH_FILE_MB"
MAX_PROCS_ENV = "AGENT_TOOLS_BASH_MAX_PROCS"

DEFAULT_MEMORY_BYTES = 4 << 30
DEFAULT_FILE_BYTES = 1 << 30
DEFAULT_MAX_PROCS = 512
CPU_MARGIN_S = 15  # RLIMIT_CPU = timeout + margin: the wall-clock timeout normally fires first

DRAIN_S = 2.0  # after the process exits or is killed, wait at most this long for EOF
HEARTBEAT_EVERY_S = 2.0

# --- output bounds ----------------------------------------------------------

HEAD_LINES = 100
TAIL_LINES = 2000
LINE_MAX_BYTES = 2000
HEAD_MAX_BYTES = 8_000
TAIL_MAX_BYTES = 30_000  # head + tail + notices stay under ~40 kB whatever is printed
ARTIFACT_MAX_BYTES = 64 << 20
SPOOL_BYTES = 1 << 20  # output kept in memory before the artifact file is opened

SANDBOX_HOME = "/tmp/home"  # HOME inside the sandbox (its /tmp is a private tmpfs)
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class SandboxUnavailable(Exception):
    """The sandbox is required (AGENT_TOOLS_SANDBOX=required) but does not work here."""


class BadSetting(Exception):
    """A setting (environment variable) has a value we cannot use."""


def _int_setting(name: str, default: int, scale: int = 1) -> int:
    raw = os.environ.get(name, "").strip()
    if raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise BadSetting(f"{name}={raw!r} is not a whole number") from None
    if value < 0:
        raise BadSetting(f"{name}={raw!r} must be 0 (no limit) or more")
    return value * scale


def sandbox_mode(value: str | None = None) -> str:
    mode = (value if value is not None else os.environ.get(SANDBOX_ENV, "auto")).strip().lower() or "auto"
    if mode not in ("auto", "required", "off"):
        # Fail closed: a typo must not silently turn the sandbox off.
        raise BadSetting(f"{SANDBOX_ENV}={mode!r} is not one of auto, required, off")
    return mode


# --- the environment ----------------------------------------------------------


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def command_path(workspace: str, worker_path: str | None = None) -> str:
    """The worker's PATH without entries a command could plant programs in:
    relative entries ("" and "." mean the cwd, i.e. the workspace) and folders
    inside the workspace. Otherwise a read-only-looking ``ls`` could run a
    script the model wrote."""
    raw = os.environ.get("PATH", DEFAULT_PATH) if worker_path is None else worker_path
    root = os.path.realpath(workspace)
    kept: list[str] = []
    for entry in raw.split(os.pathsep):
        if not entry or not os.path.isabs(entry):
            continue
        if _inside(os.path.realpath(entry), root) or entry in kept:
            continue
        kept.append(entry)
    return os.pathsep.join(kept) or DEFAULT_PATH


def command_env(workspace: str, home: str, tmpdir: str) -> dict[str, str]:
    """The whole environment a command gets: an allowlist, nothing inherited
    except a filtered PATH (API keys, tokens and the like never reach it)."""
    return {
        "PATH": command_path(workspace),
        "HOME": home,
        "TMPDIR": tmpdir,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TERM": "dumb",
        "PAGER": "cat",
        "GIT_PAGER": "cat",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_EDITOR": "true",  # `git commit` without -m aborts instead of waiting for an editor
        "CI": "1",
        "NO_COLOR": "1",
        "PIP_NO_INPUT": "1",
        "DEBIAN_FRONTEND": "noninteractive",
        # No __pycache__ litter in the workspace; prints reach us at once and in
        # order with stderr (both go to one pipe).
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        # A repository's own .git/config can name programs that even a
        # read-only `git status` would run (fsmonitor, hooks, pagers, ext::
        # transports). Config from the environment outranks the repository's.
        **_GIT_SAFE_CONFIG,
    }


_GIT_SAFE_SETTINGS = {
    "core.fsmonitor": "false",
    "core.hooksPath": "/dev/null",
    "core.pager": "cat",
    "protocol.ext.allow": "never",
    "credential.helper": "",
}
_GIT_SAFE_CONFIG = {"GIT_CONFIG_COUNT": str(len(_GIT_SAFE_SETTINGS))}
for _i, (_key, _value) in enumerate(_GIT_SAFE_SETTINGS.items()):
    _GIT_SAFE_CONFIG[f"GIT_CONFIG_KEY_{_i}"] = _key
    _GIT_SAFE_CONFIG[f"GIT_CONFIG_VALUE_{_i}"] = _value


def resolve_program(program: str, path: str, cwd: str) -> str | None:
    if "/" in program:
        candidate = program if os.path.isabs(program) else os.path.join(cwd, program)
        return candidate if os.path.isfile(candidate) and os.access(candidate, os.X_OK) else None
    return shutil.which(program, path=path)


# --- the physical fence: bubblewrap -----------------------------------------------

_bwrap_checked: dict[str, tuple[bool, str]] = {}
_warned: set[str] = set()


def bwrap_path() -> str | None:
    configured = os.environ.get(BWRAP_ENV, "").strip()
    if configured:
        return configured
    return shutil.which("bwrap")


# Host places that hold credentials or control sockets. The root filesystem is
# bound read-only, but reading is already too much for these: a command the
# validator allows (cat, grep) must not hand the model an SSH key or a cloud
# token, and a Unix socket such as /run/docker.sock works without a network.
_SECRET_FILES = ("/etc/shadow", "/etc/gshadow", "/etc/sudoers")
_SECRET_DIRS = ("/run", "/var/run/secrets", "/etc/sudoers.d")
_SECRET_HOME_ENTRIES = (
    ".ssh", ".aws", ".azure", ".config/gcloud", ".docker", ".kube", ".gnupg",
    ".netrc", ".git-credentials", ".pypirc", ".npmrc", ".config/gh",
)
HIDE_ENV = "AGENT_TOOLS_SANDBOX_HIDE"  # extra paths to hide, ':'-separated


def _hidden_paths(workspace: str) -> list[str]:
    """The secret-bearing paths that exist on this host, minus any that
    contain the workspace (hiding it would hide the work itself)."""
    homes = ["/root"]
    try:
        homes += [os.path.join("/home", d) for d in sorted(os.listdir("/home"))]
    except OSError:
        pass
    candidates = [*_SECRET_FILES, *_SECRET_DIRS]
    candidates += [os.path.join(h, e) for h in homes for e in _SECRET_HOME_ENTRIES]
    candidates += [p for p in os.environ.get(HIDE_ENV, "").split(":") if p.startswith("/")]
    ws = os.path.realpath(workspace).rstrip("/") + "/"
    found = []
    for path in candidates:
        real = os.path.realpath(path)
        if os.path.lexists(path) and not ws.startswith(real.rstrip("/") + "/"):
            found.append(real)
    return list(dict.fromkeys(found))


def _hide_args(workspace: str) -> list[str]:
    args: list[str] = []
    for path in _hidden_paths(workspace):
        if os.path.isdir(path):
            args += ["--tmpfs", path]
        else:
            args += ["--ro-bind", "/dev/null", path]
    return args


def _tmp_program_binds(workspace: str, argv: Sequence[str], path_env: str) -> list[str]:
    """The sandbox gets a private, empty /tmp. A program that lives under the
    host's /tmp (a virtualenv in a checkout under /tmp, say) would vanish, so
    bind its folder back read-only: the whole virtualenv when it is one."""
    candidates = [os.path.dirname(argv[0])] if argv and os.path.isabs(argv[0]) else []
    candidates += [p for p in path_env.split(os.pathsep) if os.path.isabs(p)]
    ws = os.path.realpath(workspace).rstrip("/") + "/"
    binds: list[str] = []
    for folder in candidates:
        if not (folder == "/tmp" or folder.startswith("/tmp/")) or not os.path.isdir(folder):
            continue
        root = folder
        parent = os.path.dirname(folder)
        if os.path.isfile(os.path.join(parent, "pyvenv.cfg")):
            root = parent  # bin/ of a venv: the venv needs its pyvenv.cfg and lib/
        if (root.rstrip("/") + "/").startswith(ws) or ws.startswith(root.rstrip("/") + "/"):
            continue  # the workspace bind covers it (or it would cover the workspace)
        if root not in binds:
            binds.append(root)
    return [arg for root in binds for arg in ("--ro-bind", root, root)]


def bwrap_argv(bwrap: str, workspace: str, argv: Sequence[str], path_env: str = "") -> list[str]:
    return [
        bwrap,
        "--die-with-parent",  # worker (or bwrap) dies -> the whole sandbox dies
        "--new-session",
        "--unshare-pid",  # its own PID namespace: bwrap's death kills every process inside
        "--unshare-net",  # only a private loopback: no network at all
        "--unshare-ipc",
        "--unshare-uts",
        "--cap-drop", "ALL",  # as root, bwrap would otherwise keep capabilities
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        "--tmpfs", "/dev/shm",
        "--proc", "/proc",
        "--tmpfs", "/tmp",
        *_hide_args(workspace),
        *_tmp_program_binds(workspace, argv, path_env),
        "--dir", SANDBOX_HOME,
        "--bind", workspace, workspace,  # after --tmpfs /tmp: a workspace under /tmp stays visible
        "--chdir", workspace,
        "--",
        *argv,
    ]


def _probe_bwrap(bwrap: str) -> tuple[bool, str]:
    if not (os.path.isfile(bwrap) and os.access(bwrap, os.X_OK)):
        return False, f"bubblewrap binary {bwrap!r} not found or not executable"
    true = shutil.which("true") or "/bin/true"
    probe_ws = tempfile.mkdtemp(prefix="agent-bwrap-probe-")
    try:
        proc = subprocess.run(
            bwrap_argv(bwrap, probe_ws, [true]),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=20,
            env={"PATH": DEFAULT_PATH},
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return False, f"bubblewrap could not run: {exc}"
    finally:
        shutil.rmtree(probe_ws, ignore_errors=True)
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        return False, f"bubblewrap does not work here (exit {proc.returncode}: {err[-1] if err else 'no message'})"
    return True, ""


async def sandbox_status(mode: str | None = None) -> tuple[str, str, str | None]:
    """(sandbox, reason, bwrap path): sandbox is "bwrap" or "none". Raises
    SandboxUnavailable when the sandbox is required and does not work."""
    mode = sandbox_mode(mode)
    if mode == "off":
        return "none", f"disabled ({SANDBOX_ENV}=off)", None
    bwrap = bwrap_path()
    if bwrap is None:
        ok, reason = False, "bubblewrap (bwrap) is not installed"
    else:
        if bwrap not in _bwrap_checked:
            _bwrap_checked[bwrap] = await asyncio.to_thread(_probe_bwrap, bwrap)
        ok, reason = _bwrap_checked[bwrap]
    if ok:
        return "bwrap", "", bwrap
    if mode == "required":
        raise SandboxUnavailable(reason)
    if reason not in _warned:
        _warned.add(reason)
        log.warning("bash runs WITHOUT an OS sandbox: %s", reason)
    return "none", reason, None


# --- the process cap: a pids cgroup --------------------------------------------

@dataclass(frozen=True)
class _CgroupBase:
    kind: str  # "cgroup-v2" | "cgroup-v1"
    path: Path


_cgroup_checked: list[tuple[_CgroupBase | None, str]] = []


def _own_cgroup_paths() -> tuple[str | None, str | None]:
    """(v2 path, v1 pids path) of this process."""
    v2 = v1 = None
    with open("/proc/self/cgroup") as f:
        for line in f:
            hier, _, rest = line.rstrip("\n").partition(":")
            controllers, _, path = rest.partition(":")
            if hier == "0" and controllers == "":
                v2 = path
            elif "pids" in controllers.split(","):
                v1 = path
    return v2, v1


def _cgroup_mounts() -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """([(mount root, mount point)] of cgroup2, [...] of v1 pids hierarchies)."""
    v2: list[tuple[str, str]] = []
    v1: list[tuple[str, str]] = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fields, rfields = left.split(), right.split()
            if len(fields) < 5 or len(rfields) < 3:
                continue
            root, point, fstype, opts = fields[3], fields[4], rfields[0], rfields[2]
            if fstype == "cgroup2":
                v2.append((root, point))
            elif fstype == "cgroup" and "pids" in opts.split(","):
                v1.append((root, point))
    return v2, v1


def _join(point: str, mount_root: str, own: str) -> Path | None:
    rel = os.path.relpath(own, mount_root)
    if rel.startswith(".."):
        return None
    return Path(os.path.normpath(os.path.join(point, rel)))


def _try_cgroup_child(base: _CgroupBase) -> str:
    probe = base.path / f"agent-bash-probe-{os.getpid()}-{secrets.token_hex(3)}"
    try:
        probe.mkdir()
    except OSError as exc:
        return f"cannot create a cgroup under {base.path}: {exc.strerror or exc}"
    try:
        (probe / "pids.max").write_text("1\n")
        return ""
    except OSError as exc:
        return f"cannot set pids.max under {base.path}: {exc.strerror or exc}"
    finally:
        try:
            probe.rmdir()
        except OSError:
            pass


def _find_cgroup_base() -> tuple[_CgroupBase | None, str]:
    try:
        own_v2, own_v1 = _own_cgroup_paths()
        mounts_v2, mounts_v1 = _cgroup_mounts()
    except OSError as exc:
        return None, f"cannot read cgroup information: {exc}"
    reasons: list[str] = []
    if own_v2 is not None:
        for root, point in mounts_v2:
            path = _join(point, root, own_v2)
            if path is None:
                continue
            try:
                controllers = (path / "cgroup.controllers").read_text().split()
                enabled = (path / "cgroup.subtree_control").read_text().split()
            except OSError:
                continue
            if "pids" not in controllers:
                reasons.append(f"cgroup v2 at {point}: no pids controller")
                continue
            if "pids" not in enabled:
                try:
                    (path / "cgroup.subtree_control").write_text("+pids\n")
                except OSError as exc:
                    reasons.append(f"cgroup v2 at {path}: cannot enable pids ({exc.strerror or exc})")
                    continue
            base = _CgroupBase("cgroup-v2", path)
            problem = _try_cgroup_child(base)
            if not problem:
                return base, ""
            reasons.append(problem)
    if own_v1 is not None:
        for root, point in mounts_v1:
            path = _join(point, root, own_v1)
            if path is None:
                continue
            base = _CgroupBase("cgroup-v1", path)
            problem = _try_cgroup_child(base)
            if not problem:
                return base, ""
            reasons.append(problem)
    return None, "; ".join(reasons) or "no writable pids cgroup found"


async def _cgroup_base() -> tuple[_CgroupBase | None, str]:
    if not _cgroup_checked:
        found = await asyncio.to_thread(_find_cgroup_base)
        if found[0] is None:
            log.warning("bash has no process cap (no usable pids cgroup): %s", found[1])
        _cgroup_checked.append(found)
    return _cgroup_checked[0]


class _Cgroup:
    """One pids cgroup per command: the process cap and the complete kill list."""

    def __init__(self, base: _CgroupBase, max_procs: int) -> None:
        self.kind = base.kind
        self.path = base.path / f"agent-bash-{os.getpid()}-{secrets.token_hex(4)}"
        self.path.mkdir()
        try:
            (self.path / "pids.max").write_text(f"{max_procs}\n")
            self.procs_fd = os.open(self.path / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC)
        except OSError:
            self._rmdir()
            raise

    def pids(self) -> list[int]:
        try:
            text = (self.path / "cgroup.procs").read_text()
        except OSError:
            return []
        return [int(p) for p in text.split()]

    def kill_all(self) -> None:
        kill_file = self.path / "cgroup.kill"  # cgroup v2, Linux >= 5.14
        if self.kind == "cgroup-v2" and kill_file.exists():
            try:
                kill_file.write_text("1\n")
                return
            except OSError:
                pass
        # v1: a process may fork between the read and the kill; repeat (the
        # pids cap bounds how many there can be).
        for _ in range(50):
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def _rmdir(self) -> bool:
        try:
            self.path.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError:
            return False

    async def remove(self) -> None:
        if self.procs_fd >= 0:
            os.close(self.procs_fd)
            self.procs_fd = -1
        for _ in range(100):  # killed processes need a moment to leave
            self.kill_all()
            if self._rmdir():
                return
            await asyncio.sleep(0.05)
        log.warning("could not remove cgroup %s (still busy)", self.path)


# --- rlimits -----------------------------------------------------------------------


def _rlimits(memory_bytes: int, file_bytes: int, cpu_s: int) -> list[tuple[int, tuple[int, int]]]:
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


def _preexec(limits: list[tuple[int, tuple[int, int]]], procs_fd: int | None) -> Callable[[], None]:
    # Runs in the child between fork and exec: keep it tiny (no locks, no imports).
    def preexec() -> None:
        if procs_fd is not None:
            os.write(procs_fd, b"0")  # "0" = the writing process: join the cgroup before exec
        for res, lim in limits:
            resource.setrlimit(res, lim)

    return preexec


# --- bounded output --------------------------------------------------------------


def _cut(line: bytes, limit: int) -> bytes:
    """At most ``limit`` bytes, not splitting a UTF-8 sequence."""
    if len(line) <= limit:
        return line
    cut = limit
    while cut > 0 and limit - cut < 3 and (line[cut] & 0xC0) == 0x80:
        cut -= 1
    return line[:cut]


class OutputCollector:
    """Keeps the first lines and the last lines of a byte stream in bounded
    memory, however much flows through. Lines are cut at ``line_max`` bytes."""

    def __init__(
        self,
        head_lines: int = HEAD_LINES,
        tail_lines: int = TAIL_LINES,
        line_max: int = LINE_MAX_BYTES,
        head_max_bytes: int = HEAD_MAX_BYTES,
        tail_max_bytes: int = TAIL_MAX_BYTES,
    ) -> None:
        self.head_lines, self.tail_lines, self.line_max = head_lines, tail_lines, line_max
        self.head_max_bytes, self.tail_max_bytes = head_max_bytes, tail_max_bytes
        self.head: list[bytes] = []
        self.head_bytes = 0
        self.head_full = head_lines == 0
        self.tail: deque[bytes] = deque()
        self.tail_bytes = 0
        self.partial = b""  # the current unfinished line (its first line_max bytes)
        self.partial_len = 0  # its real length
        self.total_bytes = 0
        self.total_lines = 0
        self.lines_cut = 0

    def _cut_line(self, line: bytes, full_len: int) -> bytes:
        self.lines_cut += 1
        kept = _cut(line, self.line_max)
        return kept + b" [... line cut: %d more bytes]" % (full_len - len(kept))

    def _trim_tail(self) -> None:
        while len(self.tail) > self.tail_lines or (self.tail_bytes > self.tail_max_bytes and len(self.tail) > 1):
            self.tail_bytes -= len(self.tail.popleft()) + 1

    def _tail_bulk(self, lines: list[bytes]) -> None:
        """Complete lines once the head is full: same result as _line one by
        one (the tail is the longest suffix within both bounds), at C speed."""
        if not lines:
            return
        self.total_lines += len(lines)
        if max(map(len, lines)) > self.line_max:
            lines = [self._cut_line(x, len(x)) if len(x) > self.line_max else x for x in lines]
        if len(lines) >= self.tail_lines:
            lines = lines[-self.tail_lines:]
            self.tail.clear()
            self.tail_bytes = 0
        self.tail.extend(lines)
        self.tail_bytes += sum(map(len, lines)) + len(lines)
        self._trim_tail()

    def _line(self, line: bytes, full_len: int) -> None:
        self.total_lines += 1
        if full_len > self.line_max:
            line = self._cut_line(line, full_len)
        if not self.head_full:
            if len(self.head) < self.head_lines and self.head_bytes + len(line) <= self.head_max_bytes:
                self.head.append(line)
                self.head_bytes += len(line) + 1
                return
            self.head_full = True
        self.tail.append(line)
        self.tail_bytes += len(line) + 1
        self._trim_tail()

    def _extend_partial(self, data: bytes) -> None:
        if not data:
            return
        room = self.line_max + 4 - len(self.partial)
        if room > 0:
            self.partial += data[:room]
        self.partial_len += len(data)

    def feed(self, data: bytes) -> None:
        if not data:
            return
        self.total_bytes += len(data)
        start = 0
        if self.partial_len:
            nl = data.find(b"\n")
            if nl < 0:
                self._extend_partial(data)
                return
            room = max(0, self.line_max + 4 - len(self.partial))
            line, full_len = self.partial + data[:min(nl, room)], self.partial_len + nl
            self.partial, self.partial_len = b"", 0
            self._line(line, full_len)
            start = nl + 1
        while not self.head_full:
            nl = data.find(b"\n", start)
            if nl < 0:
                break
            self._line(data[start:nl], nl - start)
            start = nl + 1
        rest = data[start:] if start else data
        n = rest.count(b"\n")
        if n == 0:
            self._extend_partial(rest)
            return
        if n > self.tail_lines:
            # Only the last tail_lines complete lines can survive: skip the others
            # without building them.
            pieces = rest.rsplit(b"\n", self.tail_lines + 1)
            self.total_lines += n - self.tail_lines
            lines = pieces[1:-1]
        else:
            pieces = rest.split(b"\n")
            lines = pieces[:-1]
        self._tail_bulk(lines)
        self._extend_partial(pieces[-1])

    def finish(self) -> None:
        if self.partial_len:
            line, full_len = self.partial, self.partial_len
            self.partial, self.partial_len = b"", 0
            self._line(line, full_len)

    @property
    def dropped_lines(self) -> int:
        return self.total_lines - len(self.head) - len(self.tail)

    @property
    def truncated(self) -> bool:
        return self.dropped_lines > 0 or self.lines_cut > 0

    def render(self, saved_note: str) -> str:
        """The kept text; ``saved_note`` says where the full output is."""
        head = b"\n".join(self.head).decode("utf-8", "replace")
        tail = b"\n".join(self.tail).decode("utf-8", "replace")
        if self.dropped_lines:
            notice = (
                f"[... {self.dropped_lines} lines not shown (the first {len(self.head)} and the last "
                f"{len(self.tail)} of {self.total_lines} lines, {self.total_bytes} bytes, are shown); "
                f"{saved_note} ...]"
            )
            return "\n".join(part for part in (head, notice, tail) if part)
        text = "\n".join(part for part in (head, tail) if part)
        if self.lines_cut:
            text += f"\n[{self.lines_cut} long lines were cut; {saved_note}]"
        return text


class _ArtifactSink:
    """Streams the full output to a file under the artifacts folder, opened
    only once the output outgrows a small in-memory spool."""

    def __init__(self, root: str | None, call_id: str, cap: int, spool: int = SPOOL_BYTES) -> None:
        self.root, self.call_id, self.cap, self.spool_max = root, call_id, cap, spool
        self.spool = bytearray()
        self.file: Any = None
        self.path: Path | None = None
        self.rel: str | None = None
        self.written = 0
        self.capped = False
        self.error: str | None = None

    def _open(self) -> bool:
        if self.root is None or self.error is not None:
            return False
        try:
            # The command may have replaced the folder with a symlink (the
            # workspace is writable inside the sandbox; we are not sandboxed):
            # never write through one.
            if (Path(self.root) / ARTIFACTS_DIR).is_symlink():
                raise OSError(f"{ARTIFACTS_DIR} is a symbolic link; not writing through it")
            path, rel = artifacts_path(self.root, self.call_id, "bash")
            dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
            try:
                fd = os.open(
                    path.name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644,
                    dir_fd=dir_fd,
                )
            finally:
                os.close(dir_fd)
            self.file = os.fdopen(fd, "wb")
            self.path, self.rel = path, rel
            return True
        except Exception as exc:  # noqa: BLE001 - a failed save must not fail the command
            self.error = str(exc)
            self.rel = None
            return False

    def _write(self, data: bytes | bytearray) -> None:
        room = self.cap - self.written
        if len(data) > room:
            data = data[:room]
            self.capped = True
        if not data:
            return
        try:
            self.file.write(data)
            self.written += len(data)
        except OSError as exc:
            self.error = f"writing {self.rel} failed: {exc.strerror or exc}"
            self.file.close()
            self.file = None

    def write(self, data: bytes) -> None:
        if self.capped or self.error is not None or self.root is None:
            return
        if self.file is None:
            if len(self.spool) + len(data) <= self.spool_max:
                self.spool += data
                return
            if not self._open():
                return
            self._write(self.spool)
            self.spool = bytearray()
            if self.file is None:
                return
        self._write(data)

    def finish(self, needed: bool) -> None:
        if needed and self.file is None and self.rel is None and self._open():
            self._write(self.spool)
        self.spool = bytearray()
        if self.file is not None:
            self.file.close()
            self.file = None
        if not needed and self.path is not None:
            self.path.unlink(missing_ok=True)
            self.path, self.rel = None, None

    def note(self) -> str:
        if self.rel is None:
            if self.error:
                return f"the full output could not be saved ({self.error})"
            return "the full output was not saved"
        note = f"full output saved to {self.rel} (read it with read_file and offset/limit, or grep it)"
        if self.capped:
            note += f"; that copy stops at the first {self.cap >> 20} MiB ({self.cap} bytes)"
        if self.error:
            note += f"; saving stopped early: {self.error}"
        return note


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
    memory_bytes = _int_setting(MEMORY_ENV, DEFAULT_MEMORY_BYTES, 1 << 20) if memory_bytes is None else memory_bytes
    file_bytes = _int_setting(FILE_SIZE_ENV, DEFAULT_FILE_BYTES, 1 << 20) if file_bytes is None else file_bytes
    max_procs = _int_setting(MAX_PROCS_ENV, DEFAULT_MAX_PROCS) if max_procs is None else max_procs
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

    cgroup: _Cgroup | None = None
    try:
        if max_procs:
            base, cap_reason = await _cgroup_base()
            if base is not None:
                try:
                    cgroup = _Cgroup(base, max_procs)
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
        sink = _ArtifactSink(
            str(artifact_root) if artifact_root is not None else None, call_id, artifact_max_bytes
        )

        def on_data(data: bytes) -> None:
            collector.feed(data)
            sink.write(data)

        full_argv = bwrap_argv(bwrap, workspace, argv, env["PATH"]) if bwrap else list(argv)
        limits = _rlimits(memory_bytes, file_bytes, int(timeout_s) + CPU_MARGIN_S)
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
                preexec_fn=_preexec(limits, cgroup.procs_fd if cgroup else None),
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


# --- the tool -----------------------------------------------------------------------


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


def _timeout_message(timeout_s: int) -> str:
    return (
        f"[Command killed after {timeout_s} s: it did not finish within timeout_seconds={timeout_s}. "
        "It may be interactive (waiting for input that will never come: stdin is closed) or long-running. "
        "Use a non-interactive flag (e.g. --yes, -y, --no-input, --batch) or, if it just needs longer, "
        f"call again with a larger timeout_seconds (at most {MAX_BASH_TIMEOUT_S}).]"
    )


async def run_bash(request: ToolRequest, args: BashArgs) -> ToolResult:
    verdict = validate_command(args.command)
    meta: dict[str, str] = {"verdict": verdict.verdict}
    if verdict.program:
        meta["program"] = verdict.program
    if verdict.verdict == "reject":
        text = f"Command rejected, nothing was run: {verdict.reason}"
        if verdict.hint:
            text += f"\nHint: {verdict.hint}"
        return ToolResult.error(request.call_id, BASH, text, metadata=meta)
    argv = tuple(getattr(verdict, "argv", ()) or ())
    if not argv:
        return ToolResult.error(
            request.call_id, BASH, "Command rejected, nothing was run: the validator found no program to run",
            metadata=meta,
        )
    root = str(workspace_root(request.workspace_root))
    try:
        outcome = await execute(
            argv,
            root,
            args.timeout_seconds,
            artifact_root=root,
            call_id=request.call_id,
            on_heartbeat=_heartbeat,
        )
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
    )
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
