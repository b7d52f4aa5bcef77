"""awk: options; the program is judged by core.shell.rules.awk_grammar (its tokens). Pure."""

from __future__ import annotations

from core.shell.rules.awk_grammar import judge_program
from core.shell.options import Opts, opts, prefix_matches
from core.shell.programs import Handler
from core.shell.verdict import H_SCRIPT, J, allow, ask, rej


_AWK_LONG = (
    "source", "load", "file", "include", "exec", "field-separator", "assign", "version", "help", "posix",
    "traditional", "characters-as-bytes", "sandbox", "re-interval", "lint", "bignum", "no-optimize",
    "optimize", "dump-variables", "profile", "pretty-print", "debug", "gen-pot", "non-decimal-data",
    "use-lc-numeric", "copyright", "csv",
)
_AWK_HARMLESS = frozenset(
    "version help posix traditional characters-as-bytes sandbox re-interval lint bignum no-optimize "
    "optimize non-decimal-data use-lc-numeric copyright csv".split()
)




def _h_awk(name: str, args: list[str]) -> J:
    programs: list[str] = []
    from_file = False
    i, n = 0, len(args)
    positional: list[str] = []
    while i < n:
        a = args[i]
        i += 1
        if a == "--":
            positional.extend(args[i:])
            break
        if a.startswith("--"):
            nm, eq, val = a[2:].partition("=")
            names = prefix_matches(nm, _AWK_LONG)  # gawk uses getopt_long: abbreviations work
            if "load" in names:
                return rej("`awk --load` loads a shared library (native code)", H_SCRIPT)
            if "source" in names:
                programs.append(val if eq else (args[i] if i < n else ""))
                i += 0 if eq else 1
            elif any(x in names for x in ("file", "include", "exec")):
                from_file = True
                i += 0 if eq else 1
            elif any(x in names for x in ("field-separator", "assign")):
                i += 0 if eq else 1
            elif not names or not all(x in _AWK_HARMLESS for x in names):
                return ask(f"`{name}` with option `{a}`, which is not on the known read-only option list")
            continue
        if len(a) > 1 and a[0] == "-":
            c, rest = a[1], a[2:]
            if c == "l":
                return rej("`awk -l` loads a shared library (native code)", H_SCRIPT)
            if c in "Fv":
                if not rest:
                    i += 1
                continue
            if c in "fEi":
                from_file = True
                if not rest:
                    i += 1
                continue
            if c == "e":
                programs.append(rest or (args[i] if i < n else ""))
                if not rest:
                    i += 1
                continue
            if c in "S" and not rest:
                continue
            return ask(f"`{name}` with option `{a}`, which is not on the known read-only option list")
        positional.append(a)
    if not programs and not from_file:
        if not positional:
            return ask(f"`{name}` without a program")
        programs.append(positional.pop(0))
    asks = []
    for prog in programs:
        kind, why = judge_program(prog)
        if kind == "reject":
            return rej(
                f"awk program {prog!r} {why} (system, pipes, getline from a command, `print >` "
                "redirection, @load / indirect calls)",
                "keep the awk program to reading and printing (e.g. awk '{print $1}' FILE); write files "
                "with the write_file tool",
            )
        if kind == "ask":
            asks.append(why)
    if from_file:
        return ask(f"`{name} -f` runs a program file that was not inspected")
    if asks:
        return ask(f"the `{name}` program {asks[0]}")
    return allow(f"`{name}` program only reads and prints")


_AWK_NAMES = ("awk", "gawk", "mawk", "nawk", "original-awk")
HANDLERS: dict[str, Handler] = dict.fromkeys(_AWK_NAMES, _h_awk)
# For the paths of a command: -F's separator, -v's assignment and -e's program
# text are data; -f / -i / -E name program files, read like any path.
OPTION_SPECS: dict[str, Opts] = dict.fromkeys(_AWK_NAMES, opts(
    "S", "FvfeiEl", " ".join(sorted(_AWK_HARMLESS)), "source load file include exec field-separator assign",
    data="F v e source field-separator assign",
))

# (command, verdict, substring of the reason or None), run by tests/shell/test_shell_rules.py
CASES: list[tuple[str, str, str | None]] = [
    ("awk '{print $1}' data.txt", "allow", "only reads"),
    ("awk -F / '{print $1}' data.txt", "allow", None),  # the separator `/` is not a folder
    ("awk -F/ '{print $1}' data.txt", "allow", None),
    ("awk -F / '{print $1}' /etc/passwd", "ask", "outside the workspace"),
    ("awk -v root=/etc '{print root}' data.txt", "allow", None),
    ("awk -F: '$3 > 100 {print $1}' data.txt", "allow", None),
    ("awk '{s += $1} END {print s / NR}' data.txt", "allow", None),
    ("awk '{ printf \"%s\\n\", $2 }' data.txt", "allow", None),
    ("awk -v n=3 'NR <= n' data.txt", "allow", None),
    ("awk '/foo|bar/ {print ($1 > 3)}' data.txt", "allow", None),
    ("awk 'BEGIN{system(\"id\")}'", "reject", "may run commands"),
    ("awk '{print > \"out\"}' f", "reject", "may run commands"),
    ("awk -f prog.awk data", "ask", "program file"),
    ("gawk -l filefuncs 'BEGIN{}'", "reject", "shared library"),
    ("gawk --lo=x 'BEGIN{}'", "reject", "shared library"),
    # a `}` or `;` inside a string must not end the print statement
    ("awk 'BEGIN{print \"}\" > \"x.txt\"}'", "reject", "may run commands"),
    ("awk 'BEGIN{print \";\" >> \"x.txt\"}'", "reject", "may run commands"),
    ("awk '{print $1 > 3}' f", "reject", "may run commands"),
    ("awk '{printf(\"%s\", $1) > \"f\"}' f", "reject", "may run commands"),
    ("awk 'BEGIN{ARGV[1]=\"/etc/hostname\";ARGC=2}{print}'", "ask", "command line"),
    ("awk 'BEGIN{x++ / system(1) / 1}'", "reject", "may run commands"),
    ("awk 'BEGIN{x = 1; x++ /2/ 1}'", "ask", "cannot tokenize"),
    ("awk 'BEGIN{while ((\"ls\" | getline l) > 0) print l}'", "reject", "may run commands"),
    ("awk '/[/]x/ {print}' f", "ask", "cannot tokenize"),
    ("awk '/systemd/' f", "ask", "system"),
    ("awk 'BEGIN{getline l < \"f\"; print l}'", "ask", "getline"),
]
