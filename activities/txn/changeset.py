"""What a command changed in the workspace, as data (pure: no I/O).

A ``Changeset`` is a list of ``Change(path, old, new)``: ``old`` is the node
the path held in the workspace when the command started (None: absent),
``new`` what the command left (None: deleted). Nodes are files (mode, size,
sha256), folders (mode) and symlinks (target). Deleting a folder lists every
entry below it, so applying never needs to guess what a folder held.

Renames are captured as delete + create (the overlay copies a renamed file
up; with ``redirect_dir=off`` a renamed folder is copied too). ``detect_renames``
labels a created file whose content equals a deleted file's as renamed from
it, for the summary only: applying still deletes and creates.

Functions here: classification, apply order, the symlink-escape check, the
summary and diff text, and JSON round trips. Scanning an overlay's upper layer
is in activities/txn/overlay.py; applying is in activities/txn/journal.py.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
from dataclasses import dataclass, field
from typing import Callable, Iterable

from core.paths import within
from core.tools.display import file_diff as display_diff
from core.tools.formatting import shown

FILE, DIR, SYMLINK = "file", "dir", "symlink"
SPECIAL_BITS = 0o7000  # setuid/setgid/sticky never reach the real workspace: the worker may be root
KINDS = (FILE, DIR, SYMLINK)  # nothing else (no device, fifo or socket) is ever created


class BadRecord(ValueError):
    """A stored record does not hold what the worker writes: never acted on."""


def checked_rel(path: object, what: str = "path") -> str:
    """A workspace- or folder-relative path as a record may hold it: relative,
    normalised, no '..', no empty or '.' component, no NUL."""
    if not isinstance(path, str) or not path or "\0" in path or path.startswith("/"):
        raise BadRecord(f"{what} {path!r} is not a relative path")
    parts = path.split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise BadRecord(f"{what} {path!r} is not a plain relative path")
    return path


def checked_node(raw: object) -> "Node | None":
    """A node read back from a record: known kind, permission bits only."""
    if raw is None:
        return None
    if not isinstance(raw, dict) or raw.get("kind") not in KINDS:
        raise BadRecord(f"node {raw!r} is not a file, folder or symlink")
    try:
        node = Node(**raw)
    except TypeError as exc:
        raise BadRecord(f"node {raw!r}: {exc}") from None
    if not isinstance(node.mode, int) or not isinstance(node.size, int) or node.size < 0:
        raise BadRecord(f"node {raw!r}: bad mode or size")
    if not isinstance(node.sha256, str) or not isinstance(node.target, str):
        raise BadRecord(f"node {raw!r}: bad sha256 or target")
    return Node(node.kind, node.mode & 0o777, node.size, node.sha256, node.target)


@dataclass(frozen=True)
class Node:
    kind: str  # FILE | DIR | SYMLINK
    mode: int = 0  # permission bits
    size: int = 0
    sha256: str = ""  # files
    target: str = ""  # symlinks

    def same(self, other: "Node | None") -> bool:
        """Equal as far as a changeset cares (content, type, mode; not times)."""
        if other is None or other.kind != self.kind:
            return False
        if self.kind == SYMLINK:
            return self.target == other.target
        if self.mode != other.mode:
            return False
        return self.kind == DIR or (self.size == other.size and self.sha256 == other.sha256)


def node_json(node: Node | None) -> dict | None:
    if node is None:
        return None
    return {"kind": node.kind, "mode": node.mode, "size": node.size, "sha256": node.sha256, "target": node.target}


def same(a: Node | None, b: Node | None) -> bool:
    return b is None if a is None else a.same(b)


@dataclass
class Change:
    path: str  # relative to the workspace, '/'-separated
    old: Node | None
    new: Node | None
    content: str = ""  # journal-relative file holding the new content (files)
    mtime_ns: int = 0  # the command's mtime (the link or copy into place keeps it)
    renamed_from: str = ""  # display only

    @property
    def action(self) -> str:
        return action(self.old, self.new)

    def to_json(self) -> dict:
        # By hand: dataclasses.asdict deep-copies, which dominated journaling 10,000 files.
        return {"path": self.path, "old": node_json(self.old), "new": node_json(self.new), "content": self.content,
                "mtime_ns": self.mtime_ns, "renamed_from": self.renamed_from}


def action(old: Node | None, new: Node | None) -> str:
    if old is None:
        return "create"
    if new is None:
        return "delete"
    if old.kind != new.kind:
        return "replace"
    if old.kind == FILE and (old.sha256 != new.sha256 or old.size != new.size):
        return "modify"
    if old.kind == SYMLINK:
        return "modify"
    return "mode"


@dataclass
class Changeset:
    changes: list[Change] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, why it is not applied)

    def __bool__(self) -> bool:
        return bool(self.changes)

    def paths(self) -> list[str]:
        return [c.path for c in self.changes]

    def to_json(self) -> dict:
        return {"changes": [c.to_json() for c in self.changes], "skipped": [list(s) for s in self.skipped]}

    @classmethod
    def from_json(cls, data: dict) -> "Changeset":
        """Every path and node checked (BadRecord): a record is data the
        worker re-reads, so it is validated like any input."""
        changes = []
        for raw in data.get("changes", []):
            try:
                c = Change(**{**raw, "old": checked_node(raw["old"]), "new": checked_node(raw["new"])})
            except (TypeError, KeyError) as exc:
                raise BadRecord(f"change {raw!r}: {exc}") from None
            checked_rel(c.path)
            if c.content:  # a file without one is refused when applied
                checked_rel(c.content, "content file")
            changes.append(c)
        return cls(changes, [(p, why) for p, why in data.get("skipped", [])])

    def digest(self) -> str:
        """sha256 of the changeset (paths, nodes with content hashes): what a
        person approves, recorded in the workflow history with the preview."""
        data = json.dumps([[c.path, node_json(c.old), node_json(c.new)] for c in self.changes],
                          sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(data.encode("utf-8", "surrogatepass")).hexdigest()


def depth(path: str) -> int:
    return path.count("/")


def apply_order(changes: Iterable[Change]) -> list[Change]:
    """Deletions deepest first (a folder is empty when its turn comes), then
    everything else parents first; folder modes are set last, deepest first
    (a read-only folder must not block writing its own children)."""
    changes = list(changes)
    deletes = sorted((c for c in changes if c.new is None), key=lambda c: (-depth(c.path), c.path))
    puts = sorted((c for c in changes if c.new is not None), key=lambda c: (depth(c.path), c.path))
    return deletes + puts


def dir_modes_last(changes: Iterable[Change]) -> list[Change]:
    return sorted((c for c in changes if c.new is not None and c.new.kind == DIR), key=lambda c: -depth(c.path))


def detect_renames(changes: list[Change]) -> None:
    """Label created files whose content matches a deleted file (in place)."""
    gone: dict[tuple[str, int], list[str]] = {}
    for c in changes:
        if c.new is None and c.old is not None and c.old.kind == FILE:
            gone.setdefault((c.old.sha256, c.old.size), []).append(c.path)
    for c in changes:
        if c.old is None and c.new is not None and c.new.kind == FILE:
            sources = gone.get((c.new.sha256, c.new.size))
            if sources:
                c.renamed_from = sources.pop(0)


# --- safety ---------------------------------------------------------------------

Lookup = Callable[[str], "Node | None"]  # rel path -> node after the apply


def resolve_inside(root: str, link_path: str, target: str, lookup: Lookup, hops: int = 0) -> list[str] | None:
    """The path parts a symlink at ``link_path`` with ``target`` resolves to,
    following symlinks on the way as they will be after the apply; None when
    it leaves the workspace (or loops)."""
    if hops > 40:
        return None
    if posixpath.isabs(target):
        norm_root = posixpath.normpath(root)
        if not within(target, norm_root):
            return None
        parts: list[str] = []
        rest = target[len(norm_root) :]
    else:
        parts = [p for p in posixpath.dirname(link_path).split("/") if p]
        rest = target
    for comp in rest.split("/"):
        if comp in ("", "."):
            continue
        if comp == "..":
            if not parts:
                return None
            parts.pop()
            continue
        parts.append(comp)
        node = lookup("/".join(parts))
        if node is not None and node.kind == SYMLINK:
            resolved = resolve_inside(root, "/".join(parts), node.target, lookup, hops + 1)
            if resolved is None:
                return None
            parts = resolved
    return parts


def symlink_escapes(root: str, changes: list[Change], current: Lookup) -> list[tuple[str, str]]:
    """(path, problem) for each symlink the changeset would place pointing
    outside the workspace (directly or through other symlinks)."""
    after = {c.path: c.new for c in changes}

    def lookup(rel: str) -> Node | None:
        return after[rel] if rel in after else current(rel)

    problems = []
    for c in changes:
        if c.new is not None and c.new.kind == SYMLINK:
            if resolve_inside(root, c.path, c.new.target, lookup) is None:
                problems.append((c.path, f"{c.path} -> {c.new.target} (points outside the workspace)"))
    return problems


# --- text for the model and the approver -------------------------------------------

TEXT_DIFF_MAX_BYTES = 256 << 10
DIFF_MAX_LINES = 400


def first_listed(changes: list[Change], first: Iterable[str] = ()) -> list[Change]:
    """``changes`` with the paths in ``first`` ahead, in that order: what a
    shortened list or diff must not cut (the effect gate's reasons)."""
    rank = {p: i for i, p in enumerate(dict.fromkeys(first))}
    return sorted(changes, key=lambda c: rank.get(c.path, len(rank)))  # stable: scan order otherwise


def summary(changeset: Changeset, limit: int = 50, first: Iterable[str] = ()) -> str:
    """One line per change, names escaped (a workspace's own file names can
    hold newlines: a second line must not read as a change of its own)."""
    lines = []
    for c in first_listed(changeset.changes, first)[:limit]:
        path = shown(c.path)
        if c.new is not None and c.new.kind == DIR and c.old is not None and c.old.kind == DIR:
            lines.append(f"  mode {path}/ {oct(c.old.mode)} -> {oct(c.new.mode)}")
            continue
        label = c.action
        extra = ""
        if c.renamed_from:
            label, extra = "rename", f" (from {shown(c.renamed_from)})"
        elif label == "mode" and c.old and c.new:
            extra = f" {oct(c.old.mode)} -> {oct(c.new.mode)}"
        elif c.new is not None and c.new.kind == SYMLINK:
            extra = f" -> {shown(c.new.target)}"
        lines.append(f"  {label} {path}{'/' if (c.new or c.old) and (c.new or c.old).kind == DIR else ''}{extra}")
    if len(changeset.changes) > limit:
        lines.append(f"  ... and {len(changeset.changes) - limit} more")
    return "\n".join(lines)


def is_text(data: bytes) -> bool:
    if b"\x00" in data[:8192]:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def file_diff(path: str, old: bytes | None, new: bytes | None) -> str:
    """A unified diff with real hunk lines for text in any common encoding,
    escaped for a person's terminal, every cut said; a one-line summary for
    binary or large files (``core.tools.display``)."""
    lines = display_diff(path, old, new, max_lines=DIFF_MAX_LINES, max_bytes=TEXT_DIFF_MAX_BYTES)
    return "\n".join(lines) + "\n"


def bounds_refusal(total: int, entries: int, max_bytes: int, max_entries: int, at_least: bool = False) -> str | None:
    """The text refusing a changeset bigger than the bounds (0: no bound), or
    None. ``at_least``: counted until a bound was passed (the scan stops
    there rather than hash or list the rest)."""
    more = "at least " if at_least else ""
    over = []
    if max_bytes and total > max_bytes:
        over.append(f"{more}{total:,} bytes of new content (at most {max_bytes:,})")
    if max_entries and entries > max_entries:
        over.append(f"{more}{entries:,} changed paths (at most {max_entries:,})")
    if not over:
        return None
    return (
        "The command's changes are too large to apply: " + " and ".join(over) + "; nothing was applied to "
        "the workspace. Make the change in smaller steps, or write large generated output outside the "
        "changes you want kept (the operator can raise AGENT_TOOLS_CHANGESET_MB / AGENT_TOOLS_CHANGESET_FILES)."
    )


def read_only_refusal(verdict: str, changeset: Changeset, limit: int = 20) -> str | None:
    """A command judged ``allow`` (read-only) must leave no changes: if it
    did, the text saying so (and what it tried to change); else None."""
    if verdict != "allow" or not changeset:
        return None
    return (
        "The command was judged read-only (allowed without approval) but it tried to change files; "
        "nothing was applied to the workspace. It tried to:\n" + summary(changeset, limit)
        + "\nIf changing files is intended, ask for it explicitly (that call needs approval)."
    )
