"""What the validator may know about the workspace, gathered by I/O elsewhere. Pure.

``activities/bash/facts.py`` fills a :class:`WorkspaceFacts` (realpath of
every path the first pass reported, which toolchain configuration files the
repository has) and validates again with it. Without facts the validator
judges paths lexically and assumes the worst about toolchains.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import Mapping

from core.paths import within

# Programs whose version query (`cargo --version`) still starts a program the
# repository may choose: family -> the programs of that family.
TOOLCHAIN_PROGRAMS: dict[str, frozenset[str]] = {
    "rust": frozenset("cargo rustc rustup rustfmt rustdoc clippy-driver cargo-clippy rust-analyzer".split()),
    "go": frozenset("go gofmt".split()),
    # with the tools installed into the runtime, which its version manager shims too
    "python": frozenset("python python3 pip pip3 pypy pypy3 pyenv black ruff mypy isort flake8 pylint hatch pdm "
                        "pipenv poetry pipx rye uv".split()),
    "node": frozenset("node nodejs npm npx pnpm yarn corepack eslint prettier tsc pyright".split()),
    "npm": frozenset("npm npx pnpm yarn".split()),
    "yarn": frozenset(["yarn"]),
    "ruby": frozenset("ruby gem bundle irb rake".split()),
    # runtimes only asdf / mise pick (ALL_TOOLCHAINS): no file of their own here
    "asdf": frozenset("java javac lua luajit perl php cmake meson ninja deno bun conda".split()),
}
ALL_TOOLCHAINS = "*"  # asdf / mise: any shimmed program
SPLIT_UNKNOWN = "*"  # WorkspaceFacts.split_names: the workspace was too big to check every name

# HOME of every bash command: inside the sandbox, a folder on its /tmp, the
# workspace's own scratch folder (never the host's /tmp), which later calls
# of the workspace share (docs/effect-gate.md, "Scratch /tmp"): what an
# earlier command left there is no one's secret, but it is not trusted
# either (the sandbox turns Python's user site off). An unquoted `~` or
# `~/...` stands for it (the validator writes it out).
SANDBOX_HOME = "/tmp/home"


@dataclass(frozen=True)
class WorkspaceFacts:
    root: str  # realpath of the workspace root
    # workspace_key(path) -> realpath (missing paths: their nearest existing parent resolved + the rest)
    realpaths: Mapping[str, str] = field(default_factory=dict)
    existing: frozenset[str] = frozenset()  # keys that exist
    # toolchain family (or "*") -> the configuration file that selects it
    toolchains: Mapping[str, str] = field(default_factory=dict)
    # `key = value` of every repository git setting that names a program
    # (core.shell.git_config); any git command then asks
    git_programs: tuple[str, ...] = ()
    # workspace_key(glob word) -> the realpath of a match outside the workspace
    # (a symlink inside that leads out); globs with no such match are absent
    glob_outside: Mapping[str, str] = field(default_factory=dict)
    # Variables whose value depends on the workspace and the worker (``PWD``,
    # ``PATH``), known once the workspace is; core.shell.environment has the rest.
    env: Mapping[str, str] = field(default_factory=dict)
    # For a command whose names reach a program that cuts them (``xargs``
    # splits at blanks and takes quotes as quoting): each such character found
    # in a workspace name -> one path holding it; ``SPLIT_UNKNOWN`` -> why the
    # names could not all be checked. Empty: none found, or not looked for.
    split_names: Mapping[str, str] = field(default_factory=dict)
    # For a command that follows the symbolic links it meets while it walks a
    # folder (``grep -R``, ``find -L``, ``diff -r``): workspace_key(folder) ->
    # why that walk leaves the workspace (a link under it, or under a folder
    # a link there leads to, that leads out), or that the folder was too big
    # to check. Folders with no such link are absent.
    links_out: Mapping[str, str] = field(default_factory=dict)
    # For a command that hands a lister's names to a program that opens them
    # (``find . | xargs cat``, ``find -exec cat {} +``; core.shell.stdin_names):
    # workspace_key(folder listed) -> the links under it (not followed) that
    # lead out, each (path relative to the folder, where it leads); a ``""``
    # path: why they could not all be found. None: not looked for.
    listed_links: Mapping[str, tuple[tuple[str, str], ...]] | None = None
    # For a command that runs a standard module with ``python -m`` (the folder
    # it runs in comes first on the module path): workspace_key(folder) or ""
    # for the root -> why an entry there may be imported in place of a module
    # (a file or package named like a standard or private one), "" when none
    # is. None: not looked for.
    module_shadows: Mapping[str, str] | None = None
    # For a command that activates a virtual environment (``source
    # DIR/bin/activate``): workspace_key(DIR) -> the programs in DIR/bin the
    # workspace chose (every executable there but the system's own program
    # linked under its own name, as venv links its interpreter). A DIR that is
    # not a virtual environment inside the workspace is absent. None: not
    # looked for.
    venvs: Mapping[str, tuple[str, ...]] | None = None

    def toolchain_file(self, program: str) -> str | None:
        if ALL_TOOLCHAINS in self.toolchains and any(program in p for p in TOOLCHAIN_PROGRAMS.values()):
            return self.toolchains[ALL_TOOLCHAINS]
        for fam, file in self.toolchains.items():
            if program in TOOLCHAIN_PROGRAMS.get(fam, ()):
                return file
        return None

    def inside(self, real: str) -> bool:
        return within(real, self.root)


def workspace_key(path: str, cwd: str | None = None) -> str:
    """A path as the workspace wrapper resolves it: absolute, or relative to the
    workspace root (the ``cd DIR &&`` folder applied), normalised lexically."""
    if cwd is None and not path.startswith((".", "/")) and "/." not in path and "//" not in path and path[-1:] != "/":
        return path  # already normal (the common case, without normpath)
    if not path.startswith("/") and cwd:
        path = posixpath.join(cwd, path)
    key = posixpath.normpath(path)
    return "/" + key.lstrip("/") if key.startswith("/") else key
