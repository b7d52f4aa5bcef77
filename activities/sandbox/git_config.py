"""The git settings a workspace's repository sets (its .git/config, the files
that includes, the worktree's config), read with the real git so includes,
quoting and subsections are parsed exactly as the command's git will.

Listing runs no program the repository names (``git config --list`` only
reads files); system and global config are left out (the operator's, not the
repository's), and discovery stops at the workspace (a repository above it
is not the one the sandboxed command sees)."""

from __future__ import annotations

import os
import shutil
import subprocess

from core.shell.git_config import STATIC_SETTINGS, neutral_settings

LIST_TIMEOUT_S = 10
# Command-scope settings of the listing itself: read the local config whoever
# owns the folder (a superset of what the command's git reads), and never take
# a plain folder for a bare repository (the command's git is told the same).
_LISTING_CONFIG = {"safe.directory": "*", "safe.bareRepository": "explicit"}
# Also always in the command's environment (see STATIC_SETTINGS): a workspace
# shaped like a bare repository (HEAD, objects/, refs/, config) is not one.
COMMAND_SETTINGS = {**STATIC_SETTINGS, "safe.bareRepository": "explicit"}


def config_env(settings: dict[str, str]) -> dict[str, str]:
    """``settings`` as GIT_CONFIG_COUNT / _KEY_n / _VALUE_n variables (read after every config file)."""
    env = {"GIT_CONFIG_COUNT": str(len(settings))}
    for i, (key, value) in enumerate(settings.items()):
        env[f"GIT_CONFIG_KEY_{i}"] = key
        env[f"GIT_CONFIG_VALUE_{i}"] = value
    return env


def _has_repository(folder: str, top: str) -> bool:
    """A `.git` in ``folder`` or a folder above it up to ``top``."""
    folder, top = os.path.normpath(folder), os.path.normpath(top)
    while True:
        if os.path.lexists(os.path.join(folder, ".git")):
            return True
        if folder == top or not folder.startswith(top.rstrip("/") + "/"):
            return False
        folder = os.path.dirname(folder)


def repository_settings(folder: str, top: str) -> list[tuple[str, str]] | None:
    """(key, value) of every setting the repository at ``folder`` (found no
    higher than ``top``, the workspace) sets, in the order git reads them;
    None when there is a repository but its config could not be listed."""
    if not _has_repository(folder, top):
        return []
    git = shutil.which("git", path="/usr/local/bin:/usr/bin:/bin")
    if git is None:
        return None
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/nonexistent", "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CEILING_DIRECTORIES": os.path.dirname(os.path.normpath(top)),
        "LC_ALL": "C", **config_env(_LISTING_CONFIG),
    }
    try:
        done = subprocess.run([git, "config", "--list", "-z"], cwd=folder, env=env, capture_output=True,
                              timeout=LIST_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    out = done.stdout
    if done.returncode != 0 and not out:
        # No settings at all (exit 1) is fine; a config git cannot parse is not.
        return None if done.stderr.strip() else []
    settings: list[tuple[str, str]] = []
    for entry in out.split(b"\0"):
        if not entry:
            continue
        key, _, value = entry.decode("utf-8", "surrogateescape").partition("\n")
        if key.lower() not in ("safe.directory", "safe.bareRepository".lower()):
            settings.append((key, value))
    return settings


def command_git_settings(folders: list[str], top: str) -> dict[str, str]:
    """The git settings a command's environment gets: the fixed ones, then one
    for each program key the repositories at ``folders`` define per driver."""
    out = dict(COMMAND_SETTINGS)
    for folder in dict.fromkeys(folders):
        out.update(neutral_settings(repository_settings(folder, top) or []))
    return out
