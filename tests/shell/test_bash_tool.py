"""The bash tool function and its activity, with real processes and the real
dev server: rejected commands never run, refusals are error results, rlimits
and artifacts (the fences themselves: test_bash_exec.py)."""

from __future__ import annotations

import random
import resource
import sys
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from activities.bash import tool as bash
from activities.bash.tool import execute, run_bash
from core.contracts import ToolRequest, ToolStatus
from core.tools.specs import BashArgs
from tests.support import run_tool_on_server, worker_activities

from tests.shell.bash_exec_helpers import PY, _require_bwrap
from tests.shell.bash_exec_helpers import _default_settings  # noqa: F401 - autouse fixture

pytestmark = pytest.mark.timeout(60)


# --- the tool function and the activity -------------------------------------------------


def _request(workspace: Path, command: str, timeout: int = 30) -> ToolRequest:
    return ToolRequest(
        call_id=f"call-{random.randint(0, 1 << 30)}",
        tool="bash",
        workspace_root=str(workspace),
        arguments={"command": command, "timeout_seconds": timeout},
    )


async def test_rejected_command_never_runs(workspace: Path) -> None:
    # An opaque command with a rejected part is rejected; run by a shell, it would create out.txt.
    command = "for h in a; do touch out.txt; ssh \"$h\"; done"
    request = _request(workspace, command)
    result = await run_bash(request, BashArgs(command=command))
    assert result.status == ToolStatus.ERROR and result.is_error
    assert result.metadata["verdict"] == "reject"
    assert "rejected" in result.output.lower()
    assert not (workspace / "out.txt").exists()


def _needs_validator(result) -> str:
    return (
        "needs the real shell validator (core/shell/__init__.py) to accept `python3 prog.py`; "
        f"got {result.metadata} {result.output!r}"
    )


async def test_required_sandbox_refusal_is_an_error_result(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (workspace / "prog.py").write_text("open('ran', 'w').close()\n")
    monkeypatch.setenv(bash.BWRAP_ENV, "/nonexistent/bwrap")
    monkeypatch.setenv(bash.SANDBOX_ENV, "required")
    result = await run_bash(_request(workspace, "python3 prog.py"), BashArgs(command="python3 prog.py"))
    assert result.metadata.get("verdict") != "reject", _needs_validator(result)
    assert result.status == ToolStatus.ERROR and "sandbox is required" in result.output
    assert result.metadata["sandbox"] == "none"
    assert not (workspace / "ran").exists()


async def test_bash_activity_on_the_dev_server(client, workspace: Path) -> None:
    (workspace / "prog.py").write_text(
        "import sys\nprint('hello from prog')\nprint('to stderr', file=sys.stderr)\nsys.exit(3)\n"
    )
    result = await run_tool_on_server(client, worker_activities(workspace, "bash"), _request(workspace, "python3 prog.py"))
    assert result.metadata.get("verdict") in ("allow", "ask"), _needs_validator(result)
    assert result.status == ToolStatus.ERROR and result.is_error
    assert result.metadata["exit_code"] == "3"
    assert result.output.startswith("hello from prog\nto stderr")
    assert "exit code 3" in result.output
    assert result.metadata["sandbox"] == "bwrap", result.metadata
    assert result.metadata["process_cap"].startswith("cgroup"), result.metadata
    assert result.metadata["dropped_lines"] == "0"
    assert float(result.metadata["duration_s"]) > 0


async def test_bash_timeout_result(workspace: Path) -> None:
    (workspace / "prog.py").write_text("import time\nprint('waiting', flush=True)\ntime.sleep(60)\n")
    started = time.monotonic()
    # 2 s: on a loaded machine the interpreter may take a second to print
    result = await run_bash(_request(workspace, "python3 prog.py", 2), BashArgs(command="python3 prog.py",
                                                                                 timeout_seconds=2))
    assert result.metadata.get("verdict") != "reject", _needs_validator(result)
    assert time.monotonic() - started < 20  # killed at the timeout, not after the program's 60 s
    assert result.status == ToolStatus.ERROR and result.metadata["timed_out"] == "true"
    assert result.output.startswith("waiting\n")
    assert "killed after 2 s" in result.output and "timeout_seconds" in result.output
    assert "interactive" in result.output


async def test_rlimits_are_applied(workspace: Path) -> None:
    code = (
        "import resource as r\n"
        "for name in ('RLIMIT_AS', 'RLIMIT_FSIZE', 'RLIMIT_CPU', 'RLIMIT_CORE'):\n"
        "    print(name, *r.getrlimit(getattr(r, name)))\n"
    )
    out = await execute([PY, "-c", code], workspace, 30, sandbox="auto", memory_bytes=3 << 30, file_bytes=5 << 20)
    limits = {line.split()[0]: tuple(map(int, line.split()[1:])) for line in out.output.splitlines()}
    assert limits == {
        "RLIMIT_AS": (3 << 30, 3 << 30),
        "RLIMIT_FSIZE": (5 << 20, 5 << 20),
        "RLIMIT_CPU": (30 + bash.CPU_MARGIN_S, 30 + bash.CPU_MARGIN_S + 5),
        "RLIMIT_CORE": (0, 0),
    }, out.output
    big = await execute(["dd", "if=/dev/zero", "of=big", "bs=64k", "count=32"], workspace, 30, sandbox="off",
                        file_bytes=1 << 20)
    assert big.exit_code == -25, big.output  # SIGXFSZ
    assert (workspace / "big").stat().st_size == 1 << 20


async def test_artifacts_are_never_written_through_a_symlink(workspace: Path, tmp_path: Path) -> None:
    """A sandboxed command can replace the artifacts folder with a symlink;
    the (unsandboxed) worker must not follow it when saving output."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (workspace / ".agent-artifacts").symlink_to(elsewhere)
    out = await execute(["seq", "1", "5000"], workspace, 10, sandbox="off", artifact_root=workspace)
    assert out.dropped_lines > 0 and out.artifact is None
    assert "could not be saved" in out.output and "symbolic link" in out.output
    assert list(elsewhere.iterdir()) == []


async def test_repository_config_cannot_make_git_status_run_a_program(workspace: Path) -> None:
    """`git status` is read-only by the validator's rules, but a repository's
    own config could name an fsmonitor program; the environment overrides it."""
    init = await execute(["git", "init", "-q"], workspace, 20, sandbox="off")
    assert init.exit_code == 0, init.output
    marker = workspace / "pwned"
    (workspace / "evil.sh").write_text(f"#!/bin/sh\ntouch {marker}\n")
    (workspace / "evil.sh").chmod(0o755)
    with open(workspace / ".git" / "config", "a") as fh:
        fh.write(f"[core]\n\tfsmonitor = {workspace / 'evil.sh'}\n")
    status = await execute(["git", "status", "--short"], workspace, 20, sandbox="off")
    assert status.exit_code == 0, status.output
    assert not marker.exists()


async def test_program_in_a_venv_under_tmp_still_runs_in_the_sandbox(workspace: Path) -> None:
    """The sandbox's /tmp is private and empty; a program that lives in a
    virtualenv under the host's /tmp (a checkout in /tmp) is bound back."""
    await _require_bwrap()
    venv = Path(tempfile.mkdtemp(prefix="agent-venv-", dir="/tmp"))
    try:
        (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
        (venv / "bin").mkdir()
        tool = venv / "bin" / "hello-tool"
        tool.write_text("#!/bin/sh\necho hello from the venv\n")
        tool.chmod(0o755)
        out = await execute([str(tool)], workspace, 10, sandbox="auto")
        assert out.sandbox == "bwrap"
        assert out.exit_code == 0 and out.output.strip() == "hello from the venv", out.output
        # ...but read-only: the command cannot change it.
        touched = await execute(["touch", str(venv / "bin" / "x")], workspace, 10, sandbox="auto")
        assert touched.exit_code != 0 and not (venv / "bin" / "x").exists()
    finally:
        shutil.rmtree(venv)
