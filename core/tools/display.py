"""What a person approving a change sees: one escaping and cutting path. Pure.

Every front-end (``agent-turn show``/``pending``, the Web UI details, the
console page, MCP elicitation) shows file content, diffs and commands through
these functions, so that:

- control characters and escape sequences are written as visible escapes
  (``shown``): content cannot repaint or hide what the approver reads;
- text in any common encoding is shown as text (UTF-8, UTF-16 with a byte
  order mark, else Latin-1/Windows-1252), and only content with NUL bytes or
  mostly control bytes is called binary;
- every cut says so, per file: "first N of M lines", "binary, N bytes".
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from core.tools.formatting import shown

DIFF_MAX_LINES = 400  # per file, in a review; the note says how many there were
CONTENT_MAX_LINES = 200
# A reviewed command is folded at this width: a code block in the Web UI or
# an MCP form does not wrap, so a long line's end would be out of view.
REVIEW_WIDTH = 120
# Blanks (not newlines) enough to push what follows out of view; indentation
# stays as it is.
_BLANK_RUN = re.compile(r"[^\S\n]{32,}")
TEXT_MAX_BYTES = 1 << 20  # beyond this a file is summarised, not diffed


@dataclass(frozen=True)
class Decoded:
    text: str | None  # None: binary
    encoding: str
    size: int


def decode(data: bytes | str) -> Decoded:
    """Content as text when it is text in a common encoding."""
    if isinstance(data, str):
        return Decoded(data, "utf-8", len(data.encode("utf-8", "surrogatepass")))
    size = len(data)
    for bom, codec in ((b"\xef\xbb\xbf", "utf-8-sig"), (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16")):
        if data.startswith(bom):
            try:
                return Decoded(data.decode(codec), codec.replace("-sig", ""), size)
            except UnicodeDecodeError:
                break
    if b"\x00" in data:
        return Decoded(None, "binary", size)
    try:
        return Decoded(data.decode("utf-8"), "utf-8", size)
    except UnicodeDecodeError:
        pass
    # Bytes that are control characters in every 8-bit encoding (other than
    # tab, newline, carriage return, form feed, ESC): many of them mean binary.
    controls = sum(1 for b in data if b < 0x20 and b not in (9, 10, 12, 13, 27))
    if controls > max(4, size // 100):
        return Decoded(None, "binary", size)
    try:
        return Decoded(data.decode("cp1252"), "windows-1252", size)
    except UnicodeDecodeError:  # the five bytes cp1252 leaves undefined
        return Decoded(data.decode("latin-1"), "latin-1", size)


def _lines(text: str) -> list[str]:
    """Split at newlines only: a carriage return or a Unicode line separator
    stays in its line, where ``shown`` makes it visible."""
    body = text[:-1] if text.endswith("\n") else text
    return body.split("\n") if body else []


def seen(line: str) -> str:
    """One line escaped (tabs kept), a long run of blanks said by its length:
    padding could push the end of a line out of a code block's view, or
    several screens down in a terminal that wraps."""
    return _BLANK_RUN.sub(lambda m: f" [{len(m.group())} blanks] ", shown(line, keep="\t"))


def escaped_lines(text: str) -> list[str]:
    """Lines for display, each escaped (tabs kept); a final newline adds no line."""
    body = text[:-1] if text.endswith("\n") else text
    return [seen(line) for line in body.split("\n")] if body else []


def folded(text: str, lead: str) -> list[str]:
    """``in_view`` lines, the first after ``lead``, each continuation marked."""
    first, *rest = in_view(text)
    return [f"{lead}{first}", *(f"  ↪ {line}" for line in rest)]


def in_view(text: str, width: int = REVIEW_WIDTH) -> list[str]:
    """Escaped text as lines a reviewer sees whole (``seen``; tabs escaped
    too), folded at ``width``; every line after the first is a continuation."""
    text = seen(shown(text))
    return [text[i:i + width] for i in range(0, len(text), width)] or [""]


def content_lines(path: str, data: bytes | str, max_lines: int = CONTENT_MAX_LINES) -> list[str]:
    """A file's content for review, escaped, with the cut said."""
    d = decode(data)
    name = shown(path)
    if d.text is None:
        return [f"({name}: binary, {d.size:,} bytes; not shown)"]
    lines = escaped_lines(d.text)
    out = lines[:max_lines]
    if d.encoding not in ("utf-8",):
        out.insert(0, f"({name}: {d.encoding} text)")
    if len(lines) > max_lines:
        out.append(f"({name}: first {max_lines} of {len(lines)} lines shown)")
    return out


def file_diff(
    path: str,
    old: bytes | str | None,
    new: bytes | str | None,
    *,
    max_lines: int = DIFF_MAX_LINES,
    max_bytes: int = TEXT_MAX_BYTES,
    context: int = 3,
) -> list[str]:
    """A unified diff of one file with real hunk lines (``@@ -3,7 +3,8 @@``),
    escaped, cut at ``max_lines`` with the cut said; a one-line summary for
    binary or very large content. ``None``: the file does not exist."""
    name = shown(path)
    before = decode(old) if old is not None else Decoded("", "utf-8", 0)
    after = decode(new) if new is not None else Decoded("", "utf-8", 0)
    if before.text is None or after.text is None:
        return [f"{name}: binary, {before.size:,} -> {after.size:,} bytes (content not shown)"]
    if before.size > max_bytes or after.size > max_bytes:
        return [f"{name}: {before.size:,} -> {after.size:,} bytes, too large to diff here (limit {max_bytes:,})"]
    notes = sorted({d.encoding for d in (before, after) if d.encoding != "utf-8" and d.size})
    raw = list(
        difflib.unified_diff(
            _lines(before.text),
            _lines(after.text),
            fromfile="/dev/null" if old is None else f"a/{path}",
            tofile="/dev/null" if new is None else f"b/{path}",
            lineterm="",
            n=context,
        )
    )
    for label, d in (("old", before), ("new", after)):
        if d.text and not d.text.endswith("\n") and raw:
            notes.append(f"No newline at end of file (the {label} content)")
    out = [seen(line) for line in raw[:max_lines]]
    if not raw:
        out.append(f"{name}: no change")
    if len(raw) > max_lines:
        out.append(f"({name}: first {max_lines} of {len(raw)} diff lines shown)")
    if notes:
        out.append(f"({name}: " + "; ".join(notes) + ")")
    return out


def edited(content: str, old: str, new: str, replace_all: bool) -> str | None:
    """What ``edit_file`` would write, or None when ``old`` is not found."""
    if not old or old not in content:
        return None
    return content.replace(old, new) if replace_all else content.replace(old, new, 1)


def short_digest(digest: str) -> str:
    """The digest prefix people read and type (the turn accepts it)."""
    return digest[:12]
