"""Hostile repositories: a workspace's own git config (and the files it
includes, and the .gitattributes that name its drivers) must not make an
allowed git command run a program the repository chose. Each key gets a real
repository whose config names ``./evil.sh``, which writes a canary: the
validator asks (the workspace facts see the key) and, run anyway as if
approved, the executor's environment neutralises the key (the real git).

Also here: no host descriptor for a workspace file crosses into the sandbox
(a sandboxed program that reopens every /proc/self/fd/N for writing finds
the workspace unchanged)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from activities.bash import tool as bash
from activities.bash.executor import execute_plan
from activities.bash.facts import validate_in_workspace
from activities.bash.tool import execute
from core.shell.command_plan import CommandList, Pipeline, Redirect, SimpleCommand

pytestmark = pytest.mark.timeout(60)

PY = sys.executable
_GIT_ENV = {
    "PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t",
    "GIT_AUTHOR_DATE": "2020-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2020-01-01T00:00:00Z",
}


@pytest.fixture(autouse=True)
def _default_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (bash.SANDBOX_ENV, bash.BWRAP_ENV, bash.MEMORY_ENV, bash.MAX_PROCS_ENV, bash.TOTAL_MEMORY_ENV):
        monkeypatch.delenv(name, raising=False)


def _git(ws: Path, *args: str, stdin: str | None = None) -> str:
    # The test's own git: no hostile key is in place yet when this runs.
    out = subprocess.run(["git", *args], cwd=ws, env=_GIT_ENV, input=stdin, capture_output=True, text=True,
                         check=True)
    return out.stdout.strip()


def _signed_head(ws: Path) -> None:
    """HEAD becomes a commit with a (fake) signature, so `log.showSignature` runs gpg on it."""
    tree = _git(ws, "rev-parse", "HEAD^{tree}")
    head = _git(ws, "rev-parse", "HEAD")
    body = (f"tree {tree}\nparent {head}\nauthor t <t@t> 1577836800 +0000\ncommitter t <t@t> 1577836800 +0000\n"
            "gpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAdFiEE\n -----END PGP SIGNATURE-----\n\nsigned\n")
    sha = _git(ws, "hash-object", "-t", "commit", "-w", "--stdin", stdin=body)
    _git(ws, "update-ref", "HEAD", sha)


def _repository(ws: Path, config: str, attributes: str = "", extra: dict[str, str] | None = None) -> Path:
    """A committed repository with a modified a.txt, whose config then gets ``config``."""
    canary = ws / "canary"
    evil = ws / "evil.sh"
    evil.write_text(f'#!/bin/sh\necho "$0 $*" >> {canary}\ncat "$1" 2>/dev/null\nexit 0\n')
    evil.chmod(0o755)
    _git(ws, "init", "-q", "-b", "main")
    (ws / "a.txt").write_text("one\n")
    if attributes:
        (ws / ".gitattributes").write_text(attributes)
    _git(ws, "add", "-A")
    _git(ws, "commit", "-qm", "first")
    (ws / "a.txt").write_text("one\ntwo\n")
    for name, text in (extra or {}).items():
        (ws / name).write_text(text)
    with open(ws / ".git" / "config", "a") as fh:
        fh.write(config)
    return canary


# (name, config added to .git/config, .gitattributes, commands that must ask and must not run evil.sh)
HOSTILE = [
    ("diff.external", "[diff]\n\texternal = ./evil.sh\n", "",
     ["git diff", "git log -p", "git show", "git diff --stat"]),
    ("diff.textconv", '[diff "x"]\n\ttextconv = ./evil.sh\n', "*.txt diff=x\n",
     ["git diff", "git log -p", "git show", "git blame a.txt"]),
    ("diff.command", '[diff "x"]\n\tcommand = ./evil.sh\n', "*.txt diff=x\n", ["git diff", "git show"]),
    ("filter.clean", '[filter "f"]\n\tclean = ./evil.sh\n\trequired = true\n', "*.txt filter=f\n",
     ["git diff --stat", "git status", "git diff"]),
    ("filter.process", '[filter "f"]\n\tprocess = ./evil.sh\n', "*.txt filter=f\n", ["git diff --stat", "git status"]),
    ("gpg.program", "[log]\n\tshowSignature = true\n[gpg]\n\tprogram = ./evil.sh\n", "", ["git log", "git show"]),
    ("include.path", "[include]\n\tpath = ../evil.config\n", "", ["git diff"]),
    ("includeIf.path", '[includeIf "gitdir:/"]\n\tpath = ../evil.config\n', "", ["git diff", "git log -p"]),
]


@pytest.mark.parametrize(("name", "config", "attributes", "commands"), HOSTILE, ids=[h[0] for h in HOSTILE])
async def test_repository_named_programs_ask_and_never_run(
    workspace: Path, name: str, config: str, attributes: str, commands: list[str]
) -> None:
    canary = _repository(workspace, config, attributes, {"evil.config": "[diff]\n\texternal = ./evil.sh\n"})
    if name == "gpg.program":
        _signed_head(workspace)
    for command in commands:
        verdict = validate_in_workspace(command, str(workspace))
        assert verdict.verdict == "ask", (command, verdict.verdict, verdict.reason)
        assert "names a program" in verdict.reason, verdict.reason
        # Run anyway (as if approved), with no sandbox at all: the environment alone neutralises the key.
        out = await execute(command.split(), workspace, 20, sandbox="off")
        assert not canary.exists(), f"{command}: {canary.read_text()}"
        assert out.exit_code == 0, (command, out.output)
    if name in ("diff.external", "diff.textconv", "diff.command"):
        # ...and the output is still a usable diff of the real content.
        out = await execute(["git", "diff"], workspace, 20, sandbox="off")
        assert "+two" in out.output, out.output


async def test_a_clean_repository_keeps_git_allowed(workspace: Path) -> None:
    _repository(workspace, '[user]\n\tname = someone\n[diff]\n\trenames = true\n', "*.txt text\n")
    for command in ("git diff", "git log -p", "git status", "git blame a.txt"):
        verdict = validate_in_workspace(command, str(workspace))
        assert verdict.verdict == "allow", (command, verdict.reason)


async def test_a_merge_driver_named_by_the_repository_never_runs(workspace: Path) -> None:
    canary = _repository(workspace, '[user]\n\tname = t\n\temail = t@t\n[merge "m"]\n\tdriver = ./evil.sh %O %A %B\n',
                         "*.txt merge=m\n")
    _git(workspace, "commit", "-qam", "two on main")
    _git(workspace, "checkout", "-qb", "other", "HEAD~1")
    (workspace / "a.txt").write_text("one\nthree\n")
    _git(workspace, "commit", "-qam", "three on other")
    assert validate_in_workspace("git merge main", str(workspace)).verdict == "ask"
    out = await execute(["git", "merge", "-m", "m", "main"], workspace, 20, sandbox="off")
    assert not canary.exists(), canary.read_text()
    # git's own three-way merge stood in for the driver: a conflict, shown in the file.
    assert "CONFLICT" in out.output and "<<<<<<<" in (workspace / "a.txt").read_text(), out.output


async def test_an_editor_named_by_the_repository_never_runs(workspace: Path) -> None:
    canary = _repository(workspace, "[core]\n\teditor = ./evil.sh\n[sequence]\n\teditor = ./evil.sh\n")
    assert "names a program" in validate_in_workspace("git status", str(workspace)).reason
    await execute(["git", "commit", "--allow-empty"], workspace, 20, sandbox="off")
    await execute(["git", "tag", "-a", "v1"], workspace, 20, sandbox="off")
    assert not canary.exists(), canary.read_text()


async def test_an_ssh_command_named_by_the_repository_never_runs(workspace: Path) -> None:
    canary = _repository(workspace, "[core]\n\tsshCommand = ./evil.sh\n"
                                    '[remote "origin"]\n\turl = nohost.invalid:repo\n\tuploadpack = ./evil.sh\n')
    assert validate_in_workspace("git status", str(workspace)).verdict == "ask"
    await execute(["git", "ls-remote", "origin"], workspace, 20)
    assert not canary.exists(), canary.read_text()


async def test_a_hostile_repository_end_to_end_in_the_sandbox(workspace: Path) -> None:
    """Through the whole tool, sandbox on: the verdict asks, and a wrongly
    allowed run (simulated) still neither runs the program nor writes."""
    canary = _repository(workspace, '[diff]\n\texternal = ./evil.sh\n[diff "x"]\n\ttextconv = ./evil.sh\n',
                         "*.txt diff=x\n")
    out = await execute(["git", "log", "-p"], workspace, 20, read_only=False)
    assert out.exit_code == 0 and "+two" not in out.output and "+one" in out.output, out.output
    assert not canary.exists()


# --- no host descriptor of a workspace file in the sandbox ------------------------------

_REOPEN_ALL = (
    "import os\n"
    "for n in os.listdir('/proc/self/fd'):\n"
    "    p = '/proc/self/fd/' + n\n"
    "    for flags in (os.O_WRONLY | os.O_APPEND, os.O_WRONLY | os.O_TRUNC, os.O_RDWR):\n"
    "        try:\n"
    "            fd = os.open(p, flags)\n"
    "        except OSError:\n"
    "            continue\n"
    "        try:\n"
    "            os.write(fd, b'PWNED')\n"
    "            print('wrote through', n, os.readlink(p))\n"
    "        except OSError:\n"
    "            pass\n"
    "        os.close(fd)\n"
)


def _reopener(*redirects: Redirect, stdin: str | None = None) -> CommandList:
    return CommandList(items=(Pipeline(commands=(SimpleCommand(argv=(PY, "-c", _REOPEN_ALL), redirects=redirects,
                                                               stdin_text=stdin),)),), ops=())


@pytest.mark.parametrize("shape", ["stdin-file", "stdin-and-err-null", "heredoc", "file-then-pipe"])
async def test_a_read_only_command_cannot_write_through_its_descriptors(workspace: Path, shape: str) -> None:
    box, reason, _ = await bash.sandbox_status("auto")
    assert box == "bwrap", reason
    (workspace / "a.txt").write_text("original\n")
    plan = {
        "stdin-file": _reopener(Redirect(0, "<", "a.txt")),
        "stdin-and-err-null": _reopener(Redirect(0, "<", "a.txt"), Redirect(2, ">", "/dev/null")),
        "heredoc": _reopener(stdin="body\n"),
        "file-then-pipe": CommandList(items=(Pipeline(commands=(
            SimpleCommand(argv=("cat",), redirects=(Redirect(0, "<", "a.txt"),)),
            SimpleCommand(argv=(PY, "-c", _REOPEN_ALL)),
        )),), ops=()),
    }[shape]
    out = await execute_plan(plan, str(workspace), 20, read_only=True, sandbox="auto")
    assert (workspace / "a.txt").read_text() == "original\n", out.output
    assert sorted(p.name for p in workspace.iterdir()) == ["a.txt"]
    assert "wrote through" not in out.output or "a.txt" not in out.output, out.output


async def test_input_redirection_still_reads_the_file(workspace: Path) -> None:
    (workspace / "a.txt").write_text("hello\n")
    plan = CommandList(items=(Pipeline(commands=(
        SimpleCommand(argv=("tr", "a-z", "A-Z"), redirects=(Redirect(0, "<", "a.txt"),)),)),), ops=())
    out = await execute_plan(plan, str(workspace), 20, read_only=True, sandbox="auto")
    assert out.exit_code == 0 and out.output == "HELLO", out.output


# --- globs, xargs files, runners: reads and programs the first look missed ---------------


def test_a_glob_matching_a_link_out_of_the_workspace_asks(workspace: Path) -> None:
    (workspace / "pa.txt").write_text("x\n")
    assert validate_in_workspace("cat p*", str(workspace)).verdict == "allow"
    (workspace / "plink").symlink_to("/etc/passwd")
    verdict = validate_in_workspace("cat p*", str(workspace))
    assert verdict.verdict == "ask" and "/etc/passwd" in verdict.reason, verdict.reason
    assert validate_in_workspace("rm p*", str(workspace)).verdict == "reject"


async def test_a_read_only_run_drops_glob_matches_that_lead_out(workspace: Path) -> None:
    """Should a link appear after the verdict, the read-only run still does not follow it."""
    (workspace / "pa.txt").write_text("inside\n")
    (workspace / "plink").symlink_to("/etc/hostname" if os.path.exists("/etc/hostname") else "/etc/passwd")
    plan = CommandList(items=(Pipeline(commands=(
        SimpleCommand(argv=("cat", "p*"), globs=(False, True)), SimpleCommand(argv=("cat",)))),), ops=())
    out = await execute_plan(plan, str(workspace), 20, read_only=True, sandbox="auto")
    assert out.output == "inside", out.output


def test_files_named_by_a_file_ask(workspace: Path) -> None:
    (workspace / "list.txt").write_text("/etc/passwd\n")
    for command in ("xargs -a list.txt cat", "xargs --arg-file list.txt head"):
        assert validate_in_workspace(command, str(workspace)).verdict == "ask", command


@pytest.mark.parametrize("command", [
    'find . -name "*.py" | xargs grep -h .',
    "git ls-files | xargs cat",
    "find src -type f | sort | xargs wc -l",
    "find . -name '*.py' | xargs -n 1 cat",
])
async def test_planted_names_that_xargs_cuts_into_outside_paths_ask(workspace: Path, command: str) -> None:
    """Folders named `x ` and `hostname ` put `./x /etc/hostname /y.py` in a
    lister's output; xargs cuts it at the blanks and opens `/etc/hostname`,
    a name no one judged. Whole names (-0, one per line) stay allowed."""
    outside = "/etc/hostname" if os.path.exists("/etc/hostname") else "/etc/passwd"
    planted = workspace / "src" / f"x {outside} " / "y.py"  # folders `x `, `etc`, `hostname `
    planted.parent.mkdir(parents=True)
    planted.write_text("print(1)\n")
    (workspace / "src" / "a.py").write_text("print(2)\n")
    _git(workspace, "init", "-q")
    _git(workspace, "add", "-A")
    _git(workspace, "commit", "-qm", "planted")
    # Run unsandboxed, the shape really reads the outside file through the planted name.
    real = subprocess.run(["sh", "-c", "find src -name '*.py' | xargs cat 2>/dev/null"], cwd=workspace,
                          capture_output=True, text=True)
    assert Path(outside).read_text() in real.stdout
    verdict = validate_in_workspace(command, str(workspace))
    assert verdict.verdict == "ask", (command, verdict.reason)
    assert "cuts the names" in verdict.reason and "src/x " in verdict.reason, verdict.reason
    for whole in ("find . -name '*.py' -print0 | xargs -0 cat", "find . -name '*.py' | xargs -d '\\n' cat",
                  "find . -name '*.py' -exec cat {} +"):
        assert validate_in_workspace(whole, str(workspace)).verdict == "allow", whole


def test_names_are_checked_only_when_a_pipeline_cuts_them_and_within_a_bound(workspace: Path) -> None:
    from activities.bash.facts import split_names
    from core.shell.facts import SPLIT_UNKNOWN

    (workspace / "plain").mkdir()
    for k in range(30):
        (workspace / "plain" / f"f{k}.txt").write_text("")
    assert split_names(str(workspace)) == {}
    assert SPLIT_UNKNOWN in split_names(str(workspace), limit=10)  # too many: the command asks
    (workspace / "plain" / "it's").write_text("")
    assert split_names(str(workspace)) == {"'": "plain/it's"}
    assert validate_in_workspace("find plain | xargs wc -l", str(workspace)).verdict == "ask"
    assert validate_in_workspace("ls plain | head", str(workspace)).verdict == "allow"  # no names cut: no walk


# --- .git by where a path leads, not what it says ----------------------------------------


def _git_link(ws: Path) -> None:
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / ".git" / "config").write_text("[core]\n")
    (ws / "g").symlink_to(".git")


@pytest.mark.parametrize("mode", ["auto", "ask-writes", "ask-all"])
@pytest.mark.parametrize(("tool", "path"), [("write_file", "g/config"), ("edit_file", "g/config"),
                                            ("write_file", "g/hooks/pre-commit"), ("write_file", "g")])
def test_planning_asks_for_a_file_tool_reaching_git_through_a_link(workspace: Path, mode: str, tool: str,
                                                                  path: str) -> None:
    from activities.plan import resolving_risk
    from core.contracts import Policy, PolicyRule
    from core.turn.policy import decide_risk

    _git_link(workspace)
    policy = Policy(mode=mode, rules=[PolicyRule(action="allow", tool=tool)])  # type: ignore[arg-type]
    assert decide_risk(tool, policy, path=path).action == "allow" or mode == "ask-all"  # the string alone hides it
    decision = resolving_risk(decide_risk, str(workspace))(tool, policy, path=path)
    assert decision.action == "ask" and ".git" in decision.reason and "symbolic link" in decision.reason, decision
    # reads and ordinary paths are unaffected
    assert resolving_risk(decide_risk, str(workspace))("read_file", policy, path=path).action in ("allow", "ask")
    assert resolving_risk(decide_risk, str(workspace))(tool, Policy(mode="auto"), path="src/x.py").action == "allow"


def test_file_tools_refuse_git_reached_through_a_link(workspace: Path) -> None:
    from activities.files.write import edit_file, write_file
    from core.contracts import ToolRequest, ToolStatus
    from core.tools.specs import EditFileArgs, WriteFileArgs

    _git_link(workspace)
    for path in ("g/config", "g/hooks/post-checkout"):
        args = WriteFileArgs(path=path, content="[core]\n\tfsmonitor = ./evil.sh\n")
        result = write_file(ToolRequest(call_id="c1", tool="write_file", workspace_root=str(workspace),
                                        arguments=args.model_dump()), args)
        assert result.status == ToolStatus.ERROR and "through a symbolic link" in result.output, result.output
    edit = EditFileArgs(path="g/config", old_string="[core]", new_string="[core]\n\tfsmonitor = ./evil.sh")
    result = edit_file(ToolRequest(call_id="c2", tool="edit_file", workspace_root=str(workspace),
                                   arguments=edit.model_dump()), edit)
    assert result.status == ToolStatus.ERROR and "through a symbolic link" in result.output, result.output
    assert (workspace / ".git" / "config").read_text() == "[core]\n"
    assert sorted(os.listdir(workspace / ".git" / "hooks")) == []
    # ...while the .git path named as such is written (planning asked for it in every mode).
    args = WriteFileArgs(path=".git/info/exclude", content="x\n")
    ok = write_file(ToolRequest(call_id="c3", tool="write_file", workspace_root=str(workspace),
                                arguments=args.model_dump()), args)
    assert ok.status == ToolStatus.OK, ok.output


@pytest.mark.parametrize("command", ["echo '[core]' >> g/config", "cp evil.sh g/hooks/pre-commit",
                                     "echo x > g/hooks/pre-push", "ln -s ../../evil.sh g/hooks/post-checkout"])
def test_bash_writes_into_git_through_a_link_are_destructive(workspace: Path, command: str) -> None:
    _git_link(workspace)
    (workspace / "evil.sh").write_text("#!/bin/sh\n")
    verdict = validate_in_workspace(command, str(workspace))
    assert verdict.verdict == "ask" and verdict.destructive, (verdict.verdict, verdict.reason)


async def test_a_nested_repository_named_by_git_c_is_checked_and_neutralised(workspace: Path) -> None:
    (workspace / "top.txt").write_text("top\n")
    nested = workspace / "sub"
    nested.mkdir()
    canary = _repository(nested, '[diff "x"]\n\ttextconv = ./evil.sh\n', "*.txt diff=x\n")
    for command in ("git -C sub diff", "cd sub && git log -p", "git -C sub show"):
        verdict = validate_in_workspace(command, str(workspace))
        assert verdict.verdict == "ask" and "names a program" in verdict.reason, (command, verdict.reason)
    plan = CommandList(items=(Pipeline(commands=(SimpleCommand(argv=("git", "-C", "sub", "diff")),)),), ops=())
    out = await execute_plan(plan, str(workspace), 20, sandbox="off")
    assert not canary.exists(), canary.read_text()
    assert out.exit_code == 0 and "+two" in out.output, out.output


# --- recursion that follows symbolic links ------------------------------------------------

# Each walks `docs`, where a planted `docs/x` leads to /etc, and follows it.
_FOLLOWING = [
    "grep -R -l . docs", "grep --dereference-recursive -l . docs", "grep -rR -l . docs", "grep -Rl .",
    "rg -L -l . docs", "rg --follow -l .", "find -L docs -name hostname", "find docs -follow -name hostname",
    "find -L . -name hostname -exec cat {} +", "find docs -maxdepth 1 -exec grep -R -l . {} +",
    "find docs -print0 | xargs -0 grep -R -l .", "du -aL docs", "du -a --dereference", "ls -RL docs",
    "ls -R --dereference", "tree -l docs", "diff -r docs other", "diff -rq docs other", "diff docs other",
    "cd docs && grep -R -l . .", "grep -R -l . do*", "true && cd docs && grep -R -l . .",
]
# The same walks that do not follow links met on the way.
_NOT_FOLLOWING = [
    "grep -r -l . docs", "grep -r -l .", "grep -R -r -l . src", "rg -l . docs", "rg -L --no-follow -l . docs",
    "find docs -name hostname", "find -L -P docs -name hostname", "find -H docs -name hostname", "du -a docs",
    "du -aL -P docs", "du -a --dereference-args docs", "ls -R docs", "ls -RL -H docs", "tree docs",
    "diff -r --no-dereference docs other", "grep -R -l . src", "diff -r src other",
]


def _linked_workspace(ws: Path, target: str) -> None:
    (ws / "src").mkdir()
    (ws / "src" / "a.py").write_text("print(1)\n")
    (ws / "docs").mkdir()
    (ws / "docs" / "guide.md").write_text("guide\n")
    (ws / "docs" / "x").symlink_to(target)
    (ws / "other" / "x").mkdir(parents=True)
    (ws / "other" / "x" / "hostname").write_text("not the host\n")
    (ws / "other" / "guide.md").write_text("guide\n")


@pytest.mark.parametrize("command", _FOLLOWING)
def test_recursion_that_follows_a_planted_link_out_of_the_workspace_asks(workspace: Path, command: str) -> None:
    """`docs/x -> /etc`: a walk that follows links reads /etc (the real
    programs, unsandboxed, print what lies there); the command asks and says
    which link leads where."""
    _linked_workspace(workspace, "/etc")
    verdict = validate_in_workspace(command, str(workspace))
    assert verdict.verdict == "ask", (command, verdict.reason)
    assert "docs/x" in verdict.reason and "/etc" in verdict.reason, verdict.reason
    if command.startswith("grep"):
        assert "`grep -r` does not follow them" in verdict.reason, verdict.reason  # what to send instead


def test_the_real_programs_follow_the_planted_link(workspace: Path) -> None:
    _linked_workspace(workspace, "/etc")
    outside = Path("/etc/hostname").read_text() if os.path.exists("/etc/hostname") else None

    def run(command: str) -> str:
        return subprocess.run(["sh", "-c", command + " 2>/dev/null"], cwd=workspace, capture_output=True,
                              text=True, timeout=30, check=False).stdout

    assert "docs/x/hostname" in run("grep -R -l . docs --include=hostname")
    assert "docs/x/hostname" not in run("grep -r -l . docs --include=hostname")  # -r: only named links
    assert "docs/x/hostname" in run("find -L docs -name hostname")
    assert "docs/x/hostname" not in run("find docs -name hostname")
    assert "docs/x/hostname" in run("du -aL docs")
    assert "hostname" in run("ls -RL docs") and "hostname" not in run("ls -R docs")
    if outside is not None:  # diff -r compares the files behind the link, and prints them
        assert outside.strip() in run("diff -r docs other")
        assert outside.strip() not in run("diff -r --no-dereference docs other")


@pytest.mark.parametrize("command", _NOT_FOLLOWING)
def test_recursion_that_does_not_follow_links_stays_allowed(workspace: Path, command: str) -> None:
    _linked_workspace(workspace, "/etc")
    verdict = validate_in_workspace(command, str(workspace))
    assert verdict.verdict == "allow", (command, verdict.reason)


@pytest.mark.parametrize("command", _FOLLOWING)
def test_recursion_that_follows_links_inside_the_workspace_stays_allowed(workspace: Path, command: str) -> None:
    _linked_workspace(workspace, "../src")
    assert validate_in_workspace(command, str(workspace)).verdict == "allow", command


def test_a_link_reached_through_another_link_is_found(workspace: Path) -> None:
    """`docs/x -> ../deep` (inside) and `deep/y -> /etc`: the walk of docs follows x."""
    _linked_workspace(workspace, "../deep")
    (workspace / "deep").mkdir()
    (workspace / "deep" / "y").symlink_to("/etc")
    verdict = validate_in_workspace("grep -R -l . docs", str(workspace))
    assert verdict.verdict == "ask" and "deep/y" in verdict.reason, verdict.reason
    assert validate_in_workspace("grep -R -l . src", str(workspace)).verdict == "allow"


def test_the_walk_for_links_is_bounded_and_runs_only_for_such_commands(workspace: Path) -> None:
    from activities.bash.facts import link_out

    _linked_workspace(workspace, "../src")
    assert link_out(str(workspace), str(workspace), [1000]) is None
    assert "too many" in (link_out(str(workspace), str(workspace), [3]) or "")  # too big: the command asks
    (workspace / "src" / "up").symlink_to("/etc")
    assert validate_in_workspace("grep -r -l . docs", str(workspace)).verdict == "allow"  # no walk that follows
    verdict = validate_in_workspace("grep -R -l . docs", str(workspace))  # docs/x -> ../src, src/up -> /etc
    assert verdict.verdict == "ask" and "src/up" in verdict.reason, verdict.reason


def test_a_virtualenv_linking_its_interpreter_from_usr_keeps_grep_R_allowed(workspace: Path) -> None:
    """`.venv/bin/python -> /usr/bin/python3` is how venvs are made: system
    software under /usr, /bin and /lib is no one's secret, so a walk that
    meets it stays allowed; /etc, a home and the rest still ask."""
    real_python = next(p for p in ("/usr/bin/python3", "/usr/bin/env") if os.path.exists(p))
    (workspace / ".venv" / "bin").mkdir(parents=True)
    (workspace / ".venv" / "bin" / "python").symlink_to(real_python)
    (workspace / ".venv" / "syslib").symlink_to("/usr/lib")  # a folder link: exempt whole, not walked
    (workspace / "src").mkdir()
    (workspace / "src" / "a.py").write_text("x = 1\n")
    for command in ("grep -R -n 'x =' .", "du -aL .", "find -L . -name '*.py'"):
        verdict = validate_in_workspace(command, str(workspace))
        assert verdict.verdict == "allow", (command, verdict.reason)
    (workspace / ".venv" / "etc").symlink_to("/etc")
    verdict = validate_in_workspace("grep -R -n 'x =' .", str(workspace))
    assert verdict.verdict == "ask" and ".venv/etc" in verdict.reason, verdict.reason


# --- a lister hands a link's name to a program that opens it ------------------------------

_NAMING = [
    "find . -name '*.py' -exec cat {} +", "find . -name p -exec head {} \\;", "find docs -exec grep -h . {} +",
    "find . -name '*.py' | xargs cat", "git ls-files | xargs cat", "find . | xargs wc -l",
    "find docs -print0 | xargs -0 grep -h .", "find . -name 'p*' -o -name x | xargs cat",
    "find . ! -type f -exec cat {} +", "find . -type l | xargs cat", "cd docs && find . | xargs cat",
    "true && cd docs && find . | xargs cat", "git ls-files -z | xargs -0 head", "find do* -name '*.py' | xargs cat",
    "find . -name '*.py' -execdir cat {} +",
]
# With the same links: listers that do not list them, or a name filter they do not pass.
_NOT_NAMING = [
    "find . -type f -name '*.py' | xargs cat", "find . -type f -exec cat {} +", "grep -rl . . | xargs cat",
    "grep -rl x | xargs cat", "find src -name '*.py' | xargs cat", "find . -name '*.md' | xargs cat",
    "find . -name '*.py' -type f -print0 | xargs -0 grep -h .", "find . -name p -exec echo {} +",
    "find . \\( -name '*.py' -o -name '*.md' \\) -type f | xargs cat", "find . -name '*.py' | xargs echo",
    "find . -name '*.txt' -not -path './docs/*' | xargs cat",
]


def _named_links(ws: Path) -> str:
    outside = "/etc/hostname" if os.path.exists("/etc/hostname") else "/etc/passwd"
    (ws / "src").mkdir()
    (ws / "src" / "a.py").write_text("print(1)\n")
    (ws / "docs").mkdir()
    (ws / "docs" / "guide.md").write_text("guide\n")
    (ws / "p").symlink_to(outside)
    (ws / "docs" / "p.py").symlink_to(outside)
    _git(ws, "init", "-q")
    _git(ws, "add", "-A")
    _git(ws, "commit", "-qm", "planted")
    return outside


def test_the_real_programs_open_a_listed_link(workspace: Path) -> None:
    """Unsandboxed, each shape prints the outside file through the link's name;
    `-type f`, `grep -r` (skips links met on the way) do not."""
    secret = Path(_named_links(workspace)).read_text()

    def run(command: str) -> str:
        return subprocess.run(["sh", "-c", command + " 2>/dev/null"], cwd=workspace, capture_output=True,
                              text=True, errors="replace", timeout=30, check=False, env=_GIT_ENV).stdout

    for command in ("find . -name '*.py' -exec cat {} +", "find . -name p -exec head {} \\;",
                    "find docs -exec grep -h . {} +", "find . -name '*.py' | xargs cat", "git ls-files | xargs cat"):
        assert secret in run(command), command
    assert "./p" in run("find . | xargs wc -l")
    for command in ("find . -type f -name '*.py' | xargs cat", "grep -rl . . | xargs cat", "grep -rl . | xargs cat"):
        assert secret not in run(command), command


@pytest.mark.parametrize("command", _NAMING)
def test_a_listed_link_out_of_the_workspace_asks(workspace: Path, command: str) -> None:
    _named_links(workspace)
    verdict = validate_in_workspace(command, str(workspace))
    assert verdict.verdict == "ask", (command, verdict.reason)
    assert "/etc/" in verdict.reason and "-type f" in verdict.reason, verdict.reason


@pytest.mark.parametrize("command", _NOT_NAMING)
def test_listers_that_do_not_list_the_link_stay_allowed(workspace: Path, command: str) -> None:
    _named_links(workspace)
    verdict = validate_in_workspace(command, str(workspace))
    assert verdict.verdict == "allow", (command, verdict.reason)


@pytest.mark.parametrize("command", _NAMING)
def test_listed_links_inside_or_to_system_software_stay_allowed(workspace: Path, command: str) -> None:
    (workspace / "src").mkdir()
    (workspace / "src" / "a.py").write_text("print(1)\n")
    (workspace / "docs").mkdir()
    (workspace / "p").symlink_to("src/a.py")
    (workspace / "docs" / "p.py").symlink_to("../src/a.py")
    (workspace / ".venv" / "bin").mkdir(parents=True)
    (workspace / ".venv" / "bin" / "python").symlink_to("/usr/bin/env")
    _git(workspace, "init", "-q")
    _git(workspace, "add", "-A")
    _git(workspace, "commit", "-qm", "inside")
    verdict = validate_in_workspace(command, str(workspace))
    assert verdict.verdict == "allow", (command, verdict.reason)


def test_an_unrelated_link_out_keeps_a_name_filtered_find_allowed(workspace: Path) -> None:
    """A virtualenv's interpreter from pyenv leads out, but `-name '*.py'` never lists it."""
    (workspace / "src").mkdir()
    (workspace / "src" / "a.py").write_text("print(1)\n")
    (workspace / ".venv" / "bin").mkdir(parents=True)
    (workspace / ".venv" / "bin" / "python").symlink_to("/etc/hostname")
    for command in ("find . -name '*.py' | xargs grep -n x", "find . -name '*.py' -exec grep -n x {} +",
                    "find . -iname '*.PY' | xargs wc -l"):
        assert validate_in_workspace(command, str(workspace)).verdict == "allow", command
    verdict = validate_in_workspace("find . -name 'py*' | xargs cat", str(workspace))
    assert verdict.verdict == "ask" and ".venv/bin/python" in verdict.reason, verdict.reason
    from activities.bash.facts import listed_out

    assert listed_out(str(workspace), str(workspace), [100]) == ((".venv/bin/python", "/etc/hostname"),)
    assert listed_out(str(workspace), str(workspace), [3])[-1][0] == ""  # too big: the command asks
