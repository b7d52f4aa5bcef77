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
  version query (``cargo --version``) start a program the repository names.

A rejection from the first pass is final (facts only ever tighten or confirm
a verdict). Cost: a few ``stat`` / ``realpath`` calls per path word.
"""

from __future__ import annotations

import os

from activities.sandbox.environment import command_path
from core.shell import validate_command
from core.shell.facts import ALL_TOOLCHAINS, WorkspaceFacts
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
    env = {"PWD": root, "PATH": command_path(root)}
    return WorkspaceFacts(root=root, realpaths=realpaths, existing=frozenset(existing), toolchains=toolchains, env=env)


def validate_in_workspace(command: str, workspace_root: str) -> Verdict:
    """The verdict for ``command`` run in ``workspace_root`` (see the module doc)."""
    # First pass: only the root is known (absolute paths under it count as inside),
    # which is enough to find every path word; a rejection here is final.
    first = validate_command(command, WorkspaceFacts(root=os.path.normpath(workspace_root)))
    if first.verdict == "reject":
        return first
    return validate_command(command, gather_facts(first, workspace_root))
