"""Each tool's facts live in one place (core/tools/specs.py): the activity
options, the snapshot rule, the review view and the lost-worker wording all
come from its ToolSpec, for every registered tool."""

from __future__ import annotations

from datetime import timedelta

import pytest

from core.contracts import PendingCall
from core.tools.specs import describe_pending_call
from core.shell import validate_command
from core.tools.specs import BASH, EDIT_FILE, TOOLS, WRITE_FILE, BashArgs
from workflows.activity_options import options_for

SAMPLE_ARGS = {
    "read_file": {"path": "a.py"},
    "write_file": {"path": "a.py", "content": "x = 1\n"},
    "edit_file": {"path": "a.py", "old_string": "x = 1", "new_string": "x = 2"},
    "grep": {"pattern": "x"},
    "glob": {"pattern": "**/*.py"},
    "bash": {"command": "git reset --hard", "timeout_seconds": 20},
}


def test_every_tool_has_a_sample() -> None:
    assert set(SAMPLE_ARGS) == set(TOOLS)


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_options_and_review_come_from_the_spec(name: str) -> None:
    spec = TOOLS[name]
    args = spec.params.model_validate(SAMPLE_ARGS[name])
    options = options_for(name, args)
    assert options.may_run_locally == spec.activity.may_run_locally
    if spec.activity.own_timeout_margin_s is None:
        assert options.start_to_close == timedelta(seconds=spec.activity.start_to_close_s)
    view = describe_pending_call(
        PendingCall(index=0, tool_call_id="c1", name=name, arguments=SAMPLE_ARGS[name], reason="r"), validate_command
    )
    assert view.startswith(f"#1 {name} (c1)") and len(view.splitlines()) >= 2


def test_the_facts_that_differ_between_tools() -> None:
    assert {n for n, s in TOOLS.items() if s.needs_snapshot} == {WRITE_FILE, EDIT_FILE}
    assert {n for n, s in TOOLS.items() if s.lost_worker_text} == {BASH}
    bash = options_for(BASH, BashArgs(command="ls", timeout_seconds=20))
    assert bash.start_to_close == timedelta(seconds=50) and not bash.may_run_locally
    assert bash.retry.maximum_attempts == 1  # turns from before the capture patch
    assert options_for(BASH, bash_timeout=20, bash_retry=True).retry.maximum_attempts == 4
    assert options_for("read_file").retry.maximum_attempts == 5


def test_review_shows_destructive_commands_and_escapes() -> None:
    bash = describe_pending_call(
        PendingCall(index=0, tool_call_id="c", name=BASH, arguments=SAMPLE_ARGS["bash"], reason="r"), validate_command
    )
    assert "destructive" in bash
    write = describe_pending_call(
        PendingCall(index=0, tool_call_id="c", name=WRITE_FILE, arguments={"path": "a", "content": "\x1b[2Jx"},
                    reason="r"),
        validate_command,
    )
    assert "\x1b" not in write and "\\x1b[2Jx" in write


def test_an_unknown_tool_has_no_options() -> None:
    with pytest.raises(ValueError, match="no activity options"):
        options_for("rm_rf")
