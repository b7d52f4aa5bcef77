"""Opaque commands, known variables, environment assignments, later `cd`s and
the scratch /tmp, run for real: the bash tool in bubblewrap with copy-on-write
capture (no mocks). The validator's side is in test_shell_validator.py
(OPAQUE) and the rule tables."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from activities.bash import tool as bash
from activities.bash.executor import PlanError, execute_plan, prepare
from activities.bash.facts import validate_in_workspace
from activities.bash.tool import run_bash
from core.contracts import ToolRequest, ToolStatus
from core.shell import validate_command
from core.shell.environment import KNOWN_ENV
from core.tools.specs import BashArgs
from tests.shell.test_command_facts import needs_system_python

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(autouse=True)
def _default_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (bash.SANDBOX_ENV, bash.BWRAP_ENV, bash.MEMORY_ENV, bash.FILE_SIZE_ENV, bash.MAX_PROCS_ENV):
        monkeypatch.delenv(name, raising=False)


async def _run(workspace: Path, command: str):  # type: ignore[no-untyped-def]
    box, reason, _ = await bash.sandbox_status("auto")
    assert box == "bwrap", f"bubblewrap should work on this machine but does not: {reason}"
    request = ToolRequest(
        call_id=f"call-{random.randint(0, 1 << 30)}", tool="bash", workspace_root=str(workspace),
        arguments={"command": command, "timeout_seconds": 30},
    )
    return await run_bash(request, BashArgs(command=command, timeout_seconds=30))


async def test_an_opaque_loop_runs_captured_as_its_source(workspace: Path) -> None:
    (workspace / "a.py").write_text("x = 1\n")
    (workspace / "b.py").write_text("y = 2\ny = 3\n")
    command = 'for f in *.py; do wc -l "$f" > "$f.count"; done; cat a.py.count b.py.count'
    v = validate_in_workspace(command, str(workspace))
    assert (v.verdict, v.opaque) == ("ask", True) and v.reason.startswith("opaque: for loop")
    result = await _run(workspace, command)
    assert result.status == ToolStatus.OK, result.output
    assert "1 a.py" in result.output and "2 b.py" in result.output
    assert result.metadata["opaque"] == "true" and result.metadata["capture"] == "applied"
    assert (workspace / "b.py.count").read_text().strip() == "2 b.py"


async def test_an_opaque_command_with_a_rejected_part_never_runs(workspace: Path) -> None:
    result = await _run(workspace, 'for h in a; do touch ran.txt; ssh "$h" true; done')
    assert result.status == ToolStatus.ERROR and "ssh" in result.output
    assert not (workspace / "ran.txt").exists()


async def test_set_exit_and_read_run_as_the_script_they_are(workspace: Path) -> None:
    (workspace / "notes.txt").write_text("first line\nsecond\n")
    # `set -e` stops at the first failure; `set -o pipefail` makes a pipeline fail with it
    result = await _run(workspace, "set -eo pipefail; echo one; false | cat; echo never")
    assert result.status == ToolStatus.ERROR and "one" in result.output and "never" not in result.output
    assert result.metadata["opaque"] == "true"
    # `read` keeps the line for the later parts; `exit` ends with its status
    result = await _run(workspace, 'read -r first < notes.txt && echo "got: $first" && exit 3')
    assert "got: first line" in result.output and result.metadata["exit_code"] == "3", result
    # nothing was changed, so nothing waits for a person
    assert result.metadata["capture"] == "no-changes", result.metadata


async def test_substitution_subshell_and_if(workspace: Path) -> None:
    (workspace / "src").mkdir()
    command = 'n=$(ls src | wc -l); (cd src && touch made.txt); if [ -f src/made.txt ]; then echo "made $n"; fi'
    result = await _run(workspace, command)
    assert result.status == ToolStatus.OK, result.output
    assert result.output.strip() == "made 0" and (workspace / "src" / "made.txt").exists()


async def test_a_double_bracket_test_runs_captured_and_takes_the_right_branch(workspace: Path) -> None:
    (workspace / "x").write_text("here\n")
    command = 'if [[ -f x && ! -d x ]]; then echo "x is a file"; else echo "no x"; fi; [[ -d build ]] || mkdir build'
    v = validate_in_workspace(command, str(workspace))
    assert (v.verdict, v.opaque) == ("ask", True) and "`[[ ]]`" in v.reason, v
    result = await _run(workspace, command)
    assert result.status == ToolStatus.OK, result.output
    assert result.output.strip() == "x is a file" and (workspace / "build").is_dir()
    assert result.metadata["opaque"] == "true" and result.metadata["capture"] == "applied"
    command = 'for f in *; do [[ "$f" == *.py ]] && echo "py $f"; [[ $f =~ ^(bu.*|x)$ ]] && echo "re $f"; done; true'
    result = await _run(workspace, command)
    assert result.output.split() == ["re", "build", "re", "x"], result.output


async def test_arithmetic_prints_its_number(workspace: Path) -> None:
    result = await _run(workspace, "echo $((2 + 3))")
    assert result.status == ToolStatus.OK and result.output.strip() == "5", result.output
    assert result.metadata["opaque"] == "true" and result.metadata["capture"] == "no-changes"
    (workspace / "a.py").write_text("")
    (workspace / "b.py").write_text("")
    command = 'n=0; for f in *.py; do n=$((n + 1)); done; for i in 1 2; do (( i > 1 )) && echo "$i of $n"; done; true'
    result = await _run(workspace, command)
    assert result.status == ToolStatus.OK and result.output.strip() == "2 of 2", result.output


async def test_known_variables_are_what_the_command_sees(workspace: Path) -> None:
    command = 'echo "$HOME $TMPDIR $USER $SHELL $LANG" && printenv HOME USER'
    v = validate_in_workspace(command, str(workspace))
    assert (v.verdict, v.opaque) == ("allow", False)  # written out at plan time: runs read-only
    result = await _run(workspace, command)
    expected = " ".join(KNOWN_ENV[k] for k in ("HOME", "TMPDIR", "USER", "SHELL", "LANG"))
    assert result.output.splitlines() == [expected, KNOWN_ENV["HOME"], KNOWN_ENV["USER"]], result.output
    pwd = await _run(workspace, "echo $PWD && pwd")
    first, second = pwd.output.splitlines()
    assert first == second == str(workspace.resolve())


async def test_an_assignment_is_the_environment_of_that_command_only(workspace: Path) -> None:
    command = "GREETING='hi there' printenv GREETING && printenv GREETING || echo unset"
    v = validate_command(command)
    assert v.verdict == "ask" and v.plan is not None
    assert v.plan.all_commands()[0].env == (("GREETING", "hi there"),)
    result = await _run(workspace, command)
    assert result.output.splitlines() == ["hi there", "unset"], result.output


async def test_export_reaches_the_later_parts(workspace: Path) -> None:
    result = await _run(workspace, "export LC_ALL=C && printenv LC_ALL")
    assert result.status == ToolStatus.OK and result.output.strip() == "C", result.output


async def test_unset_removes_the_variable_for_the_later_parts(workspace: Path) -> None:
    result = await _run(workspace, "printenv CI && unset CI && printenv CI || echo gone")
    assert result.status == ToolStatus.OK and result.output.split() == ["1", "gone"], result.output


@pytest.mark.parametrize(("command", "printed"), [
    ("export LC_ALL=C && echo $LC_ALL", "C"),
    ("echo $LC_ALL && export LC_ALL=C && echo ${LC_ALL}", "C.UTF-8 C"),
    ("unset CI && echo \"[$CI]\"", "[]"),
    ("export TERM=xterm && unset TERM && echo \"[$TERM]\"", "[]"),
])
async def test_a_variable_read_after_export_or_unset_has_its_new_value(
    workspace: Path, command: str, printed: str
) -> None:
    result = await _run(workspace, command)
    assert result.status == ToolStatus.OK and " ".join(result.output.split()) == printed, result.output


@pytest.mark.parametrize("command", ["LD_PRELOAD=/x.so ls", "export BASH_ENV=x && ls", "GIT_DIR=x git status",
                                     "https_proxy=http://h:1 ls", "PATH=.:/usr/bin ls"])
async def test_denied_assignments_never_run(workspace: Path, command: str) -> None:
    result = await _run(workspace, command)
    assert result.status == ToolStatus.ERROR and "environment variable" in result.output


async def test_a_redirection_into_a_folder_an_earlier_part_creates(workspace: Path) -> None:
    result = await _run(workspace, "mkdir -p d/sub && echo deep > d/sub/x.txt")
    assert result.status == ToolStatus.OK, result.output
    assert (workspace / "d" / "sub" / "x.txt").read_text() == "deep\n"


async def test_a_later_cd_moves_the_parts_after_it(workspace: Path) -> None:
    result = await _run(workspace, "mkdir -p d && cd d && echo here > f.txt && pwd")
    assert result.status == ToolStatus.OK, result.output
    assert (workspace / "d" / "f.txt").read_text() == "here\n"
    assert result.output.strip().endswith("/d")


async def test_a_failed_later_cd_stops_the_command(workspace: Path) -> None:
    result = await _run(workspace, "ls\ncd missing\ntouch stray.txt")
    assert result.status == ToolStatus.ERROR
    assert not (workspace / "stray.txt").exists()


async def test_scratch_tmp_needs_no_approval_and_runs_read_only(workspace: Path) -> None:
    command = "cat > /tmp/patch.py <<'PY'\nprint('patched')\nPY\ncat /tmp/patch.py"
    v = validate_in_workspace(command, str(workspace))
    assert v.verdict == "allow", v
    result = await _run(workspace, command)
    assert result.status == ToolStatus.OK and "print('patched')" in result.output, result.output
    assert result.metadata["capture"] == "read-only"
    assert validate_in_workspace("python3 /tmp/patch.py", str(workspace)).verdict == "ask"


async def test_an_opaque_plan_never_runs_read_only(workspace: Path) -> None:
    v = validate_command("for f in a; do echo $f; done")
    assert v.plan is not None and v.plan.script is not None
    with pytest.raises(PlanError, match="never run as read-only"):
        prepare(v.plan, str(workspace), read_only=True)
    with pytest.raises(PlanError):
        await execute_plan(v.plan, str(workspace), 10, read_only=True)


def test_a_scratch_tmp_redirection_needs_the_sandbox(workspace: Path) -> None:
    v = validate_command("echo hi > /tmp/x.txt && cat /tmp/x.txt")
    assert v.plan is not None
    prepare(v.plan, str(workspace), read_only=True).close()  # in the sandbox: bash opens its own /tmp
    with pytest.raises(PlanError, match="private /tmp"):
        prepare(v.plan, str(workspace), read_only=False, sandboxed=False)


# --- `source DIR/bin/activate` of a real virtual environment -------------------------------

def _venv(workspace: Path) -> Path:
    from tests.shell.test_command_facts import make_venv

    folder = make_venv(workspace / ".venv")
    with open(folder / "bin" / "activate", "a") as script:
        script.write("echo SOURCED\n")  # workspace code: the executor applies activation without it
    return folder


@needs_system_python
async def test_activation_puts_the_venv_first_for_the_later_parts(workspace: Path) -> None:
    folder = _venv(workspace)
    command = "source .venv/bin/activate && python -c 'import sys; print(sys.prefix)' && printenv VIRTUAL_ENV"
    assert validate_in_workspace(command, str(workspace)).verdict == "ask"  # python -c runs code
    result = await _run(workspace, command)
    assert result.status == ToolStatus.OK, result.output
    assert result.output.split() == [str(folder.resolve())] * 2, result.output
    assert "SOURCED" not in result.output
    command = ". .venv/bin/activate && python --version && printenv VIRTUAL_ENV_PROMPT PYTHONHOME || echo no-home"
    result = await _run(workspace, command)
    assert result.metadata["verdict"] == "ask", result.output  # the venv's python: a workspace program
    assert result.output.startswith("Python 3."), result.output
    assert "(.venv)" in result.output and "no-home" in result.output, result.output


@needs_system_python
async def test_a_program_planted_in_the_venv_bin_asks_and_a_fake_venv_is_refused(workspace: Path) -> None:
    folder = _venv(workspace)
    planted = folder / "bin" / "ls"
    planted.write_text("#!/bin/sh\necho planted\n")
    planted.chmod(0o755)
    result = await _run(workspace, "source .venv/bin/activate && ls")
    assert result.metadata["verdict"] == "ask" and "planted" in result.output, result.output  # asks; runs its ls
    (folder / "pyvenv.cfg").unlink()
    result = await _run(workspace, "source .venv/bin/activate && ls")
    assert result.status == ToolStatus.ERROR and "virtual environment" in result.output, result.output
    assert "planted" not in result.output and "SOURCED" not in result.output


async def test_a_relative_program_path_runs_the_file_in_the_folder_its_part_runs_in(workspace: Path) -> None:
    for script, said in ((workspace / "a.sh", "top"), (workspace / "sub" / "a.sh", "sub")):
        script.parent.mkdir(exist_ok=True)
        script.write_text(f"#!/bin/sh\necho {said}\n")
        script.chmod(0o755)
    result = await _run(workspace, "./a.sh && cd sub && ./a.sh && ./missing.sh")
    assert result.output.split("\n")[:2] == ["top", "sub"], result.output
    assert "./missing.sh: command not found" in result.output, result.output


@needs_system_python
async def test_the_venv_activated_is_the_one_in_the_folder_the_activation_ran_in(workspace: Path) -> None:
    """A later `cd` into a folder with a venv of its own does not change which one was activated."""
    from tests.shell.test_command_facts import make_venv

    top = _venv(workspace)
    make_venv(workspace / "sub" / ".venv")
    command = "source .venv/bin/activate && cd sub && printenv VIRTUAL_ENV && python -c 'import sys; print(sys.prefix)'"
    result = await _run(workspace, command)
    assert result.status == ToolStatus.OK, result.output
    assert result.output.split() == [str(top.resolve())] * 2, result.output


async def test_a_python_start_file_left_in_the_shared_home_never_runs(workspace: Path) -> None:
    """HOME is in the scratch /tmp that later calls share: a `.pth` file an
    earlier command leaves in its user site would run in every later Python,
    an allowed `python3 -m json.tool` (only reads) among them."""
    (workspace / "x.json").write_text('{"a": 1}\n')
    plant = ("import os, site, sys; d = site.getusersitepackages(); os.makedirs(d, exist_ok=True); "
             "open(os.path.join(d, 'x.pth'), 'w').write('import sys; print(\\'PLANTED\\')\\n')")
    planted = await _run(workspace, f'python3 -c "{plant}"')
    assert planted.status == ToolStatus.OK, planted.output
    result = await _run(workspace, "python3 -m json.tool x.json")
    assert result.metadata["verdict"] == "allow" and '"a": 1' in result.output, result.output
    assert "PLANTED" not in result.output, result.output


@needs_system_python
async def test_an_activated_venvs_site_packages_make_its_python_a_workspace_program(workspace: Path) -> None:
    """The venv's python is the system's, but it starts with the venv's
    site-packages, whose `.pth` files run: nothing after the activation
    that starts it is only a read."""
    folder = _venv(workspace)
    (workspace / "x.json").write_text('{"a": 1}\n')
    for site_packages in folder.glob("lib/python3*/site-packages"):
        (site_packages / "x.pth").write_text("import sys; print('PLANTED')\n")
    command = "source .venv/bin/activate && python3 -m json.tool x.json"
    assert validate_in_workspace(command, str(workspace)).verdict == "ask"


def test_the_executor_activates_only_a_virtual_environment_inside_the_workspace(workspace: Path) -> None:
    """Facts that call a folder a virtual environment are checked again when the plan runs."""
    from core.shell.facts import WorkspaceFacts

    (workspace / "fake" / "bin").mkdir(parents=True)
    (workspace / "fake" / "bin" / "activate").write_text("echo SOURCED\n")
    forged = WorkspaceFacts(root=str(workspace), venvs={"fake": ()})
    v = validate_command("source fake/bin/activate && ls", forged)
    assert v.verdict == "allow" and v.plan is not None
    with pytest.raises(PlanError, match="not a virtual environment"):
        prepare(v.plan, str(workspace), read_only=True)
