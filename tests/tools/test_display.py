"""The one escaping path for what a person approves (core.tools.display)."""

from __future__ import annotations

from core.contracts import PendingCall
from core.shell import validate_command
from core.tools.display import content_lines, decode, file_diff
from core.tools.specs import describe_pending_call


def test_escape_sequences_never_reach_the_terminal() -> None:
    old = "line one\n"
    new = "line one\n\x1b[2J\x1b[1A\rhidden\x07 \u202eevil\n"
    lines = file_diff("a.txt", old, new)
    text = "\n".join(lines)
    assert "\x1b" not in text and "\r" not in text and "\x07" not in text and "\u202e" not in text
    assert "+\\x1b[2J\\x1b[1A\\x0dhidden\\x07 \\u202eevil" in lines
    shown = content_lines("a.txt", new)
    assert "\x1b" not in "".join(shown) and shown[1].startswith("\\x1b[2J")


def test_latin1_is_text_not_binary() -> None:
    data = "caf\xe9 cr\xe8me br\xfbl\xe9e\n".encode("latin-1")
    assert decode(data).text == "café crème brûlée\n"
    lines = file_diff("menu.txt", data, "café crème\n".encode("latin-1"))
    assert "-café crème brûlée" in lines and "+café crème" in lines
    assert "windows-1252" in lines[-1]  # the encoding is said
    assert content_lines("menu.txt", data)[-1] == "café crème brûlée"
    utf16 = "hé\n".encode("utf-16")
    assert decode(utf16).text == "hé\n"


def test_binary_is_said_with_its_size() -> None:
    assert file_diff("img.png", b"\x89PNG\x00\x01", b"\x89PNG\x00\x02\x03") == [
        "img.png: binary, 6 -> 7 bytes (content not shown)"
    ]
    assert content_lines("x.bin", b"\x00" * 10) == ["(x.bin: binary, 10 bytes; not shown)"]


def test_real_hunk_lines_and_every_cut_said() -> None:
    before = "".join(f"line {i}\n" for i in range(1, 101))
    after = before.replace("line 50\n", "line fifty\n")
    lines = file_diff("big.txt", before, after)
    assert lines[:3] == ["--- a/big.txt", "+++ b/big.txt", "@@ -47,7 +47,7 @@"]
    everything = "".join(f"{i}\n" for i in range(5000))
    long = file_diff("long.txt", None, everything, max_lines=100)
    assert long[1] == "+++ b/long.txt" and long[0] == "--- /dev/null"
    assert long[-1] == "(long.txt: first 100 of 5003 diff lines shown)"
    content = content_lines("long.txt", everything, max_lines=30)
    assert content[-1] == "(long.txt: first 30 of 5000 lines shown)" and len(content) == 31


def test_pending_call_shows_planned_review_and_preview_escaped() -> None:
    pending = PendingCall(index=0, tool_call_id="c1", name="edit_file", reason="edits a file",
                          arguments={"path": "a.txt", "old_string": "a", "new_string": "b"},
                          review="--- a/a.txt\n+++ b/a.txt\n@@ -3,7 +3,7 @@\n-a\n+b\x1b[31m")
    text = describe_pending_call(pending, validate_command)
    assert "@@ -3,7 +3,7 @@" in text and "\x1b" not in text and "+b\\x1b[31m" in text
    bash = PendingCall(index=1, tool_call_id="c2", name="bash", reason="runs", arguments={"command": "make"},
                       preview="The command would make 1 change(s):\n\x1b]0;owned\x07")
    text = describe_pending_call(bash, validate_command)
    assert "\x1b" not in text and "\\x1b]0;owned\\x07" in text and "timeout: None" not in text
