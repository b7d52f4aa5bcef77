"""jq: reads JSON and prints; its filter language has no way to run a program
or write a file. What it can read beyond its input files is asked about:
modules (``import`` / ``include``, ``-L``) and a filter kept in a file. Pure.

Its files are the positional words after the filter (none after ``--args`` /
``--jsonargs``, which make them strings), ``-f FILE`` and the files of
``--slurpfile`` / ``--rawfile``; the name and value given with ``--arg`` are data.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from core.shell.options import attached_paths
from core.shell.programs import Handler
from core.shell.verdict import J, allow, ask

_FLAGS_LONG = frozenset(
    "null-input raw-input slurp compact-output tab ascii-output raw-output raw-output0 join-output "
    "color-output monochrome-output sort-keys exit-status seq stream stream-errors unbuffered binary "
    "help version build-configuration args jsonargs".split()
)
_FLAGS_SHORT = frozenset("nrRjacCMSsehVb")
# NAME VALUE pairs; the value is a file for the last two
_PAIRS = {"--arg": False, "--argjson": False, "--slurpfile": True, "--rawfile": True}
# import / include directives, and modulemeta, which reads the module its
# input names from the search path (~/.jq, -L ...) and prints its metadata
_MODULES = re.compile(r"(?<![\w$.\"])(?:import|include|modulemeta)(?!\w)")  # not a key: .include, "include"


@dataclass
class _Jq:
    filter: str | None = None
    filter_file: bool = False
    library: bool = False  # -L: a module search path
    files: list[str] = field(default_factory=list)
    problem: str | None = None  # an option this model does not know, or a pair cut short


def _read(args: list[str]) -> _Jq:
    jq = _Jq()
    as_strings = False
    i, n = 0, len(args)
    while i < n:
        a = args[i]
        i += 1
        if a in _PAIRS:
            if i + 2 > n:
                jq.problem = f"`{a}` needs a name and a value"
            elif _PAIRS[a]:
                jq.files.append(args[i + 1])
            i += 2
        elif a in ("-f", "--from-file", "-L", "--indent"):
            if a != "--indent" and i < n:
                jq.files.append(args[i])
            jq.filter_file = jq.filter_file or a in ("-f", "--from-file")
            jq.library = jq.library or a == "-L"
            i += 1
        elif a in ("--args", "--jsonargs"):
            as_strings = True
        elif a.startswith("-L"):
            jq.library = True
            jq.files.extend(attached_paths(a))
        elif a[:1] == "-" and len(a) > 1:
            known = a[2:] in _FLAGS_LONG if a.startswith("--") else set(a[1:]) <= _FLAGS_SHORT
            if not known and jq.problem is None:
                jq.problem = f"option `{a}`, which is not on the known read-only option list"
        elif jq.filter is None and not jq.filter_file:
            jq.filter = a
        elif not as_strings:
            jq.files.append(a)
    return jq


def _h_jq(name: str, args: list[str]) -> J:
    jq = _read(args)
    if jq.problem is not None:
        return ask(f"`{name}` with {jq.problem}")
    if jq.library:
        return ask(f"`{name} -L` adds a module search path; the modules a filter loads from it were not inspected")
    if jq.filter_file:
        return ask(f"`{name} -f` runs a filter file that was not inspected")
    if jq.filter is not None and _MODULES.search(jq.filter):
        return ask(f"the `{name}` filter loads modules (import / include / modulemeta) from files that were not inspected")
    return allow(f"`{name}` only reads JSON and prints")


def _paths(args: list[str]) -> list[str]:
    return _read(args).files


_NAMES = ("jq", "gojq", "jaq")
HANDLERS: dict[str, Handler] = dict.fromkeys(_NAMES, _h_jq)
PATH_FINDERS = dict.fromkeys(_NAMES, _paths)

# (command, verdict, substring of the reason or None), run by tests/shell/test_shell_rules.py
CASES: list[tuple[str, str, str | None]] = [
    ("jq '.name' package.json", "allow", "only reads JSON"),
    ("jq -r '.scripts | keys[]' package.json", "allow", None),
    ("jq -rc '.[] | select(.a > 1)' data.json", "allow", None),
    ("jq --arg v /etc/passwd '.path == $v' data.json", "allow", None),  # a value, not a file
    ("jq -n --argjson x 1 '$x + 1'", "allow", None),
    ("jq --slurpfile s /etc/x.json '.' data.json", "ask", "outside the workspace"),
    ("jq --rawfile s ../secret '.' data.json", "ask", "outside the workspace"),
    ("jq . /etc/os-release.json", "ask", "outside the workspace"),
    ("jq -n '$ARGS' --args /etc/passwd", "allow", None),  # positional strings after --args
    ("jq 'import \"x\" as $x; .' data.json", "ask", "modules"),
    ("jq 'include \"lib\"; .' data.json", "ask", "modules"),
    ("jq '.include' data.json", "allow", None),  # a key named include is no module
    ("jq -n '\"foo\" | modulemeta'", "ask", "modules"),  # reads ~/.jq/foo.jq (or -L's) by name
    ("jq -n '\"fo\" + \"o\" | modulemeta' data.json", "ask", "modules"),
    ("jq -L /tmp/mods '.' data.json", "ask", "search path"),
    ("jq -L/etc '.' data.json", "ask", "search path"),
    ("jq -f filter.jq data.json", "ask", "filter file"),
    ("jq -n -f /etc/filter.jq", "ask", "filter file"),
    ("jq --weird '.' data.json", "ask", "--weird"),
    ("jq --arg only", "ask", "a name and a value"),
    ("cat package.json | jq '.version'", "allow", None),
]
