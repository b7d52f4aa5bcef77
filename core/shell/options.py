"""The option model: GNU/getopt_long-style scanning of short clusters and long options. Pure."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from core.shell.verdict import J, allow, ask


@dataclass(frozen=True)
class Opts:
    short: frozenset[str]  # flags
    short_arg: frozenset[str]  # take a value (attached or the next word)
    short_opt: frozenset[str]  # take an optional attached value only
    long: frozenset[str]  # flags or optional `=value`
    long_arg: frozenset[str]  # take a value (`=value` or the next word)
    numeric: bool  # `-5` style counts
    # Value-taking options (letters and long names) whose value is data - a
    # delimiter, pattern, count or format - that the program never opens as a
    # file. Every other option value counts as a path (core.shell.paths).
    data: frozenset[str] = frozenset()


def opts(short: str = "", short_arg: str = "", long: str = "", long_arg: str = "", short_opt: str = "",
       numeric: bool = False, data: str = "") -> Opts:
    return Opts(
        frozenset(short), frozenset(short_arg), frozenset(short_opt),
        frozenset(long.split()) | {"help", "version"}, frozenset(long_arg.split()), numeric,
        frozenset(data.split()),
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


@dataclass(frozen=True)
class GitOpts:
    """One git subcommand's options, as git's parse-options sees them."""

    short: dict[str, str]  # flag letter -> its long name (or the letter itself)
    short_arg: dict[str, str]  # value-taking letter -> its long name
    long: frozenset[str]  # flags; every one can be negated with --no-NAME
    long_arg: frozenset[str]  # take a value (`=value` or the next word)
    short_opt: dict[str, str] = field(default_factory=dict)  # optional value: the rest of the word only
    long_opt: frozenset[str] = frozenset()  # optional value: `=value` only


class Parsed(NamedTuple):
    # (long name, negated, value) in the order given: the last one wins.
    events: list[tuple[str, bool, str | None]]
    positionals: list[str]
    bad: str | None  # first unknown or ambiguous option (git refuses to run)


def _git_long(given: str, spec: GitOpts) -> list[tuple[str, bool]]:
    names = spec.long | spec.long_arg | spec.long_opt
    if given in names:
        return [(given, False)]
    negatable = spec.long | spec.long_opt
    if given.startswith("no-") and given[3:] in negatable:
        return [(given[3:], True)]
    found = [(n, False) for n in names if n.startswith(given)]
    if given.startswith("no-"):
        found += [(n, True) for n in negatable if n.startswith(given[3:])]
    elif "no-".startswith(given):
        found += [(n, True) for n in negatable]  # `--n`, `--no`: abbreviations of a negation
    return found


def git_parse(args: list[str], spec: GitOpts) -> Parsed:
    """Parse ``args`` the way git's parse-options does: options anywhere before
    ``--`` (they permute), short clusters (``-nf``; a value-taking letter takes
    the rest of the word or the next word), long options by unambiguous prefix,
    and ``--no-NAME`` (abbreviated too: ``--no-dry``) negating ``--NAME``.
    Anything git would refuse (unknown, ambiguous) is reported in ``bad``."""
    events: list[tuple[str, bool, str | None]] = []
    pos: list[str] = []
    i, n = 0, len(args)
    while i < n:
        a = args[i]
        i += 1
        if a == "--":
            pos.extend(args[i:])
            break
        if a.startswith("--"):
            given, eq, val = a[2:].partition("=")
            found = _git_long(given, spec)
            if len(found) != 1:
                return Parsed(events, pos, a)
            name, negated = found[0]
            if name in spec.long_arg and not negated:
                if not eq:
                    val, i = (args[i] if i < n else ""), i + 1
                events.append((name, False, val))
            elif name in spec.long_opt and not negated:
                events.append((name, False, val if eq else None))
            elif eq:
                return Parsed(events, pos, a)  # a flag given a value: git refuses
            else:
                events.append((name, negated, None))
            continue
        if len(a) > 1 and a[0] == "-":
            for j in range(1, len(a)):
                c = a[j]
                if c in spec.short:
                    events.append((spec.short[c], False, None))
                elif c in spec.short_arg:
                    val = a[j + 1 :]
                    if not val:
                        val, i = (args[i] if i < n else ""), i + 1
                    events.append((spec.short_arg[c], False, val))
                    break
                elif c in spec.short_opt:
                    events.append((spec.short_opt[c], False, a[j + 1 :] or None))
                    break
                else:
                    return Parsed(events, pos, a)
            continue
        pos.append(a)
    return Parsed(events, pos, None)


def final_state(events: list[tuple[str, bool, str | None]], name: str) -> bool:
    """Whether flag ``name`` is on after all events (later ones override)."""
    on = False
    for ev, negated, _ in events:
        if ev == name:
            on = not negated
    return on


def attached_paths(arg: str) -> tuple[str, ...]:
    """Path-like values hidden inside an option word: ``--file=/etc/x`` and
    ``-f/etc/x`` (a short option's attached value). Over-approximates: every
    suffix of a short cluster that starts with ``/`` or ``.``."""
    if arg.startswith("--"):
        _, eq, val = arg.partition("=")
        return (val,) if eq and val else ()
    if len(arg) > 2 and arg[0] == "-":
        return tuple(arg[k:] for k in range(2, len(arg)) if arg[k] in "/." and arg[k - 1] not in "/.")
    return ()
