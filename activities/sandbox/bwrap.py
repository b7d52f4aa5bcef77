"""The physical fence: bubblewrap.

Where bubblewrap works, a command runs inside it with all capabilities
dropped, seeing only the system folders, its programs' folders and the
workspace (read-only for a command judged read-only), a private bounded /tmp
and /dev/shm, no network and its own PID namespace (so killing bwrap kills everything the
command started). ``AGENT_TOOLS_SANDBOX`` decides: ``auto`` (default) uses it
where it works, ``required`` refuses to run without it, ``off`` never uses it.
``AGENT_TOOLS_BWRAP`` names the binary."""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import subprocess
import tempfile
from typing import Sequence

from core.paths import within
from activities.sandbox.settings import SANDBOX_ENV, sandbox_mode
from activities.settings import current
from core.config import ToolSettings
from activities.sandbox.environment import DEFAULT_PATH, SANDBOX_HOME
from activities.txn.state import state_base
from activities.workspace.root import WorkspaceError

log = logging.getLogger(__name__)


class SandboxUnavailable(Exception):
    """The sandbox is required (AGENT_TOOLS_SANDBOX=required) but does not work here."""


_bwrap_checked: dict[str, tuple[bool, str]] = {}
_warned: set[str] = set()


def bwrap_path() -> str | None:
    configured = current().bwrap
    if configured:
        return configured
    return shutil.which("bwrap")


# --- what the sandbox shows: an allowlist -----------------------------------------
#
# The sandbox does not bind the host's root and then hide what must stay
# private (a list that is never complete: ~/.claude, ~/.m2, ...); it shows
# only what a toolchain needs: the system folders, the folders of the programs
# the command runs (a venv, a pyenv or nvm install, a cargo home), and the
# workspace. Inside those, a few places that hold credentials are still
# hidden. Everything else (/root, /home, /run, /var, /srv, /opt, /work, ...)
# does not exist inside.

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
# Under the folders shown, these hold secrets or control sockets.
_SECRET_FILES = ("/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/etc/shadow-", "/etc/gshadow-")
_SECRET_DIRS = ("/etc/sudoers.d", "/etc/ssl/private", "/etc/ssh", "/etc/credstore", "/etc/credstore.encrypted")
# Inside a program's folder (a cargo home, say): files that hold tokens.
_SECRET_NAMES = ("credentials", "credentials.toml", ".credentials.json", ".netrc", ".git-credentials", ".pypirc",
                 ".npmrc", "auth.json", "token", ".token")
# A program's folder that only works with a companion folder beside it
# (cargo's proxies need the rustup toolchains).
_COMPANIONS = {".cargo": (".rustup",)}
# Writable kernel controls under /proc, shown read-only.
_PROC_COVERED = ("/proc/sys", "/proc/sysrq-trigger")
DEFAULT_TMP_BYTES = ToolSettings.bash_tmp_bytes  # size of the sandbox's /tmp
DEFAULT_SHM_BYTES = ToolSettings.bash_shm_bytes  # size of its /dev/shm


def _home_dirs() -> list[str]:
    homes = ["/root"]
    try:
        homes += [os.path.join("/home", d) for d in sorted(os.listdir("/home"))]
    except OSError:
        pass
    return homes


def _too_wide(folder: str, workspace: str) -> bool:
    """A folder we must not show whole: the root, a top-level folder, a home
    folder, or one that contains the workspace (its neighbours are not the
    command's business)."""
    parts = [p for p in folder.split("/") if p]
    return len(parts) < 2 or folder in _home_dirs() or os.path.dirname(folder) == "/home" or within(workspace, folder)


def _program_folder(path: str) -> str:
    """The install prefix of a program: ``X`` for ``X/bin/prog``."""
    folder = os.path.dirname(path)
    if os.path.basename(folder) in ("bin", "sbin", "shims", "libexec"):
        return os.path.dirname(folder)
    return folder


def program_folders(programs: Sequence[str], workspace: str) -> list[str]:
    """The folders to show read-only so that ``programs`` (absolute host paths)
    run inside the sandbox: each one's prefix, the prefix of what it links to,
    a venv's base interpreter, companion folders. None that the system
    folders or the workspace already show, none too wide to show."""
    ws = os.path.realpath(workspace)
    wanted: list[str] = []
    for program in programs:
        if not os.path.isabs(program):
            continue
        for path in (os.path.abspath(program), os.path.realpath(program)):
            prefix = _program_folder(path)
            wanted.append(prefix if not _too_wide(prefix, ws) else os.path.dirname(path))
            cfg = os.path.join(prefix, "pyvenv.cfg")
            if os.path.isfile(cfg):  # a venv: its base interpreter lives elsewhere
                try:
                    for line in open(cfg, encoding="utf-8", errors="replace"):
                        key, _, value = line.partition("=")
                        if key.strip() == "home" and os.path.isabs(value.strip()):
                            wanted.append(_program_folder(os.path.join(value.strip(), "python")))
                except OSError:
                    pass
    for folder in list(wanted):
        for name, companions in _COMPANIONS.items():
            if os.path.basename(folder) == name:
                wanted += [os.path.join(os.path.dirname(folder), c) for c in companions]
    shown: list[str] = []
    for folder in wanted:
        folder = os.path.realpath(folder)
        if not os.path.isdir(folder) or _too_wide(folder, ws) or within(folder, ws):
            continue
        if any(within(folder, d) for d in SYSTEM_DIRS) or any(within(folder, s) for s in shown):
            continue
        shown = [s for s in shown if not within(s, folder)] + [folder]
    return shown


def _secrets_under(folders: Sequence[str], workspace: str) -> list[str]:
    """The secret-bearing paths that exist inside the folders shown, minus any
    that contain the workspace (hiding it would hide the work itself)."""
    candidates = [*_SECRET_FILES, *_SECRET_DIRS]
    for folder in folders:
        candidates += [os.path.join(folder, n) for n in _SECRET_NAMES]
    candidates += current().sandbox_hide
    try:  # the worker's own state (journals, transcripts): never shown, even inside a program's folder
        candidates.append(state_base())
    except WorkspaceError:
        pass
    ws = os.path.realpath(workspace)
    found = []
    for path in candidates:
        real = os.path.realpath(path)
        if os.path.lexists(path) and not within(ws, real) and any(within(real, f) for f in folders):
            found.append(real)
    return list(dict.fromkeys(found))


def _hide_args(paths: Sequence[str]) -> list[str]:
    args: list[str] = []
    for path in paths:
        if os.path.isdir(path):
            # Empty, tiny and read-only: a writable tmpfs there would be
            # scratch space outside every bound (half the RAM by default).
            args += ["--size", "4096", "--tmpfs", path, "--remount-ro", path]
        else:
            args += ["--ro-bind", "/dev/null", path]
    return args


def _system_args() -> list[str]:
    args: list[str] = []
    for folder in SYSTEM_DIRS:
        if os.path.islink(folder):  # merged /usr: /bin -> usr/bin
            args += ["--symlink", os.readlink(folder), folder]
        elif os.path.isdir(folder):
            args += ["--ro-bind", folder, folder]
    return args


def sandbox_argv(
    bwrap: str,
    argv: Sequence[str],
    *,
    workspace: str,
    bind_source: str | None = None,
    writable: bool = True,
    programs: Sequence[str] = (),
    cwd: str | None = None,
    tmp_bytes: int = DEFAULT_TMP_BYTES,
    shm_bytes: int = DEFAULT_SHM_BYTES,
    tmp_source: str | None = None,
    network: bool = False,
    read_only_inside: Sequence[str] = (),
) -> list[str]:
    """The bubblewrap command line that runs ``argv`` in the sandbox.

    - ``workspace``: the path the command sees its workspace at (and the
      folder whose neighbours stay hidden); ``bind_source``: the host folder
      bound there (default: ``workspace`` itself; an overlay's merged folder
      for a transactional run); ``writable``: bound read-write, or read-only
      (a command judged read-only: a wrong ``allow`` costs at most a read).
    - ``programs``: absolute host paths of the programs the command runs;
      their install folders are shown read-only (program_folders).
    - ``cwd``: the working folder inside the sandbox (default: ``workspace``).
    - ``tmp_bytes`` / ``shm_bytes``: sizes of the private /tmp and /dev/shm
      (0 = tmpfs default, half the RAM; the memory cgroup still bounds them).
    - ``tmp_source``: a host folder bound as /tmp instead of a private tmpfs
      (the workspace's scratch folder, activities/sandbox/scratch.py).
    - ``network``: keep the host's network (a command a person approved as
      needing it, on a worker that opted in); otherwise only a private loopback.
    - ``read_only_inside``: folders inside the workspace bound read-only over
      it (the worker's artifacts folder, when the workspace is writable).
    """
    workspace = os.path.realpath(workspace)
    shown = [*(d for d in SYSTEM_DIRS if os.path.isdir(d) and not os.path.islink(d))]
    folders = program_folders(programs, workspace)
    return [
        bwrap,
        "--die-with-parent",  # worker (or bwrap) dies -> the whole sandbox dies
        "--new-session",
        "--unshare-pid",  # its own PID namespace: bwrap's death kills every process inside
        *(() if network else ("--unshare-net",)),  # only a private loopback: no network at all
        "--unshare-ipc",
        "--unshare-uts",
        "--cap-drop", "ALL",  # as root, bwrap would otherwise keep capabilities
        *_system_args(),
        "--dev", "/dev",
        *(["--size", str(shm_bytes)] if shm_bytes else []), "--tmpfs", "/dev/shm",
        "--remount-ro", "/dev",  # /dev is a tmpfs too: no files there (device nodes still work)
        "--proc", "/proc",
        # The command is uid 0 without capabilities, and /proc/sys checks only
        # the owner's bits: a fresh /proc leaves host-wide settings writable
        # (kernel.core_pattern names a program the host runs as root on a
        # crash). The host's own, read-only: each entry still answers for the
        # reader's namespaces.
        *(arg for entry in _PROC_COVERED for arg in ("--ro-bind-try", entry, entry)),
        "--dir", "/run",  # empty: no host socket
        *(("--bind", tmp_source, "/tmp") if tmp_source else
          (*(["--size", str(tmp_bytes)] if tmp_bytes else []), "--tmpfs", "/tmp")),
        "--dir", SANDBOX_HOME,
        # After --tmpfs /tmp: a venv under the host's /tmp stays visible.
        *(arg for folder in folders for arg in ("--ro-bind", folder, folder)),
        *_hide_args(_secrets_under([*shown, *folders], workspace)),
        # After --tmpfs /tmp: a workspace under /tmp stays visible.
        "--bind" if writable else "--ro-bind", bind_source or workspace, workspace,
        *(arg for folder in read_only_inside for arg in ("--ro-bind", folder, folder)),
        "--remount-ro", "/",  # the sandbox's own root (a tmpfs holding the mount points)
        "--chdir", cwd or workspace,
        "--",
        *argv,
    ]


def bwrap_argv(bwrap: str, workspace: str, argv: Sequence[str], path_env: str = "") -> list[str]:
    """``argv`` in the sandbox with ``workspace`` writable (the historical
    entry point; sandbox_argv has the options). ``path_env`` is accepted for
    compatibility: the program folder shown is the one ``argv[0]`` resolves
    to on it."""
    program = argv[0] if argv and os.path.isabs(argv[0]) else shutil.which(argv[0], path=path_env or None) if argv else None
    return sandbox_argv(bwrap, argv, workspace=workspace, programs=[program] if program else ())


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

