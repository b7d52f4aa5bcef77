"""Builds, package managers and everyday file tools: ask, with their program-running options rejected. Pure."""

from __future__ import annotations

from core.shell.options import Opts, is_version_query, long_hit, opts, scan, short_hit
from core.shell.programs import Handler, judge_inner
from core.shell.verdict import ask_writes, H_SCRIPT, H_SEPARATE, J, allow, ask, rej


_ASK_REASONS = {
    "pytest": "runs the test suite (project code) and may change files",
    "py.test": "runs the test suite (project code) and may change files",
    "tox": "runs test environments (project code)",
    "nox": "runs test sessions (project code)",
    "make": "runs build recipes (arbitrary commands from the Makefile)",
    "cmake": "configures or runs a build",
    "ninja": "runs a build",
    "meson": "configures or runs a build",
    "bazel": "runs a build",
    "gradle": "runs a build",
    "mvn": "runs a build",
    "cargo": "builds or runs Rust code",
    "rustc": "compiles code",
    "gcc": "compiles code",
    "g++": "compiles code",
    "cc": "compiles code",
    "clang": "compiles code",
    "clang++": "compiles code",
    "javac": "compiles code",
    "java": "runs a Java program",
    "tsc": "compiles TypeScript",
    "npm": "runs package scripts or installs packages",
    "yarn": "runs package scripts or installs packages",
    "pnpm": "runs package scripts or installs packages",
    "npx": "runs a package binary (possibly downloaded)",
    "bunx": "runs a package binary (possibly downloaded)",
    "pip": "installs or changes Python packages",
    "pip3": "installs or changes Python packages",
    "pipx": "installs or runs Python applications",
    "uv": "manages Python environments and packages",
    "poetry": "manages a Python project",
    "pipenv": "manages a Python environment",
    "pdm": "manages a Python project",
    "hatch": "manages a Python project",
    "rye": "manages a Python project",
    "conda": "manages environments and packages",
    "bundle": "manages Ruby gems",
    "gem": "installs Ruby gems",
    "black": "may reformat files",
    "ruff": "may change files (fix / format)",
    "mypy": "runs a type checker (writes a cache)",
    "pyright": "runs a type checker",
    "flake8": "runs a linter",
    "pylint": "runs a linter",
    "isort": "may reorder imports in files",
    "eslint": "runs a linter (may fix files)",
    "prettier": "may reformat files",
    "gofmt": "may reformat files",
    "mkdir": "creates folders",
    "touch": "creates files or changes their timestamps",
    "cp": "copies files (may overwrite)",
    "mv": "moves or renames files (may overwrite)",
    "ln": "creates links",
    "rmdir": "removes empty folders",
    "install": "copies files and sets their modes",
    "patch": "changes files",
    "tee": "writes files",
    "split": "writes files",
    "tar": "creates or extracts archives",
    "zip": "creates archives",
    "unzip": "extracts archives (may overwrite)",
    "gzip": "compresses files (replaces them)",
    "gunzip": "decompresses files (replaces them)",
    "xz": "compresses files (replaces them)",
    "bzip2": "compresses files (replaces them)",
    "zstd": "compresses files",
    "docker": "controls containers",
    "podman": "controls containers",
    "kubectl": "controls a cluster",
}
# Programs that write the paths they are given: a path outside the workspace rejects.
_FILE_WRITERS = frozenset(
    "mkdir touch cp mv ln rmdir install patch tee split tar zip unzip gzip gunzip xz bzip2 zstd".split()
)
_VERSION_OK = frozenset(
    "make cmake ninja meson gcc g++ cc clang clang++ javac java tsc npm yarn pnpm npx pip pip3 pipx "
    "uv poetry pipenv pdm hatch rye conda bundle gem black ruff mypy pyright flake8 pylint isort "
    "eslint prettier rustc cargo tar zip unzip gzip xz bzip2 zstd docker podman".split()
)
_ENV_RUNNERS = {
    "uv": ("run",),
    "poetry": ("run",),
    "pipenv": ("run",),
    "pdm": ("run",),
    "hatch": ("run",),
    "rye": ("run",),
    "conda": ("run",),
    "bundle": ("exec",),
    "pipx": ("run",),
}


def _h_ask(name: str, args: list[str]) -> J:
    lname = name.lower()
    if is_version_query(args) and lname in _VERSION_OK:
        return allow(f"`{name} {args[0]}` only prints its version")
    runners = _ENV_RUNNERS.get(lname)
    if runners and args and args[0] in runners:
        return judge_inner(f"{name} {args[0]}", args[1:])
    reason = f"`{name}` {_ASK_REASONS.get(lname, 'may change files or run code')}"
    return ask_writes(reason) if lname in _FILE_WRITERS else ask(reason)


_STDIN_SHELLS = frozenset("bash sh zsh dash python python3 node".split())


def _h_rtk(name: str, args: list[str]) -> J:
    """`rtk CMD ...` and `rtk proxy CMD ...` run CMD and filter its output: as
    strict as CMD (a rejected or destructive CMD stays so), never less than
    ask (rtk keeps its own usage records outside the workspace)."""
    rest = args[1:] if args[:1] == ["proxy"] else args
    if rest[:1] and rest[0] in _STDIN_SHELLS and rest[1:] in ([], ["-"]):
        # the code comes on standard input (a here-document), as with `bash <<'EOF'`
        return ask(f"`{name} {rest[0]}` runs the code on its standard input")
    return judge_inner(name, rest) if rest else ask(f"`{name}` runs a program")


def _h_make(name: str, args: list[str]) -> J:
    for a in args:
        if long_hit(a, ("eval",)) or a.startswith("-E") or short_hit(a, "E", "CfIjlowW"):
            return rej("`make --eval` runs inline make code", H_SCRIPT)
    return _h_ask(name, args)


def _h_cargo(name: str, args: list[str]) -> J:
    for a in args:
        if a == "--config" or a.startswith("--config="):
            return rej("`cargo --config` can set a runner or linker that runs programs",
                        "drop --config; put settings in the project's .cargo/config.toml if needed")
    if args in (["--list"],):
        return allow("`cargo --list` only prints information")
    return _h_ask(name, args)


def _h_npm(name: str, args: list[str]) -> J:
    for a in args:
        if a in ("-c", "--call") or a.startswith("--call="):
            return rej(f"`{name} {a}` runs an inline shell command", H_SEPARATE)
    return _h_ask(name, args)


def _h_go(name: str, args: list[str]) -> J:
    for a in args:
        nm = a.lstrip("-").split("=", 1)[0]
        if a.startswith("-") and nm in ("exec", "toolexec", "vettool"):
            return rej(f"`go -{nm}` runs another program", "drop the option")
    if not args:
        return allow("`go` only prints usage")
    sub = args[0]
    if sub in ("version", "help") or (sub == "env" and not any(a in ("-w", "-u") for a in args)):
        return allow(f"`go {sub}` only prints information")
    why = {
        "test": "runs the tests (project code)",
        "run": "compiles and runs a program",
        "build": "compiles the project",
        "generate": "runs commands written in source comments",
        "get": "downloads and installs modules",
        "install": "compiles and installs",
        "mod": "manages modules (may download)",
    }.get(sub, "may change files or run code")
    return ask(f"`go {sub}` {why}")


def _h_tar(name: str, args: list[str]) -> J:
    danger = ("to-command", "checkpoint-action", "use-compress-program", "rsh-command", "info-script",
              "new-volume-script", "rmt-command")
    safe = frozenset(["checkpoint", "to-stdout"])
    for k, a in enumerate(args):
        hit = long_hit(a, danger, safe)
        if hit:
            return rej(f"`tar --{hit}` runs another program", "drop the option; tar compresses with -z / -j / -J itself")
        if a.startswith("-") and not a.startswith("--"):
            letters = a[1:]
        elif k == 0 and not a.startswith("-"):
            letters = a  # old-style option cluster: `tar xIf ...`
        else:
            continue
        for c in letters:
            if c in "IF":
                return rej(f"`tar -{c}` runs another program", "drop the option; tar compresses with -z / -j / -J itself")
            if c in "fCbgKLNTVX":
                break
    for a in args:
        if a.startswith("--file="):
            a = a[7:]
        if ":" in a and not a.startswith("-") and "--force-local" not in args:
            return rej(f"`tar` archive `{a}` names a remote host (runs rsh/ssh)",
                        "use a local archive path without ':' (or add --force-local)")
    return _h_ask(name, args)


def _h_zip(name: str, args: list[str]) -> J:
    for a in args:
        if (a.startswith("-") and not a.startswith("--") and "TT" in a) or long_hit(a, ("unzip-command",)):
            return rej("`zip -TT / --unzip-command` runs another program", "drop the option")
    return _h_ask(name, args)

# pip's queries of what is installed: no index, no network, no package code
# runs. Options that reach an index (--outdated, --index-url ...), pick
# another interpreter (--python) or write (--log) are not listed, so they ask.
# Not `pip freeze`: for every editable project (often the workspace) it runs
# version-control programs in its folder (`hg root`, `git config ...`, even
# with --exclude-editable), and a repository's .hg/hgrc loads extensions and
# hooks; `pip list --format=freeze` prints the same without them.
_PIP_COMMON = "verbose quiet no-color disable-pip-version-check isolated no-input"
_PIP_QUERIES: dict[str, Opts] = {
    "list": opts("levq", "", f"local user pre not-required exclude-editable include-editable editable {_PIP_COMMON}",
                 "format exclude path", data="format exclude"),
    "show": opts("fvq", "", f"files {_PIP_COMMON}"),
    "check": opts("vq", "", _PIP_COMMON),
}


def _h_pip(name: str, args: list[str]) -> J:
    sub = args[0] if args else ""
    if len(args) == 2 and args[1] in ("--help", "-h") and sub.isalpha():
        return allow(f"`{name} {sub} --help` only prints help")
    if sub == "help" and len(args) <= 2:
        return allow(f"`{name} help` only prints help")
    if sub == "freeze":
        return ask(f"`{name} freeze` runs version-control programs (hg, git) in each editable project's folder, "
                   "whose repository config may name programs; `pip list --format=freeze` lists the same")
    spec = _PIP_QUERIES.get(sub)
    if spec is not None and scan(args[1:], spec)[0] is None:
        return allow(f"`{name} {sub}` only reads what is installed")
    return _h_ask(name, args)


# unzip's modes that only read the archive (unzip(1)): -l / -v list it, -t
# tests it in memory, -z prints its comment, -c / -p extract to standard
# output; -q quietens and -C matches names case-insensitively. Without one of
# these modes unzip extracts; every other letter (-d, -o, -f, -u, the -T that
# sets the archive's time stamp, -M's pager, a `-` that negates, zipinfo's -Z)
# asks, wherever it stands (unzip reads options after the archive name too).
_UNZIP_READS = opts("lvtzcpqC")


def _h_unzip(name: str, args: list[str]) -> J:
    if is_version_query(args):
        return _h_ask(name, args)
    bad, operands = scan(args, _UNZIP_READS)
    flags = "".join(a[1:] for a in args if a.startswith("-") and not a.startswith("--"))
    # unzip 6 has no long options: a `--word` is read letter by letter
    long_words = any(a.startswith("--") for a in args)
    # no archive: unzip prints its usage (under xargs, the archives come from stdin)
    # a wildcard in the archive name is matched by unzip itself, past the
    # shell and so past the path checks (a planted `a.zip -> /elsewhere` matches)
    if operands and any(c in operands[0] for c in "*?["):
        return ask(f"`{name}` matches the archive name `{operands[0]}` itself: which files it opens is not checked")
    if bad is None and any(m in flags for m in "lvtzcp") and not long_words:
        return allow(f"`{name} -{flags}` only reads the archive")
    return _h_ask(name, args)


HANDLERS: dict[str, Handler] = dict.fromkeys(_ASK_REASONS, _h_ask)
HANDLERS.update({
    "pip": _h_pip, "pip3": _h_pip,
    "make": _h_make, "gmake": _h_make, "cargo": _h_cargo, "npm": _h_npm, "npx": _h_npm, "pnpm": _h_npm,
    "yarn": _h_npm, "go": _h_go, "tar": _h_tar, "zip": _h_zip, "unzip": _h_unzip, "rtk": _h_rtk,
})

# (command, verdict, substring of the reason or None), run by tests/shell/test_shell_rules.py
CASES: list[tuple[str, str, str | None]] = [
    # runner options that take a value do not hide the program they run
    ("uv run --with x rm -rf /", "reject", "outside the workspace"),
    ("uv run --with=x rm -rf /", "reject", "outside the workspace"),
    ("uv run -p 3.12 --with x sh -c id", "reject", "inline code"),
    ("conda run -n base rm -rf /", "reject", "outside the workspace"),
    ("hatch run -e default rm -rf /", "reject", "outside the workspace"),
    ("pipx run --spec x rm -rf /", "reject", "outside the workspace"),
    ("poetry run --directory sub rm -rf build", "ask+destructive", None),
    ("uv run --with pytest pytest -q", "ask", "project environment"),
    ("uv run -- rm -rf /", "reject", "outside the workspace"),
    ("pytest -q", "ask", "test suite"),
    ("make -j4 test", "ask", "build recipes"),
    ("make -E 'x: ; id'", "reject", "inline make code"),
    ("cargo --config 'target.x.runner=\"sh\"' run", "reject", "runner"),
    ("npx -c id", "reject", "inline shell"),
    ("go test -exec ./x ./...", "reject", "runs another program"),
    ("go version", "ask", "toolchain"),
    ("tar -I id -cf x.tar .", "reject", "runs another program"),
    ("tar -cf host:x.tar .", "reject", "remote host"),
    ("zip -TT 'sh -c id' a.zip f", "reject", "runs another program"),
    ("uv run rm -rf x", "ask+destructive", "deletes files"),
    ("rtk rm -rf .omc/locks/journal.lock", "ask+destructive", "deletes files"),
    ("rtk docker compose ps", "reject", None),
    ("rtk proxy docker ps", "reject", None),
    ("rtk proxy git status --short", "ask", None),
    ("rtk rg -n x src", "ask", None),
    ("rtk bash <<'EOF'\nrm -rf ~\nEOF", "ask", None),
    ("uv run rm -rf /", "reject", "outside the workspace"),
    # unzip's listing modes only read the archive; every other mode extracts
    ("unzip -l books/a.epub", "allow", "only reads the archive"),
    ("unzip -lq a.zip", "allow", "only reads the archive"),
    ("unzip -t a.zip", "allow", "only reads the archive"),
    ("unzip -v a.zip", "allow", "only reads the archive"),
    ("unzip -p a.zip doc/x.txt", "allow", "only reads the archive"),
    ("unzip a.zip", "ask", "extracts archives"),
    ("unzip -l a.zip -d out", "ask", "extracts archives"),  # options may follow the archive
    ("unzip -lo a.zip", "ask", "extracts archives"),
    ("unzip -T a.zip", "ask", "extracts archives"),  # sets the archive's time stamp
    ("unzip -Z -1 a.zip", "ask", "extracts archives"),  # zipinfo's own options are not modelled
    ("unzip -l- a.zip", "ask", "extracts archives"),  # a `-` negates options
    ("unzip -l a.zip --help", "ask", "extracts archives"),
    ("unzip -l /etc/a.zip", "ask", "outside the workspace"),
    ("unzip -l ../a.zip", "ask", "outside the workspace"),
    ("unzip -l '*.zip'", "ask", "matches the archive name"),  # unzip expands it, past the path checks
    ("unzip -p 'a?.zip' x.txt", "ask", "matches the archive name"),
    ("unzip -p a.zip 'doc/*.txt'", "allow", "only reads the archive"),  # members, inside the archive
    ("pip install requests", "ask", None),
    ("pip list", "ask", "only reads what is installed"),  # allowed where no toolchain file (facts)
    ("pip list --format=freeze --exclude-editable", "ask", "only reads"),
    ("pip3 show -f requests", "ask", "only reads"),
    ("pip freeze -l", "ask", "version-control"),  # runs git / hg in editable projects' folders
    ("pip freeze --exclude-editable", "ask", "version-control"),  # it still asks them first
    ("pip list --format=freeze", "ask", "only reads"),
    ("pip install --help", "ask", "only prints help"),
    ("pip list --outdated", "ask", "installs or changes"),  # asks the package index
    ("pip list --index-url http://x/simple", "ask", None),
    ("pip --python /tmp/py list", "ask", None),  # another interpreter
    ("pip list --path /etc", "ask", "outside the workspace"),
    ("pip freeze -r ../reqs.txt", "ask", "version-control"),
    ("pip install -r requirements.txt --help", "ask", None),
]
