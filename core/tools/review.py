"""How each tool's pending call is shown to the person approving it. Pure.

Every piece is escaped with ``shown``: what the model wrote cannot drive the
reviewer's terminal. Each function takes the call's arguments and the
validator (bash shows its verdict) and returns the lines under the call's
header; ``core.tools.specs`` names one per tool.
"""

from __future__ import annotations

import difflib
import json
from typing import Any, Callable

from core.tools.formatting import shown, shown_lines

Validate = Callable[[str], Any]


def review_edit(args: dict[str, Any], validate: Validate) -> list[str]:
    lines = [f"  file: {shown(args.get('path'))}" + ("  (replace all)" if args.get("replace_all") else "")]
    diff = difflib.unified_diff(
        shown_lines(args.get("old_string", "")), shown_lines(args.get("new_string", "")), "before", "after", lineterm=""
    )
    lines.extend("  " + d for d in diff)
    return lines


def review_write(args: dict[str, Any], validate: Validate) -> list[str]:
    content = str(args.get("content", ""))
    body = shown_lines(content.removesuffix("\n")) if content else []
    lines = [f"  file: {shown(args.get('path'))}  ({len(content)} characters, {len(body)} lines)"]
    lines.extend(f"  | {line}" for line in body[:30])
    if len(body) > 30:
        lines.append(f"  | … {len(body) - 30} more lines")
    return lines


def review_command(args: dict[str, Any], validate: Validate) -> list[str]:
    command = str(args.get("command", ""))
    verdict = validate(command)
    destructive = " (destructive: loses work for good)" if getattr(verdict, "destructive", False) else ""
    return [
        f"  $ {shown(command)}",
        f"  validator: {verdict.verdict}{destructive} — {shown(verdict.reason)}",
        f"  timeout: {shown(args.get('timeout_seconds'))} s",
    ]


def review_arguments(args: dict[str, Any], validate: Validate) -> list[str]:
    return ["  " + shown(json.dumps(args, sort_keys=True, ensure_ascii=False)[:500])]
