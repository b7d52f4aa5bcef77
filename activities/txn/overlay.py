"""Copy-on-write capture of a command's workspace effects.

The command runs on an overlay: the workspace is the lower layer, a per-call
folder in the worker's state folder (``<state>/txn/<turn>/<call>/``, outside
the workspace) holds the upper layer,
and the workspace itself is untouched until the changeset is applied. The
overlay is mounted in a private mount namespace over the workspace's own
path, so bubblewrap's usual ``--bind WS WS`` binds the merged view without
knowing about it; ``Capture.wrap(bwrap_argv)`` is all the executor changes.

The launcher is fixed: ``unshare`` (as root: a mount namespace; otherwise a
user namespace mapping us to root, with ``userxattr``) runs ``/bin/sh -c
LAUNCHER`` whose script is a constant; paths and the command's argv are its
positional arguments, never part of a shell string. In that namespace it:

1. mounts the overlay on an empty "view" folder outside the workspace (a
   fresh temporary folder of the worker's);
2. binds the real artifacts folder over the view's, read-only: a command can
   read earlier full outputs but never write there;
3. writes the ``mounted`` marker (its ctime is the command's start mark) and
   hides a ``txn/`` folder an older release left there behind an empty
   read-only tmpfs;
4. binds the view (recursively) over the workspace's own path and execs the
   command (bubblewrap). ``mount --move`` would save the view folder but is
   refused in a user namespace.

Overlay options: ``redirect_dir=off`` (a renamed folder is copied, so the
upper layer holds plain files), ``metacopy=off`` (a chmod copies the data
too), ``index=off``. Whiteouts (char device 0/0) are deletions; an opaque
folder (``trusted.overlay.opaque`` / ``user.overlay.opaque``) replaced
whatever the workspace held there.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
from dataclasses import dataclass, field
from typing import Sequence

from activities.txn.changeset import DIR, FILE, SPECIAL_BITS, Change, Changeset, bounds_refusal, detect_renames
from activities.txn.store import (
    MANIFEST,
    MOUNTED,
    WorkspaceReader,
    artifacts_base,
    call_dir,
    lock_call,
    node_of,
    sha256_file,
    under_artifacts,
)
from activities.settings import current as current_settings
from activities.txn.state import state_root
from activities.workspace.paths import ARTIFACTS_DIR, WorkspaceError
from core.config import TXN_ENV
from activities.workspace.root import control_character, shown


_LAUNCHER = r"""
ws=$1 view=$2 opts=$3 marker=$4 mnt=$5
shift 5
"$mnt" -t overlay overlay -o "$opts" "$view" || exit 125
"$mnt" --bind "$ws/.agent-artifacts" "$view/.agent-artifacts" || exit 125
: > "$marker" || exit 125
if [ -d "$view/.agent-artifacts/txn" ]; then
  "$mnt" -t tmpfs -o ro,size=4k,mode=755 txn-hidden "$view/.agent-artifacts/txn" || exit 125
fi
"$mnt" -o remount,bind,ro "$view/.agent-artifacts" || exit 125
"$mnt" --rbind "$view" "$ws" || exit 125
exec "$@"
"""


class CaptureUnavailable(Exception):
    """Overlay capture cannot work here; the message says why."""


class CaptureBusy(Exception):
    """Another attempt of the same call is capturing right now (retry later)."""


def _mode() -> str:
    return "root" if os.geteuid() == 0 else "userns"


def _tools() -> tuple[str, str, str]:
    unshare, mount, sh = shutil.which("unshare"), shutil.which("mount"), "/bin/sh"
    if unshare is None or mount is None:
        raise CaptureUnavailable("unshare(1) or mount(1) is not installed")
    return unshare, mount, sh


def _check_path(path: str) -> None:
    # The overlay's option string is split on ',' and lowerdir on ':'.
    bad = sorted({c for c in path if c in ",:\\\n"})
    if bad:
        raise CaptureUnavailable(f"the workspace path contains {''.join(bad)!r}, which overlay mount options cannot carry")


@dataclass
class Capture:
    """One command's overlay: ``wrap`` its argv, run it, then ``scan``."""

    workspace: str
    dir: str  # the call's transaction folder
    view: str = ""  # the empty folder the overlay is mounted on (outside the workspace)
    turn_id: str = ""
    call_id: str = ""
    lock_fd: int | None = None  # held from begin until the capture is journaled or discarded
    mode: str = field(default_factory=_mode)

    @property
    def upper(self) -> str:
        return os.path.join(self.dir, "upper")

    @property
    def work(self) -> str:
        return os.path.join(self.dir, "work")

    @property
    def marker(self) -> str:
        return os.path.join(self.dir, MOUNTED)

    def options(self) -> str:
        opts = f"lowerdir={self.workspace},upperdir={self.upper},workdir={self.work}"
        if self.mode == "userns":
            return opts + ",userxattr"  # redirect_dir/metacopy/index are off with userxattr
        return opts + ",redirect_dir=off,metacopy=off,index=off"

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """The launcher argv that runs ``argv`` (bubblewrap's) on the overlay."""
        unshare, mount, sh = _tools()
        ns = ["--mount", "--propagation", "private"]
        if self.mode == "userns":
            ns = ["--user", "--map-root-user", *ns]
        return [unshare, *ns, "--", sh, "-c", _LAUNCHER, "txn-launch",
                self.workspace, self.view, self.options(), self.marker, mount, *argv]

    def mounted(self) -> bool:
        """Did the command start on the overlay (the launcher got that far)?"""
        return os.path.exists(self.marker)

    def started_ns(self) -> int:
        return os.lstat(self.marker).st_ctime_ns

    def discard(self, keep_upper: bool = False) -> None:
        """Remove the layers (a timed-out or refused command applies nothing);
        ``keep_upper``: only the overlay's scratch (a journal points into upper/)."""
        for path in (self.work,) if keep_upper else (self.upper, self.work):
            remove_tree(path)
        self.drop_view()
        if self.lock_fd is not None:
            os.close(self.lock_fd)
            self.lock_fd = None

    def drop_view(self) -> None:
        """Remove the view folder once the command is over (it was only ever
        a mount point inside the command's namespace: empty out here)."""
        if self.view:
            try:
                os.rmdir(self.view)
            except OSError:
                pass


def remove_tree(path: str) -> None:
    if not os.path.lexists(path):
        return
    try:
        shutil.rmtree(path)
        return
    except PermissionError:
        pass  # the overlay's work/work is mode 000; as non-root we must open it up first
    except RecursionError:  # shutil recurses per level: a command can nest deeper than that
        _remove_deep(path)
        return
    for dirpath, dirnames, _ in os.walk(path):  # top-down: a folder is opened up before it is entered
        for name in dirnames:
            full = os.path.join(dirpath, name)
            if not os.path.islink(full):
                os.chmod(full, 0o700)
    shutil.rmtree(path)


def _remove_deep(path: str) -> None:
    """Remove a folder tree of any depth with one descriptor open at a time:
    down into the first subfolder, back up through '..' once it is empty
    (nothing else writes in the worker's state folder)."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    fd, names = os.open(path, flags), []
    try:
        while True:
            sub = None
            with os.scandir(fd) as it:
                for entry in it:
                    if entry.is_dir(follow_symlinks=False):
                        sub = sub or entry.name
                    else:
                        os.unlink(entry.name, dir_fd=fd)
            if sub is not None:
                try:
                    child = os.open(sub, flags, dir_fd=fd)
                except PermissionError:
                    os.chmod(sub, 0o700, dir_fd=fd)
                    child = os.open(sub, flags, dir_fd=fd)
                os.close(fd)
                fd = child
                names.append(sub)
                continue
            if not names:
                break
            parent = os.open("..", flags, dir_fd=fd)
            os.close(fd)
            fd = parent
            os.rmdir(names.pop(), dir_fd=fd)
    finally:
        os.close(fd)
    os.rmdir(path)


def begin(workspace: str, turn_id: str, call_id: str) -> Capture:
    """Prepare an empty overlay for one call. Raises CaptureUnavailable."""
    if current_settings().txn == "off":
        raise CaptureUnavailable(f"disabled ({TXN_ENV}=off)")
    root = os.path.realpath(workspace)
    _check_path(root)
    _tools()
    artifacts_base(root)
    folder = call_dir(root, turn_id, call_id, create=True)
    lock = lock_call(folder, wait=False)
    if lock is None:
        raise CaptureBusy(f"another attempt of call {call_id!r} is still running its command")
    if os.path.exists(os.path.join(folder, MANIFEST)):
        os.close(lock)
        raise FileExistsError(f"call {call_id!r} of turn {turn_id!r} already has a journal: finish it, do not re-run")
    for leftover in ("upper", "work", "pre", MOUNTED):  # a run that crashed before its journal was written
        path = os.path.join(folder, leftover)
        if os.path.isdir(path) and not os.path.islink(path):
            remove_tree(path)
        elif os.path.lexists(path):
            os.unlink(path)
    cap = Capture(root, folder, tempfile.mkdtemp(prefix="agent-txn-view-"), turn_id, call_id, lock_fd=lock)
    for path in (cap.upper, cap.work):
        os.mkdir(path, 0o700)
    return cap


_status: dict[tuple[int, int], tuple[bool, str]] = {}


def overlay_status(workspace: str) -> tuple[bool, str]:
    """(works, reason): probed once per filesystem by running ``true`` on an overlay."""
    root = os.path.realpath(workspace)
    try:
        dev = os.stat(root).st_dev
    except OSError as exc:
        return False, f"cannot stat the workspace: {exc}"
    try:
        key = (dev, os.stat(state_root(root)).st_dev)  # the upper layer lives in the state folder
    except (OSError, WorkspaceError) as exc:
        return False, f"cannot use the state folder: {exc}"
    if key not in _status:
        _status[key] = _probe(root)
    return _status[key]


def _probe(root: str) -> tuple[bool, str]:
    try:
        cap = begin(root, ".probe", f"p{os.getpid()}")
    except (CaptureUnavailable, OSError) as exc:
        return False, str(exc)
    try:
        true = shutil.which("true") or "/bin/true"
        proc = subprocess.run(cap.wrap([true]), capture_output=True, timeout=20, stdin=subprocess.DEVNULL)
        if proc.returncode != 0 or not cap.mounted():
            err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
            return False, f"overlay mount failed (exit {proc.returncode}: {err[-1] if err else 'no message'})"
        return True, ""
    except (OSError, subprocess.SubprocessError) as exc:
        return False, f"overlay launcher could not run: {exc}"
    finally:
        cap.discard()
        remove_tree(os.path.dirname(cap.dir))


# --- scanning the upper layer -----------------------------------------------------


@dataclass
class Scan:
    changeset: Changeset
    changed_during: list[str]  # workspace paths the changeset touches that changed after the command started
    too_large: str = ""  # the refusal when the scan stopped at a bound (the changeset is then incomplete)


class _OverBound(Exception):
    pass


# The scan recurses per folder level; a command can nest far deeper than
# Python's recursion (or PATH_MAX) allows, and no real change needs this.
MAX_SCAN_DEPTH = 256


def _opaque(path: str, mode: str) -> bool:
    # Only the namespace this mount keeps its own markers in: the other one is
    # the command's data (as root, a user.overlay.opaque the command set on a
    # folder is ignored by the overlay, whose view still showed the old entries).
    name = "trusted.overlay.opaque" if mode == "root" else "user.overlay.opaque"
    try:
        return os.getxattr(path, name, follow_symlinks=False) == b"y"
    except OSError:
        return False


# Python bytecode is a cache, but of code: a .pyc whose header names its
# source's size and mtime runs in place of that source on the next import (on
# the person's machine too), and nothing shows what it does. Caches land
# without a look, so bytecode never lands at all; Python writes its own again.
_BYTECODE = (".pyc", ".pyo")


def scan(cap: Capture, max_bytes: int = 0, max_entries: int = 0) -> Scan:
    """Turn the upper layer into a changeset (upper vs the real workspace).
    Past ``max_bytes`` of new content or ``max_entries`` changes (0: no
    bound) it stops, before hashing further, and says so in ``too_large``:
    a sparse file can claim terabytes and a command can leave millions of
    names, and neither may hold the worker."""
    cap.drop_view()
    lower = WorkspaceReader(cap.workspace)
    started = cap.started_ns() if cap.mounted() else 0
    changes = _Bounded(max_bytes, max_entries)
    skipped: list[tuple[str, str]] = []
    during: list[str] = []

    def note_old(rel: str, st: os.stat_result | None) -> None:
        if st is not None and started and st.st_ctime_ns >= started:
            during.append(rel)

    def delete_lower_tree(rel: str, keep: set[str]) -> None:
        """Everything the workspace holds below ``rel`` except names in keep."""
        changes.check_depth(rel)
        for name in lower.children(rel):
            if name in keep:
                continue
            child = f"{rel}/{name}" if rel else name
            st = lower.stat(child)
            old = lower.node(child, st) if st else None
            note_old(child, st)
            if old is None:
                if st is not None:
                    skipped.append((child, "special file in the workspace; left in place"))
                continue
            if old.kind == DIR:
                delete_lower_tree(child, set())
            changes.append(Change(child, old, None))

    def visit(rel_dir: str, hidden: bool) -> None:
        changes.check_depth(rel_dir)
        top = os.path.join(cap.upper, rel_dir) if rel_dir else cap.upper
        with os.scandir(top) as it:
            entries = sorted(it, key=lambda e: e.name)
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            bad = control_character(entry.name)
            if bad is not None:  # the file tools refuse such names: an approver could misread them
                skipped.append((shown(rel), f"name holds a control character (U+{ord(bad):04X}): never applied"))
                continue
            if under_artifacts(rel):
                skipped.append((rel, f"under {ARTIFACTS_DIR}: never applied"))
                continue
            st = entry.stat(follow_symlinks=False)
            if entry.name.endswith(_BYTECODE) and not stat.S_ISDIR(st.st_mode) and not (
                stat.S_ISCHR(st.st_mode) and st.st_rdev == 0  # a deletion lands: Python rebuilds it
            ):
                skipped.append((rel, "Python bytecode: never applied (Python rebuilds it from the source)"))
                continue
            lst = lower.stat(rel)
            old = lower.node(rel, lst) if lst else None
            note_old(rel, lst)
            if stat.S_ISCHR(st.st_mode) and st.st_rdev == 0:  # whiteout
                if old is not None:
                    if old.kind == DIR:
                        delete_lower_tree(rel, set())
                    changes.append(Change(rel, old, None))
                continue
            # Counted before hashing, unless it may be an unchanged copy-up
            # (same size as the workspace file): that one is counted once known changed.
            sized = stat.S_ISREG(st.st_mode) and (old is None or old.kind != FILE or old.size != st.st_size)
            if sized:
                changes.count_bytes(st.st_size)
            new = node_of(st, lambda: sha256_file(entry.path), lambda: os.readlink(entry.path))
            if new is None:
                skipped.append((rel, "fifo, socket or device file: not applied"))
                continue
            opaque = new.kind == DIR and (hidden or _opaque(entry.path, cap.mode))
            if old is not None and old.kind == DIR and (new.kind != DIR or opaque):
                names = set(os.listdir(entry.path)) if new.kind == DIR else set()
                delete_lower_tree(rel, names)
            if new.kind == DIR:
                if old is None or not old.same(new):
                    changes.append(Change(rel, old, new))
                visit(rel, opaque)
                continue
            if old is not None and old.same(new):
                continue  # copied up but unchanged (opened for writing, touched)
            if new.kind == FILE and not sized:
                changes.count_bytes(new.size)
            if stat.S_IMODE(st.st_mode) & SPECIAL_BITS:
                os.chmod(entry.path, new.mode)  # our copy: setuid/setgid never reach the workspace
            changes.append(Change(rel, old, new, content=f"upper/{rel}", mtime_ns=st.st_mtime_ns))

    try:
        visit("", False)
    except _OverBound:
        return Scan(Changeset(list(changes), skipped), sorted(set(during)), changes.refusal())
    finally:
        lower.close()
    detect_renames(changes)
    return Scan(Changeset(list(changes), skipped), sorted(set(during)))


class _Bounded(list):
    """The scan's changes, raising _OverBound once past a bound."""

    def __init__(self, max_bytes: int, max_entries: int) -> None:
        super().__init__()
        self.max_bytes, self.max_entries, self.total = max_bytes, max_entries, 0
        self.too_deep = False

    def append(self, change: Change) -> None:
        super().append(change)
        if self.max_entries and len(self) > self.max_entries:
            raise _OverBound

    def count_bytes(self, size: int) -> None:
        self.total += size
        if self.max_bytes and self.total > self.max_bytes:
            raise _OverBound

    def check_depth(self, rel: str) -> None:
        if rel.count("/") >= MAX_SCAN_DEPTH:
            self.too_deep = True
            raise _OverBound

    def refusal(self) -> str:
        if self.too_deep:
            return (f"The command's changes are nested deeper than {MAX_SCAN_DEPTH} folders; nothing was applied "
                    "to the workspace.")
        return bounds_refusal(self.total, len(self), self.max_bytes, self.max_entries, at_least=True) or ""

