"""The entry point: one command string in, one Verdict out. Pure."""

from __future__ import annotations

from core.shell.facts import WorkspaceFacts
from core.shell.lexer import BAD_CHAR, FAST_COMMAND, FAST_WORD, RESERVED, char_reject, slow_lex
from core.shell.parser_check import bashlex_check
from core.shell.programs import judge
from core.shell.quoting import bashlex_trap, unquote
from core.shell.verdict import H_PLAIN, J, Verdict

MAX_COMMAND_CHARS = 10_000


def validate_command(command: str, facts: WorkspaceFacts | None = None) -> Verdict:
    """Judge ``command``. ``facts`` (from activities/command_facts.py) lets paths be
    judged by their realpath and toolchain configuration files be seen; without
    them paths are judged lexically and toolchains are assumed configured."""
    if not isinstance(command, str):
        return Verdict("reject", "the command must be a string", H_PLAIN)
    s = command.strip(" \t\n")
    if not s:
        return Verdict("reject", "empty command", "give the command to run, e.g. `ls -la src`")
    if len(s) > MAX_COMMAND_CHARS:
        return Verdict(
            "reject",
            f"the command is too long ({len(s)} characters, at most {MAX_COMMAND_CHARS})",
            "put long content in a file with the write_file tool and pass the file name",
        )
    if FAST_COMMAND.fullmatch(s):
        spans = [m.span() for m in FAST_WORD.finditer(s)]
    else:
        m = BAD_CHAR.search(s)
        if m is not None:
            return _from(char_reject(s, m))
        lexed = slow_lex(s)
        if isinstance(lexed, tuple):
            return _from(lexed)
        spans = lexed
    argv = tuple(unquote(s[a:b]) for a, b in spans)
    first_raw = s[spans[0][0] : spans[0][1]]
    if first_raw in RESERVED or argv[0] in RESERVED:
        return Verdict(
            "reject",
            f"the shell keyword `{argv[0]}` is not allowed (no compound commands)",
            "write a script file with the write_file tool and run it (e.g. `bash script.sh`)",
            argv=argv,
        )
    if "=" in argv[0]:
        return Verdict(
            "reject",
            f"variable assignments (`{argv[0]}`) are not allowed",
            "environment variables cannot be set here; pass the value as an argument or option",
            argv=argv,
        )
    if "$" in s or "`" in s or "(" in s:
        problem = bashlex_trap(s, spans)
        if problem is not None:
            return _from(problem, argv=argv)
    problem = bashlex_check(s, spans)
    if problem is not None:
        return _from(problem, argv=argv)
    program, j, paths = judge(argv, None, facts)
    return _from(j, program, argv, paths)


def _from(j: J, program: str | None = None, argv: tuple[str, ...] = (), paths: list[str] | None = None) -> Verdict:
    return Verdict(
        j.verdict, j.reason, j.hint, program, argv, destructive=j.destructive, paths=tuple(paths or ())  # type: ignore[arg-type]
    )
