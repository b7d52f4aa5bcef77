"""Programs that open files whose names they read (from stdin or a list file),
and the pipeline parts whose output names only workspace files. Pure.

``xargs cat``, ``sort --files0-from=-``, ``file -f -`` and ``sha256sum -c``
open the files named on stdin (or in a list file): the words of a command
line were judged, those names were not. They name workspace files when stdin
is the output of a lister - ``find`` (its paths start with its judged roots),
``git ls-files``, ``grep -l`` - seen through filters that only pass whole
lines on (``head``, ``sort``, ``grep -v PATTERN``); ``echo /etc/passwd``,
``cat list.txt``, ``< list.txt`` or ``grep -o`` (a part of a line:
``./a/etc/passwd`` -> ``/etc/passwd``) may name anything.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

from core.shell.facts import SPLIT_UNKNOWN, WorkspaceFacts, workspace_key
from core.shell.options import long_hit, scan, short_hit
from core.shell.paths import path_words
from core.shell.programs import OPTION_SPECS, _find_follows, _find_roots, family, xargs_command
from core.shell.verdict import J, ask

# Options whose value is a file (`-`: stdin) that holds the names of the files to open.
_NAMES_FROM_LONG = {"sort": ("files0-from",), "wc": ("files0-from",), "du": ("files0-from",), "file": ("files-from",)}
_NAMES_FROM_SHORT = {"file": ("f", "mefFP")}  # letter, and the value-taking letters before which it is a value
_CHECKSUMS = frozenset("md5sum sha1sum sha224sum sha256sum sha384sum sha512sum b2sum".split())
# What xargs may run without opening the words it is given as files.
_PRINTERS = frozenset("echo printf basename dirname true false".split())
_GREPS = frozenset("grep egrep fgrep".split())
# Filters whose output lines are whole input lines (when they read only stdin),
# unless they cut them: `tail -c 12` of `./a/etc/passwd` is `/etc/passwd`.
_WHOLE_LINES = frozenset("head tail sort uniq".split()) | _GREPS
_CUTS = {"head": ("c", "n", ("bytes",)), "tail": ("c", "ns", ("bytes",)), "grep": ("o", "ABCDdefm", ("only-matching",))}
_FIND_PRINTS = frozenset("-printf -fprintf -fprint -fprint0 -ls -fls".split())
# Every family names_from may answer for.
_READS_NAMES = frozenset({"xargs", "find", *_CHECKSUMS, *_NAMES_FROM_LONG, *_NAMES_FROM_SHORT})


def _fam(argv: tuple[str, ...] | list[str]) -> str:
    return family(argv[0].rsplit("/", 1)[-1].lower()) if argv else ""


def names_from(argv: tuple[str, ...] | list[str]) -> str | None:
    """The file the program reads the names of the files it opens from (``-``:
    stdin), or None when it opens only the files its arguments name."""
    return family_names_from(_fam(argv), list(argv[1:]))


def family_names_from(fam: str, args: list[str]) -> str | None:
    """``names_from`` for a program of family ``fam`` given ``args``."""
    if fam not in _READS_NAMES:
        return None  # most commands: asked of every part, so answered at once
    if fam == "xargs":
        start, from_file = xargs_command(args)
        inner = args[start:]
        return None if not inner or _fam(inner) in _PRINTERS else (from_file or "-")
    if fam in _CHECKSUMS and any(short_hit(a, "c") or long_hit(a, ("check",)) for a in args):
        lists = [p for p in scan(args, OPTION_SPECS[fam])[1] if p != "-"]  # checksum lists, each naming files
        return lists[0] if lists else "-"
    if fam == "find" and "-files0-from" in args:  # its starting points
        k = args.index("-files0-from")
        return args[k + 1] if k + 1 < len(args) else ""
    longs = _NAMES_FROM_LONG.get(fam, ())
    letter, stop = _NAMES_FROM_SHORT.get(fam, ("", ""))
    for k, a in enumerate(args):
        if a == "--":
            break
        nxt = args[k + 1] if k + 1 < len(args) else ""
        if longs and long_hit(a, longs):
            return a.partition("=")[2] if "=" in a else nxt
        if letter and short_hit(a, letter, stop):
            return a[a.index(letter) + 1:] or nxt
    return None


def lists_paths(parts: list[tuple[str, ...]]) -> bool:
    """Whether the last of ``parts`` (a pipeline's earlier commands) prints only
    names of workspace files, looking through filters that pass whole lines."""
    for argv in reversed(parts):
        fam, args = _fam(argv), list(argv[1:])
        if fam in _GREPS and _lists_matches(args, "lL", "ABCDdefm"):
            return True
        if fam in _WHOLE_LINES and not path_words(fam, args, spec=OPTION_SPECS.get(fam)):
            letter, stop, longs = _CUTS.get("grep" if fam in _GREPS else fam, ("", "", ()))
            if any((letter and short_hit(a, letter, stop)) or long_hit(a, longs) for a in args):
                return False
            continue  # only stdin's lines, whole: look at the part before it
        return _lister(fam, args)
    return False


def _lists_matches(args: list[str], letters: str, stop: str) -> bool:
    return any(short_hit(a, letters, stop) or long_hit(a, ("files-with-matches", "files-without-match"))
               for a in args)


def _lister(fam: str, args: list[str]) -> bool:
    if fam == "find":
        if names_from(("find", *args)) is not None or any(a in _FIND_PRINTS for a in args):
            return False
        execs = [k for k, a in enumerate(args) if a in ("-exec", "-execdir")]
        for k in execs:  # find prints nothing of its own then: the command's output is what is read
            end = next((e for e in range(k + 1, len(args)) if args[e] in (";", "+")), len(args))
            if not lists_paths([tuple(args[k + 1:end])]):
                return False
        return True
    if fam == "rg":
        return any(long_hit(a, ("files",)) for a in args) or _lists_matches(args, "l", "ABCegtTfjmMrEd")
    if fam == "xargs":
        start, _ = xargs_command(args)
        return bool(args[start:]) and lists_paths([tuple(args[start:])])
    if fam == "git":
        sub = next((a for a in args if not a.startswith("-")), "")
        rest = args[args.index(sub) + 1:] if sub else []
        if sub == "ls-files":
            return not any(a.startswith("--format") for a in rest)
        if sub == "diff":  # not log / show: they print commit messages too
            return any(a in ("--name-only", "--name-status") for a in rest)
        if sub == "grep":
            return any(a in ("-l", "-L", "--name-only", "--files-with-matches", "--files-without-match") for a in rest)
    return False


# What xargs cuts its input at, unless -0 / --null or -d says otherwise: blanks
# and newlines, with quotes and backslashes taken as quoting. A listed
# `./x /etc/passwd /y.py` (folders `x ` and `passwd `) becomes three names.
XARGS_SPLITS = frozenset(" \t\n'\"\\")
_XARGS_VALUE_LETTERS = "nLsPdEaIei"  # short options whose value follows (attached or as the next word)


def split_at(argv: tuple[str, ...] | list[str]) -> frozenset[str]:
    """The characters at which the program ``argv``, reading file names on
    stdin, cuts one name into several (or rewrites it)."""
    fam, args = _fam(argv), list(argv[1:])
    if fam != "xargs":
        # one name per line (`file -f -`, `sha256sum -c`); --files0-from reads NUL-ended names
        return frozenset() if any(long_hit(a, ("files0-from",)) for a in args) else frozenset("\n")
    start, _ = xargs_command(args)
    options = args[:start]
    if any(a == "--null" or short_hit(a, "0", _XARGS_VALUE_LETTERS) for a in options):
        return frozenset()
    for k, a in enumerate(options):
        if a in ("-d", "--delimiter"):
            value = options[k + 1] if k + 1 < len(options) else ""
        elif a.startswith("--delimiter="):
            value = a.partition("=")[2]
        elif short_hit(a, "d", _XARGS_VALUE_LETTERS):
            value = a[a.index("d") + 1:] or (options[k + 1] if k + 1 < len(options) else "")
        else:
            continue
        return frozenset("\n") if value in ("\\n", "\n") else XARGS_SPLITS | frozenset(value[:1])
    return XARGS_SPLITS


def splitting_name(argv: tuple[str, ...] | list[str], facts: WorkspaceFacts | None) -> str | None:
    """Why the names ``argv`` reads may not be the names listed: a workspace
    name holding a character it cuts at (as the facts found it), a delimiter
    no fact is gathered for, or a workspace too big to check. None: none."""
    chars = split_at(argv)
    odd = sorted(chars - XARGS_SPLITS)
    if odd:
        return f"it cuts them at `{odd[0]}`, which no name is checked for"
    if facts is None or not facts.split_names:
        return None
    if SPLIT_UNKNOWN in facts.split_names:
        return facts.split_names[SPLIT_UNKNOWN]
    found = next((c for c in sorted(chars) if c in facts.split_names), None)
    return None if found is None else f"the workspace name `{facts.split_names[found]}` holds {_CHAR_NAMES[found]}"


_CHAR_NAMES = {" ": "a blank", "\t": "a tab", "\n": "a newline", "'": "a quote", '"': "a quote", "\\": "a backslash"}


def names_cut(j: J, program: str, why: str) -> J:
    """``j`` (an allow) made an ask: ``program`` would cut a listed name into others."""
    return ask(f"{j.reason}; but `{program}` cuts the names it reads into other names, and {why}: the parts "
               "are file names nobody judged (`-print0 | xargs -0` keeps every name whole)")


def names_unjudged(j: J, source: str) -> J:
    """``j`` (an allow) made an ask: the program opens files named by ``source``."""
    return ask(f"{j.reason}; but the file names it reads come from {source}, which may name files outside the workspace")


# --- links a lister hands on by name ----------------------------------------------------
# A program follows a symbolic link named on its command line: `cat ./p` with
# `p -> /etc/hostname` prints the outside file. A lister that meets a link
# while it walks lists its name (find without -L, unless a `-type` without
# `l` rules links out; git ls-files / diff / grep list tracked links), so the
# program that opens the listed names (`xargs cat`, `find -exec cat {} +`)
# reads where the link leads. grep -r and rg skip links met on the way (grep
# -R, rg -L and find -L are walks that follow links: programs.link_roots).
# A listing is (the folders listed, as written; find's name tests a link must
# pass, each (test, pattern)); the workspace facts hold the links out under
# each folder (WorkspaceFacts.listed_links).

Listing = tuple[tuple[str, ...], tuple[tuple[str, str], ...]]

_NAME_TESTS = frozenset("-name -iname -path -ipath -wholename -iwholename".split())
# find's tests and options that take one value, and those that take none; any
# other word makes the expression unknown (then any link may pass).
_FIND_VALUED = _NAME_TESTS | frozenset(
    "-regex -iregex -type -xtype -maxdepth -mindepth -newer -anewer -cnewer -size -mtime -atime -ctime -mmin "
    "-amin -cmin -perm -user -group -uid -gid -links -inum -samefile -fstype -used -context -regextype -lname "
    "-ilname".split())
_FIND_BARE = frozenset("-print -print0 -depth -d -xdev -mount -noleaf -ignore_readdir_race -noignore_readdir_race "
                       "-daystart -prune -quit -true -false -empty -readable -writable -executable -nouser -nogroup "
                       "-follow -nowarn -warn".split())
_FIND_RUNS = frozenset(["-exec", "-execdir", "-ok", "-okdir"])
_GLOB_CHARS = frozenset("*?[")


def _find_filters(expr: list[str]) -> tuple[tuple[str, str], ...] | None:
    """The name tests a link must pass for the find expression ``expr`` (words
    up to where the names are handed on) to be true of it; None when a
    ``-type`` without ``l`` keeps links out. Only tests every branch has count:
    a top-level ``-o`` / ``,`` or an unknown word gives ``()`` (any link may
    pass), and a negated or parenthesised test is left out (a conjunction
    without one of its terms passes more, never less)."""
    depth, negated, tests, i = 0, False, [], 0
    while i < len(expr):
        a = expr[i]
        i += 1
        if a in ("-o", "-or", ","):
            if depth == 0:
                return ()
            continue
        if a in ("(", ")"):
            depth += 1 if a == "(" else -1
            negated = negated and depth > 0
            continue
        if a in ("!", "-not"):
            negated = negated or depth == 0
            continue
        if a in _FIND_RUNS:  # its command's success filters what follows: left out
            i = next((k + 1 for k in range(i, len(expr)) if expr[k] in (";", "+")), len(expr))
            continue
        if a in _FIND_VALUED or (a.startswith("-newer") and len(a) == 8):
            value = expr[i] if i < len(expr) else ""
            i += 1
        elif a in _FIND_BARE:
            value = ""
        else:
            return ()
        if depth or negated:
            negated = False
            continue
        if a == "-type" and "l" not in value.split(","):
            return None
        if a in _NAME_TESTS:
            tests.append((a, value))
    return tuple(tests)


def _find_listing(args: list[str], stop: int | None) -> Listing | None:
    """What find hands on at ``args[stop]`` (its -exec; None: what it prints)."""
    roots = _find_roots(args)
    k = 0
    while k < len(args) and args[k] in ("-H", "-L", "-P"):
        k += 1
    while k < len(args) and not (args[k].startswith("-") or args[k] in ("(", "!", ",")):
        k += 1  # a root
    expr = args[k:]
    if stop is None:  # it prints at its first top-level -print / -print0, or at the end
        stop = next((e for e, a in enumerate(expr) if a in ("-print", "-print0")), len(expr))
    else:
        stop -= len(args) - len(expr)
    if _find_follows(args):
        return tuple(roots), ()  # -type f matches a link to a file then
    tests = _find_filters(expr[:stop])
    return None if tests is None else (tuple(roots), tests)


def listing(parts: list[tuple[str, ...]]) -> Listing | None:
    """Which links the lister at the end of ``parts`` (through filters that
    pass whole lines, as in ``lists_paths``) may hand on by name, or None."""
    for argv in reversed(parts):
        fam, args = _fam(argv), list(argv[1:])
        if fam in _WHOLE_LINES and not (fam in _GREPS and _lists_matches(args, "lL", "ABCDdefm")):
            continue
        if fam == "find":
            return _find_listing(args, None)
        if fam == "git":  # tracked links, from the working folder down
            return (".",), ()
        return None  # grep -l / rg: links met on the way are skipped; xargs: its input was judged
    return None


def exec_listings(argv: tuple[str, ...] | list[str]) -> list[Listing]:
    """For a find whose -exec command opens the found names (``{}``), the links it may hand it."""
    if _fam(argv) != "find" or ("-exec" not in argv and "-execdir" not in argv):
        return []
    args, out = list(argv[1:]), []
    for k, a in enumerate(args):
        if a in ("-exec", "-execdir"):
            end = next((e for e in range(k + 1, len(args)) if args[e] in (";", "+")), len(args))
            inner = args[k + 1:end]
            if inner and _fam(inner) not in _PRINTERS and any("{}" in w for w in inner[1:]):
                got = _find_listing(args, k)
                if got is not None:
                    out.append(got)
    return out


def pipeline_listings(parts: list[tuple[str, ...]]) -> list[Listing]:
    """Every listing a program of the pipeline ``parts`` opens by name."""
    out = [got for argv in parts for got in exec_listings(argv)]
    for k in range(1, len(parts)):
        if names_from(parts[k]) == "-" and (got := listing(list(parts[:k]))) is not None:
            out.append(got)
    return out


def _passes(tests: tuple[tuple[str, str], ...], root: str, rel: str) -> bool:
    """Whether the link at ``rel`` under ``root`` passes find's name tests (a
    pattern with a class or an escape, which fnmatch reads otherwise: passes)."""
    path = f"{root.rstrip('/') or '/'}/{rel}"  # as find prints it
    for test, pattern in tests:
        if "[" in pattern or "\\" in pattern or (test not in ("-name", "-iname") and _GLOB_CHARS.intersection(root)):
            continue  # (a glob root: the path find prints starts with a match, not the pattern)
        text = rel.rsplit("/", 1)[-1] if test in ("-name", "-iname") else path
        if test in ("-iname", "-ipath", "-iwholename"):
            text, pattern = text.lower(), pattern.lower()
        if not fnmatchcase(text, pattern):
            return False
    return True


def listed_link_out(got: Listing, facts: WorkspaceFacts | None, cwd: str | None) -> str | None:
    """A link out of the workspace the listing ``got`` hands on, by the facts, or None."""
    if facts is None or facts.listed_links is None:
        return None  # not looked for (the first pass): the second pass has them
    roots, tests = got
    for root in roots:
        links = facts.listed_links.get(workspace_key(root, cwd))
        if links is None:
            return f"`{root}` was not checked for links"
        for rel, target in links:
            if not rel:
                return f"`{root}` {target}"
            if _passes(tests, root, rel):
                shown = f"{root.rstrip('/')}/{rel}"
                return f"it lists `{shown}`, a symbolic link to `{target}`, outside the workspace"
    return None


def names_linked(j: J, argv: tuple[str, ...], why: str) -> J:
    """``j`` (an allow) made an ask: ``argv`` opens a listed link that leads out."""
    program = argv[0]
    if _fam(argv) == "xargs" and (start := xargs_command(list(argv[1:]))[0]) < len(argv) - 1:
        program = f"{program} {argv[1 + start]}"
    return ask(f"{j.reason}; but {why}, and `{program}` opens what a link it is given leads to "
               "(`find ... -type f` lists no links, nor do `grep -rl` and `rg --files`)")


def exec_linked(j: J, argv: tuple[str, ...], facts: WorkspaceFacts, cwd: str | None) -> J:
    """``j`` (an allow of ``argv``), or an ask when its find -exec command opens a listed link that leads out."""
    for got in exec_listings(argv):
        why = listed_link_out(got, facts, cwd)
        if why is not None:
            return names_linked(j, ("find -exec",), why)
    return j


# (pipeline, the listings its programs open by name), run by tests/shell/test_shell_rules.py
LISTING_CASES: list[tuple[str, list[Listing]]] = [
    ("find . -name '*.py' | xargs cat", [((".",), (("-name", "*.py"),))]),
    ("find src docs | xargs wc -l", [(("src", "docs"), ())]),
    ("find . -type f -name '*.py' | xargs cat", []),
    ("find . -name '*.py' -type f,d | xargs cat", []),
    ("find . -type l | xargs cat", [((".",), ())]),
    ("find . -type f,l | xargs cat", [((".",), ())]),
    ("find . ! -type f | xargs cat", [((".",), ())]),  # negated: left out
    ("find . -not -path './.venv/*' -name '*.py' | xargs cat", [((".",), (("-name", "*.py"),))]),
    ("find . -name a -o -type f | xargs cat", [((".",), ())]),  # either branch
    ("find . \\( -name a -o -name b \\) -type f | xargs cat", []),
    ("find . -path ./x -prune -o -type f -print | xargs cat", [((".",), ())]),
    ("find . -print -type f | xargs cat", [((".",), ())]),  # it prints before the test
    ("find -L . -type f | xargs cat", [((".",), ())]),  # -type f matches a link to a file
    ("find . -newermt 2024-01-01 -name x | xargs cat", [((".",), (("-name", "x"),))]),
    ("find . -weird x -type f | xargs cat", [((".",), ())]),  # unknown: anything may pass
    ("find . -name '*.py' | grep -v test | sort | xargs grep -n x", [((".",), (("-name", "*.py"),))]),
    ("find . -name '*.py' | xargs echo", []),
    ("git ls-files | xargs cat", [((".",), ())]),
    ("git diff --name-only | xargs wc -l", [((".",), ())]),
    ("grep -rl x . | xargs cat", []),
    ("rg --files | xargs cat", []),
    ("find . -name '*.py' -exec cat {} +", [((".",), (("-name", "*.py"),))]),
    ("find . -type f -exec cat {} +", []),
    ("find . -exec cat {} + -type f", [((".",), ())]),  # the test comes after the -exec
    ("find -H src -execdir grep -h x {} \\;", [(("src",), ())]),
    ("find . -name p -exec echo {} +", []),
    ("find . -exec cat list.txt \\;", []),  # the found names are not its operands
]
