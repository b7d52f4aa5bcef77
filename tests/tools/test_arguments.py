"""Argument decoding, repair and validation (pure)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.tools.arguments import decode_arguments, parse_tool_arguments, repair_json
from core.tools.specs import EditFileArgs, ReadFileArgs, tool_definitions


def test_plain_json_string_and_object_both_work() -> None:
    assert parse_tool_arguments("read_file", '{"path": "a.py"}') == ReadFileArgs(path="a.py")
    assert parse_tool_arguments("read_file", {"path": "a.py", "limit": 5}) == ReadFileArgs(path="a.py", limit=5)


@pytest.mark.parametrize(
    "raw",
    [
        '```json\n{"path": "a.py", "offset": 3}\n```',
        '```\n{"path": "a.py", "offset": 3}\n```',
        '{"path": "a.py", "offset": 3,}',
        '{"path": "a.py", "offset": 3, }\n',
        '```json\n{"path": "a.py", "offset": 3,}\n```',
    ],
)
def test_repairs_fences_and_trailing_commas(raw: str) -> None:
    assert parse_tool_arguments("read_file", raw) == ReadFileArgs(path="a.py", offset=3)


def test_repairs_python_literals_outside_strings_only() -> None:
    raw = '{"path": "True None False.txt", "old_string": "x = None", "new_string": "y", "replace_all": True}'
    args = parse_tool_arguments("edit_file", raw)
    assert args == EditFileArgs(path="True None False.txt", old_string="x = None", new_string="y", replace_all=True)


def test_trailing_comma_inside_string_is_kept() -> None:
    args = parse_tool_arguments("write_file", '{"path": "a", "content": "a,}\\" ,]",}')
    assert args.content == 'a,}" ,]'  # type: ignore[union-attr]


def test_unrepairable_json_reports_the_original_error() -> None:
    message = parse_tool_arguments("read_file", '{"path": "a.py"')
    assert isinstance(message, str)
    assert "not valid JSON" in message and "char 15" in message


def test_repair_never_adopted_unless_it_parses() -> None:
    assert repair_json("{'path': 'a'}") is None  # single quotes: not one of the three repairs
    assert repair_json('{"a": Truee}') is None


def test_validation_names_each_bad_field() -> None:
    message = parse_tool_arguments("read_file", {"path": 3, "offset": 0, "colour": "red"})
    assert isinstance(message, str)
    assert "- path: Input should be a valid string (got 3)" in message
    assert "- offset: Input should be greater than or equal to 1 (got 0)" in message
    assert "- colour: unknown field (allowed fields: path, offset, limit)" in message


@pytest.mark.parametrize(
    ("tool", "extra"),
    [("read_file", {}), ("write_file", {"content": "x"}), ("edit_file", {"old_string": "a", "new_string": "b"})],
)
def test_a_file_path_with_a_trailing_slash_is_refused_by_name(tool: str, extra: dict) -> None:
    # the file system takes `f.txt/` for `f.txt` on some paths and refuses it
    # on others: one clear answer before anything runs
    message = parse_tool_arguments(tool, {"path": "src/f.txt/", **extra})
    assert message == (
        f"invalid arguments for {tool}:\n- path: src/f.txt/ ends with '/', which names a folder; "
        "give the file's path without the trailing slash (src/f.txt)"
    )
    assert not isinstance(parse_tool_arguments(tool, {"path": "src/f.txt", **extra}), str)


def test_missing_field_and_wrong_shape() -> None:
    assert parse_tool_arguments("edit_file", {"path": "a"}) == (
        "invalid arguments for edit_file:\n"
        "- old_string: required field is missing\n"
        "- new_string: required field is missing"
    )
    message = parse_tool_arguments("read_file", "[1, 2]")
    assert isinstance(message, str) and "must be a JSON object" in message and "list" in message


def test_unknown_tool_lists_the_available_tools() -> None:
    message = parse_tool_arguments("delete_everything", "{}")
    assert message == (
        "unknown tool 'delete_everything'. Available tools: bash, edit_file, glob, grep, read_file, write_file"
    )


def test_empty_and_none_arguments_mean_no_fields() -> None:
    assert decode_arguments(None) == {} and decode_arguments("") == {}
    message = parse_tool_arguments("glob", None)
    assert isinstance(message, str) and "pattern: required field is missing" in message


def test_non_object_raw_arguments_are_an_error_not_an_exception() -> None:
    message = parse_tool_arguments("glob", 42)
    assert isinstance(message, str) and "got int" in message


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=10), json_values, max_size=5))
def test_property_valid_json_is_never_changed(obj: dict) -> None:
    text = json.dumps(obj)
    assert decode_arguments(text) == obj


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=10), json_values, max_size=5), st.booleans())
def test_property_damaged_json_repairs_to_the_same_object(obj: dict, fence: bool) -> None:
    # Damage: Python literals for JSON ones (outside strings), a trailing comma, a fence.
    text = json.dumps(obj)
    damaged = []
    in_string = escaped = False
    i = 0
    while i < len(text):
        ch = text[i]
        if in_string:
            damaged.append(ch)
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            i += 1
            continue
        if ch == '"':
            in_string, escaped = True, False
            damaged.append(ch)
            i += 1
            continue
        for js, py in (("true", "True"), ("false", "False"), ("null", "None")):
            if text.startswith(js, i):
                damaged.append(py)
                i += len(js)
                break
        else:
            damaged.append(ch)
            i += 1
    broken = "".join(damaged)
    if broken.endswith("}") and len(obj) > 0:
        broken = broken[:-1] + ",}"
    if fence:
        broken = f"```json\n{broken}\n```"
    assert decode_arguments(broken) == obj


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60))
def test_property_arbitrary_text_never_raises(text: str) -> None:
    result = parse_tool_arguments("read_file", text)
    assert isinstance(result, (str, ReadFileArgs))


def test_tool_definitions_come_from_the_models() -> None:
    openai = {d["function"]["name"]: d["function"] for d in tool_definitions("openai")}
    anthropic = {d["name"]: d for d in tool_definitions("anthropic")}
    assert set(openai) == set(anthropic) == {"read_file", "write_file", "edit_file", "grep", "glob", "bash"}
    assert openai["read_file"]["parameters"]["required"] == ["path"]
    assert openai["read_file"]["parameters"]["additionalProperties"] is False
    assert anthropic["edit_file"]["input_schema"]["properties"]["replace_all"]["default"] is False
    assert anthropic["bash"]["input_schema"]["properties"]["timeout_seconds"]["maximum"] == 600
    with pytest.raises(ValueError, match="use 'openai' or 'anthropic'"):
        tool_definitions("gemini")


@pytest.mark.parametrize(
    "name, meant",
    [
        ("Read_File", "read_file"), (" read_file", "read_file"), ("read-file", "read_file"),
        ("functions.grep", "grep"), ("readfile", "read_file"), ("bash ", "bash"),
        ("run_shell", None), ("str_replace_editor", None), ("edit", None), ("", None),
    ],
)
def test_an_unknown_tool_is_refused_with_the_tool_it_most_likely_meant(name: str, meant: str | None) -> None:
    message = parse_tool_arguments(name, "{}")
    assert isinstance(message, str) and message.startswith("unknown tool") and "Available tools: bash" in message
    assert (f"Did you mean {meant!r}?" in message) if meant else ("Did you mean" not in message)


def test_a_huge_unknown_tool_name_is_not_echoed_whole() -> None:
    message = parse_tool_arguments("x" * 10_000, "{}")
    assert isinstance(message, str) and len(message) < 300
