"""The symlinks of a workspace that a tool on the person's machine opens as
a file it runs by itself (core.turn.host_files): ``svc/.envrc ->
../tools/env.sh`` makes tools/env.sh the script direnv runs on ``cd svc``,
so a change of tools/env.sh is a change of that ``.envrc``. A workspace can
arrive holding such links (git carries symlinks); one bounded walk finds them."""

from __future__ import annotations

import os

from core.paths import within
from core.turn.host_files import holds_host_run

MAX_ENTRIES = 200_000

# Folders not walked: nobody opens a project in them or `cd`s into them to
# work (what would make direnv or an IDE run a file there), and they hold
# most of a large workspace's entries (a walk of 200,000 costs ~0.3 s, on
# every plan with a write and every captured command).
SKIPPED = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", ".pytest_cache", ".mypy_cache",
                     ".ruff_cache", ".hypothesis", ".tox", ".nox"})


def host_run_links(root: str, limit: int = MAX_ENTRIES) -> list[str]:
    """Workspace-relative paths of the symlinks named like a host-run file or
    a folder that holds one, anywhere in ``root`` but the ``SKIPPED`` folders.
    Past ``limit`` entries, those of the top folder only (where the IDEs and
    dev containers look)."""
    root = os.path.realpath(root)
    found: list[str] = []
    stack, seen = [root], 0
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    seen += 1
                    if seen > limit:
                        return _top(root)
                    if entry.is_symlink():
                        rel = os.path.relpath(entry.path, root)
                        if holds_host_run(rel):
                            found.append(rel)
                    elif entry.is_dir(follow_symlinks=False) and entry.name not in SKIPPED:
                        stack.append(entry.path)
        except OSError:
            continue  # gone or unreadable: nothing there for a tool to open either
    return sorted(found)


def landing(root: str, links: list[str]) -> list[tuple[str, str]]:
    """Each link with where it leads (relative to ``root``, ``.`` for the top
    folder itself, by its real path: an absolute target into the workspace
    too); links that lead out of the workspace are left out."""
    root = os.path.realpath(root)
    out = []
    for link in links:
        real = os.path.realpath(os.path.join(root, link))
        if within(real, root):
            out.append((link, os.path.relpath(real, root)))
    return out


def _top(root: str) -> list[str]:
    try:
        names = os.listdir(root)
    except OSError:
        return []
    return sorted(n for n in names if os.path.islink(os.path.join(root, n)) and holds_host_run(n))
