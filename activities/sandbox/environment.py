"""The environment a bash command gets: an allowlist (no host secret reaches
the command), a PATH without folders the command could plant programs in, and
git settings that neutralise a repository's own program-running config."""

from __future__ import annotations

import os
import shutil
import stat

from core.paths import within
from activities.sandbox.git_config import COMMAND_SETTINGS, config_env
from core.shell.environment import KNOWN_ENV
from core.shell.facts import SANDBOX_HOME  # noqa: F401 - HOME inside the sandbox (re-exported)
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def command_path(workspace: str, worker_path: str | None = None) -> str:
    """The worker's PATH without entries a command could plant programs in:
    relative entries ("" and "." mean the cwd, i.e. the workspace) and folders
    inside the workspace. Otherwise a read-only-looking ``ls`` could run a
    script the model wrote."""
    raw = os.environ.get("PATH", DEFAULT_PATH) if worker_path is None else worker_path
    root = os.path.realpath(workspace)
    kept: list[str] = []
    for entry in raw.split(os.pathsep):
        if not entry or not os.path.isabs(entry):
            continue
        if within(os.path.realpath(entry), root) or entry in kept:
            continue
        kept.append(entry)
    return os.pathsep.join(kept) or DEFAULT_PATH


def command_env(workspace: str, home: str, tmpdir: str, git_settings: dict[str, str] | None = None) -> dict[str, str]:
    """The whole environment a command gets: an allowlist, nothing inherited
    except a filtered PATH (API keys, tokens and the like never reach it).
    ``git_settings``: the git config the command gets (default: the fixed
    neutralising settings; activities.sandbox.git_config adds the
    repository's own per-driver keys)."""
    # The fixed part comes from the validator's table, so a `$HOME` written
    # out at plan time is what the command would have seen.
    return {
        **KNOWN_ENV,
        "PATH": command_path(workspace),
        "HOME": home,
        "TMPDIR": tmpdir,
        # A repository's own .git/config can name programs that even a
        # read-only `git status` would run (fsmonitor, hooks, pagers, ext::
        # transports, external diffs, textconv, filters, gpg ...). Config from
        # the environment outranks the repository's.
        **config_env(COMMAND_SETTINGS if git_settings is None else git_settings),
    }



def resolve_program(program: str, path: str, cwd: str) -> str | None:
    if "/" in program:
        candidate = program if os.path.isabs(program) else os.path.join(cwd, program)
        return candidate if os.path.isfile(candidate) and os.access(candidate, os.X_OK) else None
    return shutil.which(program, path=path)


def virtual_environment(folder: str, root: str) -> bool:
    """Whether ``folder`` is a virtual environment inside ``root`` that
    ``source folder/bin/activate`` may activate: a ``pyvenv.cfg``, a bin that
    does not lead out, a ``bin/activate`` that is a regular file (not a link)."""
    bin_folder = os.path.join(folder, "bin")
    if not within(os.path.realpath(bin_folder), root) or not os.path.isfile(os.path.join(folder, "pyvenv.cfg")):
        return False
    try:
        return stat.S_ISREG(os.lstat(os.path.join(bin_folder, "activate")).st_mode)
    except OSError:
        return False
