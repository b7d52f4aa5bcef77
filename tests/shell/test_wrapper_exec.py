"""Wrappers that only bound or tune their program (``timeout``, ``nice``,
``stdbuf``, ``env NAME=value``), run for real through the bash tool in
bubblewrap: what runs is the wrapper by its absolute path and the program the
validator judged, by the absolute path it resolved to. The verdicts are in
core/shell/rules/wrappers.py's CASES."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from activities.bash.executor import PlanError, prepare
from activities.bash.facts import validate_in_workspace
from core.contracts import ToolStatus
from core.shell import validate_command
from core.shell.command_plan import CommandList, Pipeline, SimpleCommand
from tests.shell.test_command_facts import needs_system_python
from tests.shell.test_opaque_exec import _default_settings, _run, _venv  # noqa: F401 - autouse fixture

pytestmark = pytest.mark.timeout(60)


def _script(plan: CommandList, workspace: Path) -> tuple[str, list[str]]:
    """The rebuilt script of ``plan`` and the programs it runs."""
    prepared = prepare(plan, str(workspace), read_only=False)
    try:
        fd = int(prepared.argv[-1].rsplit("/", 1)[-1])
        return os.pread(fd, 1 << 16, 0).decode(), prepared.programs
    finally:
        prepared.close()


async def test_timeout_runs_its_program_and_prints(workspace: Path) -> None:
    (workspace / "hello.txt").write_text("hi\n")
    result = await _run(workspace, "timeout 5 ls")
    assert result.metadata["verdict"] == "allow", result.metadata
    assert result.status == ToolStatus.OK and "hello.txt" in result.output, result.output


async def test_timeout_ends_its_program_with_124_within_the_call(workspace: Path) -> None:
    started = time.monotonic()
    result = await _run(workspace, "timeout 1 sleep 5")
    assert time.monotonic() - started < 4.5, "timeout should have ended sleep after about a second"
    assert result.metadata["exit_code"] == "124" and result.metadata["timed_out"] == "false", result.metadata


async def test_env_sets_the_variable_for_its_program(workspace: Path) -> None:
    result = await _run(workspace, "env FOO=bar printenv FOO")
    assert result.status == ToolStatus.OK and result.output.strip() == "bar", result.output
    result = await _run(workspace, "env -u LANG printenv LANG || echo unset")
    assert result.output.strip() == "unset", result.output


async def test_nice_and_stdbuf_in_a_pipeline(workspace: Path) -> None:
    (workspace / "a.txt").write_text("x\ny\n")
    result = await _run(workspace, "nice -n 5 cat a.txt | stdbuf -oL wc -l")
    assert result.status == ToolStatus.OK and result.output.strip() == "2", result.output


def test_the_wrapper_and_its_program_run_by_their_absolute_paths(workspace: Path) -> None:
    v = validate_command("timeout -s KILL 5 ls -la")
    assert v.plan is not None and v.argv == ("ls", "-la")  # every later check reads the program it runs
    (command,) = v.plan.all_commands()
    assert command.wrapper == ("timeout", "-s", "KILL", "5")
    script, programs = _script(v.plan, workspace)
    timeout, ls = os.path.realpath(shutil.which("timeout") or ""), os.path.realpath(shutil.which("ls") or "")
    assert sorted(os.path.realpath(p) for p in programs) == sorted([timeout, ls])
    line = next(x for x in script.splitlines() if "KILL" in x).split()
    assert [os.path.realpath(line[0]), *line[1:4], os.path.realpath(line[4]), line[5]] == [
        timeout, "-s", "KILL", "5", ls, "-la"], line


def test_a_workspace_program_stays_the_workspace_file(workspace: Path) -> None:
    (workspace / "run.sh").write_text("#!/bin/sh\necho ran\n")
    (workspace / "run.sh").chmod(0o755)
    v = validate_in_workspace("timeout 10s ./run.sh", str(workspace))
    assert v.verdict == "ask" and "from the workspace" in v.reason, v.reason
    _, programs = _script(v.plan, workspace)  # type: ignore[arg-type]
    assert str(workspace.resolve() / "run.sh") in programs, programs


def test_a_missing_program_is_bash_s_message_without_the_wrapper(workspace: Path) -> None:
    v = validate_command("timeout 5 no-such-program-xyz")
    script, programs = _script(v.plan, workspace)  # type: ignore[arg-type]
    assert "_agent_missing no-such-program-xyz" in script and len(programs) == 0, script


@pytest.mark.parametrize("argv", [("cd", "src"), ("source", ".venv/bin/activate"), ("command", "-v", "ls"),
                                  ("unset", "CI"), ("export", "A=1")])
def test_the_executor_never_runs_a_builtin_under_a_wrapper(workspace: Path, argv: tuple[str, ...]) -> None:
    plan = CommandList((Pipeline((SimpleCommand(argv, wrapper=("timeout", "5")),)),))
    with pytest.raises(PlanError, match="builtin"):
        prepare(plan, str(workspace), read_only=False).close()
    plan = CommandList((Pipeline((SimpleCommand(("ls",), wrapper=("nohup",)),)),))
    with pytest.raises(PlanError, match="not a wrapper"):
        prepare(plan, str(workspace), read_only=False).close()


@needs_system_python
async def test_after_an_activation_the_wrapped_program_is_the_venv_s(workspace: Path) -> None:
    folder = _venv(workspace)
    command = "source .venv/bin/activate && timeout 5 python -c 'import sys; print(sys.prefix)'"
    assert validate_in_workspace(command, str(workspace)).verdict == "ask"  # python -c runs code
    result = await _run(workspace, command)
    assert result.status == ToolStatus.OK, result.output
    assert result.output.split() == [str(folder.resolve())], result.output


@needs_system_python
async def test_a_program_planted_in_the_venv_bin_asks_under_a_wrapper_too(workspace: Path) -> None:
    folder = _venv(workspace)
    planted = folder / "bin" / "ls"
    planted.write_text("#!/bin/sh\necho planted\n")
    planted.chmod(0o755)
    result = await _run(workspace, "source .venv/bin/activate && timeout 5 ls")
    assert result.metadata["verdict"] == "ask" and "planted" in result.output, result.output


def test_the_workspace_checks_see_the_program_a_wrapper_runs(workspace: Path) -> None:
    (workspace / "json.py").write_text("")
    (workspace / "a.json").write_text("{}\n")
    (workspace / "d").mkdir()
    (workspace / "d" / "out").symlink_to("/etc")
    for command, needle in (
        ("nice python3 -m json.tool a.json", "`json.py` in the folder it runs in"),  # a module's look-alike
        ("timeout 5 grep -R root d", "follows symbolic links"),
        ("env LANG=C cat d/out/passwd", "outside the workspace"),
    ):
        v = validate_in_workspace(command, str(workspace))
        assert v.verdict == "ask" and needle in v.reason, (command, v.reason)
