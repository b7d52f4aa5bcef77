"""edit_file: replace old_string by new_string, under the snapshot rule.

A retry of an edit that was applied is recognised (``_proven_retry``) and
reported as done, never applied twice; an old_string that is not found gets
the closest lines and how their whitespace differs.
"""

from __future__ import annotations

import difflib
import os

from activities.base import bound_output
from activities.files.common import (
    SNIFF_BYTES,
    Refusal,
    refuse_git_located,
    refuse_git_through_link,
    binary_reason,
    display_line,
    encode_text,
    guarded,
    refuse_artifacts,
    lookup,
    numbered,
    read_bytes,
    refuse_non_regular,
)
from activities.workspace.root import Location, WorkspaceRoot, clip
from activities.txn.file_images import recorded_write
from activities.files.snapshots import conflict_message, make_snapshot, not_read_message, sha256_bytes, snapshot_is_for
from core.contracts import Snapshot, ToolRequest, ToolResult
from core.tools.specs import EDIT_FILE, EditFileArgs

# The whole file is held in memory to edit it.
MAX_EDIT_BYTES = 64 << 20
# The idempotent-retry proof hashes candidate originals; cap the work.
_RETRY_HASH_BUDGET = 256 << 20


def _read_whole(loc: Location, st: os.stat_result) -> tuple[bytes, os.stat_result]:
    """Content and fstat of a text file to edit."""
    rel = loc.rel
    if st.st_size > MAX_EDIT_BYTES:
        raise Refusal(
            f"{rel} is {st.st_size} bytes, more than edit_file handles ({MAX_EDIT_BYTES} bytes); "
            "change it with write_file in smaller files, or with a command"
        )
    data, fst = read_bytes(loc, EDIT_FILE)
    reason = binary_reason(data[:SNIFF_BYTES])
    if reason:
        raise Refusal(f"{rel} looks like a binary file ({reason}); edit_file only edits text", kind="binary")
    return data, fst


def _pure_crlf(data: bytes) -> bool:
    crlf = data.count(b"\r\n")
    return crlf > 0 and crlf == data.count(b"\n")


def _to_crlf(b: bytes) -> bytes:
    return b.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")


def _variants(data: bytes, old: bytes, new: bytes) -> list[tuple[bytes, bytes, bool]]:
    """(old, new, converted) pairs to try, best first. In a file whose every line
    ends in CRLF, the model's '\\n' means the file's '\\r\\n' (both in what it
    looks for and in what it inserts), so line endings stay consistent."""
    raw = (old, new, False)
    conv = (_to_crlf(old), _to_crlf(new), True)
    if conv[:2] == raw[:2]:
        return [raw]
    if _pure_crlf(data):
        return [conv, raw]
    if b"\r\n" in data:
        return [raw, conv]
    return [raw]


def _apply(data: bytes, old: bytes, new: bytes, replace_all: bool) -> bytes:
    return data.replace(old, new) if replace_all else data.replace(old, new, 1)


def _proven_retry(
    current: bytes, pairs: list[tuple[bytes, bytes, bool]], replace_all: bool, snapshot: Snapshot
) -> bool:
    """Is ``current`` exactly what this edit makes of the file the snapshot saw?

    Undo the edit on the current content (put old back where new stands) and
    accept only if the undone text hashes to the snapshot *and* redoing the
    edit on it (uniqueness rule included) gives the current content back. The
    hashing work is capped; past the cap the answer is "not proven"."""
    budget = _RETRY_HASH_BUDGET

    def redoes(original: bytes, old: bytes, new: bytes) -> bool:
        nonlocal budget
        if len(original) != snapshot.size:
            return False
        budget -= len(original)
        if sha256_bytes(original) != snapshot.sha256:
            return False
        count = original.count(old)
        return (count >= 1 if replace_all else count == 1) and _apply(original, old, new, replace_all) == current

    for old, new, _ in pairs:
        if replace_all:
            # A replace_all that deleted text cannot be undone: nothing marks where.
            if new and new in current and redoes(current.replace(new, old), old, new):
                return True
            continue
        if len(current) - len(new) + len(old) != snapshot.size:
            continue
        for q in _undo_positions(current, new):
            if budget <= 0:
                return False
            if redoes(current[:q] + old + current[q + len(new) :], old, new):
                return True
    return False


def _undo_positions(current: bytes, new: bytes):
    """Where new_string may stand in the edited text: its occurrences; for a
    deletion every position, line starts first."""
    if new:
        at = current.find(new)
        while at >= 0:
            yield at
            at = current.find(new, at + 1)
        return
    yield 0
    at = current.find(b"\n")
    while at >= 0:
        yield at + 1
        at = current.find(b"\n", at + 1)
    for q in range(1, len(current) + 1):
        if current[q - 1] != 10:
            yield q


def _line_of(data: bytes, pos: int) -> int:
    return data.count(b"\n", 0, pos) + 1


def _snippet(data: bytes, first: int, last: int, context: int = 2, max_lines: int = 14) -> str:
    """Numbered lines first-context .. last+context of ``data`` (at most max_lines)."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    lo = max(1, first - context)
    hi = min(len(lines), last + context, lo + max_lines - 1)
    out = []
    for n in range(lo, hi + 1):
        raw = lines[n - 1]
        text, _ = display_line(raw[:-1] if raw.endswith(b"\r") else raw)
        out.append(numbered(n, text))
    if hi < min(len(lines), last + context):
        out.append("   ...")
    return "\n".join(out)


def _squash(s: str) -> str:
    return "".join(s.split())


def _leading_ws(s: str) -> str:
    return s[: len(s) - len(s.lstrip(" \t"))]


def _trailing_ws(s: str) -> str:
    return s[len(s.rstrip(" \t")) :]


def _whitespace_hint(file_lines: list[str], old: str) -> str | None:
    """If old_string is in the file once whitespace is ignored, say how the
    whitespace differs (CRLF, tabs vs spaces, trailing whitespace) and show
    those lines; None if it is not."""
    old_lines = old.split("\n")
    keys = [_squash(x) for x in old_lines]
    if not any(keys):
        return None
    n = len(old_lines)
    fkeys = [_squash(x) for x in file_lines]
    for i in range(len(file_lines) - n + 1):
        if n == 1:
            if keys[0] not in fkeys[i]:
                continue
        elif not (
            fkeys[i].endswith(keys[0])
            and fkeys[i + n - 1].startswith(keys[-1])
            and fkeys[i + 1 : i + n - 1] == keys[1:-1]
        ):
            continue
        return _describe_whitespace(file_lines[i : i + n], old_lines, i + 1)
    return None


def _describe_whitespace(region: list[str], old_lines: list[str], first: int) -> str:
    n = len(old_lines)
    reasons: list[str] = []
    # Lines that old_string ends with '\n' (all but its last).
    if any(x.endswith("\r") for x in region[: n - 1]) and not any(o.endswith("\r") for o in old_lines[: n - 1]):
        reasons.append("line endings: the file ends these lines with CRLF (\\r\\n), your old_string with \\n")
    elif any(o.endswith("\r") for o in old_lines[: n - 1]) and not any(x.endswith("\r") for x in region[: n - 1]):
        reasons.append("line endings: your old_string ends lines with CRLF (\\r\\n), the file with \\n")
    clean = [x[:-1] if x.endswith("\r") else x for x in region]
    leads = [
        (_leading_ws(f), _leading_ws(o))
        for k, (f, o) in enumerate(zip(clean, old_lines))
        if f.strip() and o.strip() and (k > 0 or _leading_ws(o))
    ]
    differing = [(f, o) for f, o in leads if f != o]
    if differing:
        f_lead, o_lead = differing[0]
        if "\t" in f_lead and "\t" not in o_lead:
            reasons.append("indentation: the file indents with tabs where your old_string has spaces")
        elif "\t" in o_lead and "\t" not in f_lead:
            reasons.append("indentation: the file indents with spaces where your old_string has tabs")
        else:
            reasons.append(f"indentation: {len(f_lead)} leading characters in the file, {len(o_lead)} in your old_string")
    if any(
        _trailing_ws(f) != _trailing_ws(o)
        for k, (f, o) in enumerate(zip(clean, old_lines))
        if k < n - 1 or _trailing_ws(o)
    ):
        reasons.append("trailing whitespace: spaces or tabs at the end of lines differ")
    if not reasons:
        reasons.append("whitespace inside the lines differs (spaces, tabs or line breaks)")
    last = first + n - 1
    shown = "\n".join(numbered(first + k, display_line(x.encode())[0]) for k, x in enumerate(clean[:12]))
    text = (
        f"old_string matches line{'s' if n > 1 else ''} {first}{f'-{last}' if n > 1 else ''} "
        f"if whitespace is ignored; it differs only in whitespace: " + "; ".join(reasons) + ".\n" + shown
    )
    pair = next(((first + k, f, o) for k, (f, o) in enumerate(zip(region, old_lines)) if f != o and (n == 1 or o.strip())), None)
    if pair:
        num, f, o = pair
        text += f"\nline {num} in the file:    {f[:200]!r}\nthe same line in old_string: {o[:200]!r}"
    return text + "\nCopy the text exactly as the file has it (read_file shows it) and try again."


def _closest_lines(file_lines: list[str], old: str, top: int = 3) -> str:
    old_lines = old.split("\n")
    anchor_idx = next((k for k, x in enumerate(old_lines) if x.strip()), 0)
    anchor = old_lines[anchor_idx].strip()
    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2(anchor)
    scored: list[tuple[float, int]] = []
    cutoff = 0.5
    for i, line in enumerate(file_lines):
        matcher.set_seq1(line.strip())
        if matcher.real_quick_ratio() >= cutoff and matcher.quick_ratio() >= cutoff:
            r = matcher.ratio()
            if r >= cutoff:
                scored.append((r, i))
    if not scored:
        return "No similar lines were found: read the file again to see its current text."
    scored.sort(key=lambda t: (-t[0], t[1]))
    span = min(len(old_lines), 6)
    parts = []
    for ratio, i in scored[:top]:
        start = max(0, i - anchor_idx)
        lines = file_lines[start : start + span]
        body = "\n".join(numbered(start + k + 1, display_line(x.rstrip("\r").encode())[0]) for k, x in enumerate(lines))
        parts.append(f"around line {i + 1} ({ratio:.0%} similar):\n{body}")
    return "Closest candidates in the file:\n" + "\n".join(parts)


def _not_found_message(rel: str, data: bytes, old: bytes, new: bytes) -> str:
    msg = f"old_string not found in {rel}."
    if new and new in data:
        msg += (
            f" Note: new_string already occurs in the file (line {_line_of(data, data.find(new))}); "
            "the edit may already have been made."
        )
    text = data.decode("utf-8", "replace")
    file_lines = text.split("\n")[:200_000]
    old_s = old.decode("utf-8", "replace")
    hint = _whitespace_hint(file_lines, old_s) or _closest_lines(file_lines, old_s)
    return f"{msg}\n{hint}"


@guarded
def edit_file(request: ToolRequest, args: EditFileArgs) -> ToolResult:
    """Replace old_string by new_string (exactly once, or everywhere with replace_all)."""
    if args.old_string == args.new_string:
        raise Refusal("old_string and new_string are identical: there is nothing to change")
    old = encode_text(args.old_string, "old_string")
    new = encode_text(args.new_string, "new_string")
    refuse_artifacts(args.path)
    with WorkspaceRoot(request.workspace_root) as ws:
        refuse_git_through_link(ws, args.path, "edit_file")
        try:
            loc, st = lookup(ws, args.path)
        except FileNotFoundError:
            raise Refusal(f"file not found: {clip(args.path)}. edit_file changes existing files; create new ones "
                          "with write_file", kind="missing") from None
        with loc:
            refuse_artifacts(loc.rel)  # reached through a symlink
            refuse_git_located(ws, loc, args.path, "edit_file")  # a link swapped in since the check above
            return _edit_located(request, args, ws, loc, st, old, new)


def _edit_located(
    request: ToolRequest, args: EditFileArgs, ws: WorkspaceRoot, loc: Location, st: os.stat_result | None,
    old: bytes, new: bytes,
) -> ToolResult:
    rel = loc.rel
    held = request.snapshot
    if st is None:
        if snapshot_is_for(ws, held, rel):
            raise Refusal(
                f"{rel} no longer exists: it was deleted or moved since you read it. "
                "Find it with glob, or create it with write_file",
                conflict="true",
            )
        raise Refusal(f"file not found: {clip(rel)}. edit_file changes existing files; create new ones with write_file",
                      kind="missing")
    refuse_non_regular(st, rel, EDIT_FILE)
    if not snapshot_is_for(ws, held, rel):
        raise Refusal(not_read_message(rel, held, "call edit_file"), not_read="true")
    assert held is not None
    data, fst = _read_whole(loc, st)
    pairs = _variants(data, old, new)
    current_sha = sha256_bytes(data)
    meta = {"path": rel}

    if current_sha != held.sha256:
        if _proven_retry(data, pairs, args.replace_all, held):
            return ToolResult.ok(
                request.call_id,
                request.tool,
                f"{rel} already holds the result of this edit (a retry of an edit that was applied); "
                "nothing was changed.",
                snapshot=make_snapshot(rel, fst, current_sha),
                metadata={**meta, "idempotent_retry": "true"},
            )
        still = max((data.count(o) for o, _, _ in pairs), default=0)
        detail = (
            f"old_string occurs {still} time{'s' if still != 1 else ''} in the current file."
            if still
            else "old_string does not occur in the current file any more."
        )
        raise Refusal(conflict_message(rel, held, fst, detail), conflict="true")

    chosen = None
    for o, n, converted in pairs:
        count = data.count(o)
        if count:
            chosen = (o, n, converted, count)
            break
    if chosen is None:
        raise Refusal(_not_found_message(rel, data, old, new), not_found="true")
    o, n, converted, count = chosen
    if count > 1 and not args.replace_all:
        positions, at = [], data.find(o)
        while at >= 0 and len(positions) < 10:
            positions.append(_line_of(data, at))
            at = data.find(o, at + 1)
        more = ", ..." if count > len(positions) else ""
        raise Refusal(
            f"old_string found {count} times in {rel} (at lines {', '.join(map(str, positions))}{more}); "
            "add surrounding context to make it unique, or set replace_all to true to replace every occurrence",
            found=str(count),
        )
    result = _apply(data, o, n, args.replace_all)
    written = recorded_write(request, loc, result, like=fst)  # pre/post-images

    # Where the replacements landed in the new content.
    starts, shift, at = [], len(n) - len(o), data.find(o)
    while at >= 0 and len(starts) < 20:
        starts.append(at + shift * len(starts))
        at = data.find(o, at + len(o))
    first_line = _line_of(result, starts[0])
    last_line = first_line + max(0, n.count(b"\n") - n.endswith(b"\n"))
    lines_note = ", ".join(str(_line_of(result, s)) for s in starts[:10]) + (", ..." if count > 10 else "")
    what = f"replaced {count} occurrence{'s' if count > 1 else ''} (starting at line{'s' if count > 1 else ''} {lines_note})"
    crlf = " (matched with the file's CRLF line endings)" if converted else ""
    text = (
        f"Edited {rel}: {what}{crlf}. The file now reads, around the "
        f"{'first change' if count > 1 else 'change'}:\n"
        + _snippet(result, first_line, max(first_line, last_line))
    )
    text, extra = bound_output(text, request, "edit_file")
    return ToolResult.ok(
        request.call_id,
        request.tool,
        text,
        snapshot=make_snapshot(rel, written, sha256_bytes(result)),
        metadata={**meta, "replacements": str(count), "first_line": str(first_line), **extra,
                  **({"line_endings": "crlf"} if converted else {})},
    )
