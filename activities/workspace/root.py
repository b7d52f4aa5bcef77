"""File access confined to the workspace that cannot be raced (Go 1.24's ``os.Root`` is the model).

The worker runs as root, outside the sandbox, while sandboxed commands may
change the workspace at any moment. Checking a path and then opening it by
name loses to a script that swaps a folder for a symlink in between (measured:
outside files read, writes landing outside). So nothing here re-opens a
checked name: a path is resolved into an open descriptor of its *parent
folder* plus one final name, and every operation is then relative to that
descriptor (``os.open``/``os.stat``/``os.mkdir``/``os.rename`` with
``dir_fd``, ``O_NOFOLLOW`` on the last step).

Resolution, beneath the root's descriptor:

- ``openat2(2)`` with ``RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`` where the
  kernel has it (called through ctypes; ENOSYS or EPERM, from an old kernel or
  a seccomp filter, switch to the walk for good): the kernel resolves the
  folder and refuses any escape (``..``, absolute or outside symlinks,
  ``/proc`` magic links) atomically; a final name that is a symlink is left
  to the walk;
- otherwise, or when openat2 refuses (it rejects *every* absolute symlink, also
  one pointing back inside), component by component with
  ``O_PATH | O_DIRECTORY | O_NOFOLLOW``: a symlink met on the way is read with
  ``readlink`` relative to its folder's descriptor and its target resolved by
  us, still beneath the root; one that leads outside is refused, never followed.

A path that leaves the workspace at any step is refused even if it would come
back in (as ``os.Root`` does). Names holding control characters are refused.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from core.paths import within

MAX_SYMLINKS = 40  # the kernel's own limit (ELOOP)
_DIR = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_SYS_OPENAT2 = 437  # the same number on every architecture (the unified syscall table)
RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_NO_SYMLINKS = 0x04
RESOLVE_BENEATH = 0x08
# Bidirectional overrides and isolates reorder what a terminal shows.
_BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def serves(allowed_root: str, asked_root: str) -> bool:
    """Whether a worker started for ``allowed_root`` may serve a request for
    ``asked_root`` (the folder itself or one beneath it, both resolved)."""
    return within(os.path.realpath(asked_root), os.path.realpath(allowed_root))


class WorkspaceError(Exception):
    """A path the tool must refuse; the message is written for the model."""


class PathChanged(WorkspaceError):
    """The path kept changing (a symlink appeared) while it was being opened."""


def shown(path: str, limit: int = 200) -> str:
    """A path for a message: escaped, and cut when absurdly long."""
    text = path if len(path) <= limit else path[:limit] + "..."
    return repr(text)


def clip(text: str, limit: int = 200) -> str:
    """Cut the middle out of a long path or message: its head names the path
    and its tail holds the reason (say, a 4,000-character path then "File
    name too long"); a model that sent 6,000 characters does not need them
    back twice."""
    if len(text) <= limit:
        return text
    half = (limit - 5) // 2
    return text[:half] + " ... " + text[-half:]


def control_character(text: str) -> str | None:
    """The first control character in ``text`` (C0, DEL, C1, bidi controls,
    lone surrogates), or None."""
    for ch in text:
        if ch in _BIDI_CONTROLS or unicodedata.category(ch) in ("Cc", "Cs"):
            return ch
    return None


def check_name(path: str) -> None:
    """Refuse names a terminal or an approver could misread, and what the OS cannot encode."""
    if "\x00" in path:
        raise WorkspaceError("path contains a NUL byte: give a plain relative path")
    bad = control_character(path)
    if bad is not None:
        kind = "a lone surrogate" if unicodedata.category(bad) == "Cs" else "a control character"
        raise WorkspaceError(
            f"path {shown(path)} contains {kind} (U+{ord(bad):04X}); names with newlines, escape "
            "sequences or other control characters are refused: use a plain name"
        )


# ----------------------------------------------------------------- openat2


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


_libc = ctypes.CDLL(None, use_errno=True)
_openat2_works: bool | None = None  # None: not tried yet


class _NoOpenat2(Exception):
    pass


def openat2(dir_fd: int, path: str, flags: int, resolve: int) -> int:
    """openat2(2) through ctypes; raises _NoOpenat2 where the kernel (or a
    seccomp filter) does not offer it, OSError for a refused path."""
    global _openat2_works
    if _openat2_works is False:
        raise _NoOpenat2
    how = _OpenHow(flags, 0, resolve)
    fd = _libc.syscall(_SYS_OPENAT2, dir_fd, os.fsencode(path), ctypes.byref(how), ctypes.sizeof(how))
    if fd >= 0:
        _openat2_works = True
        return fd
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EPERM, errno.E2BIG) or (err == errno.EINVAL and _openat2_works is None):
        _openat2_works = False
        raise _NoOpenat2
    raise OSError(err, os.strerror(err), path)


def openat2_available() -> bool:
    try:
        os.close(openat2(os.open("/", _DIR), ".", _DIR, RESOLVE_BENEATH))
    except (_NoOpenat2, OSError):
        return False
    return True


# ---------------------------------------------------------------- locations


@dataclass
class Location:
    """Where a path ends: an open descriptor of the real folder holding it
    (owned: close it) and the final name in it ("." for the folder itself)."""

    dir_fd: int
    name: str
    rel: str  # the real path relative to the root, "/"-separated ("." for the root)

    def close(self) -> None:
        if self.dir_fd >= 0:
            os.close(self.dir_fd)
            self.dir_fd = -1

    def __enter__(self) -> "Location":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def lstat(self) -> os.stat_result | None:
        """The entry's own stat (never through a link); None if it does not exist."""
        try:
            return os.stat(self.name, dir_fd=self.dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            return None

    def open(self, flags: int, mode: int = 0o666) -> int:
        """Open the final name itself; a symlink swapped in meanwhile is never followed."""
        try:
            return os.open(self.name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=self.dir_fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise PathChanged(f"{self.rel} was replaced by a symlink while it was being opened; try again") from None
            raise

    def sibling(self, name: str) -> "Location":
        return Location(os.dup(self.dir_fd), name, _join(_parent(self.rel), name))


def _join(parent: str, name: str) -> str:
    return name if parent in ("", ".") else f"{parent}/{name}"


def _parent(rel: str) -> str:
    return rel.rpartition("/")[0] or "."


class WorkspaceRoot:
    """The workspace root held open; every operation resolves beneath it."""

    def __init__(self, root: str | Path) -> None:
        given = os.path.abspath(str(root))
        real = os.path.realpath(given)
        try:
            self.fd = os.open(real, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            raise WorkspaceError(
                f"workspace root {str(root)!r} is not a folder on this worker; "
                "check the turn's workspace and the worker's --workspace"
            ) from None
        self.path = Path(real)
        self._prefixes = [p for p in dict.fromkeys((real, given)) if p != "/"]

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> "WorkspaceRoot":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- paths the model gives

    def parts(self, path: str) -> list[str]:
        """The components of ``path`` relative to the root (not yet resolved)."""
        if not isinstance(path, str) or path.strip() == "":
            raise WorkspaceError("path is empty: give a path relative to the workspace root, e.g. 'src/app.py'")
        check_name(path)
        if not path.startswith("/"):
            parts = [p for p in path.split("/") if p not in ("", ".")]
            if ".." in parts and os.path.normpath("/".join(parts)).split("/")[0] == "..":
                # Leaves the root whatever the links say (refused even where a link would bring it back).
                raise WorkspaceError(
                    f"path {shown(path)} resolves outside the workspace ({self.path}); only files under the "
                    "workspace root can be used: give a path relative to it"
                )
            return parts
        rest = self._strip_root(path)
        if rest is None:
            # /proc/self/root/<workspace>/..., the root given through a link:
            # where does it land? Only the part below the root is then used,
            # and resolved again beneath the root's descriptor.
            try:
                rest = self._strip_root(os.path.realpath(path))
            except (OSError, ValueError):
                rest = None
            if rest is None:
                raise WorkspaceError(
                    f"path {shown(path)} is outside the workspace ({self.path}); only files under the "
                    "workspace root can be used: give a path relative to it"
                )
        return rest

    def _strip_root(self, absolute: str) -> list[str] | None:
        for prefix in self._prefixes:
            if absolute == prefix or absolute.startswith(prefix + "/"):
                return [p for p in absolute[len(prefix) :].split("/") if p not in ("", ".")]
        return None

    # -- resolution

    def locate(self, path: str, *, follow: bool = True, create_parents: bool = False) -> Location:
        """Resolve ``path`` to (folder descriptor, final name). ``follow``: a
        final symlink is resolved too (staying beneath the root). Missing
        folders raise FileNotFoundError, or are created with
        ``create_parents``. Escapes raise WorkspaceError."""
        parts = self.parts(path)
        loc = None
        if parts and ".." not in parts and not create_parents:
            loc = self._locate_openat2(parts, follow)
        if loc is None:
            loc = self._walk(path, parts, follow, create_parents)
        if control_character(loc.rel) is not None:  # reached through a link to such a name
            loc.close()
            check_name(loc.rel)
        return loc

    def _locate_openat2(self, parts: list[str], follow: bool) -> Location | None:
        """The kernel's resolution of the folder; None to take the slow walk
        (no openat2, or a case the walk explains or handles better)."""
        try:
            # No O_NOFOLLOW: RESOLVE_BENEATH already keeps a final link of the folder path inside.
            fd = openat2(self.fd, "/".join(parts[:-1]) or ".", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC,
                         RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)
        except (_NoOpenat2, OSError):
            return None
        try:
            rel_dir = self.folder_of(fd)
            if rel_dir is None:  # moved or deleted meanwhile ("... (deleted)"), or no /proc
                os.close(fd)
                return None
            name = parts[-1]
            if follow and _readlink(name, fd) is not None:
                os.close(fd)
                return None  # a final symlink: the walk resolves it, staying beneath the root
            return Location(fd, name, _join(rel_dir, name))
        except BaseException:
            with _quiet():
                os.close(fd)
            raise

    def folder_of(self, fd: int) -> str | None:
        """Where the folder open at ``fd`` is now, relative to the root ("."
        for the root); None when it left the root or /proc cannot say."""
        try:
            real = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            return None
        base = str(self.path)
        if real == base:
            return "."
        return real[len(base) + 1 :] if real.startswith(base + "/") else None

    def _walk(self, path: str, parts: list[str], follow: bool, create_parents: bool) -> Location:
        fds: list[int] = []  # descriptors of the folders below the root, outermost first
        names: list[str] = []  # their real names
        pending = list(reversed(parts))  # a stack: the next component is last
        links = creations = retries = 0

        def here() -> int:
            return fds[-1] if fds else self.fd

        def expand(name: str, target: str) -> None:
            nonlocal links
            links += 1
            if links > MAX_SYMLINKS:
                raise WorkspaceError(
                    f"path {shown(path)} goes through too many symlinks (a symlink loop?) at "
                    f"{_join('/'.join(names), name)}; give a plain path"
                )
            where = _join("/".join(names), name)
            check_name(target)
            if target.startswith("/"):
                rest = self._strip_root(target)
                if rest is None:
                    raise WorkspaceError(
                        f"path {shown(path)} resolves outside the workspace: it goes through the symlink "
                        f"{where} -> {shown(target)}; only files under the workspace root can be used"
                    )
                while fds:
                    os.close(fds.pop())
                names.clear()
                pending.extend(reversed(rest))
            else:
                pending.extend(reversed([p for p in target.split("/") if p not in ("", ".")]))

        try:
            while pending:
                name = pending.pop()
                if name in ("", "."):
                    continue
                if name == "..":
                    if not names:
                        raise WorkspaceError(
                            f"path {shown(path)} resolves outside the workspace ({self.path}); only files "
                            "under the workspace root can be used: give a path relative to it"
                        )
                    os.close(fds.pop())
                    names.pop()
                    continue
                if not any(p not in ("", ".") for p in pending):  # the final component
                    target = _readlink(name, here()) if follow else None
                    if target is not None:
                        expand(name, target)
                        continue
                    pending.clear()
                    return Location(os.dup(here()), name, _join("/".join(names), name))
                try:
                    fd = os.open(name, _DIR, dir_fd=here())
                except FileNotFoundError:
                    if not create_parents:
                        raise
                    with _quiet(FileExistsError):
                        os.mkdir(name, 0o777, dir_fd=here())
                    pending.append(name)  # look again: it may be anything now
                    creations += 1
                    if creations > 100:  # a racing script deleting it each time
                        raise WorkspaceError(f"could not create the folder {_join('/'.join(names), name)}: "
                                             "it keeps disappearing") from None
                    continue
                except OSError as exc:
                    if exc.errno not in (errno.ENOTDIR, errno.ELOOP):
                        raise
                    target = _readlink(name, here())
                    if target is None:
                        st = os.stat(name, dir_fd=here(), follow_symlinks=False)
                        retries += 1
                        if (stat.S_ISDIR(st.st_mode) or stat.S_ISLNK(st.st_mode)) and retries <= 100:
                            pending.append(name)  # swapped between our two looks: look again
                            continue
                        raise NotADirectoryError(
                            errno.ENOTDIR, f"{_join('/'.join(names), name)} is a file, not a folder"
                        ) from None
                    expand(name, target)
                    continue
                fds.append(fd)
                names.append(name)
                creations = 0  # progress: the bound is on one folder made again and again, not on depth
            # Ended on a folder ('.', 'a/..', or a link to a folder).
            return Location(os.dup(here()), ".", "/".join(names) or ".")
        finally:
            for fd in fds:
                os.close(fd)

    def lookup(
        self, path: str, *, follow: bool = True, create_parents: bool = False
    ) -> tuple[Location, os.stat_result | None]:
        """``locate`` and the final entry's stat; resolved again if a symlink
        appears at the end between the two (a few times, then PathChanged)."""
        for _ in range(5):
            loc = self.locate(path, follow=follow, create_parents=create_parents)
            try:
                st = loc.lstat()
            except BaseException:
                loc.close()
                raise
            if st is None or not stat.S_ISLNK(st.st_mode) or not follow:
                return loc, st
            loc.close()
        raise PathChanged(f"path {shown(path)} keeps changing (a symlink is being swapped in); try again")

    def open_dir(self, path: str, *, follow: bool = True, flags: int = os.O_RDONLY) -> tuple[int, str]:
        """A descriptor of the folder at ``path`` (O_RDONLY, or ``flags`` such
        as O_PATH) and its real relative path."""
        with self.locate(path, follow=follow) as loc:
            fd = loc.open(flags | os.O_DIRECTORY)
            return fd, loc.rel

    def rel(self, path: str) -> str:
        """The real relative path ``path`` resolves to (for naming it, never for opening it)."""
        with self.locate(path) as loc:
            return loc.rel


class _quiet:
    def __init__(self, *kinds: type[BaseException]) -> None:
        self.kinds = kinds or (OSError,)

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind, exc, tb) -> bool:  # type: ignore[no-untyped-def]
        return kind is not None and issubclass(kind, self.kinds)


def _readlink(name: str, dir_fd: int) -> str | None:
    """The target of the symlink ``name`` in the folder, or None if it is not one (or is missing)."""
    try:
        return os.readlink(name, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.EINVAL, errno.ENOENT, errno.ENOTDIR):
            return None
        raise


def open_beneath(dir_fd: int, rel: str, flags: int) -> int:
    """Open ``rel`` beneath the folder ``dir_fd`` following no symlink at all
    (a link anywhere on the way fails with ELOOP or ENOTDIR): for walkers
    (glob, the fallback grep) that never follow links anyway."""
    flags |= os.O_CLOEXEC | os.O_NOFOLLOW
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if not parts:
        return os.open(".", flags & ~os.O_NOFOLLOW, dir_fd=dir_fd)
    if ".." in parts:
        raise OSError(errno.EXDEV, "'..' is not allowed here", rel)
    try:
        return openat2(dir_fd, "/".join(parts), flags, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)
    except _NoOpenat2:
        pass
    opened: list[int] = []
    try:
        here = dir_fd
        for name in parts[:-1]:
            here = os.open(name, _DIR, dir_fd=here)
            opened.append(here)
        return os.open(parts[-1], flags, dir_fd=here)
    finally:
        for fd in opened:
            os.close(fd)
