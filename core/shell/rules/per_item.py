"""``find -exec`` and ``xargs``: a command run once per input, judged as that command. Pure.

* ``find ROOTS ... -exec CMD ARGS {} ;`` (or ``+``, ``-execdir``): ``CMD ARGS {}``
  is judged like any command (``{}`` stands for a found path, which starts
  with a search root, so it never becomes an option); the find is as strict
  as its inner command. ``-ok`` / ``-okdir`` prompt on a terminal: reject.
* ``xargs [OPTIONS] CMD ARGS``: the words read from stdin are appended (or
  put where ``-I`` says) and can be anything, options included, so the inner
  command is ``allow`` only for programs that no option can make write or
  run code (grep, wc, head, cat, ls ...); otherwise at least ``ask``.
"""

from __future__ import annotations

from core.shell.options import long_hit
from core.shell.programs import XARGS_VALUED, Handler, judge
from core.shell.verdict import H_INTERACTIVE, RANK, J, allow, ask, rej

_FIND_EXEC = frozenset(["-exec", "-execdir"])
# No option of these programs writes, runs code or never ends.
_ANY_ARGS_SAFE = frozenset(
    "grep egrep fgrep wc head cat ls file stat basename dirname realpath readlink du md5sum sha1sum "
    "sha256sum echo".split()
)
_XARGS_FLAGS = frozenset("-0 -r -t -x --null --no-run-if-empty --verbose --exit".split())


def _inner(outer: str, argv: list[str]) -> J:
    if not argv:
        return rej(f"`{outer}` without a command", "name the command to run")
    _, j, _ = judge(tuple(argv))
    if j.verdict == "reject":
        return rej(f"`{outer}` runs `{argv[0]}`, which is not allowed: {j.reason}", j.hint or "run it on its own")
    return J(j.verdict, f"`{outer}` runs `{' '.join(argv[:3])}` for each input: {j.reason}", None, j.destructive, j.writes)


def find_exec(args: list[str]) -> J | None:
    """The strictest of the ``-exec`` commands of a find, or None when there is none."""
    worst: J | None = None
    i = 0
    while i < len(args):
        a = args[i]
        i += 1
        if a in ("-ok", "-okdir"):
            return rej(f"`find {a}` asks on a terminal for every file", H_INTERACTIVE)
        if a not in _FIND_EXEC:
            continue
        end = next((k for k in range(i, len(args)) if args[k] in (";", "+")), None)
        if end is None:
            return rej(f"`find {a}` without a closing `;` or `+`", "end the command with \\; or +")
        # `{}` stands for paths under the search roots, the root itself among them, wherever it
        # stands in a word (`{}.bak`, `{}/../x`): judge the command on each root
        for root in _roots(args):
            j = _inner(f"find {a}", [w.replace("{}", root) for w in args[i:end]])
            if j.verdict == "reject":
                return j
            if worst is None or (RANK[j.verdict], j.destructive) > (RANK[worst.verdict], worst.destructive):
                worst = j
        i = end + 1
    return worst


def find_delete(args: list[str]) -> J:
    """``find ROOTS ... -delete``: it deletes what it matches under each root
    (the root itself among them), judged as ``rm -rf ROOT`` on every root."""
    follows = next((a for a in args if a in ("-L", "-H", "-follow")), None)
    if follows is not None:  # it deletes through a link what lies outside the workspace
        return rej(f"`find {follows} ... -delete` follows symbolic links and deletes what they lead to",
                   "drop the option: without it find deletes the links, not what they point to")
    worst: J | None = None
    for root in _roots(args):
        j = _inner("find -delete", ["rm", "-rf", "--", root])
        if j.verdict == "reject":
            return j
        worst = j if worst is None or RANK[j.verdict] > RANK[worst.verdict] else worst
    assert worst is not None  # _roots names one root at least
    return J(worst.verdict, f"`find -delete` deletes the files it matches: {worst.reason.split(': ', 1)[-1]}",
             None, True, worst.writes)


def _roots(args: list[str]) -> list[str]:
    """find's starting points: the words before the first option or predicate."""
    roots = []
    while args[:1] == ["-P"] or args[:1] == ["-D"] or (args and args[0].startswith("-O")):
        args = args[2:] if args[0] == "-D" else args[1:]  # its options before the roots
    for a in args:
        if a.startswith("-") or a in ("(", "!", ","):
            break
        roots.append(a)
    return roots or ["."]


def _h_xargs(name: str, args: list[str]) -> J:
    i, replace, from_file = 0, False, None
    while i < len(args) and args[i].startswith("-") and args[i] != "-":
        a = args[i]
        i += 1
        if a == "--":
            break
        if a in ("-p", "--interactive") or long_hit(a, ("interactive",)):
            return rej("`xargs -p` asks on a terminal", H_INTERACTIVE)
        if a in ("-a", "--arg-file") or a.startswith(("-a", "--arg-file=")) or long_hit(a, ("arg-file",)):
            from_file = a
        delimiter = (args[i] if i < len(args) else "") if a in ("-d", "--delimiter") else (
            a.partition("=")[2] if a.startswith("--delimiter=") else a[2:] if a.startswith("-d") else None)
        if delimiter is not None and delimiter not in ("\\n", "\n", "\\0", "\0"):
            # names cut at another character are not the lister's: `./..foo` cut at `f` is `./..`
            replace = True
        if a == "-I" or a.startswith(("-i", "--replace")):
            replace = True
            i += 1 if a == "-I" else 0
        elif a in XARGS_VALUED:
            i += 1
        elif a.split("=", 1)[0] in XARGS_VALUED or (a[:2] in XARGS_VALUED and len(a) > 2):
            continue
        elif a not in _XARGS_FLAGS:
            return ask(f"`xargs` with option `{a}`, which is not on the known option list")
    inner = args[i:]
    if not inner:
        return allow("`xargs` without a command only echoes its input")
    j = _inner("xargs", inner)
    if j.verdict != "reject" and j.writes:
        return rej(
            f"`xargs {inner[0]}` would change files named on stdin, which may lie outside the workspace",
            "list the files first, then pass them to the command as arguments",
        )
    if j.verdict == "allow" and from_file is not None:
        return ask(f"{j.reason}; but the words come from a file (`xargs {from_file}`), which may name "
                   "files outside the workspace")
    if j.verdict == "allow" and (replace or inner[0] not in _ANY_ARGS_SAFE):
        return ask(f"{j.reason}; but the words read from stdin may change what `{inner[0]}` does")
    return j


HANDLERS: dict[str, Handler] = {"xargs": _h_xargs}

# (command, verdict, substring of the reason or None), run by tests/shell/test_shell_rules.py
CASES: list[tuple[str, str, str | None]] = [
    ("find . -name '*.py' -exec grep -l X '{}' ';'", "allow", "for each input"),
    # find puts the path in place of every `{}`, inside words too: `.` itself is among them
    ("find . -maxdepth 0 -exec cat {}/../secret \\;", "ask", "outside the workspace"),
    ("find . -maxdepth 0 -exec ls {}. \\;", "ask", "outside the workspace"),
    ("find src -name '*.c' -exec ls {}.orig \\;", "allow", None),
    ("find src -type f -exec grep -l X {} +", "allow", None),
    ("find . -name '*.py' -exec grep -l X {} \\; | head -5", "allow", None),
    ("find . -exec rm '{}' ';'", "ask+destructive", "deletes"),
    # -delete is `rm -rf` on what it matches under each root
    ("find . -name '*.pyc' -delete", "ask+destructive", "deletes the files it matches"),
    ("find build dist -type f -delete", "ask+destructive", "deletes the files it matches"),
    ("find / -name '*.pyc' -delete", "reject", "outside the workspace"),
    ("find . .. -delete", "reject", "outside the workspace"),
    ("find ~ -name x -delete", "reject", "outside the workspace"),
    # -L / -H / -follow: a link to a folder outside the workspace has its files deleted
    ("find -L . -name '*.pyc' -delete", "reject", "follows symbolic links"),
    ("find -H link -delete", "reject", "follows symbolic links"),
    ("find . -follow -delete", "reject", "follows symbolic links"),
    ("find -P build -O2 -delete", "ask+destructive", None),
    ("find -files0-from list -delete", "reject", None),
    ("find . -name x -delete -exec cat {} +", "ask+destructive", None),
    ("find . -execdir sh -c id ';'", "reject", "inline code"),
    ("find . -exec sudo rm {} \\;", "reject", "privilege"),
    ("find . -ok rm '{}' ';'", "reject", "terminal"),
    ("find . -exec grep x", "reject", "closing"),
    ("find . -exec python3 {} ';'", "ask", None),
    ("find . -name '*.py' | xargs grep -l 'class Field' | head -20", "allow", None),
    ("find . -name '*.py' -print0 | xargs -0 wc -l", "allow", None),
    ("cat list.txt | xargs rm", "reject", "named on stdin"),
    ("find /etc -name x -exec rm {} \\;", "reject", "outside the workspace"),
    ("find . ../other -exec chmod -R 777 {} +", "reject", "outside the workspace"),
    ("find src -name '*.pyc' -exec rm {} +", "ask+destructive", None),
    ("xargs sh -c id", "reject", "inline code"),
    ("xargs -0 -n1 sh -c id", "reject", "inline code"),
    ("cat f | xargs sed -n 1p", "ask", "stdin"),
    ("cat f | xargs -I {} grep {} x", "ask", "stdin"),
    ("xargs -p rm", "reject", "terminal"),
    ("xargs", "allow", "echoes"),
    ("xargs rm -rf /", "reject", "outside the workspace"),
    ("xargs touch", "reject", "named on stdin"),
    ("xargs -a list.txt cat", "ask", "come from a file"),
    ("xargs --arg-file=list.txt cat", "ask", "come from a file"),
    ("xargs -alist.txt head", "ask", "come from a file"),
    ("xargs -0 -a list.txt wc -l", "ask", "come from a file"),
    # file names read from stdin: only a lister's output names workspace files
    ("echo /etc/passwd | xargs cat", "ask", "file names"),
    ("cat list.txt | xargs head -5", "ask", "file names"),
    ("xargs cat < list.txt", "ask", "file names"),
    # a listing unzip only reads the archives named on stdin; an extracting one writes
    ("ls *.zip | xargs -n1 unzip -l", "ask", "words read from stdin"),
    ("ls *.zip | xargs -n1 unzip", "reject", "would change files"),
    ("find . -name '*.epub' -exec unzip -l {} \\;", "allow", "only reads the archive"),
    ("printf '/etc/passwd\\0' | sort --files0-from=-", "ask", "file names"),
    ("echo /etc/passwd | file -f -", "ask", "file names"),
    ("find . -name '*.py' | grep -v test | head -20 | xargs wc -l", "allow", None),
    ("git ls-files -z | xargs -0 grep -l TODO", "allow", None),
    ("grep -rl foo src | xargs grep -l bar | xargs wc -l", "allow", None),
    ("find . -printf '/etc/passwd\\n' | xargs cat", "ask", "file names"),
    ("find . -name '*.py' | grep -o '/etc/.*' | xargs cat", "ask", "file names"),
    ("find . | xargs echo", "allow", None),
    ("git log --name-only | xargs cat", "ask", "file names"),
    ("find . -name '..f*' | xargs -d f ls", "ask", "stdin"),  # `./..foo` cut at `f`: `./..`
    ("find . -name '*.py' | xargs -d '\\n' wc -l", "allow", None),  # commit messages are any words
    ("git diff --name-only | xargs wc -l", "allow", None),
    ("find . -type f | tail -c 12 | xargs cat", "ask", "file names"),  # `./a/etc/passwd` -> `/etc/passwd`
    ("sort --files0-from=list0.txt", "ask", "names of the files"),
    ("wc --files0-from list0.txt", "ask", "names of the files"),
    ("file -f names.txt", "ask", "names of the files"),
    ("sha256sum -c sums.txt", "ask", "names of the files"),  # a checksum list names the files it reads
    ("echo 'x  /etc/shadow' | md5sum --check", "ask", "file names"),
    ("sha256sum src/a.py", "allow", None),
    ("find -files0-from list0 -exec cat {} +", "ask", "names of the files"),  # its starting points
    ("printf '/etc\\0' | find -files0-from - -exec cat {} +", "ask", "file names"),
    ("find . -name '*.py' -files0-from - | xargs cat", "ask", "file names"),
]
