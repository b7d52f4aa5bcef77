"""A minimal bubblewrap jail for the ripgrep process of the grep tool.

rg opens what it finds by path name. Confining its starting folder is not
enough: a sandboxed script that swaps a folder for a symlink to an outside
folder *while rg walks the tree* makes rg read through it (the worker runs
rg as root, unsandboxed). So, where bubblewrap works, rg runs in a mount
namespace that holds only ``/usr`` (its libraries: system files, no
secrets) and the workspace, bound read-only *from the root's descriptor*:
no path can lead anywhere else, whatever the workspace's links say. Without
bubblewrap (or with ``AGENT_TOOLS_SANDBOX=off``) rg runs as before and the
result says so in its metadata.
"""

from __future__ import annotations

import os
import subprocess

from activities.bash.tool import bwrap_path, sandbox_mode

_probed: dict[str, bool] = {}


def _system_binds() -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for name in ("lib", "lib64", "lib32", "libx32", "bin"):
        path = "/" + name
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    return args


def jail_argv(argv: list[str], root_fd: int, root_path: str) -> list[str] | None:
    """``argv`` wrapped in the jail (pass ``root_fd`` to the child in
    ``pass_fds``), or None when bubblewrap is off or does not work here."""
    if sandbox_mode() == "off":
        return None
    bwrap = bwrap_path()
    if bwrap is None:
        return None
    program = os.path.realpath(argv[0])
    wrapped = [
        # Only the mount namespace (bwrap's own): the jail is about what rg can
        # open; each further namespace costs about a millisecond per search.
        bwrap, "--die-with-parent", "--cap-drop", "ALL", "--new-session",
        *_system_binds(),
        "--ro-bind", program, program,
        "--ro-bind", f"/proc/self/fd/{root_fd}", root_path,
        "--chdir", root_path,
        "--", program, *argv[1:],
    ]
    if bwrap not in _probed:
        _probed[bwrap] = _works(wrapped[: wrapped.index("--chdir")], root_fd, root_path, program)
    return wrapped if _probed[bwrap] else None


def _works(prefix: list[str], root_fd: int, root_path: str, program: str) -> bool:
    # The probe runs the system's `true`, not the configured rg: an rg that
    # hangs (or a slow replacement) must cost that one search its timeout,
    # not disable the jail for every later search of this process.
    probe = next((p for p in ("/usr/bin/true", "/bin/true") if os.access(p, os.X_OK)), program)
    try:
        proc = subprocess.run(
            [*prefix, "--chdir", root_path, "--", probe, *(["--version"] if probe == program else [])],
            stdin=subprocess.DEVNULL, capture_output=True, timeout=20, pass_fds=(root_fd,),
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return proc.returncode == 0
