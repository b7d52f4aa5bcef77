"""Commands that delete or overwrite data. Pure."""

from __future__ import annotations

from core.shell.options import short_hit
from core.shell.programs import Handler
from core.shell.verdict import H_DELETE, J, ask, rej


_DESTROY = frozenset(
    "rm unlink shred dd wipefs fdisk sfdisk cfdisk gdisk sgdisk cgdisk parted mkswap truncate srm "
    "blkdiscard mkfs mke2fs fsck e2fsck tune2fs debugfs resize2fs badblocks lvremove vgremove "
    "pvremove mdadm cryptsetup zpool hdparm sg_format flashrom".split()
)
def _h_destroy(name: str, args: list[str]) -> J:
    return rej(f"`{name}` deletes or overwrites data (destructive)", H_DELETE)


def _h_chmod(name: str, args: list[str]) -> J:
    recursive = any(a in ("-R", "--recursive") or short_hit(a, "R") for a in args)
    if recursive:
        for a in args:
            if not a.startswith("-") and (a.startswith("/") or ".." in a.split("/")):
                return rej(
                    f"`{name} -R` on `{a}` (outside the workspace) is not allowed",
                    "change permissions only on paths inside the workspace (relative, without `..`)",
                )
    return ask(f"`{name}` changes file permissions or owners")

HANDLERS: dict[str, Handler] = dict.fromkeys(_DESTROY, _h_destroy)
HANDLERS.update(dict.fromkeys(("chmod", "chown", "chgrp"), _h_chmod))

# (command, verdict, substring of the reason or None), run by tests/test_shell_rules.py
CASES: list[tuple[str, str, str | None]] = [
    ("rm -rf /", "reject", "deletes"),
    ("shred -u x", "reject", "deletes"),
    ("chmod -R 777 /", "reject", "outside the workspace"),
    ("chmod +x run.sh", "ask", "permissions"),
    ("chown -R me /etc", "reject", "outside the workspace"),
]
