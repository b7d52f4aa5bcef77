"""Turning a model's raw tool-call arguments into a validated parameter model.

Models often send *almost* JSON: wrapped in a markdown fence, with trailing
commas, or with Python's True/False/None. We repair exactly those three
things, and adopt a repair only if the result parses; otherwise the model
hears the original parse error. Nothing here raises: every failure becomes a
message the model can act on.
"""

from __future__ import annotations

import difflib
import json
import re
from typing import Any

from pydantic import ValidationError

from core.tools.specs import TOOLS, ToolArgs

_FENCE = re.compile(r"^\s*```[A-Za-z0-9_-]*[ \t]*\r?\n(?P<body>.*?)\r?\n?[ \t]*```\s*$", re.DOTALL)
_PY_LITERALS = {"True": "true", "False": "false", "None": "null"}


class ArgumentError(Exception):
    """Raised internally; callers of ``parse_tool_arguments`` get the message."""


def _strip_fence(text: str) -> str:
    match = _FENCE.match(text)
    return match.group("body") if match else text


def _rewrite_outside_strings(text: str) -> str:
    """Drop trailing commas and map Python literals to JSON, never touching
    the inside of a JSON string."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            # Copy the whole string literal verbatim, honouring escapes.
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
            continue
        if ch == ",":
            k = i + 1
            while k < n and text[k] in " \t\r\n":
                k += 1
            if k < n and text[k] in "}]":
                i += 1  # trailing comma: drop it
                continue
        if ch.isalpha() or ch == "_":
            j = i
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            word = text[i:j]
            out.append(_PY_LITERALS.get(word, word))
            i = j
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def repair_json(text: str) -> str | None:
    """Return a repaired JSON text that parses, or None if repair does not help."""
    candidate = _rewrite_outside_strings(_strip_fence(text))
    try:
        json.loads(candidate)
    except (ValueError, RecursionError):
        return None
    return candidate


def decode_arguments(raw: Any) -> dict[str, Any]:
    """Raw arguments (JSON string, object or None) -> a JSON object, or ArgumentError."""
    if raw is None or raw == "":
        return {}
    if isinstance(raw, dict):
        return raw
    if not isinstance(raw, str):
        raise ArgumentError(
            f"arguments must be a JSON object (or a string holding one), got {type(raw).__name__}"
        )
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError) as original:
        repaired = repair_json(raw)
        if repaired is None:
            raise ArgumentError(
                f"arguments are not valid JSON: {original}. Send one JSON object, e.g. "
                '{"path": "src/app.py"}'
            ) from None
        value = json.loads(repaired)
    if not isinstance(value, dict):
        raise ArgumentError(
            f"arguments must be a JSON object with named fields, got a JSON {type(value).__name__}"
        )
    return value


def describe_validation_error(tool: str, exc: ValidationError) -> str:
    """One line per bad field: which field, what was wrong, what was expected."""
    lines = [f"invalid arguments for {tool}:"]
    for err in exc.errors(include_url=False):
        field = ".".join(str(p) for p in err.get("loc", ())) or "(arguments)"
        kind = err.get("type", "")
        if kind == "missing":
            lines.append(f"- {field}: required field is missing")
        elif kind == "extra_forbidden":
            allowed = ", ".join(TOOLS[tool].params.model_fields) if tool in TOOLS else "?"
            lines.append(f"- {field}: unknown field (allowed fields: {allowed})")
        elif kind == "value_error":  # our own check: its message names the value and what to send
            lines.append(f"- {field}: {err.get('ctx', {}).get('error', err.get('msg', 'invalid value'))}")
        else:
            got = err.get("input")
            got_text = json.dumps(got)[:80] if _jsonable(got) else repr(got)[:80]
            lines.append(f"- {field}: {err.get('msg', 'invalid value')} (got {got_text})")
    return "\n".join(lines)


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


# Deeper than any real tool's arguments; deep enough that walking it stays cheap.
MAX_ARGUMENT_DEPTH = 64


def _lone_surrogate(text: str) -> int:
    """Position of the first lone surrogate (not encodable as UTF-8), or -1."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return -1


def has_lone_surrogate(text: str) -> bool:
    return _lone_surrogate(text) >= 0


_SURROGATE = re.compile("[\ud800-\udfff]")


def escape_surrogates(text: str) -> str:
    """JSON text with each lone surrogate written as its ``\\uXXXX`` escape:
    inside a JSON string that means the same, and the text can now be
    encoded (a payload, a file), so ``input_problem`` reports it later."""
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def replace_surrogates(text: str) -> str:
    """Prose with each lone surrogate replaced by U+FFFD, as a UTF-8 decoder
    does with bytes it cannot decode."""
    return _SURROGATE.sub("\ufffd", text)


def input_problem(raw: Any) -> str | None:
    """What makes raw arguments unusable before any parsing: invalid Unicode
    (a lone surrogate cannot be sent on to an activity and used to wedge the
    workflow task) or nesting deeper than any tool takes. Walks iteratively,
    so a 100,000-deep document cannot exhaust the stack."""
    value: Any = raw
    if isinstance(raw, str):
        if _lone_surrogate(raw) >= 0:
            return "the arguments contain invalid Unicode (a lone surrogate); send valid UTF-8 text"
        try:
            value = json.loads(raw)
        except (ValueError, RecursionError):
            return None  # the parser reports it (with a repair attempt)
    stack: list[tuple[Any, int, str]] = [(value, 0, "")]
    while stack:
        item, depth, where = stack.pop()
        if depth > MAX_ARGUMENT_DEPTH:
            return f"the arguments are nested more than {MAX_ARGUMENT_DEPTH} levels deep; tool arguments are flat"
        if isinstance(item, str):
            pos = _lone_surrogate(item)
            if pos >= 0:
                field = where or "(arguments)"
                return (
                    f"{field} contains invalid Unicode (a lone surrogate U+{ord(item[pos]):04X} at "
                    f"character {pos}); send valid UTF-8 text"
                )
        elif isinstance(item, dict):
            for key, sub in item.items():
                name = f"{where}.{key}" if where else str(key)
                if isinstance(key, str) and _lone_surrogate(key) >= 0:
                    return "a field name contains invalid Unicode (a lone surrogate)"
                stack.append((sub, depth + 1, ascii(name)[1:-1]))
        elif isinstance(item, list):
            stack.extend((sub, depth + 1, f"{where}[{i}]") for i, sub in enumerate(item))
    return None


def unknown_tool_message(tool: str) -> str:
    """What the model is told about a name that is no tool: the tools there
    are, and the one it most likely meant (never run in its place: a
    guessed tool could do what the model did not ask)."""
    shown = tool if len(tool) <= 80 else tool[:60] + "…"
    message = f"unknown tool {shown!r}. Available tools: {', '.join(sorted(TOOLS))}"
    guess = likely_tool(tool)
    return message + (f". Did you mean {guess!r}?" if guess else "")


def likely_tool(name: str) -> str | None:
    """The tool a near-miss name stands for: another case, spaces, dashes, a
    "functions." prefix, a small typo."""
    plain = name.strip().lower().replace("-", "_").replace(" ", "_")
    plain = plain.removeprefix("functions.").removeprefix("tools.")
    if plain in TOOLS:
        return plain
    close = difflib.get_close_matches(plain, list(TOOLS), n=1, cutoff=0.8)
    return close[0] if close else None


def parse_tool_arguments(tool: str, raw: Any) -> ToolArgs | str:
    """The whole pipeline: look up, decode (with repair), validate.
    Returns the parameter model or an error message for the model."""
    spec = TOOLS.get(tool)
    if spec is None:
        return unknown_tool_message(tool)
    try:
        data = decode_arguments(raw)
    except ArgumentError as exc:
        return f"invalid arguments for {tool}: {exc}"
    try:
        return spec.params.model_validate(data)
    except ValidationError as exc:
        return describe_validation_error(tool, exc)
