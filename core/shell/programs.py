"""Program resolution: which rule judges a command; then its paths and toolchain. Pure.

Rule modules register their handlers in ``HANDLERS`` (core/shell/__init__.py
merges them); a handler takes (program name, arguments) and returns a ``J``."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from core.shell.facts import TOOLCHAIN_PROGRAMS, WorkspaceFacts, workspace_key
from core.shell.options import Opts, long_hit, prefix_matches
from core.shell.paths import (
    in_git_folder, path_words, physical_key, scratch, where, where_both, written_paths,
)
from core.shell.verdict import H_WRAPPER, J, ask, rej

Handler = Callable[[str, list[str]], J]
# program family -> rule; filled by core/shell/__init__.py from the rule modules
HANDLERS: dict[str, Handler] = {}
# program family -> its option model, where a rule module has one: which
# option values are data rather than paths (filled the same way)
OPTION_SPECS: dict[str, Opts] = {}
# program family -> which of its arguments are paths, for a program whose
# arguments the generic reading (core.shell.paths.path_words) gets wrong
PATH_FINDERS: dict[str, Callable[[list[str]], list[str]]] = {}

_STD_BIN_DIRS = frozenset(
    ["/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin", "/usr/local/sbin", "/opt/homebrew/bin"]
)
_ENV_BIN = re.compile(
    r"(?:\./)?(?:(?:\.venv|venv|\.env|env|\.tox/[A-Za-z0-9_.-]+)/bin|node_modules/\.bin)/[A-Za-z0-9_.+-]+"
)
_VERSION_SUFFIX = re.compile(r"[-.]?\d+(?:\.\d+)*[a-z]?$")
_VERSIONED = frozenset(
    "python pypy pypy3 perl ruby php lua luajit node nodejs pip tclsh wish gawk "
    "irb ipython bash zsh ksh mksh".split()
)


def family(lname: str) -> str:
    if lname in HANDLERS:
        return lname
    stripped = _VERSION_SUFFIX.sub("", lname)
    if stripped in _VERSIONED:
        return stripped
    for prefix in ("mkfs", "mke2fs", "fsck", "mount.", "umount."):
        if lname.startswith(prefix):
            return prefix.rstrip(".")
    return lname


def judge(
    argv: tuple[str, ...],
    cwd: str | None = None,
    facts: WorkspaceFacts | None = None,
    globs: tuple[bool, ...] = (),
) -> tuple[str | None, J, list[str]]:
    """Judge one simple command: (program basename, judgement, path words
    as workspace keys). ``cwd`` is the ``cd DIR &&`` folder, ``globs`` flags
    the words the executor expands as globs."""
    word = argv[0]
    if not word:
        return None, rej("the program name is empty", "start the command with the program to run"), []
    if not word.isascii():  # also a program find -exec or xargs runs: a look-alike `саt` is another program
        return None, rej(f"the program name {word!r} has non-ASCII characters (Unicode look-alikes such as "
                         "Cyrillic letters are not what they seem)", "write the program name in plain ASCII"), []
    capped = False
    args = list(argv[1:])
    if "/" in word:
        comps = word.split("/")
        base = comps[-1]
        if not base:
            return base or None, rej(f"`{word}` is a folder, not a program", "name the program to run"), []
        if ".." in comps:
            return base, rej(
                f"`..` in the program path `{word}` is not allowed",
                "call the program by its name (e.g. `ls`) or by a path inside the workspace without `..`",
            ), []
        if word.startswith("/"):
            capped = word[: -len(base) - 1] not in _STD_BIN_DIRS
        elif _ENV_BIN.fullmatch(word):
            capped = True  # a project environment's tool: judged by name, never auto-allowed
        else:
            fam = family(base.lower())
            if fam in HANDLERS:
                return base, rej(
                    f"`{word}` is a relative path to a program named like the system program `{base}`: "
                    "it may be a look-alike",
                    f"call the system program by name (`{base} ...`), or rename the workspace script",
                ), []
            if where(word, cwd, facts) != "inside":
                return base, rej(
                    f"the program `{word}` resolves outside the workspace (a symlink): it may be a look-alike",
                    f"call the program by its name (`{base} ...`)",
                ), []
            paths = [word, *path_words("", args, globs[1:])]
            return base, ask(f"`{word}` runs a script or program from the workspace"), _keys(paths, cwd)
    else:
        base = word
    lname = base.lower()
    fam = family(lname)
    handler = HANDLERS.get(fam)
    if handler is None:
        j = ask(f"`{base}` is not on the read-only list; it may change files or run code")
    else:
        j = handler(base, args)
    if j.verdict == "reject":
        return base, j, []
    finder = PATH_FINDERS.get(fam)
    if not args:
        paths = []
    elif finder is not None:
        paths = finder(args)
    else:
        paths = path_words(fam, args, globs[1:], OPTION_SPECS.get(fam))
    written = written_paths(fam, args, paths) if j.writes and paths else []
    outside = None
    leads_to = ""  # where a glob's match outside the workspace leads
    keys = [workspace_key(p, cwd) for p in paths]
    physical = [physical_key(p, cwd) for p in paths]  # each path's once: also in the keys returned
    for p, key, phys in zip(paths, keys, physical):
        w = where_both(key, phys, facts)
        if w == "endless":
            return base, rej(
                f"`{p}` is a device that never ends or is not a file (an endless or huge read)",
                "read a bounded, real file instead (e.g. `head -c 100 FILE`)",
            ), []
        if w == "outside":
            if p in written:
                return base, rej(
                    f"{j.reason}, but `{p}` is outside the workspace: writing, deleting or changing "
                    "permissions there is not allowed",
                    "only change files inside the workspace, with paths relative to its root",
                ), []
            outside = outside or p
        elif p in written and not j.destructive and in_git_folder(key, facts):
            # hooks and config in .git run programs: such a write asks in every mode
            j = J(j.verdict, f"{j.reason}; `{p}` is inside .git, where hooks and config run programs",
                  j.hint, True, j.writes)
    if facts is not None and facts.glob_outside:
        for w, is_glob in zip(args, globs[1:]):
            real = facts.glob_outside.get(workspace_key(w, cwd)) if is_glob else None
            if real is None:
                continue
            if j.writes:
                return base, rej(
                    f"{j.reason}, but the pattern `{w}` matches a link to `{real}`, outside the workspace",
                    "name the files inside the workspace one by one",
                ), []
            if outside is None:
                outside, leads_to = w, real
    if facts is not None and written and j.verdict == "ask" and not j.destructive and fam in _SCRATCH_WRITERS and all(
        scratch(k, facts) for k in _keys(written, cwd)
    ):
        # only the sandbox's scratch /tmp changes: nothing to approve
        j = J("allow", f"{j.reason} (only in the scratch /tmp)")
    if j.verdict == "allow":
        toolchain = _toolchain(lname, fam, facts)
        git_program = _git_program(argv, facts)
        if git_program is not None:
            j = ask(f"{j.reason}, but {git_program}")
        elif capped:
            j = ask(f"{j.reason}; but `{word}` is not in a standard system folder")
        elif outside is not None:
            via = f" (a match leads to `{leads_to}`)" if leads_to else ""
            j = ask(f"{j.reason}, but `{outside}`{via} is outside the workspace")
        elif (walk := _walk_leaves(argv, globs, cwd, facts)) is not None:
            j = ask(f"{j.reason}, but it follows symbolic links {walk}")
        elif toolchain is not None:
            j = ask(f"{j.reason}, but {toolchain}")
        elif (shadow := _module_shadow(argv, cwd, facts)) is not None:
            j = ask(f"{j.reason}, but {shadow}")
    return base, j, keys + [k for k in physical if k is not None]  # as _keys


_TOOLCHAIN_ANY = frozenset().union(*TOOLCHAIN_PROGRAMS.values())


# Writers that only create or copy into the paths they write (no program runs).
_SCRATCH_WRITERS = frozenset("mkdir touch cp tee".split())


def _keys(paths: list[str], cwd: str | None) -> list[str]:
    """The workspace keys of ``paths``, then their physical forms (``link/../x``),
    which the workspace facts resolve too."""
    keys = [workspace_key(p, cwd) for p in paths]
    return keys + [k for k in (physical_key(p, cwd) for p in paths) if k is not None]


def _toolchain(lname: str, fam: str, facts: WorkspaceFacts | None) -> str | None:
    """Why a version query of a toolchain program may run a repository-chosen program."""
    if lname not in _TOOLCHAIN_ANY and fam not in _TOOLCHAIN_ANY:
        return None
    if facts is None:
        return (
            f"the repository may select the `{lname}` toolchain (rust-toolchain, .tool-versions, "
            ".python-version ...) and the workspace was not checked"
        )
    file = facts.toolchain_file(lname) or facts.toolchain_file(fam)
    if file is None:
        return None
    return f"`{file}` in the workspace selects the toolchain, so `{lname}` may run a program it names"


# The interpreters judged by the python rule (rules/interpreters.py): each
# imports `-m MODULE` from the folder it runs in first.
_PYTHONS = frozenset(("python", "pypy", "pypy3"))


def runs_python_module(argv: tuple[str, ...] | list[str]) -> bool:
    """Whether ``argv`` is ``python -m MODULE ...``, which imports from the folder it runs in first."""
    return len(argv) > 2 and argv[1] == "-m" and family(argv[0].rsplit("/", 1)[-1].lower()) in _PYTHONS


def _module_shadow(argv: tuple[str, ...], cwd: str | None, facts: WorkspaceFacts | None) -> str | None:
    """Why ``python -m MODULE`` may import a workspace file in place of a module, or None."""
    if not runs_python_module(argv):
        return None
    if facts is None:
        return "the folder it runs in, where Python looks for modules first, was not checked"
    if facts.module_shadows is None:
        return None  # not looked for (the first pass): the second pass has them
    found = facts.module_shadows.get(cwd or "")
    if found is None:
        return "the folder it runs in, where Python looks for modules first, was not checked"
    return found or None


def _git_program(argv: tuple[str, ...], facts: WorkspaceFacts | None) -> str | None:
    """Why a git command (also one that find -exec / xargs runs) may start a
    program the repository's config names."""
    if facts is None or not facts.git_programs:
        return None
    if not any(w == "git" or w.endswith("/git") for w in argv):
        return None
    named = facts.git_programs[0]
    more = f" (and {len(facts.git_programs) - 1} more)" if len(facts.git_programs) > 1 else ""
    return f"the repository's git config names a program (`{named}`{more}), which git may run"


def _program_starts(rest: list[str]) -> list[int]:
    """Where the runner's program may start in ``rest``: after its options,
    each of which may or may not take the next word as its value (``uv run
    --with x CMD``, ``conda run -n base CMD``) - every reading, first the one
    where options take no value."""
    starts: list[int] = []
    pending = [0]
    seen: set[int] = set()
    while pending:
        i = pending.pop(0)
        while i < len(rest) and i not in seen:
            seen.add(i)
            a = rest[i]
            if a == "--":
                i += 1
                break
            if a == "-" or not a.startswith("-"):
                break
            if "=" not in a and i + 1 < len(rest) and rest[i + 1] != "--":
                pending.append(i + 2)  # the next word is this option's value
            i += 1
        if i < len(rest) and i not in starts:
            starts.append(i)
    return starts


def judge_inner(outer: str, rest: list[str]) -> J:
    """A runner (``uv run``, ``conda run`` ...) is as strict as the strictest
    command it may be running: without each runner's option table, every
    reading of its options is judged (fail closed)."""
    starts = _program_starts(rest)
    if not starts:
        return ask(f"`{outer}` runs a program")
    worst: tuple[list[str], J] | None = None
    for start in starts:
        inner = rest[start:]
        _, j, _ = judge(tuple(inner))
        if j.verdict == "reject":
            return rej(f"`{outer}` runs `{inner[0]}`, which is not allowed: {j.reason}", j.hint or H_WRAPPER)
        if worst is None or j.destructive > worst[1].destructive:
            worst = (inner, j)
    assert worst is not None
    inner, j = worst
    return J("ask", f"`{outer}` runs `{inner[0]}` in a project environment: {j.reason}", None, j.destructive)


# --- walks that follow symbolic links --------------------------------------------------
# A link named on the command line is a path word, judged where it leads; a
# link a program meets while it walks a folder is not, so a program that
# follows those reads wherever they lead. Per program: the options that turn
# following on and off (the last one given wins, as each program keeps one
# setting), and whether it follows without any. Programs not here never
# follow links met on the way (grep -r, rg, find, du, ls -R and tree skip or
# list them; git treats them as blobs).


@dataclass(frozen=True)
class _Follows:
    on: frozenset[str]  # short letters and long names
    off: frozenset[str] = frozenset()
    default: bool = False


def _follows(on: str, off: str = "", default: bool = False) -> _Follows:
    return _Follows(frozenset(on.split()), frozenset(off.split()), default)


_FOLLOWS: dict[str, _Follows] = {
    # -R is -r that also follows links; a later -r keeps it (one fts setting)
    "grep": _follows("R dereference-recursive"),
    "rg": _follows("L follow", "no-follow"),
    # -H / -D only dereference the command line
    "du": _follows("L dereference", "P no-dereference H D dereference-args"),
    # -L stats (and with -R lists) what each entry leads to
    "ls": _follows("L dereference", "H dereference-command-line dereference-command-line-symlink-to-dir"),
    "tree": _follows("l"),
    # compares the files behind links in the folders it is given (and, with -r, below)
    "diff": _follows("", "no-dereference", default=True),
}
for _name in ("egrep", "fgrep"):
    _FOLLOWS[_name] = _FOLLOWS["grep"]


def _options_in_order(args: list[str], spec: Opts) -> list[tuple[str, ...]]:
    """The options of ``args`` as given (letters, full long names), values
    skipped; a long prefix that fits several names gives them all."""
    out: list[tuple[str, ...]] = []
    i = 0
    while i < len(args):
        a = args[i]
        i += 1
        if a == "--":
            break
        if a.startswith("--"):
            name, eq, _ = a[2:].partition("=")
            names = prefix_matches(name, tuple(spec.long | spec.long_arg))
            out.append(names)
            if not eq and any(n in spec.long_arg for n in names):
                i += 1
        elif len(a) > 1 and a[0] == "-" and not (spec.numeric and a[1:].isdigit()):
            for k, c in enumerate(a[1:], 2):
                out.append((c,))
                if c in spec.short_arg:
                    if k == len(a):  # the value is the next word
                        i += 1
                    break
                if c in spec.short_opt:
                    break
    return out


def _find_follows(args: list[str]) -> bool:
    """find's -L (before its roots; a later -H / -P undoes it) or -follow."""
    follow = False
    for a in args:
        if a in ("-L", "-H", "-P"):
            follow = a == "-L"
        elif not a.startswith("-") or a == "-":
            break
    return follow or "-follow" in args


# xargs options that take the next word as their value
XARGS_VALUED = frozenset("-n -L -s -P -d -E -a --max-args --max-lines --max-procs --delimiter --max-chars --eof "
                         "--arg-file".split())


def xargs_command(args: list[str]) -> tuple[int, str | None]:
    """Where xargs's command starts in ``args``, and the file ``-a`` reads the words from."""
    i, from_file = 0, None
    while i < len(args) and args[i].startswith("-") and args[i] != "-":
        a = args[i]
        i += 1
        if a == "--":
            break
        nxt = args[i] if i < len(args) else ""
        if long_hit(a, ("arg-file",)):
            from_file = a.partition("=")[2] if "=" in a else nxt
        elif a.startswith("-a"):
            from_file = a[2:] or nxt
        if a in ("-I", "-a") or a in XARGS_VALUED or (long_hit(a, ("arg-file",)) and "=" not in a):
            i += 1
    return i, from_file


def link_roots(argv: tuple[str, ...] | list[str], globs: tuple[bool, ...] = ()) -> tuple[str, ...]:
    """The folders ``argv`` walks following the symbolic links it meets there
    (its path words as written, ``.`` when it names none), or ``()`` when it
    follows none. ``globs`` flags the glob words of ``argv``. ``find -exec``
    and ``xargs`` follow links when the command they run does."""
    if not argv:
        return ()
    fam = family(argv[0].rsplit("/", 1)[-1].lower())
    args = list(argv[1:])
    flags = globs[1:] if globs else ()
    if fam == "xargs":
        start = 1 + xargs_command(args)[0]
        # the names come on stdin (from a lister: anywhere in the workspace)
        return (".",) if link_roots(argv[start:]) else ()
    if fam == "find":
        roots = _find_roots(args)
        walked = list(roots) if _find_follows(args) else []
        for inner in _find_execs(args):
            for root in roots:
                if link_roots([w.replace("{}", root) for w in inner]):  # as find_exec judges them
                    walked.append(root)
        return tuple(dict.fromkeys(walked))
    rule = _FOLLOWS.get(fam)
    spec = OPTION_SPECS.get(fam)
    if rule is None or spec is None:
        return ()
    follow = rule.default
    for names in _options_in_order(args, spec):
        if rule.on.intersection(names):  # an ambiguous prefix that may turn it on: on (fail closed)
            follow = True
        elif rule.off.intersection(names):
            follow = False
    if not follow:
        return ()
    return tuple(dict.fromkeys(path_words(fam, args, flags, spec))) or (".",)


def _find_roots(args: list[str]) -> list[str]:
    """find's starting points: the words after -H / -L / -P and before the first predicate."""
    roots = []
    for a in args:
        if a in ("-L", "-H", "-P") and not roots:
            continue
        if a.startswith("-") or a in ("(", "!", ","):
            break
        roots.append(a)
    return roots or ["."]


def _find_execs(args: list[str]) -> list[list[str]]:
    """The commands of find's -exec / -execdir (``{}`` as written)."""
    out, i = [], 0
    while i < len(args):
        if args[i] in ("-exec", "-execdir"):
            end = next((k for k in range(i + 1, len(args)) if args[k] in (";", "+")), len(args))
            out.append(args[i + 1:end])
            i = end
        i += 1
    return out


# The same walk without following links, named in the reason so that the
# model can send that instead.
_NOT_FOLLOWING = {"grep": "`grep -r`", "egrep": "`grep -r`", "fgrep": "`grep -r`", "rg": "`rg` without -L",
                  "find": "`find` without -L / -follow"}


def _walk_leaves(argv: tuple[str, ...], globs: tuple[bool, ...], cwd: str | None,
                 facts: WorkspaceFacts | None) -> str | None:
    """Where a walk of ``argv`` that follows links leaves the workspace, by the
    facts (a link under one of its folders that leads out), or None."""
    if facts is None or not facts.links_out:
        return None
    for root in link_roots(argv, globs):
        note = facts.links_out.get(workspace_key(root, cwd))
        if note is not None:
            instead = _NOT_FOLLOWING.get(family(argv[0].rsplit("/", 1)[-1].lower()), "")
            return f"while it walks `{root}`, and {note}" + (f" ({instead} does not follow them)" if instead else "")
    return None


# Which folders a command walks following links (roots as written, () none),
# run by tests/shell/test_shell_rules.py.
LINK_CASES: list[tuple[str, tuple[str, ...]]] = [
    ("grep -R secret .", (".",)),
    ("grep -rn secret .", ()),  # -r skips links met on the way
    ("grep -Rn secret", (".",)),  # no folder named: the working folder
    ("grep -rnR -e x src docs", ("src", "docs")),
    ("grep -R -r x src", ("src",)),  # a later -r keeps following
    ("grep --dereference-recursive x docs", ("docs",)),
    ("grep -d recurse x docs", ()),
    ("grep -e -R x", ()),  # -R is -e's value (the pattern)
    ("grep -f pats -r x", ()),
    ("egrep -R x src", ("src",)),
    ("rg -L pattern", (".",)),
    ("rg --follow -n TODO src", ("src",)),
    ("rg -uuL TODO", (".",)),
    ("rg -L --no-follow TODO", ()),
    ("rg -e -L TODO", ()),
    ("rg --files -L", (".",)),
    ("rg TODO src", ()),
    ("find -L . -name '*.conf'", (".",)),
    ("find -L src docs -type f", ("src", "docs")),
    ("find . -follow -name x", (".",)),
    ("find -L -P . -name x", ()),
    ("find -H . -name x", ()),
    ("find . -name x -exec cat {} +", ()),
    ("find -L . -name '*.conf' -exec cat {} +", (".",)),
    ("find src -maxdepth 1 -exec grep -R x {} +", ("src",)),
    ("xargs -0 grep -R x", (".",)),
    ("xargs -n 1 grep -r x", ()),
    ("du -L", (".",)),
    ("du -shL src", ("src",)),
    ("du -L -P src", ()),
    ("du -L --dereference-args src", ()),
    ("du --dereference src", ("src",)),
    ("du -sh src", ()),
    ("ls -RL", (".",)),
    ("ls -lL docs", ("docs",)),
    ("ls -RL -H docs", ()),
    ("ls -R docs", ()),
    ("ls -I -L docs", ()),  # -L is -I's value (a pattern)
    ("tree -l", (".",)),
    ("tree -L 2 docs", ()),  # -L is a depth
    ("diff -r a b", ("a", "b")),
    ("diff a.txt b.txt", ("a.txt", "b.txt")),
    ("diff -r --no-dereference a b", ()),
    ("cat docs/x", ()),
    ("git grep x", ()),
]

# (command, verdict, substring of the reason or None), run by tests/shell/test_shell_rules.py
CASES: list[tuple[str, str, str | None]] = [
    # paths are judged after normalising
    ("head -n 3 /./etc/passwd", "ask", "outside the workspace"),
    ("cat //etc/passwd", "ask", "outside the workspace"),
    ("cat /srv2/data.txt", "ask", "outside the workspace"),
    ("grep -f/etc/passwd x", "ask", "outside the workspace"),
    ("grep --file=/etc/passwd x", "ask", "outside the workspace"),
    ("grep -rn -e /api src", "allow", None),  # -e's value is the pattern
    ("grep -rn -f /api src", "ask", "outside the workspace"),  # -f's value is a file of patterns
    # a file an option names is a path, never the pattern of a pattern-first program
    ("grep --exclude-from /etc/shadow pattern src", "ask", "outside the workspace"),
    ("rg --ignore-file /etc/shadow foo", "ask", "outside the workspace"),
    ("grep -A 3 /etc/passwd src", "allow", None),  # here /etc/passwd is the pattern
    ("cut -d / -f 1 data.txt", "allow", None),  # the delimiter `/` is not the root folder
    ("cut -d / -f 1 /etc/passwd", "ask", "outside the workspace"),
    ("sort -t / -k 2 data.txt", "allow", None),
    ("sort -T /var/tmp data.txt", "ask", "outside the workspace"),  # a folder sort writes to
    ("od -w /etc/passwd", "ask", "outside the workspace"),  # -w takes no separate value
    ("date -d 2024/01/01 +%s", "allow", None),
    ("date -r /etc/passwd", "ask", "outside the workspace"),
    ("tr / _", "allow", None),
    ("column -t -s / data.txt", "allow", None),
    ("cat src/../../x", "ask", "outside the workspace"),
    ("cat src/../README.md", "allow", None),
    ("grep -rn '/api/v1' src", "allow", None),
    ("find / -name x", "ask", "outside the workspace"),
    # a glob in the root folder lists the root folder, not the workspace
    ("cat /e??/passwd", "ask", "outside the workspace"),
    ("ls -d /*", "ask", "outside the workspace"),
    # a pattern with `..` is passed on as written (the executor does not expand it): judged as that path
    ("cat ./*/../../etc/passwd", "ask", "outside the workspace"),
    ("cat src/*/../../../x", "ask", "outside the workspace"),
    ("find . -name '/etc'", "allow", None),
    ("echo /etc/passwd", "allow", None),
    ("ls /dev/null", "allow", None),
    # endless or not-a-file devices
    ("cat /dev/zero", "reject", "never ends"),
    ("cat /./dev/zero", "reject", "never ends"),
    ("head -c 50G /dev/zero", "reject", "never ends"),
    ("head -c 100 /dev/urandom", "reject", "never ends"),
    ("wc -c /dev/tty", "reject", "never ends"),
    # writes outside the workspace reject
    ("cp /dev/null /etc/passwd", "reject", "outside the workspace"),
    ("git log --output=/etc/passwd", "reject", "outside the workspace"),
    ("sort -o/etc/x data.txt", "reject", "outside the workspace"),
    ("mv /etc/hosts x", "reject", "outside the workspace"),
    # the sandbox's scratch folder (was rejected); `allow` once the workspace
    # facts show it is not the workspace (tests/shell/test_command_facts.py)
    ("touch /tmp/x", "ask", None),
    ("touch /tmp/../etc/x", "reject", "outside the workspace"),
    ("mv x /tmp/y", "ask", None),
    ("mkdir -p ../sibling", "reject", "outside the workspace"),
    ("tee /proc/sysrq-trigger", "reject", "outside the workspace"),
    ("cp /etc/hosts hosts.txt", "ask", None),
    ("cp a.txt b.txt", "ask", None),
    # program resolution
    ("./cat README.md", "reject", "look-alike"),
    ("/opt/tools/ls -l", "ask", "standard system folder"),
    (".venv/bin/pytest -q", "ask", None),
    ("./run_tests.sh -v", "ask", "from the workspace"),
    # globs the executor expands as bash does, and those it would expand otherwise
    ("ls -d [.]* [a-c]* []]*", "allow", None),
    ("ls -d [^a]*", "reject", "bracket expression"),
    ("ls -d sub/[[:upper:]]*", "reject", "bracket expression"),
    ("cat *[[=a=]]*", "reject", "bracket expression"),
    # an unquoted empty value: bash drops the word, the plan would keep it
    ("printf '%s|' $GIT_ASKPASS x", "reject", "parameter expansion"),
    ("printf '%s|' \"$GIT_ASKPASS\" x", "allow", None),
]
