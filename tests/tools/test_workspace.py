"""Adversarial confinement cases against resolve_inside, on real files.

Think like an attacker (symlinks, loops, /proc magic, prefix tricks) and like
a model that hallucinates paths (Windows separators, '~', lookalike dots,
absurdly long names). The rule: resolve_inside either raises WorkspaceError or
returns a fully resolved path inside the workspace root; it never crashes
with anything else.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from activities.workspace.artifacts import save_artifact
from activities.workspace.paths import (
    ARTIFACTS_DIR,
    WorkspaceError,
    artifacts_path,
    relative_to_root,
    resolve_inside,
    workspace_root,
)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """tmp/ws (the workspace) with a sibling tmp/ws2 and tmp/outside."""
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "app.py").write_text("print('hi')\n")
    (tmp_path / "ws2").mkdir()
    (tmp_path / "ws2" / "x").write_text("sibling\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("secret\n")
    return ws


def refused(ws: Path, path: str, fragment: str = "") -> str:
    with pytest.raises(WorkspaceError) as err:
        resolve_inside(ws, path)
    assert fragment in str(err.value)
    return str(err.value)


def inside(ws: Path, path: str) -> Path:
    real = resolve_inside(ws, path)
    root = Path(os.path.realpath(ws))
    assert real == root or root in real.parents
    return real


# ------------------------------------------------------------ lexical escapes


@pytest.mark.parametrize(
    "path",
    ["..", "../outside/secret.txt", "a/../../outside/secret.txt", "./../x", "src/../../x", "src/./../../ws2/x"],
)
def test_dotdot_escapes_are_refused(tree: Path, path: str) -> None:
    msg = refused(tree, path, "resolves outside the workspace")
    assert "give a path relative to it" in msg


@pytest.mark.parametrize("path", ["/etc/passwd", "//etc/passwd", "///etc//passwd", "/", "/tmp"])
def test_absolute_paths_elsewhere_are_refused(tree: Path, path: str) -> None:
    refused(tree, path, "outside the workspace")


def test_sibling_with_the_same_prefix_is_outside(tree: Path) -> None:
    # '/x/ws2' starts with '/x/ws' as a string: a startswith() check would let it in.
    refused(tree, "../ws2/x")
    refused(tree, str(tree.parent / "ws2" / "x"))
    refused(tree, str(tree) + "2/x")


def test_absolute_path_inside_is_allowed(tree: Path) -> None:
    assert inside(tree, str(tree / "src" / "app.py")) == tree / "src" / "app.py"
    assert inside(tree, str(tree / "src" / ".." / "src" / "app.py")) == tree / "src" / "app.py"


def test_dot_is_the_root_and_dotdot_inside_stays_inside(tree: Path) -> None:
    assert inside(tree, ".") == tree
    assert inside(tree, "src/..") == tree
    assert inside(tree, "src/../src/./app.py") == tree / "src" / "app.py"
    assert inside(tree, "src/") == tree / "src"


@pytest.mark.parametrize("path", ["", "   ", "\t\n"])
def test_empty_paths_are_refused(tree: Path, path: str) -> None:
    refused(tree, path, "path is empty")


@pytest.mark.parametrize("path", ["a\x00b", "\x00", "src/app.py\x00.txt"])
def test_nul_bytes_are_refused(tree: Path, path: str) -> None:
    refused(tree, path, "NUL byte")


# ------------------------------------------------------------------- /proc


def test_proc_self_root_escape_is_refused(tree: Path) -> None:
    refused(tree, "/proc/self/root/etc/passwd", "outside")
    refused(tree, "/proc/self/root/" + str(tree.parent / "outside" / "secret.txt"), "outside")


def test_proc_self_root_back_into_the_workspace_is_the_same_file(tree: Path) -> None:
    # Resolves to the real path inside: allowed, and it is the resolved path we return.
    assert inside(tree, "/proc/self/root" + str(tree / "src" / "app.py")) == tree / "src" / "app.py"


def test_proc_self_cwd_and_fd_are_refused(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tree.parent / "outside")
    refused(tree, "/proc/self/cwd/secret.txt", "outside")
    fd = os.open(tree.parent / "outside" / "secret.txt", os.O_RDONLY)
    try:
        refused(tree, f"/proc/self/fd/{fd}", "outside")
        refused(tree, f"/dev/fd/{fd}", "outside")
    finally:
        os.close(fd)


def test_symlink_inside_to_proc_is_refused(tree: Path) -> None:
    (tree / "p").symlink_to("/proc/self/root/etc")
    refused(tree, "p/passwd", "outside")


# ---------------------------------------------------------------- symlinks


def test_symlinked_file_pointing_out_is_refused(tree: Path) -> None:
    (tree / "leak.txt").symlink_to(tree.parent / "outside" / "secret.txt")
    refused(tree, "leak.txt", "outside")


def test_symlinked_folder_pointing_out_is_refused_also_for_new_files(tree: Path) -> None:
    (tree / "out").symlink_to(tree.parent / "outside")
    refused(tree, "out/secret.txt")
    refused(tree, "out/new-file.txt")  # does not exist yet: a writer would create it outside
    refused(tree, "out/deeper/new.txt")


def test_relative_symlink_up_is_refused(tree: Path) -> None:
    (tree / "up").symlink_to("..")
    refused(tree, "up/outside/secret.txt", "resolves outside")
    # ... even when it would come back in: a path that leaves the workspace at
    # any step is refused (as Go's os.Root does), so nothing outside is ever walked.
    refused(tree, "up/ws/src/app.py", "resolves outside")


def test_symlink_inside_pointing_inside_is_allowed_and_resolved(tree: Path) -> None:
    (tree / "alias.py").symlink_to("src/app.py")
    (tree / "srclink").symlink_to(tree / "src")
    assert inside(tree, "alias.py") == tree / "src" / "app.py"
    assert inside(tree, "srclink/app.py") == tree / "src" / "app.py"
    assert relative_to_root(tree, inside(tree, "alias.py")) == "src/app.py"


def test_dangling_symlinks(tree: Path) -> None:
    (tree / "dangling-out").symlink_to(tree.parent / "outside" / "not-yet.txt")
    (tree / "dangling-in").symlink_to("src/not-yet.txt")
    refused(tree, "dangling-out", "outside")  # a write would create the file outside
    assert inside(tree, "dangling-in") == tree / "src" / "not-yet.txt"


def test_symlink_chain_leading_out_in_the_second_hop(tree: Path) -> None:
    (tree / "hop1").symlink_to("src/hop2")
    (tree / "src" / "hop2").symlink_to(tree.parent / "outside")
    refused(tree, "hop1/secret.txt", "outside")
    (tree / "f1").symlink_to("f2")
    (tree / "f2").symlink_to("../outside/secret.txt")
    refused(tree, "f1", "outside")


def test_parent_symlink_to_filesystem_root(tree: Path) -> None:
    (tree / "rootlink").symlink_to("/")
    refused(tree, "rootlink/etc/passwd", "outside")
    refused(tree, "rootlink", "outside")
    # Through '/' and back into the workspace: refused too, it leaves on the way.
    refused(tree, "rootlink" + str(tree / "src" / "app.py"), "outside")


@pytest.mark.parametrize("path", ["loop", "loop/x", "a", "a/x", "self/x/y"])
def test_symlink_loops_are_refused(tree: Path, path: str) -> None:
    (tree / "loop").symlink_to("loop")
    (tree / "a").symlink_to("b")
    (tree / "b").symlink_to("a")
    (tree / "self").symlink_to("self")
    refused(tree, path, "symlink")


def test_symlink_loop_then_dotdot_is_a_loop_as_for_the_kernel(tree: Path) -> None:
    (tree / "self").symlink_to("self")
    refused(tree, "self/../src/app.py", "symlink loop")


def test_symlink_loop_then_dotdot_cannot_smuggle_an_unresolved_link(tree: Path) -> None:
    # realpath(strict=False) stops at a loop and returns the rest unresolved;
    # '..' then collapses lexically, leaving 'escape' (a link to outside) in
    # a path that *looks* inside. This was a real hole: it must be refused.
    (tree / "loop").symlink_to("loop")
    (tree / "escape").symlink_to(tree.parent / "outside")
    refused(tree, "loop/../escape/secret.txt", "symlink")
    refused(tree, "loop/../escape/new.txt", "symlink")


def test_workspace_root_given_as_a_symlink(tree: Path) -> None:
    link = tree.parent / "ws-link"
    link.symlink_to(tree)
    assert resolve_inside(link, "src/app.py") == tree / "src" / "app.py"
    assert resolve_inside(link, str(link / "src" / "app.py")) == tree / "src" / "app.py"
    with pytest.raises(WorkspaceError):
        resolve_inside(link, "../outside/secret.txt")


def test_root_that_is_not_a_folder(tmp_path: Path) -> None:
    with pytest.raises(WorkspaceError, match="not a folder"):
        workspace_root(str(tmp_path / "missing"))
    (tmp_path / "file").write_text("x")
    with pytest.raises(WorkspaceError, match="not a folder"):
        resolve_inside(tmp_path / "file", "a")


# ------------------------------------------- what a hallucinating model sends


@pytest.mark.parametrize(
    "path",
    [
        "..\\..\\x",  # Windows separators: on Linux one odd file name, inside
        "C:\\Windows\\system32",
        "~/.ssh/id_rsa",  # no home expansion
        "$HOME/x",
        "\u2024\u2024/x",  # ONE DOT LEADER twice: looks like '..'
        "\uff0e\uff0e/x",  # FULLWIDTH FULL STOP
        "..\u2215x",  # DIVISION SLASH
        "...",
        ".../x",
        "a b/c",
        "file:///etc/passwd",
    ],
)
def test_lookalikes_stay_inside(tree: Path, path: str) -> None:
    real = inside(tree, path)
    assert real != Path("/etc/passwd")


@pytest.mark.parametrize("path", ["x" * 300, "a/" * 5000 + "x", "/".join(["y" * 255] * 40), "../" * 3000 + "x"])
def test_very_long_paths_never_crash(tree: Path, path: str) -> None:
    try:
        real = resolve_inside(tree, path)
    except WorkspaceError:
        return
    root = Path(os.path.realpath(tree))
    assert root in real.parents


# ------------------------------------------------------------- property test

_PIECES = ["..", ".", "", "src", "app.py", "out", "in", "loop", "up", "root", "nope", "\\", "~"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    parts=st.lists(st.sampled_from(_PIECES), min_size=1, max_size=8),
    absolute=st.booleans(),
)
def test_any_mix_of_links_and_dots_stays_confined(tree: Path, parts: list[str], absolute: bool) -> None:
    if not (tree / "out").is_symlink():
        (tree / "out").symlink_to(tree.parent / "outside")
        (tree / "in").symlink_to("src")
        (tree / "loop").symlink_to("loop")
        (tree / "up").symlink_to("..")
        (tree / "root").symlink_to("/")
    path = "/".join(parts)
    if absolute:
        path = str(tree) + "/" + path
    if not path.strip():
        return
    try:
        real = resolve_inside(tree, path)
    except WorkspaceError:
        return
    root = Path(os.path.realpath(tree))
    assert real == root or root in real.parents
    # Fully resolved: no component below the root is a symlink, so opening it
    # cannot be redirected anywhere else.
    probe = real
    while probe != root:
        assert not probe.is_symlink(), (path, real)
        probe = probe.parent


# ---------------------------------------------------------------- artifacts


def test_artifacts_are_saved_inside_and_ignored(tree: Path) -> None:
    rel = save_artifact(tree, "call/../../id", "bash", "full output")
    assert rel.startswith(ARTIFACTS_DIR + "/") and ".." not in rel and rel.count("/") == 1
    assert (tree / rel).read_text() == "full output"
    assert (tree / ARTIFACTS_DIR / ".gitignore").read_text() == "*\n"
    path, rel2 = artifacts_path(tree, "", "x")
    assert path.parent == tree / ARTIFACTS_DIR and rel2 != rel


def test_artifacts_folder_replaced_by_a_symlink_is_refused(tree: Path) -> None:
    outside = tree.parent / "outside"
    (tree / ARTIFACTS_DIR).symlink_to(outside)
    with pytest.raises(WorkspaceError, match="symbolic link or not a folder"):
        save_artifact(tree, "c1", "bash", "data")
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


def test_artifacts_gitignore_planted_as_a_symlink_is_not_followed(tree: Path) -> None:
    outside = tree.parent / "outside"
    (tree / ARTIFACTS_DIR).mkdir()
    (tree / ARTIFACTS_DIR / ".gitignore").symlink_to(outside / "secret.txt")
    save_artifact(tree, "c1", "bash", "data")
    assert (outside / "secret.txt").read_text() == "secret\n"
