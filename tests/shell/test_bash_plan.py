"""What runs is exactly what was validated: the
executor runs a ``CommandList`` plan, never the model's string. Plans are
built directly here (the validator's own plans are its tests' business), fed
adversarial words, and the tests assert what actually ran: the programs
print their argv with ``printf '%s\\n'``. Real processes, real bubblewrap."""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

import pytest

from activities.bash import tool as bash
from activities.bash.executor import PlanError, execute_plan, prepare
from core.shell.command_plan import CommandList, Pipeline, Redirect, SimpleCommand
from core.contracts import ToolRequest, ToolStatus
from core.shell import Verdict
from core.tools.specs import BashArgs

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(autouse=True)
def _default_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (bash.SANDBOX_ENV, bash.BWRAP_ENV, bash.MEMORY_ENV, bash.MAX_PROCS_ENV, bash.TOTAL_MEMORY_ENV):
        monkeypatch.delenv(name, raising=False)


def cmd(*argv: str, globs: tuple[bool, ...] = (), redirects: tuple[Redirect, ...] = (),
        stdin: str | None = None) -> SimpleCommand:
    return SimpleCommand(argv=argv, globs=globs, redirects=redirects, stdin_text=stdin)


def pipe(*commands: SimpleCommand) -> Pipeline:
    return Pipeline(commands=commands)


def seq(*items: Pipeline | str, cwd: str | None = None) -> CommandList:
    """seq(p1, "&&", p2, "||", p3)"""
    return CommandList(items=tuple(i for i in items if not isinstance(i, str)),
                       ops=tuple(i for i in items if isinstance(i, str)), cwd=cwd)


def one(c: SimpleCommand) -> CommandList:
    return seq(pipe(c))


ADVERSARIAL = [
    "it's",
    'say "hi"',
    "two\nlines",
    "*",
    "*.txt",
    "--",
    "-rf",
    "$(touch pwned)",
    "`touch pwned2`",
    "$HOME",
    "a;touch pwned3",
    "x | touch pwned4",
    "> redirected",
    "\\",
    "",
    " spaced ",
    "{a,b}",
    "~",
    "!!",
    "'; touch pwned5; '",
]


@pytest.fixture(params=["off", "auto"])
def box(request: pytest.FixtureRequest) -> str:
    return request.param


async def _run(plan: CommandList, workspace: Path, box: str, **kw):
    return await execute_plan(plan, str(workspace), 20, sandbox=box, **kw)


def _nothing_planted(workspace: Path) -> None:
    planted = sorted(p.name for p in workspace.iterdir() if p.name.startswith(("pwned", "redirected")))
    assert planted == [], f"a word was interpreted by a shell: {planted}"


@pytest.mark.parametrize("shape", ["direct", "pipeline", "list"])
async def test_adversarial_words_reach_the_program_verbatim(workspace: Path, box: str, shape: str) -> None:
    (workspace / "a.txt").write_text("")
    (workspace / "b.txt").write_text("")
    printer = cmd("printf", "%s\n", *ADVERSARIAL)
    plan = {
        "direct": one(printer),
        "pipeline": seq(pipe(printer, cmd("cat"))),
        "list": seq(pipe(cmd("true")), "&&", pipe(printer)),
    }[shape]
    out = await _run(plan, workspace, box)
    assert out.exit_code == 0, out.output
    # Each word one line; the one with a newline is two.
    assert out.output.split("\n") == "\n".join(ADVERSARIAL).split("\n")
    _nothing_planted(workspace)


async def test_globs_expand_in_the_workspace_only_where_flagged(workspace: Path, box: str) -> None:
    for name in ("b.py", "a.py", ".hidden.py", "c.txt"):
        (workspace / name).write_text("")
    (workspace / "sub").mkdir()
    (workspace / "sub" / "d.py").write_text("")
    plan = seq(pipe(cmd("printf", "%s\n", "*.py", "*.py", "sub/*.py", "*.none", "../*", "/etc/pass*",
                        globs=(False, False, False, True, True, True, True, True))), ";", pipe(cmd("true")))
    out = await _run(plan, workspace, box)
    assert out.output.split("\n") == [
        "*.py",  # quoted: literal
        "a.py", "b.py",  # sorted, no dotfile
        "sub/d.py",
        "*.none",  # no match: as written
        "../*",  # outside the workspace: not expanded
        "/etc/pass*",
    ], out.output


async def test_a_glob_never_chooses_the_program(workspace: Path) -> None:
    (workspace / "evil-tool").write_text("#!/bin/sh\necho ran evil\n")
    (workspace / "evil-tool").chmod(0o755)
    out = await _run(one(cmd("evil*", "x", globs=(True, False))), workspace, "off")
    assert out.exit_code == 127 and "ran evil" not in out.output


async def test_list_semantics_and_part_statuses_follow_bash(workspace: Path, box: str) -> None:
    def echo(word: str) -> Pipeline:
        return pipe(cmd("echo", word))

    plan = seq(pipe(cmd("false")), "&&", echo("skipped"), "||", echo("after-or"), ";",
               pipe(cmd("sh", "-c", "exit 3"), cmd("true")), "&&", echo("no-pipefail"), ";",
               pipe(cmd("true"), cmd("sh", "-c", "exit 5")))
    out = await _run(plan, workspace, box)
    assert out.output == "after-or\nno-pipefail"
    assert out.exit_code == 5  # the last pipeline's last command
    assert out.part_exit_codes == "1; -; 0; 3|0; 0; 0|5"


async def test_pipes_join_processes_and_heredoc_is_literal(workspace: Path, box: str) -> None:
    body = "line $HOME `id` $(touch pwned)\n'quoted' \"double\"\n"
    plan = seq(pipe(cmd("cat", stdin=body), cmd("tr", "a-z", "A-Z")))
    out = await _run(plan, workspace, box)
    assert out.exit_code == 0
    assert out.output == body.upper().rstrip("\n")
    _nothing_planted(workspace)


async def test_redirections_are_opened_by_the_executor(workspace: Path, box: str) -> None:
    (workspace / "in.txt").write_text("from a file\n")
    (workspace / "old.txt").write_text("previous content that is long\n")
    plan = seq(
        pipe(cmd("cat", redirects=(Redirect(0, "<", "in.txt"), Redirect(1, ">", "out.txt")))), "&&",
        pipe(cmd("echo", "short", redirects=(Redirect(1, ">", "old.txt"),))), "&&",
        pipe(cmd("echo", "more", redirects=(Redirect(1, ">>", "out.txt"),))), "&&",
        pipe(cmd("sh", "-c", "echo to-err >&2", redirects=(Redirect(2, ">&", "1"),)), cmd("tr", "a-z", "A-Z")), ";",
        pipe(cmd("sh", "-c", "echo hidden >&2", redirects=(Redirect(2, ">", "/dev/null"),))),
    )
    out = await _run(plan, workspace, box)
    assert out.exit_code == 0, out.output
    assert (workspace / "out.txt").read_text() == "from a file\nmore\n"
    assert (workspace / "old.txt").read_text() == "short\n"  # truncated by `>`
    assert out.output == "TO-ERR"


async def test_commands_cannot_use_the_executor_descriptors(workspace: Path, box: str) -> None:
    """The status record and the redirection files are closed for every program."""
    plan = seq(pipe(cmd("ls", "/proc/self/fd", redirects=(Redirect(1, ">", "fds.txt"),))), ";",
               pipe(cmd("cat", "fds.txt")))
    out = await _run(plan, workspace, box)
    fds = sorted(int(x) for x in out.output.split())
    assert all(fd < 10 for fd in fds), f"executor descriptors leaked into the command: {fds}"


@pytest.mark.parametrize("target", ["link-out/x", "link-file", "../outside.txt", "/etc/passwd", "fifo"])
async def test_redirection_targets_are_confined(workspace: Path, tmp_path: Path, target: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim").write_text("keep\n")
    (workspace / "link-out").symlink_to(outside)
    (workspace / "link-file").symlink_to(outside / "victim")
    os.mkfifo(workspace / "fifo")
    for op in (">", "<"):
        with pytest.raises(PlanError):
            prepare(one(cmd("echo", redirects=(Redirect(1 if op == ">" else 0, op, target),))), str(workspace),
                    read_only=False)
    assert (outside / "victim").read_text() == "keep\n" and list(outside.iterdir()) == [outside / "victim"]


async def test_a_write_redirection_never_runs_read_only(workspace: Path) -> None:
    with pytest.raises(PlanError, match="read-only"):
        prepare(one(cmd("echo", "x", redirects=(Redirect(1, ">", "f.txt"),))), str(workspace), read_only=True)
    assert not (workspace / "f.txt").exists()


async def test_leading_cd_runs_in_the_folder_and_stays_inside(workspace: Path, box: str) -> None:
    (workspace / "sub").mkdir()
    (workspace / "sub" / "x.txt").write_text("")
    out = await _run(seq(pipe(cmd("ls")), cwd="sub"), workspace, box)
    assert out.output == "x.txt"
    out = await _run(seq(pipe(cmd("pwd")), "&&", pipe(cmd("ls", "*", globs=(False, True))), cwd="sub"), workspace, box)
    assert out.output == f"{workspace / 'sub'}\nx.txt"
    (workspace / "escape").symlink_to("/etc")
    for bad in ("..", "escape", "missing"):
        with pytest.raises(PlanError):
            prepare(seq(pipe(cmd("ls")), cwd=bad), str(workspace), read_only=False)


async def test_missing_program_in_a_list_is_bash_127(workspace: Path, box: str) -> None:
    plan = seq(pipe(cmd("no-such-program-xyz", "arg")), "||", pipe(cmd("echo", "fallback")))
    out = await _run(plan, workspace, box)
    assert out.exit_code == 0 and out.part_exit_codes == "127; 0"
    assert out.output == "bash: no-such-program-xyz: command not found\nfallback"


async def test_a_builtin_name_runs_the_program_not_the_builtin(workspace: Path) -> None:
    """`echo -e` / `printf` exist both as builtins and programs; the plan
    names the program the validator judged, so the program runs."""
    plan = seq(pipe(cmd("sh", "-c", 'readlink /proc/$PPID/exe')), ";", pipe(cmd("printf", "%s", "x"), cmd("cat")))
    out = await _run(plan, workspace, "off")
    assert out.output.splitlines()[-1] == "x"
    prepared = prepare(plan, str(workspace), read_only=False)
    try:
        script = Path(prepared.argv[-1]).read_text()
    finally:
        prepared.close()
    assert "/usr/bin/printf" in script and "\nprintf" not in script and "set -f" in script


async def test_every_part_shares_one_sandbox_and_one_timeout(workspace: Path) -> None:
    """A file written in the sandbox's /tmp by one part is seen by the next
    (one sandbox); the timeout covers the whole list; read-only holds for all."""
    plan = seq(pipe(cmd("sh", "-c", "echo shared > /tmp/s")), "&&", pipe(cmd("cat", "/tmp/s")), "&&",
               pipe(cmd("touch", "w")))
    out = await _run(plan, workspace, "auto", read_only=True)
    assert out.output.startswith("shared\n") and "Read-only file system" in out.output
    assert out.write_blocked and not (workspace / "w").exists()
    slow = seq(pipe(cmd("sleep", "0.2")), ";", pipe(cmd("sleep", "30")), ";", pipe(cmd("echo", "never")))
    timed = await execute_plan(slow, str(workspace), 1, sandbox="auto")
    assert timed.timed_out and "never" not in timed.output


# --- through the tool ---------------------------------------------------------------------


async def test_the_tool_runs_the_plan_not_the_string(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The verdict's plan is what runs, even if the model's string says otherwise."""
    plan = seq(pipe(cmd("printf", "%s\n", "from the plan", "$(id)")), "&&", pipe(cmd("echo", "second")))
    verdict = Verdict("allow", "test", program="printf", argv=("printf",))
    monkeypatch.setattr(bash, "_validate", lambda command, root: _WithPlan(verdict, plan))
    command = "printf from-the-string; touch pwned"
    request = ToolRequest(call_id=f"c-{random.randint(0, 1 << 30)}", tool="bash", workspace_root=str(workspace),
                          arguments={"command": command, "timeout_seconds": 20})
    result = await bash.run_bash(request, BashArgs(command=command))
    assert result.status == ToolStatus.OK, result.output
    assert result.output == "from the plan\n$(id)\nsecond"
    assert result.metadata["part_exit_codes"] == "0; 0" and result.metadata["pipefail"] == "false"
    assert result.metadata["workspace_access"] == "read-only"
    _nothing_planted(workspace)


class _WithPlan:
    """A verdict carrying a plan (until the validator's Verdict has the field)."""

    def __init__(self, verdict: Verdict, plan: CommandList) -> None:
        self._verdict, self.plan, self.destructive = verdict, plan, False

    def __getattr__(self, name: str):
        return getattr(self._verdict, name)


async def test_the_tool_without_a_plan_runs_the_verdict_argv(workspace: Path) -> None:
    request = ToolRequest(call_id="c-argv", tool="bash", workspace_root=str(workspace),
                          arguments={"command": "printf '%s\\n' 'a b' '$(id)'", "timeout_seconds": 20})
    result = await bash.run_bash(request, BashArgs(command="printf '%s\\n' 'a b' '$(id)'"))
    assert result.output == "a b\n$(id)", (result.output, result.metadata)


# --- a view bound in place of the workspace (for the transactional helper) -----------------


@pytest.mark.parametrize("writable", [True, False])
async def test_a_view_folder_is_shown_at_the_workspace_path(workspace: Path, tmp_path: Path, writable: bool) -> None:
    """An overlay's merged folder (here: any folder) is bound where the
    workspace is: the command sees the workspace's paths and the view's
    files; globs and redirections resolve in the view; the real workspace is
    untouched."""
    view = tmp_path / "merged"
    (view / "sub").mkdir(parents=True)
    (view / "sub" / "only-in-view.txt").write_text("view\n")
    (workspace / "sub").mkdir()
    (workspace / "sub" / "only-in-workspace.txt").write_text("real\n")
    steps: list[Pipeline | str] = [pipe(cmd("pwd")), ";", pipe(cmd("ls", "*.txt", globs=(False, True)))]
    if writable:
        steps += [";", pipe(cmd("cat", "only-in-view.txt", redirects=(Redirect(1, ">", "copy.txt"),)))]
    else:
        steps += [";", pipe(cmd("touch", "nope"))]
    out = await execute_plan(seq(*steps, cwd="sub"), str(workspace), 20, sandbox="auto", view=str(view),
                             read_only=not writable)
    lines = out.output.splitlines()
    assert lines[:2] == [str(workspace / "sub"), "only-in-view.txt"], out.output
    assert sorted(p.name for p in (workspace / "sub").iterdir()) == ["only-in-workspace.txt"]
    if writable:
        assert (view / "sub" / "copy.txt").read_text() == "view\n"
    else:
        assert out.write_blocked and not (view / "sub" / "nope").exists()


async def test_a_launcher_can_mount_the_command_view_over_the_workspace(workspace: Path, tmp_path: Path) -> None:
    """The transactional helper's shape: a launcher (``wrap``) mounts another
    folder over the workspace's own path in a private mount namespace, then
    execs bubblewrap. Redirections must then be opened in there (by bash, after
    the same confinement check here), not by us on the real workspace."""
    unshare, mount = shutil.which("unshare"), shutil.which("mount")
    if os.geteuid() != 0 or not unshare or not mount:
        pytest.skip("needs root with unshare and mount (this machine's workers run as root)")
    view = tmp_path / "upper-view"
    view.mkdir()
    (view / "in.txt").write_text("seen through the launcher\n")

    def wrap(argv: list[str]) -> list[str]:
        launcher = 'mount --bind "$1" "$2" || exit 125; shift 2; exec "$@"'
        return [unshare, "--mount", "--propagation", "private", "--", "sh", "-c", launcher, "launch",
                str(view), str(workspace), *argv]

    plan = seq(pipe(cmd("cat", redirects=(Redirect(0, "<", "in.txt"), Redirect(1, ">", "out.txt")))), "&&",
               pipe(cmd("printf", "%s\n", "x", redirects=(Redirect(1, ">>", "out.txt"),))))
    (workspace / "in.txt").write_text("the real workspace\n")  # the check runs here: the name must exist
    out = await execute_plan(plan, str(workspace), 20, sandbox="auto", wrap=wrap)
    assert out.exit_code == 0, out.output
    assert (view / "out.txt").read_text() == "seen through the launcher\nx\n"
    assert not (workspace / "out.txt").exists()
    (workspace / "link").symlink_to("/etc")
    with pytest.raises(PlanError):
        await execute_plan(seq(pipe(cmd("echo", redirects=(Redirect(1, ">", "link/x"),)))), str(workspace), 20,
                           sandbox="auto", wrap=wrap)


async def test_an_input_file_made_by_an_earlier_part_is_read(workspace: Path, box: str) -> None:
    plan = seq(pipe(cmd("sh", "-c", "echo made > data.txt")), "&&",
               pipe(cmd("tr", "a-z", "A-Z", redirects=(Redirect(0, "<", "data.txt"),))))
    out = await _run(plan, workspace, box)
    assert out.exit_code == 0 and out.output == "MADE", out.output


async def test_tilde_is_the_sandbox_home_end_to_end(workspace: Path) -> None:
    """`~` is written out by the validator as the sandbox's home; inside the
    sandbox that folder exists and starts empty, so what ran is what was judged."""
    if shutil.which("bwrap") is None:
        pytest.skip("needs bubblewrap")
    command = "ls -A ~ && echo ~/x"
    request = ToolRequest(call_id="c-tilde", tool="bash", workspace_root=str(workspace),
                          arguments={"command": command, "timeout_seconds": 20})
    result = await bash.run_bash(request, BashArgs(command=command))
    assert result.status == ToolStatus.OK, (result.output, result.metadata)
    assert result.output == "/tmp/home/x", result.output
    assert result.metadata["verdict"] == "ask"  # a read outside the workspace


async def _tool(command: str, workspace: Path):
    request = ToolRequest(call_id=f"c-{random.randint(0, 1 << 30)}", tool="bash", workspace_root=str(workspace),
                          arguments={"command": command, "timeout_seconds": 20})
    return await bash.run_bash(request, BashArgs(command=command))


@pytest.mark.parametrize(
    ("command", "output", "codes"),
    [
        ("command -v ls", "/ls", "0"),
        ("command -v nosuchprog-xyz", "", "1"),
        ("type -P ls", "/ls", "0"),
        ("type -t ls nosuchprog-xyz", "file", "1"),
        ("command -v nosuchprog-xyz || echo missing", "missing", "1; 0"),
        ("command -v ls >/dev/null && echo found", "found", "0; 0"),
        ("command -v nosuchprog-xyz >/dev/null && echo found", "", "1; -"),
    ],
)
async def test_name_lookups_run_as_bash_builtins(workspace: Path, command: str, output: str, codes: str) -> None:
    """`command -v` / `type` are shell builtins (no program of that name):
    the validator allows them, and the executor runs them as bash's own, with
    their words quoted, alone or in a list."""
    result = await _tool(command, workspace)
    meta = result.metadata
    assert (meta["verdict"], meta["part_exit_codes"]) == ("allow", codes), (result.output, meta)
    assert "command not found" not in result.output, result.output
    first = result.output.splitlines()[0] if result.output else ""
    assert first.endswith(output) if output else first.startswith("[Command failed: exit code 1]"), result.output
    if output == "/ls":
        assert first.startswith("/"), result.output
