"""What the grep and glob tools share: limits, the names never searched,
the result of one search engine, and the shapes of warnings and errors."""

from __future__ import annotations

from dataclasses import dataclass, field

from activities.workspace.paths import ARTIFACTS_DIR
from activities.workspace.root import clip
from core.contracts import ToolRequest, ToolResult

GREP_MAX_MATCHES = 50
# Lines read before the search is stopped: the cap plus one, which proves
# there is more. Reading further only to count costs rg time in proportion
# (for sparse matches up to a full scan), so we say "more than 50" instead.
GREP_READ_LIMIT = GREP_MAX_MATCHES + 1
GREP_MAX_COLUMNS = 500
# Names never searched or listed, at any depth, unless a tool's `path` points
# into them explicitly.
SKIP_NAMES = frozenset({".git", ARTIFACTS_DIR})
# A pattern or include glob longer than this is refused (and an argv string
# must stay far below Linux's 128 KiB per-argument limit).
MAX_PATTERN_CHARS = 10_000
MAX_WARNINGS = 10
MAX_WARNING_CHARS = 300
OMITTED_LINE = "[Omitted long matching line]"


def printable(text: str) -> str:
    """File names that are not valid UTF-8 arrive with surrogate escapes,
    which JSON cannot carry: replace them."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def warning_block(title: str, warnings: list[str]) -> str:
    shown = [f"  {clip(w, MAX_WARNING_CHARS)}" for w in warnings[:MAX_WARNINGS]]
    if len(warnings) > MAX_WARNINGS:
        shown.append(f"  ... and {len(warnings) - MAX_WARNINGS} more")
    return f"[{title}:\n" + "\n".join(shown) + "\n]"


def search_error(request: ToolRequest, message: str, **metadata: str) -> ToolResult:
    return ToolResult.error(request.call_id, request.tool, message, metadata=dict(metadata))


def check_text_arg(name: str, value: str) -> str | None:
    if "\x00" in value:
        return f"{name} contains a NUL byte; remove it"
    if len(value) > MAX_PATTERN_CHARS:
        return f"{name} is {len(value)} characters long; keep it under {MAX_PATTERN_CHARS}"
    return None


@dataclass
class Search:
    """What one search engine found."""

    lines: list[str] = field(default_factory=list)  # formatted `path:line:text`
    complete: bool = True  # the engine ran to the end (the count is exact)
    timed_out: bool = False
    fatal: str | None = None  # the search could not run: regex error and the like
    warnings: list[str] = field(default_factory=list)  # files/folders it could not read
    notes: list[str] = field(default_factory=list)  # other messages, e.g. a bad .gitignore line
    jailed: bool = False  # rg ran in the bubblewrap jail (activities.search.jail)
