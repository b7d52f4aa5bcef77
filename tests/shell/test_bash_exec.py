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
import tempfile
import time
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from activities.bash import tool as bash
from activities.bash.tool import BadSetting, OutputCollector, SandboxUnavailable, execute
from tests.shell.bash_exec_helpers import PY, _gone, _kill, _marker, _pids_with, _require_bwrap
from tests.shell.bash_exec_helpers import _default_settings  # noqa: F401 - autouse fixture

pytestmark = pytest.mark.timeout(60)


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
