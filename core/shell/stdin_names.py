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

from core.shell.facts import SPLIT_UNKNOWN, WorkspaceFacts
from core.shell.options import long_hit, scan, short_hit
from core.shell.paths import path_words
from core.shell.programs import OPTION_SPECS, family, xargs_command
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
