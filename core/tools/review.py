"""How each tool's pending call is shown to the person approving it. Pure.

Every piece is escaped with ``shown``: what the model wrote cannot drive the
reviewer's terminal. Each function takes the call's arguments and the
validator (bash shows its verdict) and returns the lines under the call's
header; ``core.tools.specs`` names one per tool.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from core.tools.display import content_lines, file_diff, folded
from core.tools.formatting import shown

Validate = Callable[[str], Any]


def review_edit(args: dict[str, Any], validate: Validate) -> list[str]:
    path = str(args.get("path", ""))
    lines = [f"  file: {shown(path)}" + ("  (replace all)" if args.get("replace_all") else "")]
    # Without the file (the planner did not hold it): the replaced text only,
    # so line numbers count within it; a planned review replaces this.
    lines.append("  (the replaced text only; line numbers count within it)")
    diff = file_diff(path, str(args.get("old_string", "")), str(args.get("new_string", "")))
    lines.extend("  " + d for d in diff[2:] if d)  # no a/ b/ header for fragments
    return lines


def review_write(args: dict[str, Any], validate: Validate) -> list[str]:
    content = str(args.get("content", ""))
    path = str(args.get("path", ""))
    body = content_lines(path, content)
    total = len(content.removesuffix("\n").split("\n")) if content else 0
    lines = [f"  file: {shown(path)}  ({len(content)} characters, {total} lines)"]
    lines.extend(f"  | {line}" if not line.startswith("(") else f"  {line}" for line in body)
    return lines


def review_command(args: dict[str, Any], validate: Validate) -> list[str]:
    command = str(args.get("command", ""))
    verdict = validate(command)
    destructive = " (destructive: loses work for good)" if getattr(verdict, "destructive", False) else ""
    lines = [*folded(command, "  $ "), *folded(f"validator: {verdict.verdict}{destructive} — {verdict.reason}", "  ")]
    if args.get("timeout_seconds") is not None:
        lines.append(f"  timeout: {shown(args.get('timeout_seconds'))} s")
    return lines


def review_arguments(args: dict[str, Any], validate: Validate) -> list[str]:
    return ["  " + shown(json.dumps(args, sort_keys=True, ensure_ascii=False)[:500])]
