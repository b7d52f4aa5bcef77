"""sed: options; the script is judged by core.shell.rules.sed_grammar (a small grammar proven read-only). Pure."""

from __future__ import annotations

from core.shell.options import prefix_matches
from core.shell.programs import Handler
from core.shell.rules.sed_grammar import judge_script
from core.shell.verdict import J, allow, ask, rej


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
    kind, why = judge_script("\n".join(scripts)) if scripts else ("allow", "")
    if kind == "reject":
        return rej(
            f"sed script {scripts!r} is not allowed: {why}",
            "use a plain substitution script (e.g. sed -n 's/a/b/p' FILE) and the edit_file tool "
            "to change files",
        )
    if in_place:
        return ask("`sed -i` edits files in place")
    if from_file:
        return ask("`sed -f` runs a script file that was not inspected")
    if kind == "ask":
        return ask(f"`sed`: {why}")
    return allow("`sed` only prints a transformed copy")

HANDLERS: dict[str, Handler] = {"sed": _h_sed, "gsed": _h_sed}

# (command, verdict, substring of the reason or None), run by tests/shell/test_shell_rules.py
CASES: list[tuple[str, str, str | None]] = [
    ("sed -n 's/foo/bar/p' x.txt", "allow", "transformed copy"),
    ("sed -n '10,20p' x.txt", "allow", None),
    ("sed -n '/start/,/end/{p}' x.txt", "allow", None),
    ("sed 's|a|b|g; s/[0-9][0-9]*//2' x.txt", "allow", None),
    ("sed -n '$p' x.txt", "allow", None),
    ("sed '1!G;h;$!d' x.txt", "allow", None),
    ("sed -e 's/a/b/' -e 's/c/d/' x.txt", "allow", None),
    ("sed 'y/abc/xyz/' x.txt", "allow", None),
    ("sed -E 's/[[:space:]]+$//' x.txt", "allow", None),
    ("sed -n '0~4p' x.txt", "allow", None),
    ("sed -i 's/a/b/' x.txt", "ask", "in place"),
    ("sed -f prog.sed x", "ask", "script file"),
    ("sed '1e id' f", "reject", "`e` command"),
    ("sed 's/a/b/w out' f", "reject", "s///w"),
    ("sed '1r /etc/shadow' x.txt", "ask", "reads another file"),
    ("sed --e='1e id' f", "reject", "`e` command"),
    # GNU sed reads labels, `v` and brackets differently from a naive parser
    ("sed -n 'bx;:x w s.py' a.txt", "ask", "outside the small sed grammar"),
    ("sed -n 'v 4.2 w out.txt' a.txt", "ask", "outside the small sed grammar"),
    ("sed -n 'b nolabel w s.py' a.txt", "ask", "outside the small sed grammar"),
    ("sed 's/[/]/g;s/w d//g' a.txt", "ask", "bracket expression"),
    ("sed -e 'a\\' -e 'w x' a.txt", "ask", "outside the small sed grammar"),
    ("sed ':a;N;$!ba;s/\\n/ /g' a.txt", "ask", "outside the small sed grammar"),
    ("sed '/x/a text' a.txt", "ask", "outside the small sed grammar"),
    ("sed -n '/x/ { p; w out' a.txt", "reject", "writes a file"),
    ("sed -n '#n' a.txt", "ask", None),
]
