"""The effect gate, the capture's side: measure what the classification
needs from the files (how much of a modified file's old content survives,
the workspace's symlinks) and judge a captured changeset with
``core.turn.effects.classify``.
"""

from __future__ import annotations

import os

from activities.txn.changeset import FILE, Changeset
from activities.txn.overlay import Capture
from activities.sandbox.git_config import repository_settings
from activities.txn.store import WorkspaceReader
from activities.workspace.host_links import host_run_links, landing
from core.contracts import EffectGate
from core.turn.effects import DEFAULT_CACHE_PATHS, EffectRules, Effects, classify, in_git, is_cache, kept_fraction, kept_lines

# Up to this size both versions are compared in memory (with the character
# measure for short files); a longer file is compared line by line, whole.
KEPT_READ_MAX = 4 << 20


def rules_of(gate: EffectGate, workspace: str = "") -> EffectRules:
    caches = tuple(gate.cache_paths) if gate.cache_paths else DEFAULT_CACHE_PATHS
    return EffectRules(caches, gate.max_files, gate.max_bytes, hook_folders(workspace) if workspace else ())


def hook_folders(workspace: str) -> tuple[str, ...]:
    """The worktree folder the repository's ``core.hooksPath`` names, when it
    lies inside the workspace (git resolves a relative one from the worktree's
    top); a person's git runs the hooks there as it would .git/hooks."""
    settings = repository_settings(workspace, workspace) or []
    values = [v for k, v in settings if k.lower() == "core.hookspath"]
    if not values or not values[-1] or values[-1].startswith("~"):
        return ()
    root = os.path.realpath(workspace)
    folder = os.path.normpath(os.path.join(root, values[-1]))
    if not folder.startswith(root + "/"):
        return ()  # outside (not the workspace's to judge), or the worktree's top itself (left: see the docs)
    return (os.path.relpath(folder, root),)


def _kept(reader: WorkspaceReader, rel: str, upper: str, old_size: int, new_size: int) -> float:
    """How much of the workspace file's content the upper layer's version keeps."""
    with os.fdopen(reader.open_file(rel), "rb") as before, open(upper, "rb") as after:
        if old_size <= KEPT_READ_MAX and new_size <= KEPT_READ_MAX:
            return kept_fraction(before.read(KEPT_READ_MAX), after.read(KEPT_READ_MAX))
        fraction = kept_lines(before, after)
        return 0.0 if fraction is None else fraction  # too many distinct lines to tell: replaced


def judge(cap: Capture, changeset: Changeset, gate: EffectGate) -> Effects:
    rules = rules_of(gate, cap.workspace)
    reader = WorkspaceReader(cap.workspace)
    try:
        kept: dict[str, float] = {}
        for c in changeset.changes:
            old, new = c.old, c.new
            if not (old and new and old.kind == FILE and new.kind == FILE and old.size and new.size):
                continue
            if old.sha256 == new.sha256 or in_git(c.path) or is_cache(c.path, rules.cache_paths):
                continue
            if max(old.size, new.size) > rules.max_bytes:
                kept[c.path] = 0.0  # not read: past the gate's bound it asks anyway
                continue
            try:
                kept[c.path] = _kept(reader, c.path, os.path.join(cap.upper, c.path), old.size, new.size)
            except OSError:
                kept[c.path] = 0.0  # cannot tell: judged as replaced

        def current(rel: str):  # type: ignore[no-untyped-def]
            st = reader.stat(rel)
            return reader.node(rel, st, content=False) if st is not None else None

        return classify(changeset.changes, rules, kept, current, landing(cap.workspace, host_run_links(cap.workspace)))
    finally:
        reader.close()
