"""Where bash evaluates a variable's value as code. Pure.

Bash's arithmetic evaluates array subscripts, and a subscript may hold a
command substitution: with ``v='x[$(touch pwned)]'`` (read from a file of the
repository, say), ``let v``, ``declare -i n=$v``, ``echo ${a[$v]}``,
``echo ${s:$v}`` and ``echo ${!v}`` all run ``touch``. So do a nameref
(``declare -n r=$v`` then ``$r``), prompt expansion (``${v@P}``) and
``mapfile -C CALLBACK`` (the callback is a command written in a word). The
command that runs is in no word the validator reads, so an opaque script
(judge.py) that would evaluate an unknown value refuses instead; literal
subscripts and offsets (``${a[0]}``, ``${a[@]}``, ``${s:1:2}``) evaluate
nothing but themselves.

``test -v`` / ``[ -v`` (also subscripts) are refused by their own rule
(rules/readonly.py); ``[[ -v ]]``, arithmetic comparisons in ``[[ ]]``,
``$((...))`` and ``((...))`` by conditions.py (only literal numbers and
variables known to hold integers).
"""

from __future__ import annotations

import re

from core.shell.verdict import J, rej

H_EVALUATES = (
    "use the value as data only: index arrays and cut strings with literal numbers "
    "(`${a[0]}`, `${s:0:8}`), or do the arithmetic in a program (`expr`, `awk`, `python3 -c`)"
)

# The inside of `${...}`: a name, then what follows it.
_NAME = re.compile(r"#?([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])")
# A subscript that evaluates to nothing but itself.
_LITERAL_SUBSCRIPT = re.compile(r"\[(?:[@*]|-?[0-9]+)\]")
# A substring offset / length that is a literal number (bash allows blanks and a sign).
_LITERAL_SLICE = re.compile(r":[ \t]*-?[0-9]+[ \t]*(?::[ \t]*-?[0-9]+[ \t]*)?")
# `${!name[@]}` / `${!name[*]}` list an array's keys; `${!prefix@}` / `${!prefix*}` names.
_NAME_LISTING = re.compile(r"![A-Za-z_][A-Za-z0-9_]*(?:\[[@*]\]|[@*])")


def evaluating_expansion(inner: str) -> J | None:
    """Why ``${inner}`` would evaluate a value as code, or None (the
    expansions nested in it too: ``${v:-${a[$i]}}``)."""
    return _outer(inner) or next(filter(None, map(evaluating_expansion, _nested(inner))), None)


def _nested(inner: str) -> list[str]:
    """The insides of the ``${...}`` nested in ``inner`` (an unclosed one whole)."""
    found, i = [], inner.find("${")
    while i >= 0:
        depth, k = 0, i + 1
        while k < len(inner):
            depth += {"{": 1, "}": -1}.get(inner[k], 0)
            if depth == 0:
                break
            k += 1
        found.append(inner[i + 2 : k])
        i = inner.find("${", i + 2)
    return found


def _outer(inner: str) -> J | None:
    if inner.startswith("!"):
        if _NAME_LISTING.fullmatch(inner):
            return None
        return rej(f"`${{{inner}}}` expands the variable a value names (indirection), evaluating any "
                   "subscript in that value as code", H_EVALUATES)
    m = _NAME.match(inner)
    if m is None:
        return None  # not a parameter bash would expand: the caller's other checks apply
    rest = inner[m.end():]
    if rest.startswith("["):
        sub = _LITERAL_SUBSCRIPT.match(rest)
        if sub is None:
            return rej(f"the subscript in `${{{inner}}}` is evaluated as arithmetic, which runs the "
                       "command substitutions in a variable's value", H_EVALUATES)
        rest = rest[sub.end():]
    if rest.startswith(":") and rest[1:2] not in ("-", "=", "?", "+"):
        if not _LITERAL_SLICE.fullmatch(rest):
            return rej(f"the offset or length in `${{{inner}}}` is evaluated as arithmetic, which runs "
                       "the command substitutions in a variable's value", H_EVALUATES)
    if rest.startswith("@") and "P" in rest[1:2]:
        return rej(f"`${{{inner}}}` expands the value as a prompt, running the command substitutions in it",
                   H_EVALUATES)
    return None


# Attributes that make later assignments or uses evaluate the value: -i
# (integer: every assignment is arithmetic), -n (a name reference: the value
# names the variable used, subscript included).
_EVALUATING_ATTRIBUTES = frozenset("in")
_DECLARERS = frozenset(["declare", "typeset", "local", "readonly"])


def evaluating_builtin(argv: tuple[str, ...]) -> J | None:
    """Why the builtin ``argv`` would evaluate a value as code, or None."""
    name = argv[0] if argv else ""
    if name == "let":
        return rej("`let` evaluates its arguments as arithmetic, which runs the command substitutions "
                   "in a variable's value", H_EVALUATES)
    if name in ("mapfile", "readarray") and any(w.startswith("-") and "C" in w for w in argv[1:]):
        return rej(f"`{name} -C` runs its callback's text as a command for every chunk of lines",
                   "read the lines with `mapfile -t NAME < FILE`, then run the command on them as its own part")
    if name in _DECLARERS:
        for word in argv[1:]:
            if word == "--" or not word.startswith("-"):
                break
            hit = _EVALUATING_ATTRIBUTES.intersection(word[1:])
            if hit:
                what = "an integer (every value assigned is arithmetic)" if "i" in hit else "a name reference"
                return rej(f"`{name} {word}` makes a variable {what}, which runs the command substitutions "
                           "in a value", H_EVALUATES)
    return None


# `read`'s options that take a value (a delimiter, a count, a prompt, a
# timeout, a descriptor, a default text): the word after them is no variable.
_READ_VALUE_OPTIONS = frozenset("dnNptui")
# Builtins whose words name the variables they set or unset.
_NAMING = frozenset(["read", "unset", "export", "getopts", "wait", *_DECLARERS])
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def read_names(args: tuple[str, ...] | list[str]) -> list[str]:
    """The words of ``read ARGS`` that name variables it sets (``-a NAME``
    included): every word but the options and their values."""
    names, i = [], 0
    while i < len(args):
        word, i = args[i], i + 1
        if word == "--":
            return names + list(args[i:])
        if not word.startswith("-") or word == "-":
            names.append(word)
            continue
        for k, letter in enumerate(word[1:], 1):
            if letter in _READ_VALUE_OPTIONS:
                if k == len(word) - 1:
                    i += 1  # the value is the next word
                break
    return names


def _named(argv: tuple[str, ...]) -> list[int]:
    """The positions in ``argv`` of the words that name a variable the builtin sets or unsets."""
    name, n = argv[0], len(argv)
    if name == "read":
        names = read_names(argv[1:])
        spots, k = [], n - 1
        for word in reversed(names):  # the names are the last words of their kind: find them from the end
            while k > 0 and argv[k] != word:
                k -= 1
            spots.append(k)
            k -= 1
        return spots
    if name == "getopts":
        return [2] if n > 2 else []
    if name == "wait":
        return [k + 1 for k in range(1, n - 1) if argv[k].startswith("-") and "p" in argv[k]]
    spots, options = [], True
    for k in range(1, n):
        word = argv[k]
        if options and word == "--":
            options = False
        elif options and word[:1] in "-+" and word not in ("-", "+"):
            continue
        else:
            spots.append(k)
    return spots


# Bash's own arrays: an unknown value assigned to one by a declarer is a list too.
_BASH_ARRAYS = frozenset(
    "BASH_ARGC BASH_ARGV BASH_LINENO BASH_SOURCE BASH_REMATCH BASH_VERSINFO FUNCNAME GROUPS PIPESTATUS "
    "DIRSTACK COMP_WORDS COPROC MAPFILE".split()
)


def arrays_made(argv: tuple[str, ...]) -> list[str]:
    """The variables the builtin ``argv`` makes arrays (``read -a``,
    ``mapfile``, ``declare -a``/``-A``): a declarer's unknown value later
    assigned to one of them is parsed as a list."""
    name = argv[0] if argv else ""
    letters = "".join(w[1:] for w in argv[1:] if w[:1] in "-+" and w != "--")
    if name in ("mapfile", "readarray"):
        return [*argv[1:], "MAPFILE"]
    if (name == "read" and "a" in letters) or (name in _DECLARERS and ("a" in letters or "A" in letters)):
        return [argv[k].partition("=")[0] for k in _named(argv)]
    return []


def variable_names_problem(
    argv: tuple[str, ...], fixed: list[bool], raw: list[str], arrays: set[str] | frozenset[str] = frozenset(),
) -> J | None:
    """Why the builtin ``argv`` would evaluate a variable's name or value as
    code, or None. A name with a subscript (``read 'a[$(cmd)]'``, ``declare
    "a[$v]=1"``, ``unset "$v"``) is arithmetic, which runs the command
    substitutions in it; a subscripted ``BASH_CMDS[ls]=./x`` changes which
    file a later ``ls`` runs. A list in a declarer's word (``declare -a
    "b=($v)"``), or an unknown value it assigns to an array (``declare -a
    b=$v``, ``local b="$v"`` once ``b`` is one: ``arrays``), is parsed again
    as code. ``fixed``: each word of ``argv`` is literal; ``raw``: each as
    written (a name is plain only when written out)."""
    if not argv or argv[0] not in _NAMING:
        return None
    letters = "".join(w[1:] for w in argv[1:] if w[:1] in "-+" and w != "--")
    for k in _named(argv):
        word = argv[k]
        var, eq, value = word.partition("=")
        if argv[0] in ("read", "unset", "getopts", "wait"):
            var, eq, value = word, "", ""
        var = var[:-1] if eq and var.endswith("+") else var
        written = raw[k].partition("=")[0] if k < len(raw) else ""
        literal = k < len(fixed) and fixed[k]
        if not _VARIABLE.fullmatch(var) or not (literal or written.rstrip("+") == var):
            return rej(f"`{argv[0]}` names the variable `{word}`, which is not a plain name written out: bash "
                       "evaluates a subscript in a name as arithmetic, which runs the command substitutions in it",
                       "write each variable's name literally, without a subscript")
        if not eq or argv[0] not in _DECLARERS:
            continue
        if value.startswith("(") or (not literal and ("a" in letters or "A" in letters or var in arrays
                                                      or var in _BASH_ARRAYS)):
            return rej(f"`{argv[0]} {word}` assigns a list, or a value not known now to an array, which bash "
                       "parses again as code", "assign the elements with `NAME[0]=...` lines, or read them "
                       "with `mapfile -t NAME < FILE`")
    return None


# (command, verdict, substring of the reason or None), run by tests/shell/test_shell_rules.py
CASES: list[tuple[str, str, str | None]] = [
    # a value read from a file is data; evaluated, its `x[$(cmd)]` runs cmd
    ('for f in *; do read -r v < "$f"; let v; done', "reject", "`let`"),
    ('for f in *; do read -r v < "$f"; let "x=v+1"; done', "reject", "`let`"),
    ('for f in *; do read -r v < "$f"; declare -i n=$v; done', "reject", "integer"),
    ('for f in *; do read -r v < "$f"; local -ri n; n=$v; done', "reject", "integer"),
    ('for f in *; do read -r v < "$f"; typeset -n r=$v; echo $r; done', "reject", "name reference"),
    ('for f in *; do read -r v < "$f"; echo ${a[$v]}; done', "reject", "subscript"),
    ('for f in *; do read -r v < "$f"; echo "${a[v]}"; done', "reject", "subscript"),
    ('for f in *; do read -r v < "$f"; echo ${#a[$v]}; done', "reject", "subscript"),
    ('for f in *; do read -r v < "$f"; echo ${s:$v}; done', "reject", "offset"),
    ('for f in *; do read -r v < "$f"; echo "${s:1:$v}"; done', "reject", "offset"),
    ('for f in *; do read -r v < "$f"; echo "${@:$v}"; done', "reject", "offset"),
    ('for f in *; do read -r v < "$f"; echo ${!v}; done', "reject", "indirection"),
    ('for f in *; do read -r v < "$f"; echo ${v@P}; done', "reject", "prompt"),
    # literal subscripts and slices, name listings, other transformations: data only
    ('for f in *; do read -r v < "$f"; echo ${a[0]} ${a[@]} ${#a[*]} ${a[-1]}; done', "ask", "only reads"),
    ('for f in *; do read -r v < "$f"; echo "${v:0:8}" ${v: -2} ${v:1}; done', "ask", "only reads"),
    ('for f in *; do read -r v < "$f"; echo ${!a[@]} ${!PY*}; done', "ask", "only reads"),
    ('for f in *; do read -r v < "$f"; echo ${v:-none} ${v:+set} ${v@Q} ${v,,} ${v#x}; done', "ask", "only reads"),
    ('for f in *; do read -r v < "$f"; declare -a parts; local -r x=1; done', "ask", "only reads"),
    ("declare +i x", "ask", "opaque"),
    # a subscript in a variable's name is arithmetic too, and a list in a word is parsed again
    ("for f in *; do read -r 'a[$(touch pwned)]' < \"$f\"; done", "reject", "not a plain name"),
    ('for f in *; do read -r v < "$f"; read -r "$v" < "$f"; done', "reject", "named by a variable"),
    ('for f in *; do read -r v < "$f"; read -ra "x$v" < "$f"; done', "reject", "named by a variable"),
    ("for f in *; do declare 'a[$(touch pwned)]=1'; done", "reject", "not a plain name"),
    ('for f in *; do read -r v < "$f"; declare "$v=1"; done', "reject", "named by a variable"),
    ('for f in *; do read -r v < "$f"; declare a[$v]=1; done', "reject", "named by a variable"),
    ("for f in *; do unset 'a[$(touch pwned)]'; done", "reject", "not a plain name"),
    ('for f in *; do read -r v < "$f"; unset -v "$v"; done', "reject", "not a plain name"),
    ('for f in *; do read -r v < "$f"; typeset -a "b=($v)"; done', "reject", "not a plain name"),
    ("for f in *; do declare -a 'b=($(touch pwned))'; done", "reject", "parses again as code"),
    ("for f in *; do declare BASH_CMDS[ls]=./evil; ls; done", "reject", "not a plain name"),
    ("for f in *; do declare -A BASH_CMDS; done", "reject", "not allowed"),
    ("for f in *; do read -ra BASH_ALIASES < $f; done", "reject", "not allowed"),
    # keyword: a later `NAME=value` word anywhere in a command becomes its environment
    ("set -k; ls LD_PRELOAD=./x.so", "reject", None),
    ("for f in *; do set -ek; git log GIT_DIR=/etc; done", "reject", "environment"),
    ("for f in *; do set -o keyword; ls; done", "reject", "environment"),
    ("for f in *; do shopt -so keyword; ls; done", "reject", "environment"),
    ("for f in *; do set -eu -o pipefail; cat $f; done", "ask", "only reads"),
    ("for f in *; do wait -p 'a[$(touch pwned)]' -n; done", "reject", "not a plain name"),
    ("for f in *; do getopts ab 'a[$(touch pwned)]'; done", "reject", "not a plain name"),
    ('for f in *; do read -r -p "> " -a parts x < "$f"; local -- y=1 z+=2; unset -v x; done', "ask", "only reads"),
    ('for f in *; do read -r v < "$f"; declare -a b=$v; done', "reject", "parses again as code"),
    ('for f in *; do read -r v < "$f"; mapfile -t b < "$f"; local b="$v"; done', "reject", "parses again as code"),
    ('for f in *; do read -ra b < "$f"; read -r v < "$f"; typeset b=$v; done', "reject", "parses again as code"),
    ('for f in *; do read -r v < "$f"; local x="$v" y=${v:-1}; export Z=$v; done', "ask", "only reads"),
    # mapfile's callback is a command in a word
    ("mapfile -t -C 'touch x' -c 1 arr < a.txt", "reject", "callback"),
    ('for f in *; do readarray -tC"$f" -c 1 a < "$f"; done', "reject", "callback"),
    ("mapfile -t lines < a.txt", "ask", "only reads"),
    # nested in another expansion's default or pattern, evaluated all the same
    ('for f in *; do read -r v < "$f"; echo ${v:-${a[$v]}}; done', "reject", "subscript"),
    ('for f in *; do read -r v < "$f"; echo "${v/${!v}/x}"; done', "reject", "indirection"),
    ('for f in *; do read -r v < "$f"; echo ${v:-${w:-${s:$v}}}; done', "reject", "offset"),
]
