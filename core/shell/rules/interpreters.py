"""Interpreters and shells: scripts and inline code ask (both run code a human
approves), shells with options and code from stdin or a URL reject. Pure.

Inline code (``python3 -c``, ``node -e``, ``perl -e`` ...) is no more powerful
than a script the agent writes and runs, so it asks like a script
(reviewers label it so). Shell code (``bash -c``) stays rejected: it would hide
a whole command line from the validator's rules.
"""

from __future__ import annotations

import re

from core.shell.options import is_version_query, opts, scan
from core.shell.programs import Handler, judge_inner
from core.shell.verdict import H_NETWORK, H_SCRIPT, J, allow, ask, rej


INTERACTIVE_INTERP = "starts an interactive interpreter (there is no terminal)"


def _h_python(name: str, args: list[str]) -> J:
    if not args:
        return rej(f"`{name}` without a script {INTERACTIVE_INTERP}", H_SCRIPT)
    if args in (["--version"], ["-V"], ["-VV"], ["--help"], ["-h"]):
        return allow(f"`{name} {args[0]}` only prints information")
    if args[:2] == ["-m", "json.tool"]:
        return _json_tool(name, args[2:])
    i, n = 0, len(args)
    while i < n:
        a = args[i]
        i += 1
        if a == "-":
            return rej(f"`{name} -` reads a program from stdin (inline code)", H_SCRIPT)
        if a == "--":
            break
        if a.startswith("--"):
            if a in ("--check-hash-based-pycs",):
                i += 1
                continue
            if a.startswith("--check-hash-based-pycs=") or a in ("--version", "--help", "--help-env",
                                                                  "--help-xoptions", "--help-all"):
                continue
            return ask(f"`{name}` with option `{a}`")
        if a.startswith("-") and len(a) > 1:
            j = 1
            while j < len(a):
                c = a[j]
                if c == "c":
                    return ask(f"`{name} -c` runs inline code")
                if c in "WX":
                    if j == len(a) - 1:
                        i += 1
                    break
                if c == "m":
                    mod = a[j + 1 :] or (args[i] if i < n else "")
                    return _python_module(name, mod)
                if c in "bBdEhiIOPqsSuvVxR":
                    j += 1
                    continue
                return ask(f"`{name}` with option `{a}`")
            continue
        if "runserver" in args[i:]:
            return rej(f"`{name} {a} runserver` starts a long-running server, which would only end at the timeout",
                       "start servers outside the agent, or ask the user to")
        return ask(f"`{name} {a}` runs a Python program")
    if i < n:
        return ask(f"`{name} {args[i]}` runs a Python program")
    return rej(f"`{name}` without a script {INTERACTIVE_INTERP}", H_SCRIPT)


_PY_MODULE_REASONS = {
    "pytest": "runs the test suite (project code) and may change files",
    "unittest": "runs the test suite (project code) and may change files",
    "pip": "installs or changes packages",
    "venv": "creates a virtual environment",
}


_PY_SERVERS = frozenset("http.server SimpleHTTPServer CGIHTTPServer smtpd aiosmtpd xmlrpc.server jupyter notebook".split())


# `python -m json.tool [INFILE [OUTFILE]]` parses JSON and prints it; its
# options only shape the output. A second operand is a file it writes. Which
# `json` it imports is checked by core.shell.programs (the folder it runs in
# comes first on the module path).
_JSON_TOOL = opts("h", "", "sort-keys no-ensure-ascii json-lines tab no-indent compact", "indent", data="indent")


def _json_tool(name: str, args: list[str]) -> J:
    bad, operands = scan(args, _JSON_TOOL)
    if bad is not None:
        return ask(f"`{name} -m json.tool` with option `{bad}`")
    if any(o.startswith("-") and o != "-" for o in operands):
        return ask(f"`{name} -m json.tool` with an operand that starts with `-`")
    if len(operands) > 1:
        return ask(f"`{name} -m json.tool` writes `{operands[1]}`")
    return allow(f"`{name} -m json.tool` only reads JSON and prints it")


def _python_module(name: str, mod: str) -> J:
    if not mod:
        return rej(f"`{name} -m` without a module", "name the module to run (e.g. `python3 -m pytest`)")
    if mod in _PY_SERVERS:
        return rej(f"`{name} -m {mod}` starts a long-running server, which would only end at the timeout",
                   "start servers outside the agent, or ask the user to")
    why = _PY_MODULE_REASONS.get(mod, "runs a Python module")
    return ask(f"`{name} -m {mod}` {why}")


def _cluster_scan(name: str, args: list[str], code: str, stop: str, what: str) -> J | None:
    """Reject if any short-option cluster (before the first non-option word)
    contains a letter of ``code`` before a value-taking letter of ``stop``."""
    for a in args:
        if a == "--" or not a.startswith("-") or a == "-":
            break
        if a.startswith("--"):
            continue
        for c in a[1:]:
            if c in code:
                return ask(f"`{name} -{c}` runs inline code ({what})")
            if c in stop:
                break
    return None


def _first_operand(args: list[str], value_opts: frozenset[str] = frozenset()) -> str | None:
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            return args[i + 1] if i + 1 < len(args) else None
        if a.startswith("-") and a != "-":
            i += 2 if a in value_opts else 1
            continue
        return a
    return None


def _h_perl(name: str, args: list[str]) -> J:
    if is_version_query(args) and args[0] != "-V":
        return allow(f"`{name} {args[0]}` only prints its version")
    bad = _cluster_scan(name, args, "eEMmd", "iIxlF0CD", "perl")
    if bad:
        return bad
    if any(a.startswith(("--eval",)) for a in args):
        return ask(f"`{name}` runs inline code")
    op = _first_operand(args)
    if op is None or op == "-":
        return rej(f"`{name}` without a script reads the program from stdin {INTERACTIVE_INTERP}", H_SCRIPT)
    return ask(f"`{name} {op}` runs a Perl program")


def _h_ruby(name: str, args: list[str]) -> J:
    if is_version_query(args):
        return allow(f"`{name} {args[0]}` only prints its version")
    bad = _cluster_scan(name, args, "e", "rICEFKTWx0", "ruby")
    if bad:
        return bad
    op = _first_operand(args, frozenset(["-r", "-I", "-C", "-E"]))
    if op is None or op == "-":
        return rej(f"`{name}` without a script {INTERACTIVE_INTERP}", H_SCRIPT)
    return ask(f"`{name} {op}` runs a Ruby program")


_NODE_CODE_LONG = ("eval", "print")


def _h_node(name: str, args: list[str]) -> J:
    if args in (["--version"], ["-v"], ["--help"], ["-h"]):
        return allow(f"`{name} {args[0]}` only prints information")
    if len(args) == 2 and args[0] in ("-c", "--check") and not args[1].startswith("-"):
        return allow(f"`{name} {args[0]} {args[1]}` only checks the script's syntax")
    for k, a in enumerate(args):
        if a == "--" or not a.startswith("-"):
            break
        if a.startswith("--"):
            nm = a[2:].split("=", 1)[0]
            if nm in _NODE_CODE_LONG:
                return ask(f"`{name} --{nm}` runs inline code")
            if nm in ("interactive",):
                return rej(f"`{name} -i` {INTERACTIVE_INTERP}", H_SCRIPT)
            if nm == "test":  # node's own test runner: finds and runs the project's test files
                return ask(f"`{name} --test` runs the project's tests")
            if nm in ("require", "import", "loader", "experimental-loader"):
                val = a.split("=", 1)[1] if "=" in a else (args[k + 1] if k + 1 < len(args) else "")
                if ":" in val:
                    return rej(f"`{name} --{nm} {val}` loads code from a URL (inline code)", H_SCRIPT)
            continue
        if any(c in "ep" for c in a[1:]):
            return ask(f"`{name} {a}` runs inline code")
        if a == "-i":
            return rej(f"`{name} -i` {INTERACTIVE_INTERP}", H_SCRIPT)
        if a == "-r" and k + 1 < len(args) and ":" in args[k + 1]:
            return rej(f"`{name} -r {args[k + 1]}` loads code from a URL (inline code)", H_SCRIPT)
    op = _first_operand(args, frozenset(["-r", "--require", "--import", "--loader", "-C", "--conditions"]))
    if op is None or op == "-":
        return rej(f"`{name}` without a script {INTERACTIVE_INTERP}", H_SCRIPT)
    return ask(f"`{name} {op}` runs a JavaScript program")


def _h_deno(name: str, args: list[str]) -> J:
    if is_version_query(args) or args == ["version"]:
        return allow(f"`{name} {args[0]}` only prints its version")
    sub = next((a for a in args if not a.startswith("-")), None)
    if sub is None or sub == "repl":
        return rej(f"`{name}` without a subcommand {INTERACTIVE_INTERP}", H_SCRIPT)
    if sub == "eval":
        return ask(f"`{name} eval` runs inline code")
    if any(a.startswith(("data:", "http:", "https:")) for a in args):
        return rej(f"`{name}` with a URL runs code fetched from the network or inline", H_NETWORK)
    return ask(f"`{name} {sub}` runs project code")


def _h_bun(name: str, args: list[str]) -> J:
    if is_version_query(args):
        return allow(f"`{name} {args[0]}` only prints its version")
    for a in args:
        if a in ("-e", "-p", "--eval", "--print") or a.startswith(("--eval=", "--print=")):
            return ask(f"`{name} {a}` runs inline code")
    if not args or args[0] == "repl":
        return rej(f"`{name}` without a script {INTERACTIVE_INTERP}", H_SCRIPT)
    if args[0] in ("x",):
        return judge_inner(name + " x", args[1:])
    return ask(f"`{name} {args[0]}` runs project code or installs packages")


def _h_php(name: str, args: list[str]) -> J:
    if is_version_query(args):
        return allow(f"`{name} {args[0]}` only prints its version")
    bad = _cluster_scan(name, args, "rRBEa", "dcfnzFtS", "php")
    if bad:
        return bad
    if "-S" in args:
        return rej(f"`{name} -S` starts a long-running web server", "start servers outside the agent, or ask the user to")
    op = _first_operand(args, frozenset(["-d", "-c", "-f", "-z", "-t", "-S"]))
    if op is None and "-S" not in args and "-f" not in args:
        return rej(f"`{name}` without a script {INTERACTIVE_INTERP}", H_SCRIPT)
    return ask(f"`{name}` runs a PHP program")


def _h_lua(name: str, args: list[str]) -> J:
    if is_version_query(args):
        return allow(f"`{name} {args[0]}` only prints its version")
    bad = _cluster_scan(name, args, "ei", "l", "lua")
    if bad:
        return bad
    op = _first_operand(args, frozenset(["-l"]))
    if op is None or op == "-":
        return rej(f"`{name}` without a script {INTERACTIVE_INTERP}", H_SCRIPT)
    return ask(f"`{name} {op}` runs a Lua program")


def _h_rscript(name: str, args: list[str]) -> J:
    for a in args:
        if a == "-e" or a.startswith(("--expr", "-e")):
            return ask(f"`{name} -e` runs inline code")
    if name.lower() == "r" and not any(not a.startswith("-") for a in args):
        return rej(f"`{name}` {INTERACTIVE_INTERP}", H_SCRIPT)
    return ask(f"`{name}` runs an R program")


def _h_osascript(name: str, args: list[str]) -> J:
    return rej(f"`{name}` runs AppleScript / JavaScript code, often inline", H_SCRIPT)


_SCRIPT_FLAGS = re.compile(r"[-+][nxevu]+")


# Shells whose -n reads the script without running any of it (no startup file
# runs for a non-interactive shell here).
_NOEXEC_SHELLS = frozenset(["bash", "sh", "dash"])


def _h_shell(name: str, args: list[str]) -> J:
    if not args:
        return rej(f"`{name}` without a script starts an interactive shell", "run the command directly, without a shell")
    first = args[0]
    # Tracing and strictness flags before a script file (`bash -n x.sh` only
    # parses it; `bash -x x.sh` runs it with a trace): no inline code.
    k = 0
    while k < len(args) - 1 and _SCRIPT_FLAGS.fullmatch(args[k]):
        k += 1
    if k and not args[k].startswith(("-", "+")):
        # only `-n`: `+n` turns noexec off again, so the script runs
        if all(a[0] == "-" and set(a[1:]) == {"n"} for a in args[:k]):
            if name.lower() in _NOEXEC_SHELLS:
                return allow(f"`{name} -n {args[k]}` only checks the script's syntax")
            return ask(f"`{name} -n {args[k]}` only checks the script's syntax")
        return ask(f"`{name} {' '.join(args[:k])} {args[k]}` runs a shell script")
    if first.startswith(("-", "+")):
        if first == "--version" and len(args) == 1:
            return allow(f"`{name} --version` only prints its version")
        return rej(
            f"`{name} {first}`: a shell with options (such as -c) runs inline code",
            "run the command directly as its own bash call, or write a script with write_file and "
            f"run `{name} script.sh`",
        )
    return ask(f"`{name} {first}` runs a shell script")


def _h_tclsh(name: str, args: list[str]) -> J:
    if not args:
        return rej(f"`{name}` {INTERACTIVE_INTERP}", H_SCRIPT)
    if args[0].startswith("-"):
        return rej(f"`{name} {args[0]}`: interpreter options may run inline code", H_SCRIPT)
    return ask(f"`{name} {args[0]}` runs a Tcl program")


# Dot-commands that only print or set how results print. Any other (.shell,
# .system, .output, .once, .load, .read, .import, .open, .backup, .cd, .log ...)
# may run a program, load code, or read or write a file the validator never sees.
_SQLITE_DOT_PRINTS = frozenset(
    ".schema .fullschema .tables .indexes .indices .databases .dbinfo .headers .header .mode .show .width "
    ".nullvalue .separator .timer .stats .eqp .help .print .version .dump .changes .echo .bail .quit .exit".split()
)
# Options whose value is the next word (an -init file runs its dot-commands).
_SQLITE_VALUES = frozenset(
    "-separator -newline -nullvalue -vfs -maxsize -mmap -pagecache -lookaside -heap -escape -cmd -init".split()
)


def _h_sqlite(name: str, args: list[str]) -> J:
    pos: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        i += 1
        if a.startswith(("-cmd", "--cmd")):
            return rej(f"`{name} -cmd` runs dot-commands, which can start shell commands", H_SCRIPT)
        if a.lstrip("-") == "init" and args[i : i + 1] != ["/dev/null"]:
            return rej(f"`{name} -init FILE` runs the dot-commands in FILE, which can start shell commands",
                       "pass the SQL as an argument")
        if a.startswith("-"):
            i += "-" + a.lstrip("-") in _SQLITE_VALUES
        else:
            pos.append(a)
    for p in pos[1:]:
        command = p.lstrip()
        if command.startswith(".") and command.split(None, 1)[0] not in _SQLITE_DOT_PRINTS:
            return rej(
                f"`{name}` dot-command `{command.split(None, 1)[0]}` (like .shell, .system, .output) "
                "can run programs or read or write files",
                "pass SQL, or a dot-command that only prints (.tables, .schema, .headers on, .mode csv)",
            )
    if len(pos) <= 1:
        return rej(f"`{name}` without SQL {INTERACTIVE_INTERP}", "pass the database file and the SQL as arguments")
    return ask(f"`{name}` runs SQL that may change the database")

HANDLERS: dict[str, Handler] = {
    "python": _h_python, "pypy": _h_python, "pypy3": _h_python, "perl": _h_perl, "ruby": _h_ruby,
    "node": _h_node, "nodejs": _h_node, "deno": _h_deno, "bun": _h_bun, "php": _h_php, "lua": _h_lua,
    "luajit": _h_lua, "rscript": _h_rscript, "r": _h_rscript, "osascript": _h_osascript, "tclsh": _h_tclsh,
    "wish": _h_tclsh, "sqlite3": _h_sqlite,
}
HANDLERS.update(dict.fromkeys(
    "sh bash zsh dash ksh mksh fish csh tcsh ash rbash yash posh pwsh powershell xonsh elvish nu".split(), _h_shell
))

# (command, verdict, substring of the reason or None), run by tests/shell/test_shell_rules.py
CASES: list[tuple[str, str, str | None]] = [
    ("python3 -c 'print(1)'", "ask", "inline code"),
    ("python3 -Ic x", "ask", "inline code"),
    ("python3 script.py", "ask", "runs a python program"),
    ("python3 -m pytest -q", "ask", "test suite"),
    ("python3 -m http.server", "reject", "long-running server"),
    # json.tool only parses and prints; allowed where the folder holds no file
    # named like a module it imports (facts), and without them the toolchain asks
    ("python3 -m json.tool data.json", "ask", "toolchain"),
    ("python3 -m json.tool --sort-keys --indent 2 data.json", "ask", "toolchain"),
    ("python3 -m json.tool --json-lines --no-ensure-ascii", "ask", "toolchain"),
    ("python3 -m json.tool in.json out.json", "ask", "writes `out.json`"),
    ("python3 -m json.tool /etc/passwd", "ask", "outside the workspace"),
    ("python3 -m json.tool --sort x.json", "ask", "option `--sort`"),  # argparse's abbreviations are not modelled
    ("python3 -I -m json.tool x.json", "ask", "runs a python module"),
    ("python3 -m json.tool -- -x.json", "ask", None),
    ("python3 -m http.server 8000 --bind 127.0.0.1", "reject", "long-running server"),
    ("python manage.py runserver", "reject", "long-running server"),
    ("php -S localhost:8000", "reject", "long-running"),
    ("python3 --version", "ask", "toolchain"),
    ("perl -ne 'print' f", "ask", "inline code"),
    ("node -pe 1", "ask", "inline code"),
    ("node --test", "ask", "project's tests"),
    ("node --test --test-reporter=spec test/", "ask", "project's tests"),
    ("node --test -e 1", "ask", None),
    ("node --import data:text/javascript,1 x.js", "reject", "URL"),
    ("deno run https://e/x.ts", "reject", "network"),
    ("node server.js", "ask", None),
    ("bash -lc id", "reject", "inline code"),
    ("bash scripts/build.sh", "ask", "shell script"),
    ("bash -n build.sh", "allow", "syntax"),
    ("bash -n -c id", "reject", "inline code"),
    ("bash +n build.sh", "ask", "runs a shell script"),  # +n turns noexec off: the script runs
    ("sh -n +n build.sh", "ask", "runs a shell script"),
    ("zsh -n build.sh", "ask", "syntax"),
    ("bash -n /etc/profile", "ask", "outside the workspace"),
    ("node --check app.js", "ask", "toolchain"),  # allowed where the workspace selects no toolchain
    ("node -c app.js", "ask", "toolchain"),
    ("node --check -r ./hook.js app.js", "ask", None),
    ("bash -x ./hooks/run.sh", "ask", "runs a shell script"),
    ("bash -x -c id", "reject", "inline code"),
    ("bash -n", "reject", "inline code"),
    ("sqlite3 db '.shell id'", "reject", "dot-command `.shell`"),
    ("sqlite3 db .tables", "ask", "runs SQL"),
    ("sqlite3 -header -column app.db '.schema users' 'select * from users limit 5'", "ask", None),
    ("sqlite3 -separator , db '.mode csv' 'select 1'", "ask", None),
    ("sqlite3 db .tables '.system id'", "reject", "`.system`"),
    ("sqlite3 db '.output /tmp/x' 'select 1'", "reject", "`.output`"),
    ("sqlite3 db \".load ./evil\"", "reject", "`.load`"),
    ("sqlite3 db '.read x.sql'", "reject", "`.read`"),
    ("sqlite3 -init evil.sql db 'select 1'", "reject", "-init"),
    ("sqlite3 -init /dev/null db 'select 1'", "ask", None),
    ("sqlite3 -cmd '.shell id' db 'select 1'", "reject", "-cmd"),
]
