"""validate_in_workspace: the validator with facts from a real workspace on disk
(realpath of every path word, toolchain files the repository configures)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from activities.bash.facts import validate_in_workspace
from core.shell import validate_command


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "README.md").write_text("hi\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("print(1)\n")
    return tmp_path


@pytest.mark.parametrize(
    ("file", "command"),
    [
        ("rust-toolchain.toml", "cargo --version"),
        ("rust-toolchain", "rustc -V"),
        (".cargo/config.toml", "cargo --version"),
        (".tool-versions", "node --version"),
        (".mise.toml", "python3 --version"),
        (".python-version", "python3 --version"),
        ("go.mod", "go version"),
        (".npmrc", "npm --version"),
        (".yarnrc.yml", "yarn --version"),
        # queries that only read what is installed, or only check syntax
        (".python-version", "pip list"),
        (".python-version", "pip3 show -f requests"),
        (".python-version", "pip list --format=freeze"),
        (".tool-versions", "node --check src/app.js"),
        (".nvmrc", "node -c src/app.js"),
        # tools a version manager shims too (pyenv, asdf, mise): the repository picks which one runs
        (".python-version", "ruff --version"),
        (".tool-versions", "black --version"),
        (".mise.toml", "java --version"),
        (".tool-versions", "eslint --version"),
        (".node-version", "tsc --version"),
    ],
)
def test_a_repository_configured_toolchain_makes_version_queries_ask(ws: Path, file: str, command: str) -> None:
    assert validate_in_workspace(command, str(ws)).verdict == "allow"
    (ws / file).parent.mkdir(parents=True, exist_ok=True)
    (ws / file).write_text("[toolchain]\nchannel = 'evil'\n")
    v = validate_in_workspace(command, str(ws))
    assert v.verdict == "ask" and file in v.reason, v


def test_pip_freeze_and_module_importing_variables_ask_even_without_a_toolchain_file(ws: Path) -> None:
    # pip freeze runs `hg root` / `git config` in every editable project's
    # folder (a workspace's .hg/hgrc loads extensions); PYTHONWARNINGS names a
    # warning category `module.Class`, and Python imports that module at startup.
    for command in ("pip freeze", "pip freeze --exclude-editable", "PYTHONWARNINGS=ignore::this.W pip list",
                    "export PYTHONWARNINGS=ignore::pkg.W && pip list"):
        assert validate_in_workspace(command, str(ws)).verdict == "ask", command


def test_without_facts_toolchains_are_assumed_configured() -> None:
    assert validate_command("cargo --version").verdict == "ask"


def test_a_symlink_that_leads_outside_is_judged_outside(ws: Path) -> None:
    (ws / "link").symlink_to("/etc")
    assert validate_command("cat link/passwd").verdict == "allow"  # lexically inside
    v = validate_in_workspace("cat link/passwd", str(ws))
    assert v.verdict == "ask" and "outside the workspace" in v.reason
    w = validate_in_workspace("cp README.md link/x", str(ws))
    assert w.verdict == "reject" and "outside the workspace" in w.reason


def test_a_dotdot_after_a_symlink_is_resolved_at_the_link_target(ws: Path) -> None:
    # the kernel resolves `link/..` at the link's target (/etc/..: /), not lexically (the workspace)
    (ws / "link").symlink_to("/etc")
    (ws / "src" / "deep").symlink_to("/usr/share")
    for command in ("cat link/../etc/passwd", "ls link/..", "grep -r x ./link/../etc", "cd src && cat deep/../../etc/passwd",
                    "cat < link/../etc/passwd", "wc -l src/deep/../x"):
        v = validate_in_workspace(command, str(ws))
        assert v.verdict != "allow" and "outside the workspace" in v.reason, (command, v)
    for command in ("cp README.md link/../x", "sort -o link/../x README.md"):
        assert validate_in_workspace(command, str(ws)).verdict == "reject", command
    assert validate_in_workspace("cat src/../README.md", str(ws)).verdict == "allow"  # no link on the way


def test_a_symlink_to_an_endless_device_rejects(ws: Path) -> None:
    (ws / "z").symlink_to("/dev/zero")
    v = validate_in_workspace("head -c 10 z", str(ws))
    assert v.verdict == "reject" and "never ends" in v.reason


def test_an_absolute_path_inside_the_workspace_is_inside(ws: Path) -> None:
    command = f"cat {ws}/README.md"
    # Without facts an absolute path is outside, unless it lies under /tmp
    # (where test workspaces live): the sandbox's scratch folder, readable.
    assert validate_command(command).verdict == ("allow" if str(ws).startswith("/tmp/") else "ask")
    assert validate_in_workspace(command, str(ws)).verdict == "allow"


def test_scratch_tmp_writes_need_no_approval_once_the_workspace_is_known(ws: Path) -> None:
    patch = "cat > /tmp/patch.py <<'PY'\nprint(1)\nPY"
    assert validate_command(patch).verdict == "ask"  # without facts /tmp may hold the workspace
    assert validate_in_workspace(patch, str(ws)).verdict == "allow"
    assert validate_in_workspace("mkdir -p /tmp/a/b && touch /tmp/a/b/c", str(ws)).verdict == "allow"
    assert validate_in_workspace("python /tmp/patch.py", str(ws)).verdict == "ask"  # runs code
    # the workspace itself under /tmp is never scratch: a write there asks
    assert validate_in_workspace(f"echo x >> {ws}/notes.txt", str(ws)).verdict == "ask"
    assert validate_in_workspace(f"touch {ws}/new.txt", str(ws)).verdict == "ask"
    assert validate_in_workspace("touch /tmp/home/x", str(ws)).verdict == "reject"  # `~`: not scratch


def test_known_environment_is_written_out(ws: Path) -> None:
    from activities.sandbox.environment import command_path

    v = validate_in_workspace("echo $PWD $HOME \"$PATH\"", str(ws))
    assert (v.verdict, v.opaque) == ("allow", False)
    assert v.argv == ("echo", os.path.realpath(ws), "/tmp/home", command_path(str(ws)))
    assert validate_command("echo $PWD").opaque  # the root is unknown without facts
    assert validate_in_workspace("cd src && echo $PWD", str(ws)).opaque  # the folder changes


def test_a_redirection_into_a_folder_an_earlier_part_creates(ws: Path) -> None:
    v = validate_in_workspace("mkdir -p d/sub && echo deep > d/sub/x.txt", str(ws))
    assert v.verdict == "ask" and not v.destructive, v


def test_a_workspace_program_that_is_a_symlink_outside_rejects(ws: Path) -> None:
    (ws / "tool").symlink_to("/bin/rm" if os.path.exists("/bin/rm") else "/usr/bin/rm")
    v = validate_in_workspace("./tool -rf src", str(ws))
    assert v.verdict == "reject" and "resolves outside" in v.reason
    (ws / "run.sh").write_text("echo hi\n")
    assert validate_in_workspace("./run.sh", str(ws)).verdict == "ask"


def test_a_first_pass_rejection_is_final(ws: Path) -> None:
    assert validate_in_workspace("sudo ls", str(ws)).verdict == "reject"


def test_toolchain_files_in_the_cd_folder_count(ws: Path) -> None:
    (ws / "crate").mkdir()
    assert validate_in_workspace("cd crate && cargo --version", str(ws)).verdict == "allow"
    (ws / "crate" / "rust-toolchain.toml").write_text("[toolchain]\n")
    v = validate_in_workspace("cd crate && cargo --version", str(ws))
    assert v.verdict == "ask" and "crate/rust-toolchain.toml" in v.reason


def test_an_overwriting_redirection_is_destructive_only_onto_an_existing_file(ws: Path) -> None:
    new = validate_in_workspace("echo hi > new.txt", str(ws))
    assert (new.verdict, new.destructive) == ("ask", False)
    old = validate_in_workspace("echo hi > README.md", str(ws))
    assert (old.verdict, old.destructive) == ("ask", True) and "overwrites" in old.reason


def test_a_cd_to_the_absolute_workspace_path_is_inside(ws: Path) -> None:
    v = validate_in_workspace(f"cd {ws}/src && ls", str(ws))
    assert v.verdict == "allow" and v.plan is not None and v.plan.cwd == "src"


@pytest.mark.parametrize(("argv", "cuts"), [
    ("xargs cat", " \t\n'\"\\"),
    ("xargs -n 1 cat", " \t\n'\"\\"),
    ("xargs -0 cat", ""),
    ("xargs -r0 cat", ""),
    ("xargs --null cat", ""),
    ("xargs -d '\\n' cat", "\n"),
    ("xargs --delimiter='\\n' cat", "\n"),
    ("xargs -d x cat", " \t\n'\"\\x"),  # a delimiter no fact is gathered for: asks
    ("xargs -n0 cat", " \t\n'\"\\"),  # -n's value, not -0
    ("file -f -", "\n"),
    ("sort --files0-from=-", ""),
])
def test_what_a_names_reader_cuts_at(argv: str, cuts: str) -> None:
    from core.shell.stdin_names import split_at

    words = validate_command(argv).plan.all_commands()[0].argv  # type: ignore[union-attr]
    assert split_at(words) == frozenset(cuts), words


def test_git_C_naming_the_workspace_by_its_absolute_path_is_plain_git() -> None:
    """Agents name their root (`git -C /home/me/proj branch --show-current`):
    judged as the folder it is, with the repository's config read as for a
    plain git command; a folder outside still asks."""
    import shutil
    import subprocess
    import tempfile

    root = tempfile.mkdtemp(dir="/var/tmp")  # not under /tmp: the scratch folder keeps asking
    try:
        subprocess.run(["git", "init", "-q", root], check=True)
        for command in (f"git -C {root} branch --show-current", f"git -C {root}/ log --oneline -3"):
            verdict = validate_in_workspace(command, root)
            assert verdict.verdict == "allow", (command, verdict.reason)
        assert validate_in_workspace("git -C /etc status", root).verdict == "ask"
        subprocess.run(["git", "-C", root, "config", "core.fsmonitor", "./evil.sh"], check=True)
        verdict = validate_in_workspace(f"git -C {root} status", root)
        assert verdict.verdict == "ask" and "fsmonitor" in verdict.reason.lower(), verdict.reason
    finally:
        shutil.rmtree(root)


@pytest.mark.parametrize(
    "entry",
    ["json.py", "argparse.pyc", "_json.cpython-311-x86_64-linux-gnu.so", "re/__init__.py", "_colorize.py"],
)
def test_python_m_json_tool_asks_where_a_file_could_stand_in_for_a_module_it_imports(ws: Path, entry: str) -> None:
    # `python -m` puts the folder it runs in first on the module path: a
    # `json.py` (or a package, bytecode or extension named like a standard or
    # private module) there would run instead of the standard library's.
    for command in ("python3 -m json.tool data.json", "cd src && python3 -m json.tool --sort-keys a.json"):
        assert validate_in_workspace(command, str(ws)).verdict == "allow", command
    for folder, command in (("", "python3 -m json.tool data.json"),
                            ("src", "cd src && python3 -m json.tool --sort-keys a.json")):
        path = ws / folder / entry
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
        v = validate_in_workspace(command, str(ws))
        assert v.verdict == "ask" and entry.split("/")[0] in v.reason, v
    assert validate_in_workspace("python3 -m json.tool /etc/hostname", str(ws)).verdict == "ask"
    for python in ("pypy3", "pypy", "pypy3.10"):  # judged by the same rule as python3, imports the same way
        v = validate_in_workspace(f"{python} -m json.tool data.json", str(ws))
        assert v.verdict == "ask" and entry.split("/")[0] in v.reason, v


def test_python_m_json_tool_ignores_folders_that_are_no_package_and_other_names(ws: Path) -> None:
    (ws / "email").mkdir()  # a namespace folder: the standard package found later wins
    (ws / "email" / "x.txt").write_text("")
    (ws / "setup.py").write_text("")
    (ws / "__init__.py").write_text("")
    assert validate_in_workspace("python3 -m json.tool data.json", str(ws)).verdict == "allow"
    (ws / ".python-version").write_text("3.12\n")
    assert validate_in_workspace("python3 -m json.tool data.json", str(ws)).verdict == "ask"


# --- `source DIR/bin/activate` of a real virtual environment ----------------------------

_SYSTEM_PYTHON = "/usr/bin/python3"
needs_system_python = pytest.mark.skipif(not os.path.exists(_SYSTEM_PYTHON), reason="no /usr/bin/python3")


def make_venv(folder: Path) -> Path:
    """A real virtual environment, as `python3 -m venv` makes it (its python a link to the system's)."""
    import subprocess

    subprocess.run([_SYSTEM_PYTHON, "-m", "venv", "--without-pip", str(folder)], check=True, capture_output=True)
    return folder


@needs_system_python
def test_a_real_virtual_environment_is_activated_for_the_later_parts(ws: Path) -> None:
    make_venv(ws / ".venv")
    v = validate_in_workspace("source .venv/bin/activate && python --version", str(ws))
    # planned, and asking: the venv's python starts with the venv's site-packages (workspace code)
    assert v.verdict == "ask" and v.plan is not None and "`python`" in v.reason, v
    assert validate_in_workspace(". .venv/bin/activate && python -m pytest -q", str(ws)).verdict == "ask"
    make_venv(ws / "proj" / ".venv")
    v = validate_in_workspace("cd proj && source .venv/bin/activate && python manage.py check", str(ws))
    assert v.verdict == "ask" and "python" in v.reason, v
    # $PATH is no longer the one known before the command runs (never written out stale)
    assert validate_in_workspace("source .venv/bin/activate && echo $PATH", str(ws)).verdict == "reject"
    # the pure validator has no facts: refused, with the hint to run the programs by their path
    v = validate_command("source .venv/bin/activate && python --version")
    assert v.verdict == "reject" and ".venv/bin/python" in (v.hint or ""), v


@needs_system_python
def test_a_program_planted_in_the_venv_bin_makes_the_later_parts_ask(ws: Path) -> None:
    make_venv(ws / ".venv")
    planted = ws / ".venv" / "bin" / "ls"
    planted.write_text("#!/bin/sh\necho planted\n")
    planted.chmod(0o755)
    v = validate_in_workspace("source .venv/bin/activate && ls", str(ws))
    assert v.verdict == "ask" and "`ls`" in v.reason, v
    # run by name by another program, too
    assert validate_in_workspace("source .venv/bin/activate && find . -exec ls {} +", str(ws)).verdict == "ask"
    planted.unlink()
    # a system program linked under another program's name is not that program
    (ws / ".venv" / "bin" / "cat").symlink_to("/bin/rm")
    v = validate_in_workspace("source .venv/bin/activate && cat README.md", str(ws))
    assert v.verdict == "ask" and "`cat`" in v.reason, v


@needs_system_python
def test_a_folder_that_is_not_a_virtual_environment_inside_the_workspace_is_refused(ws: Path, tmp_path_factory) -> None:  # type: ignore[no-untyped-def]
    fake = ws / "fake" / "bin"
    fake.mkdir(parents=True)
    (fake / "activate").write_text("echo sourced\n")
    v = validate_in_workspace("source fake/bin/activate && ls", str(ws))
    assert v.verdict == "reject" and "virtual environment" in v.reason, v
    linked = make_venv(ws / "linked")
    (linked / "bin" / "activate").unlink()
    (linked / "bin" / "activate").symlink_to(fake / "activate")
    assert validate_in_workspace("source linked/bin/activate && ls", str(ws)).verdict == "reject"
    outside = make_venv(tmp_path_factory.mktemp("elsewhere") / "venv")
    (ws / "out").symlink_to(outside)
    assert validate_in_workspace("source out/bin/activate && ls", str(ws)).verdict == "reject"
    assert validate_in_workspace(f"source {outside}/bin/activate && ls", str(ws)).verdict == "reject"


def test_a_quoted_cd_makes_pwd_unknown_after_it(ws: Path) -> None:
    (ws / "sub").mkdir()
    # `c''d` is bash's cd: $PWD after it is not the workspace's path
    v = validate_in_workspace("c''d sub && echo $PWD", str(ws))
    assert str(ws) not in [w for c in v.plan.all_commands() for w in c.argv], v  # type: ignore[union-attr]


def test_every_name_the_python_rule_judges_is_checked_for_module_shadows() -> None:
    from core.shell.programs import runs_python_module
    from core.shell.rules.interpreters import HANDLERS, _h_python

    for name, handler in HANDLERS.items():
        if handler is _h_python:
            assert runs_python_module((name, "-m", "json.tool")), name
