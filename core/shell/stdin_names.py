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

from core.shell.options import long_hit, scan, short_hit
from core.shell.paths import path_words
from core.shell.programs import OPTION_SPECS, family
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


def names_unjudged(j: J, source: str) -> J:
    """``j`` (an allow) made an ask: the program opens files named by ``source``."""
    return ask(f"{j.reason}; but the file names it reads come from {source}, which may name files outside the workspace")
