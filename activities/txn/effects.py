"""The effect gate, the capture's side: measure what the classification
needs from the files (how much of a modified file's old content survives,
the workspace's symlinks) and judge a captured changeset with
``core.turn.effects.classify``.
"""

from __future__ import annotations

import os

from activities.txn.changeset import FILE, Changeset
from activities.txn.overlay import Capture
from activities.txn.store import WorkspaceReader
from core.contracts import EffectGate
from core.turn.effects import DEFAULT_CACHE_PATHS, EffectRules, Effects, classify, in_git, is_cache, kept_fraction

# Only this much of each version is compared (a longer file is judged by its start).
KEPT_READ_MAX = 4 << 20


def rules_of(gate: EffectGate) -> EffectRules:
    caches = tuple(gate.cache_paths) if gate.cache_paths else DEFAULT_CACHE_PATHS
    return EffectRules(caches, gate.max_files, gate.max_bytes)


def _read(fd: int) -> bytes:
    with os.fdopen(fd, "rb") as fh:
        return fh.read(KEPT_READ_MAX)


def judge(cap: Capture, changeset: Changeset, gate: EffectGate) -> Effects:
    rules = rules_of(gate)
    reader = WorkspaceReader(cap.workspace)
    try:
        kept: dict[str, float] = {}
        for c in changeset.changes:
            old, new = c.old, c.new
            if not (old and new and old.kind == FILE and new.kind == FILE and old.size and new.size):
                continue
            if old.sha256 == new.sha256 or in_git(c.path) or is_cache(c.path, rules.cache_paths):
                continue
            try:
                before = _read(reader.open_file(c.path))
                with open(os.path.join(cap.upper, c.path), "rb") as fh:
                    after = fh.read(KEPT_READ_MAX)
            except OSError:
                kept[c.path] = 0.0  # cannot tell: judged as replaced
                continue
            kept[c.path] = kept_fraction(before, after)

        def current(rel: str):  # type: ignore[no-untyped-def]
            st = reader.stat(rel)
            return reader.node(rel, st, content=False) if st is not None else None

        return classify(changeset.changes, rules, kept, current)
    finally:
        reader.close()
