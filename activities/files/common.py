"""What the three file tools share: refusals and error results, the checks
on what a path names, display of lines, and the atomic, descriptor-relative write.

Every operation on a file goes through an ``activities.workspace.root.Location``
(the descriptor of its real folder plus one name), never through a path
string that a sandboxed script could have re-pointed since it was checked.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from contextlib import suppress

from activities.workspace.paths import ARTIFACTS_DIR
from activities.workspace.root import Location, WorkspaceError, WorkspaceRoot, shown
from activities.files.snapshots import same_stat
from core.contracts import ToolRequest, ToolResult
from core.turn.policy import inside_git_folder
from core.tools.specs import READ_FILE

MAX_LINE_CHARS = 2000
SNIFF_BYTES = 8192
OPEN_READ = os.O_RDONLY | os.O_NONBLOCK  # Location.open adds O_NOFOLLOW | O_CLOEXEC

# Compressed and most binary formats hold a NUL within 8 KiB anyway; these
# name the common ones, and catch those whose start can pass for text (PDF).
# No short ASCII magic ('BZh', 'ID3'): a text file may well start that way.
_SIGNATURES: list[tuple[bytes, str]] = [
    (b"\x89PNG\r\n\x1a\n", "PNG image"),
    (b"\xff\xd8\xff", "JPEG image"),
    (b"GIF87a", "GIF image"),
    (b"GIF89a", "GIF image"),
    (b"%PDF-", "PDF document"),
    (b"PK\x03\x04", "ZIP archive (or jar/docx/wheel)"),
    (b"PK\x05\x06", "ZIP archive"),
    (b"\x1f\x8b", "gzip archive"),
    (b"\xfd7zXZ\x00", "xz archive"),
    (b"\x28\xb5\x2f\xfd", "zstd archive"),
    (b"7z\xbc\xaf\x27\x1c", "7-zip archive"),
    (b"Rar!\x1a\x07", "RAR archive"),
    (b"\x7fELF", "ELF executable"),
    (b"\xcf\xfa\xed\xfe", "Mach-O executable"),
    (b"\xca\xfe\xba\xbe", "Java class or Mach-O binary"),
    (b"\x00asm", "WebAssembly module"),
    (b"SQLite format 3\x00", "SQLite database"),
    (b"\xff\xfe", "UTF-16 (little-endian) text; read_file shows UTF-8 text only"),
    (b"\xfe\xff", "UTF-16 (big-endian) text; read_file shows UTF-8 text only"),
    (b"\x1aE\xdf\xa3", "Matroska/WebM video"),
]
_KIND_NAMES = {
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
}


class Refusal(Exception):
    """A business failure found deep in a helper; becomes an error result."""

    def __init__(self, message: str, **metadata: str) -> None:
        super().__init__(message)
        self.metadata = metadata



# ----------------------------------------------------------------- shared


def error_result(request: ToolRequest, message: str, **metadata: str) -> ToolResult:
    return ToolResult.error(request.call_id, request.tool, message, metadata=metadata)


def guarded(impl):
    """Turn confinement errors, refusals and OS errors (permission denied, name
    too long, symlink loops, I/O errors, disk full, ...) into error results
    naming the path, also when called directly: a tool never raises."""

    def wrapper(request: ToolRequest, args):
        try:
            return impl(request, args)
        except WorkspaceError as exc:
            return error_result(request, str(exc))
        except Refusal as exc:
            return error_result(request, str(exc), **exc.metadata)
        except OSError as exc:
            return error_result(request, os_error_message(request.tool, args.path, exc), errno=str(exc.errno))

    wrapper.__name__ = impl.__name__
    wrapper.__doc__ = impl.__doc__
    wrapper.__wrapped__ = impl  # type: ignore[attr-defined]
    return wrapper


def os_error_message(tool: str, path: str, exc: OSError) -> str:
    what = exc.strerror or exc.__class__.__name__
    if exc.errno == errno.ENAMETOOLONG:
        what += ": use a shorter path (a name may have at most 255 bytes)"
    elif exc.errno == errno.ELOOP:
        what += " (a symlink loop?): give a plain path"
    elif exc.errno in (errno.EACCES, errno.EPERM):
        what += ": the worker may not access it"
    return f"{tool} failed on {shown(path)}: {what}"


def refuse_non_regular(st: os.stat_result, rel: str, tool: str) -> None:
    if stat.S_ISREG(st.st_mode):
        return
    if stat.S_ISDIR(st.st_mode):
        if tool == READ_FILE:
            hint = f"use the glob tool to list its files (e.g. pattern '{rel.rstrip('/')}/*')"
        else:
            hint = "give the path of a file inside it"
        raise Refusal(f"{rel} is a folder, not a file: {hint}", kind="directory")
    kind = _KIND_NAMES.get(stat.S_IFMT(st.st_mode), "not a regular file")
    raise Refusal(
        f"{rel} is {kind}, not a regular file; {tool} only works on regular files",
        kind="special",
    )


def binary_reason(head: bytes) -> str | None:
    for magic, name in _SIGNATURES:
        if head.startswith(magic):
            return name
    if b"\x00" in head[:SNIFF_BYTES]:
        return "contains NUL bytes"
    return None


def count_lines(data: bytes) -> int:
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def display_line(raw: bytes, overflow_chars: int = 0) -> tuple[str, bool]:
    """Decode one line (without its line ending); cut it to
    MAX_LINE_CHARS with a marker. ``overflow_chars`` counts characters that
    were not kept in ``raw``. Returns (text, was_cut)."""
    text = raw.decode("utf-8", "replace")
    total = len(text) + overflow_chars
    if total <= MAX_LINE_CHARS:
        return text, False
    return f"{text[:MAX_LINE_CHARS]} [... {total - MAX_LINE_CHARS} more characters cut]", True


def numbered(number: int, text: str) -> str:
    return f"{number:6d}|{text}"


def lookup(ws: WorkspaceRoot, path: str, *, create_parents: bool = False) -> tuple[Location, os.stat_result | None]:
    """The path's location and the stat of what is there (None: nothing yet).
    A parent that is a file is a refusal; a missing parent is FileNotFoundError
    unless ``create_parents`` (then the folders are made, each relative to its
    parent's descriptor)."""
    try:
        return ws.lookup(path, create_parents=create_parents)
    except NotADirectoryError as exc:
        raise Refusal(f"{shown(path)}: a parent of this path is a file, not a folder ({exc.strerror}); "
                      "check the path") from None


def refuse_artifacts(path: str) -> None:
    """The workspace's artifacts folder holds the tools' own full outputs:
    never a target of write_file or edit_file (checked on the path as given,
    before any folder is made, and on the real path once resolved)."""
    norm = os.path.normpath(path)
    if norm.split("/", 1)[0] == ARTIFACTS_DIR:
        raise Refusal(f"{shown(path)} is in {ARTIFACTS_DIR}/, the tools' own output folder: it cannot be written "
                      "or edited. Write your file somewhere else in the workspace", kind="artifacts")


def encode_text(text: str, what: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise Refusal(
            f"{what} contains a character that cannot be written as UTF-8 "
            f"({text[exc.start]!r} at index {exc.start}, a lone surrogate); remove it and try again"
        ) from None


def read_bytes(loc: Location, tool: str) -> tuple[bytes, os.stat_result]:
    """The whole content of a regular file (never opening anything else) and its fstat."""
    fd = loc.open(OPEN_READ)
    try:
        fst = os.fstat(fd)
        refuse_non_regular(fst, loc.rel, tool)
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks), fst
    finally:
        os.close(fd)


def atomic_write(
    loc: Location,
    data: bytes,
    *,
    like: os.stat_result | None,
    expect_absent: bool = False,
) -> os.stat_result:
    """Write ``data`` to ``loc`` atomically: temp file in the same folder (by
    its descriptor), write, fsync, rename. ``like``: the existing file, whose
    mode (and, where allowed, owner) the new one keeps; it must still be that
    file just before the rename, else a conflict is raised. New files get the
    default 0o666 minus the umask, as open() would. ``expect_absent``: create
    only, never replace a file that appeared meanwhile. The temp file never
    survives a failure. Returns the stat of the file as written."""
    rel, folder, name = loc.rel, loc.dir_fd, loc.name
    tmp = f".{name[:100]}.{secrets.token_hex(6)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666, dir_fd=folder)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if like is not None:
                os.fchmod(fd, stat.S_IMODE(like.st_mode))
                if (like.st_uid, like.st_gid) != (os.geteuid(), os.getegid()):
                    with suppress(OSError):
                        os.fchown(fd, like.st_uid, like.st_gid)
            os.fsync(fd)
            written = os.fstat(fd)
        finally:
            os.close(fd)
        if expect_absent:
            try:  # fails if the file appeared meanwhile
                os.link(tmp, name, src_dir_fd=folder, dst_dir_fd=folder, follow_symlinks=False)
            except FileExistsError:
                raise Refusal(
                    f"{rel} was created by someone else while this call ran; "
                    "read it with read_file, then write again",
                    conflict="true",
                ) from None
            except OSError:
                os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)  # file system without hard links
            else:
                os.unlink(tmp, dir_fd=folder)
        else:
            if like is not None:
                now = loc.lstat()
                if now is None or not same_stat(now, like):
                    raise Refusal(
                        f"conflict: {rel} changed while this call was writing it. Nothing was "
                        "written. Read it again with read_file, then redo your change.",
                        conflict="true",
                    )
            os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp, dir_fd=folder)
        raise
    with suppress(OSError):  # make the rename itself durable
        dir_fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=folder)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    return written


def refuse_git_through_link(ws: WorkspaceRoot, path: str, tool: str) -> None:
    """Refuse a write that lands inside a ``.git`` folder although ``path``
    does not name one (a symlink on the way leads there): planning asks for
    .git writes in every mode by what the path says, so a path that hides it
    is never written. Naming the .git path itself is the way (and asks)."""
    if inside_git_folder(path):
        return
    parts = [p for p in path.replace("\\", "/").split("/") if p]
    for k in range(len(parts), 0, -1):
        prefix = "/".join(parts[:k])
        try:
            real = ws.rel(prefix)
        except (OSError, WorkspaceError):
            continue  # not there yet (or not resolvable: the write itself will say why)
        if inside_git_folder(real):
            raise _git_through_link(tool, path, real if k == len(parts) else "/".join([real, *parts[k:]]))
        return


def refuse_git_located(ws: WorkspaceRoot, loc: Location, path: str, tool: str) -> None:
    """The same rule on the folder a write really holds: a link swapped in
    after refuse_git_through_link looked (a command running meanwhile) is
    judged by where the descriptor resolution landed, and by where that
    folder is now (moved since)."""
    if inside_git_folder(path):
        return
    for real in (loc.rel, _held_now(ws, loc)):
        if real is not None and inside_git_folder(real):
            raise _git_through_link(tool, path, real)


def _held_now(ws: WorkspaceRoot, loc: Location) -> str | None:
    """Where the folder ``loc`` holds is now, relative to the root, with the
    final name (None when /proc cannot say, or it left the root)."""
    folder = ws.folder_of(loc.dir_fd)
    return None if folder is None else loc.name if folder == "." else f"{folder}/{loc.name}"


def _git_through_link(tool: str, path: str, target: str) -> Refusal:
    return Refusal(
        f"{tool}: {shown(path)} leads into a .git folder through a symbolic link (it is {shown(target)}); "
        f"files there run programs (hooks, config). Name the .git path itself ({shown(target)}), "
        "which asks for approval in every mode"
    )
