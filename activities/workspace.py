"""Path confinement and the artifacts folder.

Every path a tool receives is untrusted model output. It is resolved (``..``,
symlinks, ``/proc/self/root`` style tricks) and must land inside the
workspace root; otherwise the tool answers with an error result. Fail-closed:
anything we cannot resolve is refused.
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

from activities.artifacts import prune_artifacts

ARTIFACTS_DIR = ".agent-artifacts"


class WorkspaceError(Exception):
    """A path the tool must refuse; the message is written for the model."""


def workspace_root(root: str) -> Path:
    real = os.path.realpath(root)
    if not os.path.isdir(real):
        raise WorkspaceError(
            f"workspace root {root!r} is not a folder on this worker; "
            "check the turn's workspace and the worker's --workspace"
        )
    return Path(real)


def resolve_inside(root: str | Path, path: str) -> Path:
    """Resolve ``path`` (relative to ``root``, or absolute inside it) to a real
    path inside the workspace, or raise WorkspaceError.

    The result has every symlink resolved, so opening or renaming onto it can
    never follow a link out of the workspace (short of a race with another
    process swapping links in, which the OS sandbox exists for).
    """
    if not isinstance(path, str) or path.strip() == "":
        raise WorkspaceError("path is empty: give a path relative to the workspace root, e.g. 'src/app.py'")
    if "\x00" in path:
        raise WorkspaceError("path contains a NUL byte: give a plain relative path")
    root_real = workspace_root(str(root))
    candidate = Path(path) if os.path.isabs(path) else root_real / path
    try:
        real = Path(os.path.realpath(candidate, strict=False))
    except (OSError, RuntimeError) as exc:  # symlink loops and the like
        raise WorkspaceError(f"cannot resolve path {path!r}: {exc}") from None
    if real != root_real and root_real not in real.parents:
        raise WorkspaceError(
            f"path {path!r} resolves outside the workspace ({real}); "
            "only files under the workspace root can be used: give a path relative to it"
        )
    # realpath(strict=False) gives up at a symlink loop and returns the rest of
    # the path unresolved, then collapses '..' lexically: 'loop/../out/x' came
    # back as '<root>/out/x' with 'out' still a symlink to anywhere. Refuse any
    # symlink left in the result (below the root, which is already real).
    for part in [*reversed(real.parents), real][len(root_real.parts) :]:
        try:
            if stat.S_ISLNK(os.lstat(part).st_mode):
                raise WorkspaceError(
                    f"path {path!r} goes through a symlink that cannot be resolved "
                    f"(a symlink loop?) at {part.relative_to(root_real)}; give a plain path"
                )
        except OSError:
            break  # missing (or unreadable): nothing below it exists to follow
    return real


def relative_to_root(root: str | Path, real: Path) -> str:
    rel = os.path.relpath(real, workspace_root(str(root)))
    return "." if rel == "." else rel.replace(os.sep, "/")


def save_artifact(root: str | Path, call_id: str, label: str, data: str | bytes) -> str:
    """Save full output that did not fit in a result; return its path relative
    to the workspace root."""
    target, rel = artifacts_path(root, call_id, label)
    if isinstance(data, str):
        data = data.encode("utf-8", errors="replace")
    # O_EXCL|O_NOFOLLOW: never write through a link planted in the folder.
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    prune_artifacts(root, keep=rel)  # hook (bash helper): the retention rule, activities/artifacts.py
    return rel


def artifacts_path(root: str | Path, call_id: str, label: str) -> tuple[Path, str]:
    """A fresh artifact file path (absolute, relative-to-root). The folder
    carries a ``.gitignore`` of ``*`` so git, ripgrep and our glob tool all
    leave it alone.

    A bash command may have replaced the folder with a symlink to somewhere
    else; the worker writing artifacts is not sandboxed, so refuse that."""
    base = workspace_root(str(root)) / ARTIFACTS_DIR
    if base.is_symlink() or (base.exists() and not base.is_dir()):
        raise WorkspaceError(
            f"{ARTIFACTS_DIR} in the workspace is a symlink or not a folder; "
            "remove it so that full outputs can be saved there"
        )
    base.mkdir(exist_ok=True)
    ignore = base / ".gitignore"
    if not ignore.exists() and not ignore.is_symlink():
        fd = os.open(ignore, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        with os.fdopen(fd, "w") as fh:
            fh.write("*\n")
    safe_id = "".join(c if c.isalnum() or c in "-_" else "_" for c in call_id)[:64] or "call"
    name = f"{label}-{safe_id}-{secrets.token_hex(4)}.txt"
    return base / name, f"{ARTIFACTS_DIR}/{name}"
