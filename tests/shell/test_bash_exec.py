"""The bash tool's resource fence and physical fence, with real processes,
real files and (for the activity) the real dev server. No mocks.

Most tests call ``activities.bash.tool.execute`` directly with any argv, so the
fences are tested independently of the shell validator."""

from __future__ import annotations

import asyncio
import logging
import os
import random
import resource
import sys
import shutil
import tempfile
import time
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from activities.bash import tool as bash
from activities.bash.tool import (
    BadSetting,
    OutputCollector,
    SandboxUnavailable,
    bash_activity,
    execute,
    run_bash,
)
from core.contracts import ToolRequest, ToolStatus
from core.tools.specs import BashArgs
from tests.support import run_tool_on_server

pytestmark = pytest.mark.timeout(60)

PY = sys.executable


@pytest.fixture(autouse=True)
def _default_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (bash.SANDBOX_ENV, bash.BWRAP_ENV, bash.MEMORY_ENV, bash.FILE_SIZE_ENV, bash.MAX_PROCS_ENV):
        monkeypatch.delenv(name, raising=False)


async def _require_bwrap() -> None:
    box, reason, _ = await bash.sandbox_status("auto")
    assert box == "bwrap", f"bubblewrap should work on this machine but does not: {reason}"


def _marker() -> str:
    """A unique `sleep` duration: lets a test find its own processes in /proc,
    whatever PID namespace they were started in."""
    return f"{random.randint(300, 900)}.{random.randint(100000, 999999)}"


def _pids_with(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            args = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in args and state not in ("Z", "X"):
            found.append(int(entry))
    return found


async def _gone(marker: str, within_s: float = 3.0) -> list[int]:
    deadline = time.monotonic() + within_s
    while (pids := _pids_with(marker)) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    return pids


def _kill(marker: str) -> None:
    for pid in _pids_with(marker):
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass


# --- exit codes, stdin, environment ----------------------------------------------------


@pytest.mark.parametrize("box", ["off", "auto"])
async def test_exit_codes_and_merged_output(workspace: Path, box: str) -> None:
    ok = await execute(["true"], workspace, 10, sandbox=box)
    assert ok.exit_code == 0 and not ok.timed_out and ok.output == ""

    bad = await execute(["sh", "-c", "echo out; echo err >&2; echo out2; exit 3"], workspace, 10, sandbox=box)
    assert bad.exit_code == 3
    assert bad.output == "out\nerr\nout2"  # stdout and stderr merged, in order
    assert bad.dropped_lines == 0 and bad.artifact is None


async def test_stdin_is_dev_null(workspace: Path) -> None:
    started = time.monotonic()
    out = await execute(["cat"], workspace, 20, sandbox="off")
    assert out.exit_code == 0 and out.output == ""
    assert time.monotonic() - started < 5, "cat with no arguments must see EOF at once"


@pytest.mark.parametrize("box", ["off", "auto"])
async def test_environment_is_scrubbed(workspace: Path, monkeypatch: pytest.MonkeyPatch, box: str) -> None:
    secret = f"s3cr3t-{random.randint(0, 1 << 30)}"
    monkeypatch.setenv("AGENT_TEST_API_KEY", secret)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    # Relative entries and folders inside the workspace are dropped from PATH.
    monkeypatch.setenv("PATH", f".::{workspace / 'bin'}:{os.environ['PATH']}")
    out = await execute(["env"], workspace, 10, sandbox=box)
    assert out.exit_code == 0
    assert secret not in out.output and "AGENT_TEST_API_KEY" not in out.output
    env = dict(line.split("=", 1) for line in out.output.splitlines())
    assert env["LANG"] == env["LC_ALL"] == "C.UTF-8"
    assert env["TERM"] == "dumb" and env["PAGER"] == env["GIT_PAGER"] == "cat"
    assert env["GIT_TERMINAL_PROMPT"] == "0" and env["CI"] == "1" and env["NO_COLOR"] == "1"
    assert env["HOME"] != os.environ.get("HOME") and not env["HOME"].startswith(str(workspace))
    path = env["PATH"].split(":")
    assert "." not in path and "" not in path and str(workspace / "bin") not in path
    assert set(env) <= set(bash.command_env(str(workspace), "h", "t")) | {"PWD"}

    printenv = await execute(["printenv", "AGENT_TEST_API_KEY"], workspace, 10, sandbox=box)
    assert printenv.exit_code == 1 and printenv.output == ""


async def test_command_not_found(workspace: Path) -> None:
    out = await execute(["no-such-program-xyz"], workspace, 10, sandbox="off")
    assert out.exit_code == 127 and out.spawn_error and "not found" in out.output


# --- timeout, process groups, pipes ----------------------------------------------------


@pytest.mark.parametrize("box", ["off", "auto"])
async def test_timeout_kills_the_whole_tree(workspace: Path, box: str) -> None:
    """A background child, a double-forked grandchild (still in the group) and
    one that left the group with setsid: all gone after the timeout."""
    if box == "auto":
        await _require_bwrap()
    m1, m2, m3, m4 = _marker(), _marker(), _marker(), _marker()
    script = f"sleep {m1} & (sleep {m2} &) ; setsid sleep {m3} & echo started; sleep {m4}"
    started = time.monotonic()
    try:
        out = await execute(["sh", "-c", script], workspace, 1, sandbox=box)
        elapsed = time.monotonic() - started
        assert out.timed_out and out.exit_code == -9
        assert out.output == "started"
        assert elapsed < 1 + 3, f"returned {elapsed:.1f} s after a 1 s timeout"
        assert out.sandbox == ("bwrap" if box == "auto" else "none")
        for marker in (m1, m2, m4) if out.process_cap == "none" and box == "off" else (m1, m2, m3, m4):
            assert not await _gone(marker), f"sleep {marker} survived the timeout"
    finally:
        for marker in (m1, m2, m3, m4):
            _kill(marker)


async def test_timeout_kills_grandchild_by_pid(workspace: Path) -> None:
    m = _marker()
    pidfile = workspace / "pid"
    out = await execute(["sh", "-c", f"sleep {m} & echo $! > pid; sleep {m}"], workspace, 1, sandbox="off")
    assert out.timed_out
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            break
        if state in ("Z", "X"):
            break
        await asyncio.sleep(0.05)
    else:
        _kill(m)
        pytest.fail(f"grandchild {pid} is still alive after the timeout")


async def test_leftover_background_process_is_killed_on_exit(workspace: Path) -> None:
    m = _marker()
    started = time.monotonic()
    try:
        out = await execute(["sh", "-c", f"sleep {m} & sleep 0.3; echo main done"], workspace, 30, sandbox="off")
        assert out.exit_code == 0 and out.output == "main done"
        assert time.monotonic() - started < 3
        assert not await _gone(m), "a background process outlived the call"
    finally:
        _kill(m)


async def test_pipe_held_by_escaped_grandchild_does_not_hang(workspace: Path) -> None:
    """Worst case: no sandbox, no cgroup; the grandchild left the process group
    (setsid) and keeps the pipe open. We give up after the drain wait."""
    m = _marker()
    started = time.monotonic()
    try:
        out = await execute(
            ["sh", "-c", f"setsid sleep {m} & sleep 0.3; echo main done"], workspace, 30, sandbox="off", max_procs=0,
            total_memory_bytes=0, drain_s=1.0,
        )
        elapsed = time.monotonic() - started
        assert out.exit_code == 0 and out.output == "main done"
        assert out.drain_timed_out and out.process_cap == "none"
        assert elapsed < 1.0 + 2, f"took {elapsed:.1f} s with a 1 s drain wait"
    finally:
        _kill(m)


async def test_heartbeats_while_running(workspace: Path) -> None:
    beats: list[dict] = []
    out = await execute(["sleep", "1.1"], workspace, 10, sandbox="off", on_heartbeat=beats.append, heartbeat_every_s=0.2)
    assert out.exit_code == 0
    assert len(beats) >= 3 and all("elapsed_s" in b for b in beats)


async def test_cancellation_kills_the_command(workspace: Path) -> None:
    m1, m2 = _marker(), _marker()
    task = asyncio.ensure_future(execute(["sh", "-c", f"sleep {m1} & sleep {m2}"], workspace, 60, sandbox="off"))
    try:
        deadline = time.monotonic() + 5
        while not (_pids_with(m1) and _pids_with(m2)) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert not await _gone(m1) and not await _gone(m2)
    finally:
        _kill(m1)
        _kill(m2)


# --- output bounds -------------------------------------------------------------------


async def test_output_flood_is_bounded_in_result_memory_and_artifact(workspace: Path) -> None:
    cap = 8 << 20
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        out = await execute(["yes"], workspace, 3, sandbox="off", artifact_root=workspace, artifact_max_bytes=cap)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    rss_growth = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before

    assert out.timed_out
    assert out.total_bytes > 64 << 20, f"only {out.total_bytes} bytes flowed: the test proves little"
    # Python-level allocations stay small however much was printed ...
    assert peak < 12 << 20, f"peak traced memory {peak} bytes while reading {out.total_bytes} bytes"
    # ... and so does the process as a whole.
    assert rss_growth < 64 << 10, f"max RSS grew by {rss_growth} KiB"

    assert len(out.output) < 50_000
    assert out.dropped_lines > 1_000_000
    assert f"[... {out.dropped_lines} lines not shown" in out.output
    assert out.output.startswith("y\n" * 50)
    assert out.artifact and out.artifact in out.output
    saved = workspace / out.artifact
    assert saved.is_file() and saved.stat().st_size == cap
    assert out.artifact_capped and "stops at the first 8 MiB" in out.output


async def test_small_output_needs_no_artifact(workspace: Path) -> None:
    out = await execute(["seq", "1", "2100"], workspace, 10, sandbox="off", artifact_root=workspace)
    assert out.dropped_lines == 0 and out.artifact is None
    assert out.output.splitlines() == [str(i) for i in range(1, 2101)]
    assert not (workspace / ".agent-artifacts").exists() or not list((workspace / ".agent-artifacts").glob("bash-*"))


async def test_head_and_tail_are_kept(workspace: Path) -> None:
    out = await execute(["seq", "1", "100000"], workspace, 10, sandbox="off", artifact_root=workspace)
    lines = out.output.splitlines()
    assert lines[:100] == [str(i) for i in range(1, 101)]
    assert lines[-1] == "100000"
    assert out.total_lines == 100000 and out.dropped_lines == 100000 - 100 - (len(lines) - 101)
    saved = (workspace / out.artifact).read_text()
    assert saved.splitlines() == [str(i) for i in range(1, 100001)]


async def test_one_huge_line_is_cut(workspace: Path) -> None:
    out = await execute([PY, "-c", "print('x' * 5_000_000, end='')"], workspace, 20, sandbox="off",
                        artifact_root=workspace)
    assert out.total_lines == 1 and out.lines_cut == 1
    assert len(out.output) < 5_000
    assert "line cut: 4998000 more bytes" in out.output and out.artifact in out.output
    assert (workspace / out.artifact).stat().st_size == 5_000_000


async def test_invalid_utf8_is_replaced(workspace: Path) -> None:
    code = "import sys; sys.stdout.buffer.write(b'caf\\xc3\\xa9 \\xff\\xfe ok\\n\\x80')"
    out = await execute([PY, "-c", code], workspace, 10, sandbox="off")
    assert out.exit_code == 0
    assert out.output == "café \ufffd\ufffd ok\n\ufffd"


def _reference(lines: list[bytes], **kw: int) -> OutputCollector:
    ref = OutputCollector(**kw)
    for line in lines:
        ref._line(line, len(line))
    return ref


@settings(max_examples=300, deadline=None)
@given(
    text=st.lists(st.sampled_from([b"a", b"bb", b"\n", b"\xc3\xa9", b"0123456789", b"\n\n"]), max_size=80).map(b"".join),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=8),
)
def test_collector_is_chunking_invariant(text: bytes, cuts: list[int]) -> None:
    kw = dict(head_lines=3, tail_lines=4, line_max=6, head_max_bytes=15, tail_max_bytes=20)
    chunked = OutputCollector(**kw)
    points = sorted({min(c, len(text)) for c in cuts})
    prev = 0
    for p in [*points, len(text)]:
        chunked.feed(text[prev:p])
        prev = p
    chunked.finish()
    pieces = text.split(b"\n")
    lines = pieces if pieces[-1] else pieces[:-1]
    ref = _reference(lines, **kw)
    assert chunked.total_lines == ref.total_lines == len(lines)
    assert chunked.head == ref.head
    assert list(chunked.tail) == list(ref.tail)
    assert chunked.truncated == ref.truncated
    assert chunked.total_bytes == len(text)


# --- the physical fence ----------------------------------------------------------------


async def test_sandbox_blocks_writes_outside_the_workspace(workspace: Path) -> None:
    await _require_bwrap()
    outside = Path(tempfile.mkdtemp(prefix="agent-outside-", dir="/var/tmp"))
    try:
        for target in ("/etc/agent-sandbox-test", str(outside / "escaped")):
            out = await execute(["touch", target], workspace, 10, sandbox="auto")
            assert out.sandbox == "bwrap"
            assert out.exit_code != 0, f"touch {target} succeeded inside the sandbox"
            # /etc is shown read-only; /var is not shown at all (an allowlist).
            assert ("Read-only file system" if target.startswith("/etc") else "No such file") in out.output
            assert not Path(target).exists()
        inside = await execute(["touch", str(workspace / "made-inside")], workspace, 10, sandbox="auto")
        assert inside.exit_code == 0 and (workspace / "made-inside").is_file()
        # A private /tmp: what the command writes there never reaches the host.
        tmp = await execute(["sh", "-c", "echo x > /tmp/agent-private && cat /tmp/agent-private"], workspace, 10,
                            sandbox="auto")
        assert tmp.exit_code == 0 and not Path("/tmp/agent-private").exists()
        caps = await execute(["grep", "CapEff", "/proc/self/status"], workspace, 10, sandbox="auto")
        assert caps.output.split() == ["CapEff:", "0000000000000000"]
    finally:
        Path("/etc/agent-sandbox-test").unlink(missing_ok=True)
        for p in outside.iterdir():
            p.unlink()
        outside.rmdir()


async def test_sandbox_hides_credentials_and_sockets(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read-only command the validator allows (cat) must not read host
    secrets: shadow passwords, a configured secret folder, /run sockets."""
    await _require_bwrap()
    secret_dir = tmp_path / "fake-home" / ".ssh"
    secret_dir.mkdir(parents=True)
    (secret_dir / "id_ed25519").write_text("PRIVATE KEY MATERIAL\n")
    monkeypatch.setenv("AGENT_TOOLS_SANDBOX_HIDE", str(secret_dir))
    key = await execute(["cat", str(secret_dir / "id_ed25519")], workspace, 10, sandbox="auto")
    assert key.sandbox == "bwrap"
    assert key.exit_code != 0 and "PRIVATE KEY" not in key.output
    assert Path("/etc/shadow").exists()
    shadow = await execute(["cat", "/etc/shadow"], workspace, 10, sandbox="auto")
    # /dev/null is bound in its place (on a nodev mount: reading it is refused)
    assert "root:" not in shadow.output
    assert shadow.output.strip() in ("", "cat: /etc/shadow: Permission denied")
    run = await execute(["ls", "-A", "/run"], workspace, 10, sandbox="auto")
    assert run.exit_code == 0 and run.output.strip() == ""
    # The workspace itself is never hidden, even if it sits under a hidden path.
    monkeypatch.setenv("AGENT_TOOLS_SANDBOX_HIDE", str(workspace.parent))
    (workspace / "visible.txt").write_text("still here\n")
    seen = await execute(["cat", "visible.txt"], workspace, 10, sandbox="auto")
    assert seen.output.strip() == "still here"


async def test_sandbox_has_no_network(workspace: Path) -> None:
    await _require_bwrap()

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    server = await asyncio.start_server(on_connect, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    code = (
        "import socket, sys\n"
        "try:\n"
        f"    socket.create_connection(('127.0.0.1', {port}), timeout=3).close()\n"
        "except OSError as e:\n"
        "    print('blocked', e); sys.exit(1)\n"
        "print('connected')\n"
    )
    try:
        unboxed = await execute([PY, "-c", code], workspace, 20, sandbox="off")
        assert unboxed.output == "connected", "the control run without the sandbox should connect"
        boxed = await execute([PY, "-c", code], workspace, 20, sandbox="auto")
        assert boxed.sandbox == "bwrap"
        assert boxed.exit_code == 1 and boxed.output.startswith("blocked"), boxed.output
    finally:
        server.close()
        await server.wait_closed()


@pytest.mark.parametrize("box", ["off", "auto"])
async def test_process_cap_stops_a_fork_flood(workspace: Path, box: str) -> None:
    script = workspace / "spawn.py"
    script.write_text(
        "import subprocess\n"
        "procs, failed = [], 0\n"
        "for _ in range(2000):\n"
        "    try:\n"
        "        procs.append(subprocess.Popen(['sleep', '30']))\n"
        "    except OSError:\n"
        "        failed += 1\n"
        "print('started', len(procs), 'failed', failed)\n"
        "for p in procs:\n"
        "    p.kill()\n"
        "for p in procs:\n"
        "    p.wait()\n"
    )
    out = await execute([PY, str(script)], workspace, 30, sandbox=box, max_procs=64)
    assert out.process_cap.startswith("cgroup"), f"no process cap on this machine: {out.process_cap_reason}"
    words = out.output.split()
    assert words[0] == "started", out.output
    started, failed = int(words[1]), int(words[3])
    assert started < 64 and failed > 1900, out.output


async def test_required_sandbox_refuses_when_missing(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(bash.BWRAP_ENV, "/nonexistent/bwrap")
    monkeypatch.setenv(bash.SANDBOX_ENV, "required")
    marker = workspace / "ran"
    with pytest.raises(SandboxUnavailable, match="not found"):
        await execute(["touch", str(marker)], workspace, 10)
    assert not marker.exists()


async def test_auto_sandbox_falls_back_and_says_so(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(bash.BWRAP_ENV, f"/nonexistent/bwrap-{random.randint(0, 1 << 30)}")
    with caplog.at_level(logging.WARNING, logger="activities.bash.tool"):
        out = await execute(["true"], workspace, 10)
    assert out.exit_code == 0 and out.sandbox == "none" and "not found" in out.sandbox_reason
    assert any("WITHOUT an OS sandbox" in r.getMessage() for r in caplog.records)


async def test_bad_sandbox_setting_fails_closed(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(bash.SANDBOX_ENV, "maybe")
    with pytest.raises(BadSetting):
        await execute(["true"], workspace, 10)


async def test_memory_limit(workspace: Path) -> None:
    code = "b = bytearray(600 * 1024 * 1024); print('allocated')"
    out = await execute([PY, "-c", code], workspace, 20, sandbox="off", memory_bytes=256 << 20)
    assert out.exit_code != 0 and "MemoryError" in out.output


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
    result = await run_tool_on_server(client, [bash_activity], _request(workspace, "python3 prog.py"))
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
    result = await run_bash(_request(workspace, "python3 prog.py", 1), BashArgs(command="python3 prog.py",
                                                                                 timeout_seconds=1))
    assert result.metadata.get("verdict") != "reject", _needs_validator(result)
    assert time.monotonic() - started < 4
    assert result.status == ToolStatus.ERROR and result.metadata["timed_out"] == "true"
    assert result.output.startswith("waiting\n")
    assert "killed after 1 s" in result.output and "timeout_seconds" in result.output
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
