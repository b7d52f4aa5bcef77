"""Workspace facts for the bash validator: the I/O half of judging a command.

``validate_in_workspace(command, workspace_root)`` validates once without
facts (pure), gathers what the pure validator cannot see, and validates again
with those facts:

* the realpath of every path the first pass reported (``Verdict.paths``:
  arguments, attached option values, redirection targets, ``cd`` folders),
  so a symlink inside the workspace that leads outside is judged as outside,
  and whether each one exists (an overwriting redirection onto an existing
  file is destructive);
* the toolchain configuration files the repository has (``rust-toolchain``,
  ``.tool-versions``, ``.python-version``, ``go.mod`` ...), which make even a
  version query (``cargo --version``) start a program the repository names;
* for a command that runs git, the settings of the repository's git config
  (and the files it includes) that name programs (an external diff, a
  textconv, a filter, a gpg program ...): any git command then asks.
* for an allowed command that follows the symbolic links it meets while it
  walks a folder (``grep -R``, ``find -L``, ``du -L``, ``diff -r``), whether a
  link under that folder leads out of the workspace: the command then asks.
* for an allowed command that hands a lister's names to a program that opens
  them (``find . | xargs cat``, ``find -exec cat {} +``, ``git ls-files |
  xargs cat``), the links under the listed folders that lead out: the
  program would open what they lead to, and the command asks.

A rejection from the first pass is final (facts only ever tighten or confirm
a verdict). Cost: a few ``stat`` / ``realpath`` calls per path word, a
``glob`` per glob word, one ``git config --list`` per repository folder
for a command that mentions git, and a walk of the folders a link-following
command walks (bounded like the walk of names for xargs).
"""

from __future__ import annotations

import glob
import importlib.machinery
import itertools
import os
import sys
from typing import Callable, Iterator

from activities.bash.executor import MAX_GLOB_MATCHES
from activities.sandbox.environment import command_path, virtual_environment
from activities.sandbox.git_config import repository_settings
from core.shell import validate_command
from core.paths import within
from core.shell.facts import ALL_TOOLCHAINS, SPLIT_UNKNOWN, WorkspaceFacts, workspace_key
from core.shell.paths import scratch
from core.shell.environment import activated
from core.shell.programs import link_roots, runs_python_module
from core.shell.stdin_names import XARGS_SPLITS, names_from, pipeline_listings, split_at
from core.shell.git_config import git_folders, program_keys
from core.shell.command_plan import Pipeline
from core.shell.verdict import Verdict

# file (relative to a folder of the workspace) -> toolchain family it selects
TOOLCHAIN_FILES: dict[str, str] = {
    "rust-toolchain": "rust",
    "rust-toolchain.toml": "rust",
    ".cargo/config": "rust",
    ".cargo/config.toml": "rust",
    "go.mod": "go",
    "go.work": "go",
    ".python-version": "python",
    ".nvmrc": "node",
    ".node-version": "node",
    ".npmrc": "npm",
    ".yarnrc": "yarn",
    ".yarnrc.yml": "yarn",
    ".ruby-version": "ruby",
    ".tool-versions": ALL_TOOLCHAINS,
    ".mise.toml": ALL_TOOLCHAINS,
    "mise.toml": ALL_TOOLCHAINS,
    ".mise/config.toml": ALL_TOOLCHAINS,
    ".config/mise/config.toml": ALL_TOOLCHAINS,
    ".rtx.toml": ALL_TOOLCHAINS,
}


def _folders(root: str, verdict: Verdict) -> list[str]:
    """The workspace root and every folder between it and a `cd DIR` of the plan."""
    folders = [root]
    cwd = verdict.plan.cwd if verdict.plan is not None else None
    if cwd:
        parts = [p for p in cwd.split("/") if p not in ("", ".")]
        for k in range(1, len(parts) + 1):
            folders.append(os.path.join(root, *parts[:k]))
    return folders


def gather_facts(verdict: Verdict, workspace_root: str) -> WorkspaceFacts:
    root = os.path.realpath(workspace_root)
    realpaths: dict[str, str] = {}
    existing: set[str] = set()
    for key in verdict.paths:
        full = key if key.startswith("/") else os.path.join(root, key)
        realpaths[key] = os.path.realpath(full)
        if os.path.lexists(full):
            existing.add(key)
    toolchains: dict[str, str] = {}
    for folder in _folders(root, verdict):
        for name, fam in TOOLCHAIN_FILES.items():
            path = os.path.join(folder, name)
            if fam not in toolchains and os.path.lexists(path):
                toolchains[fam] = os.path.relpath(path, root)
    git_programs: list[str] = []
    if _mentions_git(verdict):
        folders = _folders(root, verdict)
        plan = verdict.plan
        if plan is not None:  # `git -C DIR`: that folder's repository too (only inside the workspace)
            here = folders[-1]
            for rel in git_folders(c.argv for p in plan.items for c in p.commands):
                folder = os.path.realpath(os.path.join(here, rel))
                if (folder == root or folder.startswith(root.rstrip("/") + "/")) and os.path.isdir(folder):
                    folders.append(folder)
        for folder in dict.fromkeys(folders):
            settings = repository_settings(folder, root)
            if settings is None:  # a repository whose config git cannot read: assume the worst
                git_programs.append(f"{os.path.relpath(folder, root)}: config git could not list")
                continue
            git_programs += [k for k in program_keys(settings) if k not in git_programs]
    env = {"PWD": root, "PATH": command_path(root)}
    budget = [MAX_NAMES_CHECKED]  # one bound for the walks below
    return WorkspaceFacts(root=root, realpaths=realpaths, existing=frozenset(existing), toolchains=toolchains,
                          git_programs=tuple(git_programs), glob_outside=_glob_outside(verdict, root), env=env,
                          split_names=split_names(root) if _cuts_listed_names(verdict) else {},
                          links_out=_links_out(verdict, root, budget),
                          listed_links=_listed_links(verdict, root, budget),
                          module_shadows=_module_shadows(verdict, root), venvs=_venvs(verdict, root))


# Bounds the walk below (a few tenths of a second on this kind of machine);
# a bigger workspace is not checked, and a command that needs the check asks.
MAX_NAMES_CHECKED = 50_000


def _cuts_listed_names(verdict: Verdict) -> bool:
    """Whether an allowed pipeline hands listed names to a program that cuts
    them (``find . | xargs cat``): only then are the workspace's names read."""
    plan = verdict.plan
    if verdict.verdict != "allow" or plan is None:
        return False
    return any(names_from(c.argv) == "-" and split_at(c.argv) for p in plan.items for c in p.commands[1:])


def split_names(root: str, limit: int = MAX_NAMES_CHECKED) -> dict[str, str]:
    """Each character xargs cuts names at, found in a name under ``root`` ->
    the first such path (relative); ``SPLIT_UNKNOWN`` when there are more than
    ``limit`` entries. Links are not followed (listers do not follow them)."""
    found: dict[str, str] = {}
    try:
        for entry, _ in _entries(root, [limit]):
            for ch in XARGS_SPLITS.intersection(entry.name):
                found.setdefault(ch, os.path.relpath(entry.path, root))
    except TooManyEntries:
        return {SPLIT_UNKNOWN: f"the workspace holds more than {limit:,} files, too many to check their names"}
    return found


class TooManyEntries(Exception):
    """A walk met more entries than its budget allows."""


def _entries(start: str, budget: list[int], into: Callable[[str], bool] = lambda target: False,
             ) -> Iterator[tuple[os.DirEntry[str], str | None]]:
    """Every entry under ``start``, folders in name order, each folder once,
    spending ``budget[0]`` by one per entry (TooManyEntries when it runs out),
    with where the entry leads when it is a link. Links are not followed,
    except into a folder ``into(target)`` accepts (the walk goes on there)."""
    seen: set[str] = set()
    stack = [start]
    while stack:
        folder = stack.pop()
        real = os.path.realpath(folder)
        if real in seen:
            continue
        seen.add(real)
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue  # not a folder (or unreadable: the program cannot walk it either)
        for entry in entries:
            budget[0] -= 1
            if budget[0] < 0:
                raise TooManyEntries
            try:
                target = os.path.realpath(entry.path) if entry.is_symlink() else None
                if target is not None and into(target) and os.path.isdir(target):
                    stack.append(target)
                elif target is None and entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
            except OSError:
                continue
            yield entry, target


def _parts_in_folders(verdict: Verdict, root: str) -> Iterator[tuple[str | None, Pipeline]]:
    """Each pipeline of the plan with the folder it runs in: a later ``cd DIR``
    part moves the parts after it (as core.shell.compound judges them)."""
    assert verdict.plan is not None
    cwd = verdict.plan.cwd
    for part in verdict.plan.items:
        argv = part.commands[0].argv if len(part.commands) == 1 else ()
        if len(argv) == 2 and argv[0] == "cd":
            cwd = workspace_key(argv[1], cwd)
            if cwd.startswith("/"):  # inside the workspace (or the cd was rejected)
                cwd = os.path.relpath(os.path.realpath(cwd), root)
            continue
        yield cwd, part


def _links_out(verdict: Verdict, root: str, budget: list[int]) -> dict[str, str]:
    """For each folder an allowed command of the plan walks following links
    (``core.shell.programs.link_roots``), why that walk leaves the workspace;
    folders where it does not are absent. One bound for all the walks."""
    plan = verdict.plan
    if verdict.verdict != "allow" or plan is None:
        return {}
    found: dict[str, str] = {}
    checked: set[str] = set()
    for cwd, part in _parts_in_folders(verdict, root):
        for command in part.commands:
            for word in link_roots(command.argv, command.glob_flags()):
                key = workspace_key(word, cwd)
                if key in checked:
                    continue
                checked.add(key)
                note = link_out(key if key.startswith("/") else os.path.join(root, key), root, budget)
                if note is not None:
                    found[key] = note
    return found


def _module_shadows(verdict: Verdict, root: str) -> dict[str, str] | None:
    """For each folder the plan runs ``python -m`` in (whatever the first
    verdict), why an entry there may be imported in place of a module; None
    when no command does."""
    if verdict.plan is None:
        return None
    found: dict[str, str] | None = None
    for cwd, part in _parts_in_folders(verdict, root):
        for command in part.commands:
            if runs_python_module(command.argv):
                found = {} if found is None else found
                if (cwd or "") not in found:
                    found[cwd or ""] = module_shadow(os.path.join(root, cwd or ""))
    return found


def _venvs(verdict: Verdict, root: str) -> dict[str, tuple[str, ...]] | None:
    """For each folder the plan activates (``source DIR/bin/activate``) that is
    a virtual environment inside the workspace, its workspace programs; None
    when no part activates one."""
    if verdict.plan is None:
        return None
    found: dict[str, tuple[str, ...]] | None = None
    for cwd, part in _parts_in_folders(verdict, root):
        for command in part.commands:
            folder = activated(command.argv)
            if folder is None:
                continue
            found = {} if found is None else found
            key = workspace_key(folder, cwd)
            programs = venv_programs(key if key.startswith("/") else os.path.join(root, key), root)
            if programs is not None:
                found[key] = programs
    return found


def venv_programs(folder: str, root: str) -> tuple[str, ...] | None:
    """The programs the workspace chose in the virtual environment
    ``folder``'s bin: every executable, its python links to the system's
    interpreter too (that interpreter starts with the venv's site-packages,
    whose ``.pth`` files run, so it is the workspace's program there); None
    when ``folder`` is not a virtual environment inside ``root``
    (activities.sandbox.environment.virtual_environment)."""
    if not virtual_environment(folder, root):
        return None
    bin_folder = os.path.join(folder, "bin")
    try:
        with os.scandir(bin_folder) as entries:
            names = sorted(e.name for _, e in zip(range(MAX_NAMES_CHECKED + 1), entries))
    except OSError:
        return None
    if len(names) > MAX_NAMES_CHECKED:
        return (f"more than {MAX_NAMES_CHECKED:,} entries",)
    programs = []
    for name in names:
        path = os.path.join(bin_folder, name)
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            continue  # not run by name from PATH (the activate scripts themselves)
        programs.append(name)
    return tuple(programs)


_MODULE_SUFFIXES = tuple(importlib.machinery.all_suffixes())


def module_shadow(folder: str) -> str:
    """Why an entry of ``folder`` (first on the module path of ``python -m``)
    may be imported in place of a standard or private (``_name``) module: a
    module file (source, bytecode or extension) or a package named so; "" if
    none is. Standard names are this interpreter's list; a newer Python's new
    modules are mostly private ones, which count whatever the list says."""
    try:
        with os.scandir(folder) as entries:
            for n, entry in enumerate(entries):
                if n == MAX_NAMES_CHECKED:
                    return f"the folder it runs in holds more than {MAX_NAMES_CHECKED:,} entries, too many to check"
                if entry.is_dir():
                    if not any(os.path.lexists(os.path.join(entry.path, "__init__" + s)) for s in _MODULE_SUFFIXES):
                        continue  # a namespace folder: a module found later on the path wins
                    module = entry.name
                elif entry.name.endswith(_MODULE_SUFFIXES):
                    module = entry.name.partition(".")[0]
                else:
                    continue
                if module in sys.stdlib_module_names or (module.startswith("_") and not module.startswith("__")):
                    return (f"`{entry.name}` in the folder it runs in is named like a module, and Python "
                            "looks for modules there first")
    except OSError:
        return "the folder it runs in could not be listed"
    return ""


# Installed system software: what a virtualenv's interpreter link points at
# (`.venv/bin/python -> /usr/bin/python3`). Programs and libraries hold no
# one's secrets; /etc, homes and the rest of the host still count as outside.
SYSTEM_SOFTWARE = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")


def _stays(real: str, root: str) -> bool:
    """Whether a walk that follows a link to ``real`` stays where it may read:
    the workspace, the scratch /tmp (inside the sandbox the workspace's own
    scratch folder, never the host's /tmp), or installed system software."""
    return within(real, root) or scratch(real) or any(within(real, d) for d in SYSTEM_SOFTWARE)


def link_out(start: str, root: str, budget: list[int]) -> str | None:
    """Why a walk of ``start`` that follows links leaves ``root``: the first
    link met that leads out (followed on where it leads inside, each folder
    once), or that the walk met more entries than ``budget[0]`` (spent here)."""
    real_start = os.path.realpath(start)
    if not (within(real_start, root) or scratch(real_start)):
        return None  # the folder itself: a path word, judged as such (and not walked: /usr is big)
    try:
        # on into folders the workspace holds (not into /usr: exempt whole, and too big to walk)
        for entry, target in _entries(start, budget, into=lambda target: within(target, root)):
            if target is not None and not _stays(target, root):
                return f"`{os.path.relpath(entry.path, root)}` leads to `{target}`, outside the workspace"
    except TooManyEntries:
        return f"it holds more than {MAX_NAMES_CHECKED:,} files, too many to check for links that lead out"
    return None


def _listed_links(verdict: Verdict, root: str, budget: list[int]) -> dict[str, tuple[tuple[str, str], ...]] | None:
    """For each folder a lister of an allowed command hands names from to a
    program that opens them (``core.shell.stdin_names.pipeline_listings``),
    the links under it that lead out; None when the plan has no such command."""
    plan = verdict.plan
    if verdict.verdict != "allow" or plan is None:
        return None
    found: dict[str, tuple[tuple[str, str], ...]] | None = None
    for cwd, part in _parts_in_folders(verdict, root):
        for roots, _ in pipeline_listings([c.argv for c in part.commands]):
            found = {} if found is None else found
            for word in roots:
                key = workspace_key(word, cwd)
                if key in found:
                    continue
                start = key if key.startswith("/") else os.path.join(root, key)
                if glob.has_magic(word):  # `find src* | xargs cat`: the folders it matches
                    base = "/" if os.path.isabs(word) else os.path.join(root, cwd or "")
                    matches = itertools.islice(glob.iglob(word, root_dir=base), MAX_GLOB_MATCHES)
                    found[key] = tuple(link for m in matches for link in listed_out(os.path.join(base, m), root, budget))
                else:
                    found[key] = listed_out(start, root, budget)
    return found


MAX_LINKS_KEPT = 20


def listed_out(start: str, root: str, budget: list[int]) -> tuple[tuple[str, str], ...]:
    """The links under ``start`` (not followed: a lister without -L does not)
    that lead out of ``root``, each (path relative to ``start``, where it
    leads); a ``""`` path ends the list when there were more than
    ``MAX_LINKS_KEPT`` or the walk met more entries than ``budget[0]``."""
    if not within(os.path.realpath(start), root):
        return ()  # a path word, judged as such (the scratch /tmp is the workspace's own)
    links: list[tuple[str, str]] = []
    try:
        for entry, target in _entries(start, budget):
            if target is not None and not _stays(target, root):
                if len(links) == MAX_LINKS_KEPT:
                    return (*links, ("", f"holds more than {MAX_LINKS_KEPT} links that lead out"))
                links.append((os.path.relpath(entry.path, start), target))
    except TooManyEntries:
        return (*links, ("", f"holds more than {MAX_NAMES_CHECKED:,} files, too many to check for links that lead out"))
    return tuple(links)


def _glob_outside(verdict: Verdict, root: str) -> dict[str, str]:
    """For each glob word of the plan, a match whose realpath is outside the
    workspace (the executor expands globs by name; a match that is a symlink
    leading out would be read through)."""
    plan = verdict.plan
    if plan is None:
        return {}
    workdir = os.path.join(root, plan.cwd) if plan.cwd else root
    found: dict[str, str] = {}
    for part in plan.items:
        for command in part.commands:
            for k, (word, is_glob) in enumerate(zip(command.argv, command.glob_flags())):
                key = workspace_key(word, plan.cwd)
                if not is_glob or k == 0 or key in found or ".." in word.split("/"):
                    continue
                base = "/" if os.path.isabs(word) else workdir
                for m in itertools.islice(glob.iglob(word, root_dir=base), MAX_GLOB_MATCHES):
                    real = os.path.realpath(os.path.join(base, m))
                    if not (real == root or real.startswith(root.rstrip("/") + "/")):
                        found[key] = real
                        break
    return found


def _mentions_git(verdict: Verdict) -> bool:
    """Whether any command of the plan has the word ``git`` (itself, or run by find/xargs)."""
    plan = verdict.plan
    if plan is None:
        return True
    return any(w == "git" or w.endswith("/git") for p in plan.items for c in p.commands for w in c.argv)


def validate_in_workspace(command: str, workspace_root: str) -> Verdict:
    """The verdict for ``command`` run in ``workspace_root`` (see the module doc)."""
    # First pass: only the root is known (absolute paths under it count as inside),
    # which is enough to find every path word; a rejection here is final.
    first = validate_command(command, WorkspaceFacts(root=os.path.normpath(workspace_root)))
    if first.verdict == "reject":
        return first
    return validate_command(command, gather_facts(first, workspace_root))
