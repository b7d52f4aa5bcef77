"""Git settings that make git run a program the repository chose. Pure.

A repository's own ``.git/config`` (and every file it includes) can name
programs that even a read-only git command runs: an external diff
(``git diff``), a textconv or diff command for a driver that
``.gitattributes`` assigns (``git log -p``, ``git show``, ``git blame``), a
clean filter (``git status``, ``git diff --stat``), a gpg program
(``log.showSignature``), editors, ssh commands, credential helpers, merge
drivers. Two uses, one table:

* the workspace facts list the keys a repository sets, and every git command
  then asks (``program_keys``);
* the executor puts settings in the command's environment that outrank the
  repository's (config from the environment is read last), so even an
  approved or wrongly allowed git command never runs them
  (``STATIC_SETTINGS`` always, ``neutral_settings`` for the per-driver keys
  a repository defines).
"""

from __future__ import annotations

import re
from typing import Iterable

# Canonical keys as `git config --list` prints them: section and name in
# lower case, the subsection (between the first and the last dot) as written.
_PROGRAM_KEY = re.compile(
    r"diff\.external|diff\..+\.(textconv|command)|filter\..+\.(clean|smudge|process)|merge\..+\.driver"
    r"|gpg\.program|gpg\..+\.program|gpg\.ssh\.defaultkeycommand|log\.showsignature"
    r"|core\.(editor|sshcommand|askpass|fsmonitor|hookspath|pager|gitproxy|alternaterefscommand)"
    r"|sequence\.editor|credential\.helper|credential\..+\.helper|include\.path|includeif\..+\.path"
    r"|pager\..+|interactive\.difffilter|remote\..+\.(uploadpack|receivepack)|submodule\..+\.update"
    r"|(difftool|mergetool|browser|man)\..+\.(cmd|path)|web\.browser|sendemail\..+"
)
# git-lfs, as `git lfs install --local` writes it: the system's program, fixed arguments.
_TRUSTED = frozenset([
    ("filter.lfs.clean", "git-lfs clean -- %f"),
    ("filter.lfs.smudge", "git-lfs smudge -- %f"),
    ("filter.lfs.process", "git-lfs filter-process"),
])
_FALSE = frozenset(["false", "no", "off", "0", ""])

# What an external diff program gets: path old-file old-hex old-mode new-file
# new-hex new-mode. This stands in for it with a plain unified diff (diff
# exits 1 when the files differ, which git would take for a crash).
EXTERNAL_DIFF = 'f() { diff -u --label "a/$1" --label "b/$1" -- "$2" "$5"; test $? -le 1; }; f'

# Always in the environment: the program-naming keys that have no driver name.
STATIC_SETTINGS: dict[str, str] = {
    "core.fsmonitor": "false",
    "core.hooksPath": "/dev/null",
    "core.pager": "cat",
    "protocol.ext.allow": "never",
    "credential.helper": "",
    "diff.external": EXTERNAL_DIFF,
    "log.showSignature": "false",
    "gpg.program": "gpg",
    "gpg.openpgp.program": "gpg",
    "gpg.x509.program": "gpgsm",
    "gpg.ssh.program": "ssh-keygen",
    "gpg.ssh.defaultKeyCommand": "false",
    "core.editor": "true",
    "sequence.editor": "true",
    "core.sshCommand": "ssh",
    "core.askPass": "",
    "interactive.diffFilter": "cat",
}


def _split(key: str) -> tuple[str, str, str]:
    """(section, subsection, name) of a canonical key; subsection may hold dots."""
    section, _, rest = key.partition(".")
    sub, _, name = rest.rpartition(".")
    return section.lower(), sub, name.lower()


def names_a_program(key: str, value: str) -> bool:
    """Whether the setting ``key = value`` makes git run a program."""
    k = key.lower()
    if not _PROGRAM_KEY.fullmatch(k) or (k, value.strip()) in _TRUSTED:
        return False
    if k in ("log.showsignature", "core.fsmonitor"):
        return value.strip().lower() not in _FALSE
    if k.startswith("submodule."):
        return value.lstrip().startswith("!")  # `update = !command`
    if k.startswith("pager."):
        return value.strip().lower() not in _FALSE | {"true", "yes", "on", "1"}
    return True


def program_keys(settings: Iterable[tuple[str, str]]) -> list[str]:
    """``key = value`` for every setting that names a program, in order, once each."""
    found: list[str] = []
    for key, value in settings:
        shown = f"{key} = {value}"
        if names_a_program(key, value) and shown not in found:
            found.append(shown)
    return found


def neutral_settings(settings: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Settings that outrank the per-driver and per-remote program keys in ``settings``."""
    out: dict[str, str] = {}
    for key, value in settings:
        section, sub, name = _split(key)
        if not sub or not names_a_program(key, value):
            continue
        if section == "diff" and name == "textconv":
            out[key] = "cat"  # the file itself: what git shows without a textconv
        elif section == "diff" and name == "command":
            out[key] = EXTERNAL_DIFF
        elif section == "filter" and name in ("clean", "smudge", "process"):
            out[key] = ""  # git applies no filter for an empty command
            out[f"filter.{sub}.required"] = "false"  # ...and a required one would then fail
        elif section == "merge" and name == "driver":
            out[key] = "git merge-file %A %O %B"  # git's own three-way merge into %A
        elif section == "credential" and name == "helper":
            out[key] = ""
        elif section == "remote" and name in ("uploadpack", "receivepack"):
            out[key] = f"git-{name[:-4]}-{name[-4:]}"
        elif section == "gpg" and name == "program":
            out[key] = {"x509": "gpgsm", "ssh": "ssh-keygen"}.get(sub, "gpg")
        elif section == "pager":
            out[key] = "cat"
        elif section == "submodule" and name == "update" and value.lstrip().startswith("!"):
            out[key] = "checkout"
        elif section in ("difftool", "mergetool", "browser", "man") and name in ("cmd", "path"):
            out[key] = "false"
    return out


def git_folders(commands: Iterable[tuple[str, ...]]) -> list[str]:
    """The ``git -C DIR`` folders of the given argvs, in order, relative to
    where each command runs (the repositories a command points git at
    besides its working folder)."""
    found: list[str] = []
    for argv in commands:
        if not argv or argv[0].rsplit("/", 1)[-1] != "git":
            continue
        i = 1
        while i < len(argv) - 1 and argv[i].startswith("-"):
            if argv[i] == "-C" and argv[i + 1] not in found:
                found.append(argv[i + 1])
                i += 2
                continue
            i += 1
    return found
