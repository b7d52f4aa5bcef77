"""Defence in depth for `allow`, with real bubblewrap,
real cgroups and real files: a command judged read-only runs against a
read-only workspace; the sandbox shows an allowlist of folders; /tmp and
/dev/shm are bounded; the whole command has one memory limit; artifacts are
bounded per call and as a folder."""

from __future__ import annotations

import os
import random
import sys
import time
from pathlib import Path

import pytest

from activities.workspace import artifacts
from activities.bash import tool as bash
from activities.sandbox import output
from activities.bash.tool import execute, run_bash
from activities.sandbox.bwrap import program_folders, sandbox_argv
from activities.workspace.artifacts import save_artifact
from activities.workspace.paths import ARTIFACTS_DIR
from core.contracts import ToolRequest, ToolStatus
from core.shell import Verdict
from core.tools.specs import BashArgs

pytestmark = pytest.mark.timeout(60)

PY = sys.executable
_SETTINGS = (
    bash.SANDBOX_ENV, bash.BWRAP_ENV, bash.MEMORY_ENV, bash.FILE_SIZE_ENV, bash.MAX_PROCS_ENV,
    bash.TOTAL_MEMORY_ENV, "AGENT_TOOLS_BASH_TMP_MB", "AGENT_TOOLS_BASH_SHM_MB",
    artifacts.MAX_TOTAL_ENV, artifacts.MAX_AGE_ENV,
)


@pytest.fixture(autouse=True)
def _default_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _SETTINGS:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
async def boxed() -> None:
    box, reason, _ = await bash.sandbox_status("auto")
    assert box == "bwrap", f"bubblewrap should work on this machine but does not: {reason}"


def _request(workspace: Path, command: str) -> ToolRequest:
    return ToolRequest(
        call_id=f"call-{random.randint(0, 1 << 30)}", tool="bash", workspace_root=str(workspace),
        arguments={"command": command, "timeout_seconds": 30},
    )


async def _run(workspace: Path, command: str):
    return await run_bash(_request(workspace, command), BashArgs(command=command))


# --- a wrong `allow` cannot write -------------------------------------------------------


def _wrongly_allowed(monkeypatch: pytest.MonkeyPatch, argv: tuple[str, ...]) -> None:
    """Simulate a validator bug: whatever the command, the verdict is `allow`."""
    verdict = Verdict("allow", "simulated wrong allow", program=argv[0], argv=argv)
    monkeypatch.setattr(bash, "_validate", lambda command, root: verdict)


@pytest.mark.parametrize("how", ["create", "append", "delete", "git-config", "awk", "sed-w"])
async def test_a_wrongly_allowed_write_is_contained(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, boxed: None, how: str
) -> None:
    (workspace / "keep.txt").write_text("original\n")
    (workspace / ".git").mkdir()
    (workspace / ".git" / "config").write_text("[core]\n")
    argv = {
        "create": (PY, "-c", "open('pwned.txt', 'w').write('x')"),
        "append": (PY, "-c", "open('keep.txt', 'a').write('appended')"),
        "delete": (PY, "-c", "import os; os.remove('keep.txt')"),
        "git-config": (PY, "-c", "open('.git/config', 'a').write('[core]\\n\\tfsmonitor = touch /tmp/p\\n')"),
        # The attack's own findings: awk and sed writing from "read-only" scripts.
        "awk": ("awk", 'BEGIN{print "}" > "pwned.txt"}'),
        "sed-w": ("sed", "-n", "bx;:x w pwned.txt", "keep.txt"),
    }[how]
    _wrongly_allowed(monkeypatch, argv)
    result = await _run(workspace, " ".join(argv))
    assert result.metadata["verdict"] == "allow"
    assert result.metadata["workspace_access"] == "read-only", result.metadata
    assert not (workspace / "pwned.txt").exists()
    assert (workspace / "keep.txt").read_text() == "original\n"
    assert (workspace / ".git" / "config").read_text() == "[core]\n"
    assert result.status == ToolStatus.ERROR  # the write failed, so python failed
    assert result.metadata["write_blocked"] == "true", result.metadata
    assert "judged read-only" in result.output and "Read-only file system" in result.output


async def test_a_read_only_command_still_reads_and_uses_its_private_tmp(workspace: Path, boxed: None) -> None:
    (workspace / "a.txt").write_text("hello\n")
    out = await execute(
        ["sh", "-c", "cat a.txt && echo scratch > /tmp/s && cat /tmp/s"], workspace, 10, read_only=True,
    )
    assert out.exit_code == 0 and out.output == "hello\nscratch", out.output
    assert out.workspace_access == "read-only" and not out.write_blocked


async def test_writable_is_the_default_and_no_sandbox_says_so(workspace: Path) -> None:
    out = await execute(["touch", "made"], workspace, 10, read_only=True, sandbox="off")
    assert out.exit_code == 0 and out.workspace_access == "read-write (no sandbox)"


# --- what the sandbox shows -------------------------------------------------------------


async def test_sandbox_shows_an_allowlist(workspace: Path, boxed: None) -> None:
    home_secrets = [p for p in ("/root/.claude", "/root/.m2", "/root/.ssh", "/root/.cargo/credentials.toml")
                    if os.path.lexists(p)]
    # The checkout itself (not its .venv, which the sandbox shows as the
    # interpreter's folder): its README must not be visible.
    checkout_file = str(Path(__file__).resolve().parents[2] / "README.md")
    others = ["/home", "/var", "/srv", "/opt", "/mnt", "/boot", checkout_file, "/run/docker.sock"]
    assert home_secrets, "this machine should have some of these; the test would prove little"
    probe = "import os, sys; print([p for p in sys.argv[1:] if os.path.lexists(p)])"
    out = await execute([PY, "-c", probe, *home_secrets, *others], workspace, 20)
    assert out.sandbox == "bwrap" and out.exit_code == 0, out.output
    assert out.output == "[]", f"visible in the sandbox: {out.output}"
    # /root exists only as the way to the interpreter's folder (bwrap makes the mount point's parents).
    listing = await execute([PY, "-c", "import os; print(sorted(os.listdir('/root')))"], workspace, 20)
    shown_under_root = {p.split("/")[2] for p in program_folders([PY], str(workspace)) if p.startswith("/root/")}
    assert listing.output == str(sorted(shown_under_root)), listing.output
    # ...while the system folders, the program's own venv and base interpreter are there.
    seen = await execute([PY, "-c", probe, "/usr/bin/env", "/etc/passwd", sys.prefix, sys.base_prefix], workspace, 20)
    assert seen.output == str(["/usr/bin/env", "/etc/passwd", sys.prefix, sys.base_prefix])
    # The neighbours of the venv's checkout are not.
    neighbour = os.path.dirname(sys.prefix)
    hidden = await execute([PY, "-c", probe, os.path.join(neighbour, "activities")], workspace, 20)
    assert hidden.output == "[]", hidden.output


def test_program_folders_are_prefixes_never_homes(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "tool").write_text("")
    assert program_folders([str(venv / "bin" / "tool")], str(ws)) == [str(venv)]
    # A program directly in a home folder's bin: the bin folder only, never the home.
    assert "/root" not in program_folders(["/root/bin/tool"], str(ws))
    # A program inside the workspace: the workspace bind shows it already.
    (ws / "bin").mkdir()
    assert program_folders([str(ws / "bin" / "x")], str(ws)) == []
    # System programs need nothing extra.
    assert program_folders(["/usr/bin/env"], str(ws)) == []


def test_sandbox_argv_binds_any_folder_as_the_workspace(tmp_path: Path) -> None:
    """For the transactional helper: bind an overlay's merged folder where the
    workspace is, writable or not."""
    argv = sandbox_argv("bwrap", ["true"], workspace=str(tmp_path), bind_source="/merged", writable=False)
    i = argv.index("/merged")
    assert argv[i - 1] == "--ro-bind" and argv[i + 1] == str(tmp_path)
    argv = sandbox_argv("bwrap", ["true"], workspace=str(tmp_path), bind_source="/merged")
    assert argv[argv.index("/merged") - 1] == "--bind"


async def test_kernel_settings_and_hidden_folders_are_read_only(workspace: Path, boxed: None) -> None:
    """The command runs as uid 0 without capabilities, and /proc/sys checks
    only the owner's bits: a fresh /proc left kernel.core_pattern (a program
    the host kernel runs as root on a crash) writable. /proc/sys/kernel/hostname
    is the UTS namespace's own, so trying it harms nothing; the folders that
    hide secrets (an empty tmpfs each) must not become unbounded scratch."""
    probe = ("for f in /proc/sys/kernel/core_pattern /proc/sys/vm/drop_caches /proc/sysrq-trigger; do "
             "[ -w $f ] && echo WRITABLE $f; done; "
             "echo sandbox > /proc/sys/kernel/hostname && echo WROTE hostname; "
             "for d in /etc/ssh /etc/ssl/private; do [ -d $d ] && touch $d/x && echo WROTE $d; done; echo done")
    out = await execute(["sh", "-c", probe], workspace, 20)
    assert out.sandbox == "bwrap" and out.output.endswith("done"), out.output
    assert "WRITABLE" not in out.output and "WROTE" not in out.output, out.output


# --- bounded /tmp, /dev/shm, memory ------------------------------------------------------


@pytest.mark.parametrize("folder", ["/tmp", "/dev/shm"])
async def test_sandbox_tmp_and_shm_are_bounded(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, boxed: None, folder: str
) -> None:
    monkeypatch.setenv("AGENT_TOOLS_BASH_TMP_MB", "8")
    monkeypatch.setenv("AGENT_TOOLS_BASH_SHM_MB", "4")
    # The private tmpfs /tmp (the workspace's scratch folder, on by default, is
    # bounded between commands instead: tests/gate/test_scratch_tmp.py).
    monkeypatch.setenv("AGENT_TOOLS_BASH_SCRATCH", "off")
    out = await execute(["sh", "-c", f"head -c 20000000 /dev/zero > {folder}/fill; ls -l {folder}/fill"],
                        workspace, 20)
    assert "No space left on device" in out.output, out.output
    size = int(out.output.splitlines()[-1].split()[4])
    assert size <= (8 << 20 if folder == "/tmp" else 4 << 20)
    assert out.limits["tmp_bytes"] == str(8 << 20) and out.limits["shm_bytes"] == str(4 << 20)


@pytest.mark.parametrize("box", ["off", "auto"])
async def test_one_memory_limit_for_all_the_command_processes(workspace: Path, box: str) -> None:
    """Three processes of 120 MiB each stay under RLIMIT_AS (per process) but
    not under a 200 MiB limit for the command as a whole."""
    hog = "import time; b = b'x' * (120 << 20); time.sleep(3)"
    script = f"for i in 1 2 3; do {PY} -c \"{hog}\" & done; wait; echo finished"
    out = await execute(["sh", "-c", script], workspace, 30, sandbox=box, total_memory_bytes=200 << 20,
                        memory_bytes=1 << 30, programs=[PY])
    assert out.memory_cap.startswith("cgroup"), out.memory_cap_reason
    assert out.memory_limit_hit, out.output
    control = await execute(["sh", "-c", script], workspace, 30, sandbox=box, total_memory_bytes=1 << 30,
                            memory_bytes=1 << 30, programs=[PY])
    assert not control.memory_limit_hit and control.output == "finished", control.output


async def test_memory_limit_is_reported_in_the_result(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(bash.TOTAL_MEMORY_ENV, "64")
    code = "b = b'x' * (300 << 20)"
    _wrongly_allowed(monkeypatch, (PY, "-c", code))
    result = await _run(workspace, "python3 -c ...")
    assert result.metadata["memory_limit_hit"] == "true", result.metadata
    assert "memory limit (64 MiB" in result.output


# --- bounded artifacts ------------------------------------------------------------------


async def test_endless_output_leaves_a_small_artifact(workspace: Path) -> None:
    """`cat /dev/zero`-like output used to leave 64 MiB per call."""
    out = await execute(["head", "-c", str(40 << 20), "/dev/zero"], workspace, 30, sandbox="off",
                        artifact_root=workspace)
    assert out.total_bytes == 40 << 20 and out.artifact_capped
    assert (workspace / out.artifact).stat().st_size == output.ARTIFACT_MAX_BYTES <= 8 << 20


def _artifact(folder: Path, name: str, size: int, age_s: float, now: float) -> Path:
    path = folder / name
    path.write_bytes(b"x" * size)
    os.utime(path, (now - age_s, now - age_s))
    return path


def test_retention_deletes_old_then_oldest_over_the_cap(tmp_path: Path) -> None:
    folder = tmp_path / ARTIFACTS_DIR
    folder.mkdir()
    now = time.time()
    _artifact(folder, "bash-a.txt", 100, 10 * 24 * 3600, now)  # too old
    _artifact(folder, "bash-b.txt", 400, 3000, now)  # oldest of the recent ones
    _artifact(folder, "bash-c.txt", 400, 2000, now)
    _artifact(folder, "bash-d.txt", 400, 10, now)  # just saved
    (folder / ".gitignore").write_text("*\n")
    (folder / "journal").mkdir()  # not ours: another component's
    (folder / "journal" / "old.txt").write_text("x")
    os.utime(folder / "journal" / "old.txt", (0, 0))
    pruned = artifacts.prune_artifacts(tmp_path, "bash-d.txt", max_total_bytes=900, max_age_s=7 * 24 * 3600, now=now)
    assert set(pruned.removed) == {"bash-a.txt", "bash-b.txt"}
    assert sorted(p.name for p in folder.iterdir()) == [".gitignore", "bash-c.txt", "bash-d.txt", "journal"]
    assert (folder / "journal" / "old.txt").exists() and pruned.kept_bytes == 800


def test_retention_keeps_the_new_artifact_even_alone_over_the_cap(tmp_path: Path) -> None:
    folder = tmp_path / ARTIFACTS_DIR
    folder.mkdir()
    now = time.time()
    _artifact(folder, "big.txt", 5000, 0, now)
    assert artifacts.prune_artifacts(tmp_path, f"{ARTIFACTS_DIR}/big.txt", max_total_bytes=1000, now=now).removed == ()


def test_retention_never_follows_a_symlinked_folder(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    victim = elsewhere / "precious.txt"
    victim.write_text("x" * 5000)
    os.utime(victim, (0, 0))
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / ARTIFACTS_DIR).symlink_to(elsewhere)
    assert artifacts.prune_artifacts(tmp_path / "ws", max_total_bytes=1, max_age_s=1).removed == ()
    assert victim.exists()


def test_saving_an_artifact_applies_the_retention_rule(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(artifacts.MAX_TOTAL_ENV, "1")  # 1 MiB for the whole folder
    first = save_artifact(tmp_path, "c1", "read", b"a" * (700 << 10))
    os.utime(tmp_path / first, (time.time() - 60,) * 2)
    second = save_artifact(tmp_path, "c2", "read", b"b" * (700 << 10))
    assert not (tmp_path / first).exists() and (tmp_path / second).exists()
    monkeypatch.setenv(artifacts.MAX_AGE_ENV, "1")  # one hour
    old = save_artifact(tmp_path, "c3", "read", "small")
    os.utime(tmp_path / old, (time.time() - 7200,) * 2)
    save_artifact(tmp_path, "c4", "read", "small")
    assert not (tmp_path / old).exists()


# --- the scratch folder: the worker deletes in a folder the command writes ------------

# Swaps 'd' (a folder) with 'dlink' (a link to a host folder) while keeping an
# old file 'victim' in whichever is the folder: the oldest file, so the first
# the scratch bound deletes.
_SCRATCH_ATTACKER = r"""
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
open("attacker.ready", "w").close()
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end and not os.path.exists("attacker.stop"):
    libc.renameat2(-100, b"d", -100, b"dlink", 2)
    for name in ("d", "dlink"):
        if not os.path.islink(name) and not os.path.exists(name + "/victim"):
            with open(name + "/victim", "w") as f:
                f.write("x" * 100)
            os.utime(name + "/victim", (1, 1))
"""


def test_scratch_bound_never_deletes_through_a_swapped_link(tmp_path: Path) -> None:
    """bound() listed the scratch folder, then unlinked each file by its path:
    a command of another call swapping a listed folder for a link to a host
    folder in between made the worker (root, outside the sandbox) delete the
    host file of the same name."""
    import subprocess
    from activities.sandbox.bwrap import bwrap_argv, bwrap_path
    from activities.sandbox.scratch import bound

    bwrap = bwrap_path()
    assert bwrap is not None
    scratch, outside = tmp_path / "scratch", tmp_path / "host"
    (scratch / "d").mkdir(parents=True)
    outside.mkdir()
    (outside / "victim").write_text("host file\n")
    (scratch / "dlink").symlink_to(outside)
    python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else PY
    proc = subprocess.Popen(bwrap_argv(bwrap, str(scratch), [python, "-c", _SCRATCH_ATTACKER, "20"]))
    try:
        deadline = time.monotonic() + 20
        while not (scratch / "attacker.ready").exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        started = time.monotonic()
        while time.monotonic() - started < 3 and (outside / "victim").exists():
            bound(str(scratch), max_bytes=1)
    finally:
        (scratch / "attacker.stop").touch()
        proc.wait(timeout=30)
    assert (outside / "victim").exists(), "the scratch bound deleted a host file through a swapped link"

