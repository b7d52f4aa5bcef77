"""Commands that delete, overwrite or re-permission data. Pure.

The destructive class: ``rm`` / ``unlink`` of workspace files,
recursive ``chmod`` / ``chown`` / ``chgrp`` and ``truncate`` are ``ask`` with
``destructive`` (a human approves them in every mode, ``auto`` included);
they all ``write`` their paths, so a path outside the workspace rejects
(programs.judge). Tools that destroy beyond recovery or work on devices
(``shred``, ``dd``, ``mkfs`` ...) and huge allocations stay rejected.
"""

from __future__ import annotations

import re

from core.shell.options import long_hit, short_hit
from core.shell.programs import Handler
from core.shell.verdict import H_DELETE, J, ask_writes, destructive, rej

_DESTROY = frozenset(
    "shred dd wipefs wipe fdisk sfdisk cfdisk gdisk sgdisk cgdisk parted mkswap srm zerofree nvme "
    "blkdiscard mkfs mke2fs fsck e2fsck tune2fs debugfs resize2fs badblocks lvremove vgremove "
    "pvremove mdadm cryptsetup zpool hdparm sg_format flashrom".split()
)
_HUGE_SIZE = re.compile(r"[+<>/%]?\d+(?:\.\d+)?\s*(?:[GTPEZY](?:i?B)?|[gtpezy])$|[+<>/%]?\d{10,}$")


def _h_destroy(name: str, args: list[str]) -> J:
    return rej(f"`{name}` deletes or overwrites data beyond recovery (destructive)", H_DELETE)


def _h_rm(name: str, args: list[str]) -> J:
    if any(long_hit(a, ("no-preserve-root",)) for a in args if a != "--"):
        return rej(f"`{name} --no-preserve-root` deletes without protecting `/` (the whole machine)", H_DELETE)
    return destructive(f"`{name}` deletes files for good (no undo)", writes=True)


def _h_chmod(name: str, args: list[str]) -> J:
    if any(long_hit(a, ("recursive",)) or short_hit(a, "R") for a in args if a != "--"):
        return destructive(f"`{name} -R` changes the permissions or owner of a whole tree", writes=True)
    return ask_writes(f"`{name}` changes file permissions or owners")


def _size_values(args: list[str], letters: str, longs: tuple[str, ...]) -> list[str]:
    out = []
    for k, a in enumerate(args):
        if long_hit(a, longs):
            out.append(a.partition("=")[2] if "=" in a else (args[k + 1] if k + 1 < len(args) else ""))
        elif len(a) > 1 and a[0] == "-" and a[1] in letters:
            out.append(a[2:] or (args[k + 1] if k + 1 < len(args) else ""))
    return out


def _h_truncate(name: str, args: list[str]) -> J:
    if any(_HUGE_SIZE.match(v) for v in _size_values(args, "s", ("size",))):
        return rej("`truncate` to a huge size fills the disk", "use a small size; tell the user if a big file is needed")
    return destructive("`truncate` cuts files, losing their content", writes=True)


def _h_fallocate(name: str, args: list[str]) -> J:
    return rej("`fallocate` reserves disk space (a huge allocation fills the disk)",
               "create small files with the write_file tool")


HANDLERS: dict[str, Handler] = dict.fromkeys(_DESTROY, _h_destroy)
HANDLERS.update(dict.fromkeys(("chmod", "chown", "chgrp"), _h_chmod))
HANDLERS.update({"rm": _h_rm, "unlink": _h_rm, "truncate": _h_truncate, "fallocate": _h_fallocate})

# (command, verdict, substring of the reason or None), run by tests/shell/test_shell_rules.py
CASES: list[tuple[str, str, str | None]] = [
    ("rm x.txt", "ask+destructive", "deletes files"),
    ("rm -rf build", "ask+destructive", "deletes files"),
    ("unlink x", "ask+destructive", "deletes files"),
    ("rm -rf /", "reject", "outside the workspace"),
    ("rm -rf ../other", "reject", "outside the workspace"),
    ("rm -rf /./etc", "reject", "outside the workspace"),
    ("rm -rf --no-preserve-root x", "reject", "whole machine"),
    ("rm -rf --no-pres x", "reject", "whole machine"),
    ("shred -u x", "reject", "beyond recovery"),
    ("wipe x", "reject", "beyond recovery"),
    ("dd if=/dev/zero of=x", "reject", "beyond recovery"),
    ("chmod -R 777 /", "reject", "outside the workspace"),
    # abbreviations of --recursive
    ("chmod --rec 000 /", "reject", "outside the workspace"),
    ("chmod --recursive 000 /", "reject", "outside the workspace"),
    ("chown --rec me /etc", "reject", "outside the workspace"),
    ("chmod 644 /etc/passwd", "reject", "outside the workspace"),
    ("chmod -R 000 .", "ask+destructive", "whole tree"),
    ("chmod --rec u+w build", "ask+destructive", "whole tree"),
    ("chmod +x run.sh", "ask", "permissions"),
    ("truncate -s 0 x.log", "ask+destructive", "cuts files"),
    ("truncate -s 100G x", "reject", "huge size"),
    ("truncate --size=5T x", "reject", "huge size"),
    ("truncate -s 0 /etc/passwd", "reject", "outside the workspace"),
    ("fallocate -l 100G x", "reject", "disk space"),
]
