"""The effect gate: judge what a captured command changed, not its words. Pure.

A bash command that may write runs on a copy-on-write view; before its
changeset is applied, ``classify`` sorts every change:

- caches (``__pycache__``, ``.pytest_cache``, ...: ``EffectRules.cache_paths``)
  are applied without a second look, and ignored for everything below;
- destructive by effect, pausing in every mode (``auto`` included):
  deleting an existing file or folder (a rename is not a deletion: its
  content lands elsewhere), an existing file emptied or replaced (its type
  changed, a symlink re-pointed, or its new content keeps less than
  ``KEPT_MIN`` of the old: ``cp``, ``tee``, ``mv``/``ln -f`` onto it,
  ``unzip -o``, ``sort -o``), execute or special bits added to an existing
  file, anything under ``.git`` (or a symlink resolving into it), a file a
  tool on the person's machine runs by itself (``core.turn.host_files``:
  ``.envrc``, ``.vscode/tasks.json`` ..., or a symlink at or to one), more
  than ``max_files`` files or ``max_bytes`` bytes;
- the rest (creations, in-place edits like ``sed -i 's/a/b/'``) follows the
  policy: nothing to ask under ``auto``, a pause under ``ask-writes``.

``Change`` here is a plain view (path, old, new) so this module stays free
of the overlay code; ``kept`` maps a modified file to the fraction of its old
content the new content keeps (measured by the caller, who can read files).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Protocol

from core.tools.formatting import shown
from core.turn import host_files
from core.turn.host_files import RUNS_OUTSIDE, holds_host_run, host_run

DEFAULT_CACHE_PATHS = (
    "__pycache__",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    ".hypothesis",
    "node_modules/.cache",
)
DEFAULT_MAX_FILES = 1000
DEFAULT_MAX_BYTES = 100 << 20
# An existing file whose new content keeps less than this fraction of its old
# content was replaced rather than edited.
KEPT_MIN = 0.5
EXEC_OR_SPECIAL = 0o7111

# Gate modes (what the bash activity is asked to do with a captured changeset)
OFF = ""  # apply as before
DESTRUCTIVE = "destructive"  # pause only for destructive effects
EFFECTS = "effects"  # pause for any change that is not a cache


class NodeLike(Protocol):
    kind: str
    mode: int
    size: int
    sha256: str
    target: str


class ChangeLike(Protocol):
    path: str
    old: NodeLike | None
    new: NodeLike | None


@dataclass(frozen=True)
class EffectRules:
    cache_paths: tuple[str, ...] = DEFAULT_CACHE_PATHS
    max_files: int = DEFAULT_MAX_FILES
    max_bytes: int = DEFAULT_MAX_BYTES
    # Workspace folders git runs hooks from (a repository's core.hooksPath
    # inside the worktree, as husky sets it): as much code git runs as .git/hooks.
    hooks: tuple[str, ...] = ()


@dataclass
class Effects:
    caches: list[str] = field(default_factory=list)
    other: list[str] = field(default_factory=list)  # changes that are not caches
    destructive: list[tuple[str, str]] = field(default_factory=list)  # (path, why)

    def pauses(self, mode: str) -> bool:
        if mode == DESTRUCTIVE:
            return bool(self.destructive)
        if mode == EFFECTS:
            return bool(self.destructive or self.other)
        return False

    def worst_first(self) -> list[tuple[str, str]]:
        """The destructive changes, those that run code or pass every bound
        first: what a person must not miss when only a few can be named."""
        return sorted(self.destructive, key=lambda d: severity(d[1]))

    def reason(self, mode: str) -> str:
        if self.destructive:
            worst = self.worst_first()
            listed = "; ".join(f"{shown(p)}: {shown(why)}" for p, why in worst[:5])
            more = f" (and {len(worst) - 5} more)" if len(worst) > 5 else ""
            return f"destructive by effect (needs approval in every mode): {listed}{more}"
        if self.other and mode == EFFECTS:
            names = ", ".join(map(shown, self.other[:5])) + (", ..." if len(self.other) > 5 else "")
            return f"the command changed {len(self.other)} file(s) (caches aside): {names}"
        return ""


# Reasons (their start) ordered by how much a person must see them: code
# that git or the shell will run, then the bounds (they hide what follows).
_SEVERE = ("changes inside .git", "a symlink into .git", RUNS_OUTSIDE, "adds mode bits")


def severity(why: str) -> int:
    for rank, start in enumerate(_SEVERE):
        if why.startswith(start):
            return rank
    return len(_SEVERE) if why[:1].isdigit() else len(_SEVERE) + 1


def _parts(path: str) -> list[str]:
    return [p for p in path.split("/") if p not in ("", ".")]


def is_cache(path: str, cache_paths: Iterable[str]) -> bool:
    """Whether ``path`` lies in (or is) a declared cache folder: each entry
    is a run of path components matched anywhere (``node_modules/.cache``)."""
    parts = _parts(path)
    for pattern in cache_paths:
        want = _parts(pattern)
        n = len(want)
        if n and any(parts[i:i + n] == want for i in range(len(parts) - n + 1)):
            return True
    return False


def in_git(path: str) -> bool:
    """Inside (or is) a ``.git`` folder, compared as git on a case-insensitive
    file system would (``.GIT``, ``.git.``)."""
    return any(p.lower().rstrip(". ") == ".git" for p in _parts(path))


def in_hooks(path: str, hooks: Iterable[str]) -> bool:
    """Inside (or is) one of the worktree's hook folders."""
    parts = _parts(path)
    return any((want := _parts(h)) and parts[:len(want)] == want for h in hooks)


def _resolves_into_git(link: str, target: str, lookup: Callable[[str], "NodeLike | None"],
                       hooks: Iterable[str] = ()) -> bool:
    """A symlink whose target, followed through the symlinks the workspace
    will hold, lands in ``.git``."""
    return bool(_leads_to(link, target, lookup, lambda p: "git" if in_git(p) or in_hooks(p, hooks) else ""))


def _leads_to(link: str, target: str, lookup: Callable[[str], NodeLike | None], hit: Callable[[str], str]) -> str:
    """What ``hit`` says of the first path on the way a symlink's target,
    followed through the symlinks the workspace will hold, takes ('' when
    nothing on the way is a hit)."""
    return next((found for path in _way(link, target, lookup) if (found := hit(path))), "")


def _way(link: str, target: str, lookup: Callable[[str], NodeLike | None]) -> Iterator[str]:
    """Each path a symlink's target takes, followed through the symlinks the
    workspace will hold, ending with where it lands (nothing after 40 hops)."""
    parts = _parts(posixpath.dirname(link)) if not target.startswith("/") else []
    pending = _parts(target)
    hops = 0
    while pending:
        comp = pending.pop(0)
        if comp == "..":
            if parts:
                parts.pop()
            continue
        parts.append(comp)
        yield "/".join(parts)
        node = lookup("/".join(parts))
        if node is not None and node.kind == "symlink":
            hops += 1
            if hops > 40:
                return
            base = _parts(posixpath.dirname("/".join(parts))) if not node.target.startswith("/") else []
            parts = base
            pending = _parts(node.target) + pending
    yield "/".join(parts)


def classify(
    changes: Iterable[ChangeLike],
    rules: EffectRules = EffectRules(),
    kept: dict[str, float] | None = None,
    current: Callable[[str], "NodeLike | None"] | None = None,
    links: Iterable[tuple[str, str]] = (),
) -> Effects:
    """Sort a changeset's changes (see the module doc). ``current`` looks up
    a workspace node before the apply (for symlinks resolving into ``.git``);
    ``links``: the workspace's host-run symlinks before it, each with where
    it led."""
    changes = list(changes)
    kept = kept or {}
    after = {c.path: c.new for c in changes}

    def lookup(rel: str) -> NodeLike | None:
        if rel in after:
            return after[rel]
        return current(rel) if current is not None else None

    # Content that left one path and arrived at another was moved, not lost;
    # but not when it arrived in a cache (deleted later without a look, its
    # deletion never counted) or in .git (not the worktree's files).
    arrived = {(c.new.sha256, c.new.size) for c in changes if c.new is not None and c.new.kind == "file"
               and not in_git(c.path) and not is_cache(c.path, rules.cache_paths)}
    out = Effects()
    total_bytes = 0
    # Host-run names that are symlinks (``.envrc -> tools/env.sh``, ``.vscode
    # -> cfg``, ``svc/.envrc -> ../x.sh``): the person's tool opens what they
    # lead to, so a change there is a change of that file. ``links``: those
    # the workspace held before, with where they led (by real path, as
    # activities.workspace.host_links finds them); the top ones also as the
    # command leaves them.
    opened: list[tuple[str, str]] = [(name, "" if lands == "." else lands) for name, lands in links]
    for name in host_files.TOP_LEVEL:
        node = lookup(name)
        if node is not None and node.kind == "symlink":
            way = list(_way(name, node.target, lookup))
            if way:  # not a loop of links
                opened.append((name, way[-1]))
    git_dirs: dict[str, bool] = {}

    def in_git_dir(path: str) -> str:
        """The folder above ``path`` shaped as a git directory after the apply
        (HEAD, objects/, refs/: how git recognises a bare repository), or ''."""
        parts = _parts(path)
        for n in range(len(parts) - 1, 0, -1):
            folder = "/".join(parts[:n])
            if folder not in git_dirs:
                head, objects, refs = (lookup(f"{folder}/{name}") for name in ("HEAD", "objects", "refs"))
                git_dirs[folder] = (head is not None and head.kind == "file" and objects is not None
                                    and objects.kind == "dir" and refs is not None and refs.kind == "dir")
            if git_dirs[folder]:
                return folder
        return ""

    for c in changes:
        old, new, path = c.old, c.new, c.path
        if in_git(path):
            out.other.append(path)
            out.destructive.append((path, "changes inside .git"))
            continue
        bare = in_git_dir(path)
        if bare:
            # A person's git in that folder reads its config (core.pager,
            # core.fsmonitor) as a repository's own: .git by another name.
            out.other.append(path)
            out.destructive.append((path, f"changes inside .git (a git directory at {bare}/)"))
            continue
        if in_hooks(path, rules.hooks):
            out.other.append(path)
            out.destructive.append((path, "changes inside .git's hooks folder (core.hooksPath)"))
            continue
        # Created or changed (a deletion runs nothing: judged below as one);
        # ahead of the caches, which are applied without a look.
        host = (host_run(path) or (holds_host_run(path) if new.kind == "symlink" else "")
                or next((why for name, lands in opened if (why := host_files.opened_as(path, name, lands))), "")
                ) if new is not None else ""
        if host:
            out.other.append(path)
            out.destructive.append((path, f"{RUNS_OUTSIDE}: {host}"))
            continue
        if is_cache(path, rules.cache_paths):
            out.caches.append(path)
            continue
        out.other.append(path)
        if new is not None and new.kind == "file":
            total_bytes += new.size
        if new is not None and new.kind == "symlink" and _resolves_into_git(path, new.target, lookup, rules.hooks):
            out.destructive.append((path, f"a symlink into .git ({new.target})"))
            continue
        if new is not None and new.kind == "symlink" and (host := _leads_to(path, new.target, lookup, holds_host_run)):
            out.destructive.append((path, f"{RUNS_OUTSIDE} through a symlink to {new.target}: {host}"))
            continue
        why = _destructive(old, new, kept.get(path), arrived)
        if why:
            out.destructive.append((path, why))
    if len(out.other) > rules.max_files:
        out.destructive.append(("*", f"{len(out.other)} changes, more than the bound of {rules.max_files}"))
    if total_bytes > rules.max_bytes:
        out.destructive.append(("*", f"{total_bytes:,} bytes written, more than the bound of {rules.max_bytes:,}"))
    return out


def _destructive(old: NodeLike | None, new: NodeLike | None, kept: float | None,
                 arrived: set[tuple[str, int]]) -> str:
    if old is None:
        return ""  # created: nothing existed to lose
    if new is None:
        if old.kind == "dir":
            return "deletes an existing folder"
        if old.kind == "file" and (old.sha256, old.size) in arrived and old.size > 0:
            return ""  # renamed: its content is kept at another path
        return "deletes an existing file" if old.kind == "file" else "deletes an existing symlink"
    if old.kind != new.kind:
        return f"replaces an existing {old.kind} with a {new.kind}"
    if old.kind == "symlink":
        return f"re-points an existing symlink ({old.target} -> {new.target})"
    if old.kind == "file":
        added = new.mode & ~old.mode & EXEC_OR_SPECIAL
        if added:
            return f"adds mode bits {oct(added)} to an existing file"
        if old.sha256 != new.sha256 or old.size != new.size:
            if new.size == 0 and old.size > 0:
                return "empties an existing file"
            if kept is not None and kept < KEPT_MIN:
                return f"replaces an existing file's content (keeps {kept:.0%} of it)"
    return ""


def kept_fraction(old: bytes, new: bytes) -> float:
    """How much of ``old`` survives in ``new``: the share of its lines found
    again (as a multiset); for short files, also the characters matched in
    order, so a one-line edit is not taken for a replacement."""
    if not old:
        return 1.0
    old_lines, new_lines = old.splitlines(), new.splitlines()
    counts: dict[bytes, int] = {}
    for line in new_lines:
        counts[line] = counts.get(line, 0) + 1
    same = 0
    for line in old_lines:
        if counts.get(line, 0) > 0:
            counts[line] -= 1
            same += 1
    fraction = same / max(len(old_lines), 1)
    if fraction < KEPT_MIN and len(old) <= 4096 and len(new) <= 4096:
        import difflib

        matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
        matched = sum(b.size for b in matcher.get_matching_blocks())
        fraction = max(fraction, matched / len(old))
    return fraction


# A long file's lines are compared by their hashes, at most this many
# distinct ones (bounded memory); past it, how much was kept is not known.
KEPT_MAX_DISTINCT = 1 << 20


def kept_lines(old_lines: Iterable[bytes], new_lines: Iterable[bytes],
               max_distinct: int = KEPT_MAX_DISTINCT) -> float | None:
    """``kept_fraction``'s line measure over whole files of any length, read
    line by line (a long file's tail counts as much as its start); None when
    the old file has more distinct lines than ``max_distinct``."""
    counts: dict[int, int] = {}
    total = 0
    for line in old_lines:
        key = hash(line.rstrip(b"\r\n"))
        if key not in counts and len(counts) >= max_distinct:
            return None
        counts[key] = counts.get(key, 0) + 1
        total += 1
    if not total:
        return 1.0
    same = 0
    for line in new_lines:
        key = hash(line.rstrip(b"\r\n"))
        if counts.get(key, 0) > 0:
            counts[key] -= 1
            same += 1
    return same / total


# Reasons (from the validator or the policy) of a bash ask that may be
# settled by the command's effects: it might write, or runs project code.
# Any other reason keeps the whole-batch pause before the command runs.
_NOT_BY_EFFECTS = (
    "outside the workspace",
    "network",
    "install",
    "toolchain",
    "standard system folder",
    "remote",
    "system's packages",
    "clock",
    "processes",
    "destructive",
    "policy rule",
    "ask-all",
)


NETWORK_MARKERS = ("network", "install")

# program -> the subcommands that fetch from the network ("*": every use).
# Judged on the validated words, so a wrapper's own options cannot hide them.
NETWORK_COMMANDS: dict[str, frozenset[str]] = {
    "curl": frozenset({"*"}),
    "wget": frozenset({"*"}),
    "pip": frozenset({"install", "download", "wheel"}),
    "pip3": frozenset({"install", "download", "wheel"}),
    "uv": frozenset({"pip", "add", "sync", "lock", "tool", "venv"}),
    "poetry": frozenset({"install", "add", "update", "lock"}),
    "pipenv": frozenset({"install", "sync", "update", "lock"}),
    "npm": frozenset({"install", "i", "ci", "add", "update", "fetch"}),
    "pnpm": frozenset({"install", "i", "add", "update", "fetch"}),
    "yarn": frozenset({"", "install", "add", "upgrade"}),
    "bun": frozenset({"install", "i", "add", "update"}),
    "cargo": frozenset({"fetch", "update", "add", "install", "generate-lockfile", "vendor"}),
    "go": frozenset({"get", "install", "mod"}),
    "gem": frozenset({"install", "fetch", "update"}),
    "bundle": frozenset({"install", "update"}),
    "composer": frozenset({"install", "require", "update"}),
    "git": frozenset({"clone", "fetch", "pull", "submodule", "ls-remote"}),
}


def _subcommand(argv: tuple[str, ...]) -> tuple[str, str]:
    """(program basename, first word after it that is not an option)."""
    words = list(argv)
    program = words[0].rsplit("/", 1)[-1] if words else ""
    if program.startswith("python") and words[1:3] == ["-m", "pip"]:
        program, words = "pip", words[2:]
    rest = [w for w in words[1:] if not w.startswith("-")]
    return program, rest[0] if rest else ""


def needs_network_command(argv: tuple[str, ...]) -> bool:
    """Whether one validated simple command fetches from the network."""
    program, sub = _subcommand(argv)
    wanted = NETWORK_COMMANDS.get(program)
    return wanted is not None and ("*" in wanted or sub in wanted)


# command -> needs the network
NETWORK_CASES: dict[str, bool] = {
    "pip install requests": True,
    "python3 -m pip install -e .": True,
    "npm ci": True,
    "yarn": True,
    "cargo fetch": True,
    "go mod download": True,
    "curl -sSLO https://example.org/x.tar.gz": True,
    "git clone https://example.org/r.git": True,
    "pip list": False,
    "npm test": False,
    "cargo build": False,
    "git status": False,
    "python -m pytest -q": False,
}


def needs_network(reasons: Iterable[str], commands: Iterable[tuple[str, ...]] = ()) -> bool:
    """Whether a bash ask needs the network (downloads, installs): by its
    validated commands, or by what its reasons say."""
    return any(needs_network_command(argv) for argv in commands) or any(
        marker in r for r in reasons for marker in NETWORK_MARKERS
    )


def asks_for_effects(reasons: Iterable[str]) -> bool:
    """Whether every reason a bash call asks for is of the might-write /
    runs-project-code / opaque kind (so it can run captured before approval)."""
    reasons = [r for r in reasons if r]
    if not reasons:
        return False
    return all(not any(marker in r for marker in _NOT_BY_EFFECTS) for r in reasons)


# name -> (changes as (path, old, new) with nodes as (kind, mode, size, sha, target), kept, destructive?)
def _n(kind: str, mode: int = 0o644, size: int = 1, sha: str = "x", target: str = "") -> tuple:
    return (kind, mode, size, sha, target)


CASES: dict[str, tuple[list[tuple], dict[str, float], bool]] = {
    "create a file": ([("new.txt", None, _n("file"))], {}, False),
    "sed -i edit keeps most": ([("a.py", _n("file", sha="1"), _n("file", sha="2"))], {"a.py": 0.9}, False),
    "rmtree src": ([("src/a.py", _n("file"), None), ("src", _n("dir", 0o755), None)], {}, True),
    "cp /dev/null keep.txt": ([("keep.txt", _n("file", size=5, sha="1"), _n("file", size=0, sha="e"))], {}, True),
    "tee replaces": ([("keep.txt", _n("file", size=50, sha="1"), _n("file", size=2, sha="2"))],
                     {"keep.txt": 0.0}, True),
    "mv a b onto b": ([("a", _n("file", size=3, sha="A"), None), ("b", _n("file", size=3, sha="B"),
                       _n("file", size=3, sha="A"))], {"b": 0.0}, True),
    "mv a c (rename)": ([("a", _n("file", size=3, sha="A"), None), ("c", None, _n("file", size=3, sha="A"))],
                        {}, False),
    "ln -sf onto a file": ([("f", _n("file"), _n("symlink", 0o777, target="x"))], {}, True),
    "chmod +x existing": ([("run.sh", _n("file", 0o644), _n("file", 0o755))], {}, True),
    "chmod -w existing": ([("run.sh", _n("file", 0o644), _n("file", 0o444))], {}, False),
    "new executable": ([("run.sh", None, _n("file", 0o755))], {}, False),
    "hook": ([(".git/hooks/pre-commit", _n("file", sha="1"), _n("file", sha="2"))], {}, True),
    "symlink into .git": ([("h", None, _n("symlink", 0o777, target=".git/hooks"))], {}, True),
    "bare repository shape": ([("x/HEAD", None, _n("file")), ("x/objects", None, _n("dir", 0o755)),
                               ("x/refs", None, _n("dir", 0o755)), ("x/config", None, _n("file"))], {}, True),
    "HEAD and refs alone are no git directory": ([("x/HEAD", None, _n("file")), ("x/refs", None, _n("dir", 0o755))],
                                                 {}, False),
    "symlink via dots into .git": ([("d/h", None, _n("symlink", 0o777, target="../.GIT/config"))], {}, True),
    "pycache only": ([("pkg/__pycache__/m.pyc", None, _n("file")),
                      (".pytest_cache/v/lastfailed", _n("file", sha="1"), None)], {}, False),
    "node_modules cache": ([("node_modules/.cache/x", _n("file"), None)], {}, False),
    # Files a tool on the person's machine runs by itself (core.turn.host_files).
    "direnv .envrc created": ([(".envrc", None, _n("file"))], {}, True),
    "nested .envrc edited in place": ([("svc/.envrc", _n("file", sha="1"), _n("file", sha="2"))], {"svc/.envrc": 0.9}, True),
    ".envrc made a symlink to a script": ([(".envrc", None, _n("symlink", 0o777, target="tools/env.sh"))], {}, True),
    "VS Code tasks.json": ([(".vscode/tasks.json", None, _n("file"))], {}, True),
    "VS Code settings.json edited": ([(".vscode/settings.json", _n("file", sha="1"), _n("file", sha="2"))],
                                     {".vscode/settings.json": 0.9}, True),
    "VS Code extensions.json only recommends": ([(".vscode/extensions.json", None, _n("file"))], {}, False),
    "devcontainer.json": ([(".devcontainer/devcontainer.json", None, _n("file"))], {}, True),
    "devcontainer.json in a named subfolder": ([(".devcontainer/py/devcontainer.json", None, _n("file"))], {}, True),
    ".devcontainer.json at the top": ([(".devcontainer.json", None, _n("file"))], {}, True),
    "JetBrains .idea run configuration": ([(".idea/runConfigurations/dev.xml", None, _n("file"))], {}, True),
    "pre-commit config": ([(".pre-commit-config.yaml", _n("file", sha="1"), _n("file", sha="2"))],
                          {".pre-commit-config.yaml": 0.9}, True),
    "symlink to .envrc": ([("env", None, _n("symlink", 0o777, target=".envrc"))], {}, True),
    ".vscode made a symlink": ([(".vscode", None, _n("symlink", 0o777, target="cfg"))], {}, True),
    "symlink via dots to tasks.json": ([("d/t", None, _n("symlink", 0o777, target="../.VSCode/tasks.json"))], {}, True),
    "look-alikes run nothing": ([("envrc", None, _n("file")), (".envrc.example", None, _n("file")),
                                 ("docs/devcontainer.json", None, _n("file")), ("vscode/tasks.json", None, _n("file"))],
                                {}, False),
    "mv keep.txt __pycache__/ (a cache is no rename target)": (
        [("keep.txt", _n("file", size=3, sha="A"), None), ("__pycache__/keep.txt", None, _n("file", size=3, sha="A"))],
        {}, True),
}
