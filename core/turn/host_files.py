"""Files a tool on the person's machine runs by itself. Pure.

The sandbox confines what a command does while it runs; these files run
later, outside it, when the person merely uses the folder: nobody invokes
them. So a change that creates or alters one asks a person in every mode,
``auto`` included, like a change under ``.git`` (whose hooks and config git
runs the same way).

| file | what runs it |
|---|---|
| ``.envrc`` (any folder) | direnv, in the user's shell, on ``cd`` into the folder: at once where ``direnv.toml`` whitelists it, else once allowed |
| ``.vscode/tasks.json`` | VS Code: a task with ``"runOptions": {"runOn": "folderOpen"}`` runs when the folder opens |
| ``.vscode/settings.json`` | VS Code and its extensions run the programs workspace settings name (interpreters, tool and shell paths) |
| ``.devcontainer/devcontainer.json``, ``.devcontainer/<name>/devcontainer.json``, ``.devcontainer.json`` | Dev Containers: ``initializeCommand`` runs on the host when the container starts |
| anything under ``.idea/`` | JetBrains IDEs launch the run configurations listed as startup tasks when the project opens |
| ``.pre-commit-config.yaml`` | pre-commit's git hook (``pre-commit install``) runs the hooks it lists on the next ``git commit``: what runs changes without ``.git/hooks`` changing |

Compared case-insensitively (a case-insensitive file system opens
``.VSCode/tasks.json`` for ``.vscode/tasks.json``). Not here: files a person's
tool reads without running (``.gitattributes`` names filter drivers that only
git config defines; ``.gitmodules``' ``update = !command`` is ignored by git),
and files that run only when a person runs or debugs the project
(``Makefile``, ``package.json``, ``conftest.py``, ``launch.json``).
"""

from __future__ import annotations

import unicodedata

DIRENV = "direnv runs .envrc in the user's shell on cd (at once in a folder direnv.toml whitelists)"
VSCODE_TASKS = "VS Code runs a task marked runOn folderOpen when the folder opens"
VSCODE_SETTINGS = "VS Code and its extensions run the programs workspace settings name (interpreter, tool and shell paths)"
DEVCONTAINER = "Dev Containers run its initializeCommand on the host, outside the container, when it starts"
JETBRAINS = "JetBrains IDEs launch the run configurations listed as startup tasks when the project opens"
PRE_COMMIT = "pre-commit's git hook runs the hooks it lists on the person's next git commit (once pre-commit is installed)"

# How every such reason starts: the effect gate ranks it among changes that run code.
RUNS_OUTSIDE = "runs outside the sandbox"

# Names a host-run file can have below a folder: a folder that can hold one
# (or a link standing in for it) is a way to plant one.
_PROBES = ("tasks.json", "devcontainer.json", "workspace.xml")


def _parts(path: str) -> list[str]:
    return [_as_opened(p) for p in path.replace("\\", "/").split("/") if p not in ("", ".")]


def _as_opened(name: str) -> str:
    """``name`` as a person's file system may match it: case folded the
    Unicode way (``ſ`` is ``s``, the Kelvin sign ``k``) after compatibility
    normalization (a case-insensitive file system also ignores composition),
    without the trailing dots and spaces Windows drops (``.envrc.`` opens
    ``.envrc``). Folding more than a file system does only asks more."""
    folded = unicodedata.normalize("NFKC", name).casefold()
    return folded if folded in ("", ".", "..") else folded.rstrip(". ") or folded


def host_run(path: str) -> str:
    """Why a tool on the person's machine runs the file at ``path`` (relative
    to the workspace) without being asked, or ''."""
    parts = _parts(path)
    if not parts:
        return ""
    name, folders = parts[-1], parts[:-1]
    if name == ".envrc":
        return DIRENV
    if folders[-1:] == [".vscode"] and name in ("tasks.json", "settings.json"):
        return VSCODE_TASKS if name == "tasks.json" else VSCODE_SETTINGS
    if name == ".devcontainer.json" or (name == "devcontainer.json" and ".devcontainer" in folders[-2:]):
        return DEVCONTAINER
    if ".idea" in folders:
        return JETBRAINS
    if name == ".pre-commit-config.yaml":
        return PRE_COMMIT
    return ""


# The host-run files and folders a tool looks for at the top of the folder
# it opens: a symlink there that leads to a file makes that file one.
TOP_LEVEL = (".envrc", ".vscode", ".devcontainer", ".devcontainer.json", ".idea", ".pre-commit-config.yaml")


def opened_name(path: str, name: str, lands: str) -> str:
    """The name a tool opens ``path`` by when the symlink ``name`` leads to
    ``lands`` (all relative to the workspace; ``.vscode -> cfg`` opens
    ``cfg/tasks.json`` as ``.vscode/tasks.json``), or '' when it does not lead there."""
    if lands in ("", "."):  # a link to the top folder itself
        return f"{name}/{path}"
    if path == lands:
        return name
    return f"{name}/{path[len(lands) + 1:]}" if path.startswith(lands + "/") else ""


def opened_as(path: str, name: str, lands: str) -> str:
    """What the tool runs when ``path`` changes and ``name`` is a symlink
    that leads to ``lands``: the ``host_run`` reason of the name it opens
    ``path`` by, or ''."""
    opened = opened_name(path, name, lands)
    return host_run(opened) if opened else ""


def holds_host_run(path: str) -> str:
    """``host_run`` of ``path`` itself or of a file a folder there can hold
    (``.vscode``, ``.devcontainer``, ``.idea``): what a symlink at, or to,
    ``path`` opens a way to."""
    return host_run(path) or next((why for probe in _PROBES if (why := host_run(f"{path}/{probe}"))), "")
