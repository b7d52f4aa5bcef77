"""Path confinement and the artifacts folder.

Every path a tool receives is untrusted model output. It is resolved (``..``,
symlinks, ``/proc/self/root`` style tricks) and must land inside the
workspace root; otherwise the tool answers with an error result. Fail-closed:
anything we cannot resolve is refused. The resolution itself lives in
``activities.workspace.root`` (directory descriptors, so it cannot be raced).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from activities.workspace.root import WorkspaceError, WorkspaceRoot, shown

__all__ = ["ARTIFACTS_DIR", "WorkspaceError", "ensure_artifacts_dir", "workspace_root", "resolve_inside", "relative_to_root",
           "artifacts_path", "open_artifact"]

ARTIFACTS_DIR = ".agent-artifacts"


def workspace_root(root: str) -> Path:
    real = os.path.realpath(root)
    if not os.path.isdir(real):
        raise WorkspaceError(
            f"workspace root {root!r} is not a folder on this worker; "
            "check the turn's workspace and the worker's --workspace"
        )
    return Path(real)


def resolve_inside(root: str | Path, path: str) -> Path:
    """Where ``path`` (relative to ``root``, or absolute inside it) lands: a
    real path inside the workspace, or WorkspaceError. For *naming* a file
    only: the tools open through ``activities.workspace.root`` descriptors, never by
    this name, which a sandboxed script may have changed by then. Missing
    folders at the end are kept as given."""
    with WorkspaceRoot(root) as ws:
        try:
            return ws.path / ws.rel(path)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise WorkspaceError(f"cannot resolve path {shown(path)}: {exc.strerror or exc}") from None
        parts = ws.parts(path)
        for cut in range(len(parts) - 1, 0, -1):  # the longest prefix that exists
            try:
                head = ws.rel("/".join(parts[:cut]))
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise WorkspaceError(f"cannot resolve path {shown(path)}: {exc.strerror or exc}") from None
            rest = parts[cut:]
            break
        else:
            head, rest = ".", parts
        if ".." in rest:  # '..' below a folder that does not exist: the kernel says ENOENT
            tail = os.path.normpath("/".join(rest))
            depth = 0 if head == "." else head.count("/") + 1
            if tail.split("/").count("..") > depth:
                raise WorkspaceError(
                    f"path {shown(path)} resolves outside the workspace ({ws.path}); only files under "
                    "the workspace root can be used: give a path relative to it"
                )
            raise WorkspaceError(f"cannot resolve path {shown(path)}: it goes through a folder that does not exist")
        return ws.path.joinpath(head, *rest)


def relative_to_root(root: str | Path, real: Path) -> str:
    rel = os.path.relpath(real, workspace_root(str(root)))
    return "." if rel == "." else rel.replace(os.sep, "/")


def open_artifact(root: str | Path, call_id: str, label: str) -> tuple[int, str]:
    """A fresh artifact file, created and opened for writing (the descriptor,
    and its path relative to the root). Created relative to the folder's
    descriptor with O_EXCL|O_NOFOLLOW, so a sandboxed command that swaps the
    folder for a symlink cannot make the (unsandboxed) worker write elsewhere."""
    base = _artifacts_dir(root)
    try:
        name = _artifact_name(call_id, label)
        return os.open(name, _CREATE, 0o644, dir_fd=base), f"{ARTIFACTS_DIR}/{name}"
    finally:
        os.close(base)


_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def ensure_artifacts_dir(root: str | Path) -> str:
    """The artifacts folder's path, created if missing (WorkspaceError when
    it is a symbolic link or not a folder)."""
    os.close(_artifacts_dir(root))
    return os.path.join(os.path.realpath(root), ARTIFACTS_DIR)


def _artifacts_dir(root: str | Path) -> int:
    """The artifacts folder, opened through the root's descriptor without
    following links (created if missing, with a ``.gitignore`` of ``*`` so
    git, ripgrep and our glob tool all leave it alone)."""
    with WorkspaceRoot(root) as ws:
        try:
            os.mkdir(ARTIFACTS_DIR, 0o777, dir_fd=ws.fd)
        except FileExistsError:
            pass
        try:
            base = os.open(ARTIFACTS_DIR, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=ws.fd)
        except OSError:
            raise WorkspaceError(
                f"{ARTIFACTS_DIR} in the workspace is a symbolic link or not a folder; "
                "remove it so that full outputs can be saved there"
            ) from None
    try:
        ignore = os.open(".gitignore", _CREATE, 0o644, dir_fd=base)
    except FileExistsError:
        return base
    except BaseException:
        os.close(base)
        raise
    with os.fdopen(ignore, "w") as fh:
        fh.write("*\n")
    return base


def _artifact_name(call_id: str, label: str) -> str:
    safe_id = "".join(c if c.isalnum() or c in "-_" else "_" for c in call_id)[:64] or "call"
    return f"{label}-{safe_id}-{secrets.token_hex(4)}.txt"


def artifacts_path(root: str | Path, call_id: str, label: str) -> tuple[Path, str]:
    """A fresh artifact file path (absolute, relative-to-root) for a caller
    that opens it itself (the bash tool; ``open_artifact`` is the race-free
    way). Refuses a folder that is a symlink or not a folder."""
    os.close(_artifacts_dir(root))
    name = _artifact_name(call_id, label)
    return workspace_root(str(root)) / ARTIFACTS_DIR / name, f"{ARTIFACTS_DIR}/{name}"
