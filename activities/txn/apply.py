"""Applying a changeset to the real workspace: check everything, then apply.

``apply_changes`` is shared by the bash journal (new contents from the
overlay), previews and turn rollback (pre-images as the new contents). It is
idempotent, so a retry after a crash finishes the job:

- **Check** every change first, writing nothing: the path's current node must
  equal the change's ``old`` (still to do) or its ``new`` (done by an earlier,
  interrupted attempt); anything else is a conflict (someone changed the file
  since). A folder that will be removed must hold nothing the changeset does
  not remove. A symlink the changeset places must resolve inside the
  workspace, and no path may go through a symlink. Any problem: nothing is
  applied.
- **Apply** the rest in order (deletions deepest first, then parents first,
  folder modes last). Files and symlinks are made under a temporary name in
  their folder and renamed over the target (a crash leaves the old or the new
  version, never half a file); every operation is relative to a folder
  descriptor opened component by component with O_NOFOLLOW.
- **Contents** come from the worker's state folder and are verified: each is
  re-hashed against the digest its change records before anything is
  applied, and again while it is copied in (never hard-linked); modes carry
  permission bits only; only files, folders and symlinks are ever made.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from dataclasses import dataclass, field

from activities.txn.changeset import DIR, FILE, SYMLINK, Change, apply_order, dir_modes_last, same, symlink_escapes
from activities.txn.store import (
    ThroughSymlink,
    WorkspaceReader,
    copy_verified,
    open_dir,
    sha256_file,
    split,
    sync_filesystem,
)


@dataclass
class ApplyReport:
    status: str  # "applied" | "conflict" | "refused" | "stale" (previews)
    applied: list[str] = field(default_factory=list)  # changed now
    already: list[str] = field(default_factory=list)  # found done (an earlier attempt got that far)
    conflicts: list[str] = field(default_factory=list)  # "path: why"
    refused: list[str] = field(default_factory=list)  # "path: why"
    notices: list[str] = field(default_factory=list)
    bad: set[str] = field(default_factory=set, repr=False)  # paths behind conflicts/refusals
    absent: set[str] = field(default_factory=set, repr=False)  # pending paths found absent by the check

    def problem(self, kind: str, path: str, why: str) -> None:
        (self.conflicts if kind == "conflict" else self.refused).append(f"{path}: {why}")
        self.bad.add(path)

    @property
    def ok(self) -> bool:
        return self.status == "applied"

    def text(self) -> str:
        if self.status == "conflict":
            return "Not applied: files changed in the workspace since the command started:\n" + "\n".join(
                f"  {c}" for c in self.conflicts
            )
        if self.status == "stale":
            return ("Not applied: the workspace changed since the preview was made, so the approved diff may "
                    "no longer be what the command would do. It must be asked (previewed) again:\n"
                    + "\n".join(f"  {c}" for c in self.conflicts))
        if self.status == "refused":
            return "Not applied (unsafe changeset):\n" + "\n".join(f"  {r}" for r in self.refused)
        done = len(self.applied) + len(self.already)
        return f"Applied {done} change{'s' if done != 1 else ''} to the workspace."


def _content_ok(content_dir: str, c: Change) -> str:
    """'' when the change's stored content hashes to its recorded digest, else why not."""
    path = os.path.join(content_dir, c.content)
    if not c.content or os.path.commonpath([content_dir, os.path.normpath(path)]) != content_dir:
        return f"its stored content {c.content!r} is not in the transaction folder"
    try:
        got = sha256_file(path)
    except OSError as exc:
        return f"its stored content is unreadable ({exc.strerror or exc})"
    return "" if got == c.new.sha256 else "its stored content does not match the recorded sha256 (changed since)"


def _plan(root: str, changes: list[Change], reader: WorkspaceReader,
          content_dir: str = "", verify: bool = True) -> tuple[list[Change], ApplyReport]:
    """(changes still to apply, report with problems). ``report.absent``:
    pending paths that do not exist now."""
    report = ApplyReport("applied")
    pending: list[Change] = []
    # Folders the changeset puts where a file or symlink is now: below them
    # the workspace has nothing yet (the apply replaces them first).
    new_dirs = {c.path for c in changes if c.new is not None and c.new.kind == DIR and (c.old is None or c.old.kind != DIR)}
    for c in changes:
        try:
            st = reader.stat(c.path, strict=True)
        except ThroughSymlink as exc:
            parts = c.path.split("/")
            if not any("/".join(parts[:i]) in new_dirs for i in range(1, len(parts))):
                report.problem("refused", c.path, f"writing through a symlink ({exc})")
                continue
            st = None
        cur = reader.node(c.path, st) if st is not None else None
        if st is not None and cur is None:
            report.problem("conflict", c.path, "is now a special file (fifo, socket or device)")
            continue
        if same(cur, c.new):
            report.already.append(c.path)
        elif cur is not None and cur.kind == DIR and c.new is not None and c.new.kind == DIR:
            pending.append(c)  # a folder that exists (perhaps made by an interrupted attempt): set its mode
        elif same(cur, c.old):
            pending.append(c)
            if cur is None:
                report.absent.add(c.path)
        else:
            report.problem("conflict", c.path, f"{_describe(cur)} now, expected {_describe(c.old)}")
    for c in pending if verify else ():
        if c.new is not None and c.new.kind == FILE:
            why = _content_ok(content_dir, c)
            if why:
                report.problem("refused", c.path, why)
    pending = [c for c in pending if c.path not in report.bad]

    removed = {c.path for c in changes if c.new is None}
    for c in pending:
        if c.old is not None and c.old.kind == DIR and (c.new is None or c.new.kind != DIR):
            extra = [n for n in reader.children(c.path) if f"{c.path}/{n}" not in removed]
            if extra:
                report.problem("conflict", c.path, f"now holds {', '.join(sorted(extra)[:5])} (added since)")

    after = {c.path: c.new for c in changes}

    def lookup(rel: str):
        if rel in after:
            return after[rel]
        return reader.node(rel, content=False)

    for c in pending:
        parent = split(c.path)[0]
        if c.new is not None and parent and (lookup(parent) is None or lookup(parent).kind != DIR):
            report.problem("conflict", c.path, f"its folder {parent}/ is gone or not a folder")
    for path, why in symlink_escapes(root, changes, lookup):
        report.refused.append(why)
        report.bad.add(path)
    if report.refused:
        report.status = "refused"
    elif report.conflicts:
        report.status = "conflict"
    return pending, report


def _describe(node) -> str:
    if node is None:
        return "absent"
    if node.kind == FILE:
        return f"file ({node.size} bytes, sha256 {node.sha256[:12]})"
    if node.kind == SYMLINK:
        return f"symlink -> {node.target}"
    return f"folder (mode {oct(node.mode)})"


def apply_changes(
    root: str, content_dir: str, changes: list[Change], *, tag: str, partial: bool = False, verify: bool = True
) -> ApplyReport:
    """Check then apply ``changes`` to the workspace at ``root``. New file
    contents are ``content_dir/<change.content>``, verified (before anything
    is applied, unless ``verify`` is False: contents this attempt hashed
    itself moments ago; the copy re-hashes them either way) and copied. ``partial``
    (rollback) leaves out the changes with problems, listed, and applies the
    rest; otherwise any problem means nothing is applied."""
    reader = WorkspaceReader(root)
    try:
        content_dir = os.path.realpath(content_dir)
        pending, report = _plan(root, changes, reader, content_dir, verify)
        dropped = ApplyReport("applied")
        while partial and not report.ok and report.bad:
            dropped.conflicts += report.conflicts
            dropped.refused += report.refused
            changes = [c for c in changes if c.path not in report.bad]
            pending, report = _plan(root, changes, reader, content_dir, verify)
        report.conflicts, report.refused = dropped.conflicts + report.conflicts, dropped.refused + report.refused
        if not report.ok:
            return report
        for c in apply_order(pending):
            _apply_one(reader, content_dir, c, tag, c.path in report.absent)
            report.applied.append(c.path)
        for c in dir_modes_last(pending):
            fd = open_dir(reader.fd, c.path)
            try:
                os.fchmod(fd, c.new.mode)
            finally:
                os.close(fd)
        if pending:
            sync_filesystem(root)
        return report
    finally:
        reader.close()


def _tmp_name(tag: str, path: str) -> str:
    # Stable across attempts, so a retry finds (and clears) what a crash left.
    return f".txn-{tag[:40]}-{hashlib.sha1(path.encode()).hexdigest()[:12]}.tmp"


def _free_tmp(pfd: int, tag: str, path: str) -> str:
    """The temporary name to use in the folder at ``pfd``, cleared. Only files
    and symlinks are ever made under it, so one of those is left by an
    interrupted attempt; a folder there is not ours (the name is predictable,
    and an earlier command may have made it): the next name is tried."""
    base = _tmp_name(tag, path)
    for i in range(64):
        tmp = f"{base}.{i}" if i else base
        try:
            st = os.lstat(tmp, dir_fd=pfd)
        except FileNotFoundError:
            return tmp
        if not stat.S_ISDIR(st.st_mode):
            os.unlink(tmp, dir_fd=pfd)
            return tmp
    raise OSError(errno.EEXIST, f"folders hold every temporary name for {path} ({base} and 63 more)")


def _remove(pfd: int, name: str) -> None:
    try:
        os.unlink(name, dir_fd=pfd)
    except IsADirectoryError:
        os.rmdir(name, dir_fd=pfd)
    except FileNotFoundError:
        pass
    except OSError as exc:
        if exc.errno != errno.EPERM:  # EPERM: unlink of a folder on some systems
            raise
        os.rmdir(name, dir_fd=pfd)


def _copy_in(content_dir: str, c: Change, name: str, pfd: int) -> None:
    copy_verified(os.path.join(content_dir, c.content), name, dst_dir_fd=pfd, mode=c.new.mode,
                  sha256=c.new.sha256, mtime_ns=c.mtime_ns or None)


def _apply_one(reader: WorkspaceReader, content_dir: str, c: Change, tag: str, absent: bool) -> None:
    parent, name = split(c.path)
    pfd = reader.dir_fd(parent)
    if absent and c.new is not None and c.new.kind == FILE:
        # Nothing there (the check saw so): a copy straight to the name that is
        # removed on any mismatch; no temporary needed.
        try:
            _copy_in(content_dir, c, name, pfd)
            return
        except FileExistsError:
            pass
    try:
        st = os.lstat(name, dir_fd=pfd)
    except FileNotFoundError:
        st = None
    reader.forget(c.path)  # whatever was known about this path as a folder is about to change
    if c.new is None:
        _remove(pfd, name)
        return
    if c.new.kind == DIR:
        if st is not None and not stat.S_ISDIR(st.st_mode):
            _remove(pfd, name)
            st = None
        if st is None:
            os.mkdir(name, c.new.mode | 0o700, dir_fd=pfd)  # exact mode set last
        return
    tmp = _free_tmp(pfd, tag, c.path)
    if c.new.kind == SYMLINK:
        os.symlink(c.new.target, tmp, dir_fd=pfd)
    else:
        _copy_in(content_dir, c, tmp, pfd)
    if st is not None and stat.S_ISDIR(st.st_mode):
        os.rmdir(name, dir_fd=pfd)  # a folder replaced by a file: emptied by the deletions before
    os.rename(tmp, name, src_dir_fd=pfd, dst_dir_fd=pfd)
