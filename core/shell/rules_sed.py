"""sed: allowed only for a script grammar we can prove read-only. Pure."""

from __future__ import annotations

from core.shell.options import prefix_matches
from core.shell.programs import Handler
from core.shell.verdict import J, allow, ask, rej


_SED_SIMPLE = frozenset("=dDgGhHnNpPxzFlLqQ")
_SED_READS = "reads another file"  # not a rejection: lowers allow to ask


def _sed_script_problem(script: str) -> str | None:
    """Return None if the sed script is understood and neither executes nor
    writes, else a description of the problem."""
    s, n, i = script, len(script), 0

    def skip_regex(i: int, delim: str) -> int:
        # i points just after the opening delimiter; return index after closing one
        while i < n:
            c = s[i]
            if c == "\\":
                i += 2
                continue
            if c == delim:
                return i + 1
            if c == "\n":
                return -1
            i += 1
        return -1

    def skip_addr(i: int) -> int:
        if i < n and s[i].isdigit():
            while i < n and (s[i].isdigit() or s[i] == "~"):
                i += 1
            return i
        if i < n and s[i] == "$":
            return i + 1
        if i < n and s[i] == "/":
            return skip_regex(i + 1, "/")
        if i < n and s[i] == "\\" and i + 1 < n:
            return skip_regex(i + 2, s[i + 1])
        return i

    while i < n:
        while i < n and s[i] in " ;\t":
            i += 1
        if i >= n:
            break
        j = skip_addr(i)
        if j < 0:
            return "unterminated address"
        if j != i:
            while j < n and s[j] in "IM":
                j += 1
            if j < n and s[j] == ",":
                j += 1
                if j < n and s[j] in "+~":
                    j += 1
                    while j < n and s[j].isdigit():
                        j += 1
                else:
                    k = skip_addr(j)
                    if k < 0 or k == j:
                        return "bad address range"
                    j = k
                    while j < n and s[j] in "IM":
                        j += 1
        i = j
        while i < n and s[i] == " ":
            i += 1
        if i < n and s[i] == "!":
            i += 1
            while i < n and s[i] == " ":
                i += 1
        if i >= n:
            return "address without a command"
        c = s[i]
        i += 1
        if c in "{}":
            continue
        if c == "e":
            return "the `e` command executes a shell command"
        if c in "wW":
            return f"the `{c}` command writes a file"
        if c == "s" or c == "y":
            if i >= n or s[i] in "\\\n ":
                return f"bad `{c}` command"
            delim = s[i]
            i = skip_regex(i + 1, delim)
            if i < 0:
                return f"unterminated `{c}` command"
            i = skip_regex(i, delim)
            if i < 0:
                return f"unterminated `{c}` command"
            if c == "s":
                while i < n and s[i] not in "; }":
                    f = s[i]
                    if f == "e":
                        return "the `s///e` flag executes the pattern space as a command"
                    if f in "wW":
                        return "the `s///w` flag writes a file"
                    if f not in "gpiImM0123456789":
                        return f"unknown `s` flag {f!r}"
                    i += 1
            continue
        if c in _SED_SIMPLE:
            while i < n and s[i].isdigit():
                i += 1
            continue
        if c in "btT:":
            while i < n and s[i] not in ";}":
                i += 1
            continue
        if c in "aic":
            return None  # GNU one-liner text runs to the end of the script
        if c in "rR":
            return _SED_READS  # reads another file; its name runs to the end of the script
        if c == "#":
            return None
        if c == "v":
            while i < n and s[i] not in ";}":
                i += 1
            continue
        return f"unknown command {c!r}"
    return None


_SED_LONG = (
    "expression", "file", "in-place", "line-length", "quiet", "silent", "regexp-extended", "separate",
    "unbuffered", "null-data", "zero-terminated", "posix", "debug", "sandbox", "follow-symlinks", "help",
    "version", "binary",
)

def _h_sed(name: str, args: list[str]) -> J:
    scripts: list[str] = []
    files: list[str] = []
    in_place = from_file = False
    i, n = 0, len(args)
    while i < n:
        a = args[i]
        i += 1
        if a == "--":
            files.extend(args[i:])
            break
        if a.startswith("--"):
            nm, eq, val = a[2:].partition("=")
            names = prefix_matches(nm, _SED_LONG)  # getopt_long takes abbreviations
            if "expression" in names:
                if eq:
                    scripts.append(val)
                elif i < n:
                    scripts.append(args[i])
                    i += 1
            elif "file" in names:
                from_file = True
                if not eq:
                    i += 1
            elif "in-place" in names:
                in_place = True
            elif names == ("line-length",):
                if not eq:
                    i += 1
            elif not names:
                return ask(f"`sed` with option `{a}`, which is not on the known option list")
            continue
        if len(a) > 1 and a[0] == "-":
            j = 1
            while j < len(a):
                c = a[j]
                if c in "nErsuz":
                    j += 1
                    continue
                if c == "i":
                    in_place = True
                    break
                if c in "ef":
                    val = a[j + 1 :]
                    if not val:
                        val = args[i] if i < n else ""
                        i += 1
                    if c == "e":
                        scripts.append(val)
                    else:
                        from_file = True
                    break
                if c == "l":
                    if j == len(a) - 1:
                        i += 1
                    break
                return ask(f"`sed` with option `{a}`, which is not on the known option list")
            continue
        files.append(a)
    if not scripts and not from_file:
        if not files:
            return ask("`sed` without a script")
        scripts.append(files.pop(0))
    reads = False
    for script in scripts:
        problem = _sed_script_problem(script)
        if problem is _SED_READS:
            reads = True
        elif problem is not None:
            return rej(
                f"sed script {script!r} is not allowed: {problem}",
                "use a plain substitution script (e.g. sed -n 's/a/b/p' FILE) and the edit_file tool "
                "to change files",
            )
    if in_place:
        return ask("`sed -i` edits files in place")
    if from_file:
        return ask("`sed -f` runs a script file that was not inspected")
    if reads:
        return ask("the sed script reads another file (`r` / `R`)")
    return allow("`sed` only prints a transformed copy")

HANDLERS: dict[str, Handler] = {"sed": _h_sed, "gsed": _h_sed}

# (command, verdict, substring of the reason or None), run by tests/test_shell_rules.py
CASES: list[tuple[str, str, str | None]] = [
    ("sed -n 's/foo/bar/p' x.txt", "allow", "transformed copy"),
    ("sed -n '10,20p' x.txt", "allow", None),
    ("sed -i 's/a/b/' x.txt", "ask", "in place"),
    ("sed -f prog.sed x", "ask", "script file"),
    ("sed '1e id' f", "reject", "`e` command"),
    ("sed 's/a/b/w out' f", "reject", "s///w"),
    ("sed '1r /etc/shadow' x.txt", "ask", None),
    ("sed --e='1e id' f", "reject", "`e` command"),
]
