"""The physical fence: bubblewrap (DESIGN.md §4).

Where bubblewrap works, a command runs inside it with all capabilities
dropped, the root read-only, only the workspace writable, a private /tmp, no
network and its own PID namespace (so killing bwrap kills everything the
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

from activities.bash_settings import BWRAP_ENV, SANDBOX_ENV, sandbox_mode
from activities.command_env import DEFAULT_PATH, SANDBOX_HOME

log = logging.getLogger(__name__)


class SandboxUnavailable(Exception):
    """The sandbox is required (AGENT_TOOLS_SANDBOX=required) but does not work here."""



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

