"""The option model: GNU/getopt_long-style scanning of short clusters and long options. Pure."""

from __future__ import annotations

from dataclasses import dataclass

from core.shell.verdict import J, allow, ask


@dataclass(frozen=True)
class Opts:
    short: frozenset[str]  # flags
    short_arg: frozenset[str]  # take a value (attached or the next word)
    short_opt: frozenset[str]  # take an optional attached value only
    long: frozenset[str]  # flags or optional `=value`
    long_arg: frozenset[str]  # take a value (`=value` or the next word)
    numeric: bool  # `-5` style counts


def opts(short: str = "", short_arg: str = "", long: str = "", long_arg: str = "", short_opt: str = "",
       numeric: bool = False) -> Opts:
    return Opts(
        frozenset(short), frozenset(short_arg), frozenset(short_opt),
        frozenset(long.split()) | {"help", "version"}, frozenset(long_arg.split()), numeric,
    )


def scan(args: list[str], spec: Opts) -> tuple[str | None, list[str]]:
    """GNU-style option scan. Returns (first unknown option or None, positionals)."""
    pos: list[str] = []
    i, n = 0, len(args)
    while i < n:
        a = args[i]
        i += 1
        if a == "--":
            pos.extend(args[i:])
            break
        if a.startswith("--"):
            name, eq, _ = a[2:].partition("=")
            if name in spec.long_arg:
                if not eq:
                    i += 1
                continue
            if name in spec.long:
                continue
            return a, pos
        if len(a) > 1 and a[0] == "-":
            if spec.numeric and a[1:].isdigit():
                continue
            j, m = 1, len(a)
            while j < m:
                c = a[j]
                if c in spec.short:
                    j += 1
                    continue
                if c in spec.short_arg:
                    if j == m - 1:
                        i += 1
                    break
                if c in spec.short_opt:
                    break
                return a, pos
            continue
        pos.append(a)
    return None, pos


def long_hit(arg: str, names: tuple[str, ...], exact_ok: frozenset[str] = frozenset()) -> str | None:
    """If ``arg`` is ``--name`` or an unambiguous-looking abbreviation of one of
    ``names`` (getopt_long accepts prefixes), return the full name."""
    if not arg.startswith("--") or len(arg) < 3:
        return None
    given = arg[2:].split("=", 1)[0]
    if given in exact_ok:
        return None
    for name in names:
        if name.startswith(given):
            return name
    return None


def short_hit(arg: str, letters: str, stop: str = "") -> str | None:
    """If the short-option cluster ``arg`` contains one of ``letters`` (before a
    letter of ``stop`` that takes the rest as its value), return that letter."""
    if len(arg) < 2 or arg[0] != "-" or arg[1] == "-":
        return None
    for c in arg[1:]:
        if c in letters:
            return c
        if c in stop:
            return None
    return None


def generic_allow(name: str, args: list[str], spec: Opts, what: str) -> J:
    bad, _ = scan(args, spec)
    if bad is not None:
        return ask(f"`{name}` with option `{bad}`, which is not on the known read-only option list")
    return allow(f"`{name}` {what}")


def is_version_query(args: list[str]) -> bool:
    return len(args) == 1 and args[0] in ("--version", "-V", "version", "-v")


def prefix_matches(given: str, names: tuple[str, ...]) -> tuple[str, ...]:
    """The long options that ``--given`` may stand for (exact match wins)."""
    if given in names:
        return (given,)
    if not given:
        return ()
    return tuple(n for n in names if n.startswith(given))
