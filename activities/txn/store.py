"""Where transactional bash keeps its state, and the careful file operations
it uses on the real workspace.

Layout (all inside the workspace's artifacts folder, so on the workspace's
filesystem: hard links and renames between them never copy):

    <ws>/.agent-artifacts/txn/<turn>/<call>/
        upper/ work/      the overlay's upper layer and work dir; once journaled,
                          upper/ holds the new file contents the manifest names
        mounted           written by the launcher right before the command starts;
                          its ctime is the "command started" mark for conflict checks
        pre/<i>           pre-images (hard links to the replaced inodes, or copies)
        manifest.json     the journal (fsync'd, replaced atomically)
        applied           marker: the journal has been applied
        lock              flock'd by the one attempt capturing or applying this call

The overlay itself is mounted on an empty "view" folder in the worker's
temporary folder (outside the workspace), never inside this tree.

Every write into the workspace goes through directory descriptors opened
component by component with O_NOFOLLOW (``open_dir``), so neither the
changeset nor a concurrent process can make the worker (which is not
sandboxed) write through a symlink.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import hashlib
import json
import os
import stat
from typing import Any, Iterator

from activities.txn.changeset import DIR, FILE, SPECIAL_BITS, SYMLINK, Node
from activities.workspace.paths import ARTIFACTS_DIR, WorkspaceError
from core.paths import within

TXN_DIR = "txn"
MANIFEST = "manifest.json"
APPLIED = "applied"
MOUNTED = "mounted"

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class ThroughSymlink(Exception):
    """A path component is a symlink: refusing to go through it."""


def safe_name(value: str, fallback: str) -> str:
    """A call or turn id as one path component (ids are model/user supplied)."""
    cleaned = "".join(c if c.isalnum() or c in "-_." else "_" for c in value)[:96].strip(".")
    return cleaned or fallback


def artifacts_base(root: str) -> str:
    """<ws>/.agent-artifacts, created (with its ``*`` .gitignore) if missing;
    refused when a command replaced it with a symlink or a file."""
    base = os.path.join(root, ARTIFACTS_DIR)
    try:
        st = os.lstat(base)
        if not stat.S_ISDIR(st.st_mode):
            raise WorkspaceError(f"{ARTIFACTS_DIR} in the workspace is a symlink or not a folder; remove it")
    except FileNotFoundError:
        os.mkdir(base, 0o755)
    ignore = os.path.join(base, ".gitignore")
    if not os.path.lexists(ignore):
        fd = os.open(ignore, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        with os.fdopen(fd, "w") as fh:
            fh.write("*\n")
    return base


def _no_symlinks(*paths: str) -> None:
    # The worker is not sandboxed: its transaction state must never be read
    # from, or written to, wherever a planted symlink points.
    for part in paths:
        if os.path.islink(part):
            raise WorkspaceError(f"{part} is a symlink; refusing to keep transaction state there")


def turn_dir(root: str, turn_id: str, create: bool = False) -> str:
    base = os.path.join(root, ARTIFACTS_DIR, TXN_DIR)
    if create:
        base = os.path.join(artifacts_base(root), TXN_DIR)
        os.makedirs(base, exist_ok=True)
    path = os.path.join(base, safe_name(turn_id, "turn"))
    if create:
        os.makedirs(path, exist_ok=True)
    _no_symlinks(os.path.join(root, ARTIFACTS_DIR), base, path)
    return path


def call_dir(root: str, turn_id: str, call_id: str, create: bool = False) -> str:
    path = os.path.join(turn_dir(root, turn_id, create), safe_name(call_id, "call"))
    if create:
        os.makedirs(path, exist_ok=True)
    _no_symlinks(path)
    return path


LOCK = "lock"


def lock_call(folder: str, wait: bool) -> int | None:
    """An exclusive flock on the call's folder (released when the fd is
    closed, or the process dies). Two attempts of one call can overlap (a
    heartbeat timeout while the first worker still lives): only one may
    capture or apply at a time. None when ``wait`` is False and it is held."""
    fd = os.open(os.path.join(folder, LOCK), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def under_artifacts(rel: str) -> bool:
    return within(rel, ARTIFACTS_DIR)


# --- durability ---------------------------------------------------------------

_libc = ctypes.CDLL(None, use_errno=True)


def sync_filesystem(path: str) -> None:
    """One syncfs(2) for the filesystem holding ``path``: far cheaper than an
    fsync per file when a changeset holds thousands of files."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        if _libc.syncfs(fd) != 0:
            os.fsync(fd)
    finally:
        os.close(fd)


def write_json_durably(path: str, data: Any) -> None:
    tmp = f"{path}.tmp-{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    with os.fdopen(fd, "w") as fh:
        fh.write(json.dumps(data, separators=(",", ":")))  # dumps: the C encoder (dump is pure Python)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    fsync_dir(os.path.dirname(path))


def fsync_dir(path: str) -> None:
    fd = os.open(path, _DIR_FLAGS)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_json(path: str) -> Any:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def touch_durably(path: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    fsync_dir(os.path.dirname(path))


# --- hashing and copying ------------------------------------------------------


def sha256_fd(fd: int) -> str:
    digest = hashlib.sha256()
    os.lseek(fd, 0, os.SEEK_SET)
    while chunk := os.read(fd, 1 << 20):
        digest.update(chunk)
    return digest.hexdigest()


def sha256_file(path: str) -> str:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        return sha256_fd(fd)
    finally:
        os.close(fd)


def link_or_copy(src: str, dst: str, *, dst_dir_fd: int | None = None, link: bool = True, mode: int | None = None) -> None:
    """Hard-link ``src`` to ``dst`` (no data copied), else copy it (mode and
    mtime kept). ``dst`` is created, never followed, relative to dst_dir_fd."""
    if link:
        try:
            os.link(src, dst, dst_dir_fd=dst_dir_fd, follow_symlinks=False)
            if mode is not None:
                fd = os.open(dst, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dst_dir_fd)
                try:
                    if stat.S_IMODE(os.fstat(fd).st_mode) != mode:
                        os.fchmod(fd, mode)
                finally:
                    os.close(fd)
            return
        except OSError as exc:
            if exc.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK):
                raise
    fd_in = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd_out = os.open(dst, flags, 0o600, dir_fd=dst_dir_fd)
        try:
            while chunk := os.read(fd_in, 1 << 20):
                os.write(fd_out, chunk)
            st = os.fstat(fd_in)
            os.fchmod(fd_out, stat.S_IMODE(st.st_mode) if mode is None else mode)
            os.utime(fd_out, ns=(st.st_atime_ns, st.st_mtime_ns))
        finally:
            os.close(fd_out)
    finally:
        os.close(fd_in)


# --- directory-descriptor walks on the workspace -------------------------------


def open_root(root: str) -> int:
    return os.open(root, _DIR_FLAGS)


def open_dir(root_fd: int, rel_dir: str) -> int:
    """Open the folder ``rel_dir`` (relative, '/'-separated) below root_fd, one
    component at a time with O_NOFOLLOW. Raises ThroughSymlink when a
    component is a symlink, NotADirectoryError when it is a file,
    FileNotFoundError when missing."""
    fd = os.dup(root_fd)
    for part in [p for p in rel_dir.split("/") if p]:
        if part in (".", ".."):
            os.close(fd)
            raise ThroughSymlink(f"path component {part!r} in {rel_dir!r}")
        try:
            nfd = os.open(part, _DIR_FLAGS, dir_fd=fd)
        except OSError as exc:
            try:
                is_link = exc.errno in (errno.ELOOP, errno.ENOTDIR) and stat.S_ISLNK(
                    os.lstat(part, dir_fd=fd).st_mode
                )
            except OSError:
                is_link = False
            finally:
                os.close(fd)
            if is_link:
                raise ThroughSymlink(f"{rel_dir!r}: {part!r} is a symlink") from None
            raise
        os.close(fd)
        fd = nfd
    return fd


def split(rel: str) -> tuple[str, str]:
    parent, _, name = rel.rpartition("/")
    return parent, name


def walk_files(top: str) -> Iterator[tuple[str, os.stat_result]]:
    """(relative path, lstat) of everything below ``top``, parents first,
    never following symlinks."""
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        with os.scandir(os.path.join(top, rel_dir) if rel_dir else top) as it:
            entries = sorted(it, key=lambda e: e.name)
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            st = entry.stat(follow_symlinks=False)
            yield rel, st
            if stat.S_ISDIR(st.st_mode):
                stack.append(rel)


class WorkspaceReader:
    """Read (and, for the apply, reach) the real workspace through directory
    descriptors opened one component at a time with O_NOFOLLOW: no symlink
    among a path's parents is ever followed. Folder descriptors are cached
    (a changeset of 10,000 files in one folder opens it once); ``forget`` a
    folder the caller removes or replaces. A descriptor from ``dir_fd`` is
    valid until the next ``dir_fd`` call: use it, do not keep it."""

    CACHE = 64

    def __init__(self, root: str) -> None:
        self.root = root
        self.fd = open_root(root)
        self._dirs: dict[str, int] = {}
        self._missing: dict[str, type[OSError]] = {}  # folders found absent (or files): 10,000 new files in one

    def close(self) -> None:
        for fd in self._dirs.values():
            os.close(fd)
        self._dirs.clear()
        os.close(self.fd)

    def dir_fd(self, rel_dir: str) -> int:
        """The folder ``rel_dir``; raises like ``open_dir``."""
        if not rel_dir:
            return self.fd
        fd = self._dirs.pop(rel_dir, None)
        if fd is None:
            if rel_dir in self._missing:
                raise self._missing[rel_dir](errno.ENOENT, "not a folder here", rel_dir)
            parent, name = split(rel_dir)
            try:
                fd = open_dir(self.dir_fd(parent), name)
            except (FileNotFoundError, NotADirectoryError) as exc:
                if len(self._missing) > 4096:
                    self._missing.clear()
                self._missing[rel_dir] = type(exc)
                raise
            while len(self._dirs) >= self.CACHE:
                os.close(self._dirs.pop(next(iter(self._dirs))))
        self._dirs[rel_dir] = fd  # most recently used last
        return fd

    def forget(self, rel: str) -> None:
        """The caller removed, replaced or created ``rel``: drop what is cached about it."""
        for key in [k for k in self._dirs if k == rel or k.startswith(rel + "/")]:
            os.close(self._dirs.pop(key))
        for key in [k for k in self._missing if k == rel or k.startswith(rel + "/")]:
            del self._missing[key]

    def stat(self, rel: str, strict: bool = False) -> os.stat_result | None:
        """lstat of ``rel``; None when absent. A symlink among its parents
        counts as absent, or raises ThroughSymlink when ``strict``."""
        parent, name = split(rel)
        try:
            dfd = self.dir_fd(parent)
        except ThroughSymlink:
            if strict:
                raise
            return None
        except (FileNotFoundError, NotADirectoryError):
            return None
        try:
            return os.lstat(name, dir_fd=dfd)
        except FileNotFoundError:
            return None

    def node(self, rel: str, st: os.stat_result | None = None, content: bool = True) -> Node | None:
        """The node at ``rel`` (None: absent); ``content=False`` skips hashing."""
        st = st or self.stat(rel)
        if st is None:
            return None
        return node_of(st, (lambda: self._hash(rel)) if content else str, lambda: self._readlink(rel))

    def open_file(self, rel: str) -> int:
        """A read-only descriptor for the file ``rel`` (never through a symlink)."""
        parent, name = split(rel)
        return os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=self.dir_fd(parent))

    def _hash(self, rel: str) -> str:
        fd = self.open_file(rel)
        try:
            return sha256_fd(fd)
        finally:
            os.close(fd)

    def _readlink(self, rel: str) -> str:
        parent, name = split(rel)
        return os.readlink(name, dir_fd=self.dir_fd(parent))

    def children(self, rel: str) -> list[str]:
        try:
            dfd = open_dir(self.fd, rel)
        except (ThroughSymlink, FileNotFoundError, NotADirectoryError):
            return []
        try:
            return sorted(os.listdir(dfd))
        finally:
            os.close(dfd)


def node_of(st: os.stat_result, hash_fn, readlink_fn) -> Node | None:
    mode = stat.S_IMODE(st.st_mode) & ~SPECIAL_BITS
    if stat.S_ISREG(st.st_mode):
        return Node(FILE, mode, st.st_size, hash_fn())
    if stat.S_ISDIR(st.st_mode):
        return Node(DIR, mode)
    if stat.S_ISLNK(st.st_mode):
        return Node(SYMLINK, 0, 0, "", readlink_fn())
    return None  # fifos, sockets, devices: not something a changeset carries


def changed_since(root: str, since_ns: int, limit: int = 20) -> list[str]:
    """Workspace paths (the artifacts folder aside) whose inode changed at or
    after ``since_ns`` (ctime: content, mode, links; a folder's covers entries
    added, removed or renamed in it). Stops after ``limit`` finds."""
    found: list[str] = []
    if os.lstat(root).st_ctime_ns >= since_ns:
        found.append(".")
    stack = [""]
    while stack and len(found) < limit:
        rel_dir = stack.pop()
        with os.scandir(os.path.join(root, rel_dir) if rel_dir else root) as it:
            for entry in it:
                rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
                if under_artifacts(rel):
                    continue
                st = entry.stat(follow_symlinks=False)
                if st.st_ctime_ns >= since_ns:
                    found.append(rel)
                if stat.S_ISDIR(st.st_mode):
                    stack.append(rel)
    return found[:limit]
