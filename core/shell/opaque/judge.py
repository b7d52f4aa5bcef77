"""Opaque commands: what the plain subset cannot prove, judged part by part. Pure.

Loops (``for``/``while``/``until``), ``if``, functions, ``$VAR`` of variables
whose value is not known at plan time, ``$(...)``/backticks/``<(...)``,
subshells ``( )`` and groups ``{ }`` do not say what will run. Such a command
is parsed with bashlex and every simple command found in the tree, including
those inside substitutions, is judged by the ordinary rules
(compound._command), with each unknown expansion replaced by a neutral word
(``PLACEHOLDER``); a rejected one rejects the whole. Otherwise the verdict is
``ask`` with ``opaque=True`` and a reason starting ``opaque: <construct>``:
the source runs as a bash script on a captured copy of the workspace, and what
it changed decides.

Still rejected whatever surrounds them: a program name that is a variable
(``$CMD args``), ``eval``/``exec``/``source``/``trap``/``alias``, background
jobs (``&``), ANSI-C quoting (``$'...'``), command substitution hidden in a
``${...}`` default or an unquoted here-document body, invisible or control
characters, non-ASCII outside quotes, and everything the rules reject
(network tools, privilege, interactive programs, ``curl ... | sh``).
``[[ ]]``, ``(( ))`` and ``$(( ))``, which bashlex cannot parse, are found
by spans.py and checked by conditions.py (bashlex reads the rest with each
one stood in for, and its tree must account for every one). Other constructs
bashlex cannot parse (``case``) keep the plain subset's rejection; so does a here-document inside a command
substitution, whose later lines bashlex loses. Quoted here-document
delimiters are read through a skeleton (text.skeleton).
"""

from __future__ import annotations

import bashlex

from core.shell.command_plan import CommandList, Pipeline, SimpleCommand
from core.shell.compound import GLOB_AFTER_CHANGE, _command, _first_word_problem, runs_download
from core.shell.environment import ASSIGNMENT, NAME, assignment_problem, unset_problem
from core.shell.opaque.conditions import (
    ASSIGNING, DEFAULT_ASSIGNMENT, arithmetic, builtin_assignments, integer_text, named_by_variable, not_integer,
    read_condition,
)
from core.shell.opaque.evaluation import arrays_made, evaluating_builtin, evaluating_expansion, read_names, variable_names_problem
from core.shell.opaque.spans import ARITH, ARITH_COMMAND, COND, Span, find_spans, stand_in
from core.shell.facts import SANDBOX_HOME, WorkspaceFacts
from core.shell.opaque.text import BRACE, alternatives, anchored, scan, skeleton, substitutions, unclosed_brace
from core.shell.tokens import Assign, Redir, Word
from core.shell.rules.rejected import lookup_only
from core.shell.rules.wrappers import UNWRAPPED, Wrapped, unwrap
from core.shell.verdict import RANK, J, Verdict, rej

# An unknown expansion is judged as this word: a relative path inside the
# workspace, a number where a count is expected, never an option.
PLACEHOLDER = "1"
OPAQUE = "opaque"
# In the reason of an opaque verdict whose every part the rules allow: with
# an empty changeset it needs no person (the effect gate decides).
READS_ONLY = "every part only reads"

# Builtins that only change the script's own state: no program runs.
STATE_BUILTINS = frozenset(
    "cd pushd popd dirs read set unset shift return exit break continue wait true false : "
    "local declare typeset readonly export getopts mapfile readarray shopt umask type let".split()
)
# Builtins a script keeps state with that the plain plan refuses as "no shell
# between the parts" (`set -e`, `exit 1`, `read x < f`): run as a script they
# mean what they say. Not `cd` (the plain plan follows it, and one that leaves
# the workspace stays refused), not `export`/`unset`/`type` (their own rules
# decide), not `umask` (the modes of every file the command creates).
SCRIPT_STATE = frozenset(
    "set shopt exit return wait read mapfile readarray local declare typeset readonly shift break continue "
    "getopts :".split()
) & STATE_BUILTINS
_ASSIGNING = frozenset("read local declare typeset readonly export getopts mapfile readarray".split())
_NEVER = frozenset(
    "eval exec source . trap alias unalias builtin enable coproc hash bind fc history complete compgen "
    "compopt disown bg fg jobs suspend logout ulimit command".split()
)
_CONSTRUCTS = {"for": "for loop", "while": "while loop", "until": "until loop", "if": "if"}
class _Stop(Exception):
    def __init__(self, j: J, where: str = "") -> None:
        super().__init__(j.reason)
        self.j, self.where = j, where


class _Judge:
    def __init__(self, s: str, facts: WorkspaceFacts | None, env: dict[str, str]) -> None:
        self.s, self.facts, self.env = s, facts, env
        self.text = s  # the command as written (``s`` may be its skeleton), for reasons
        self.constructs: list[str] = []
        self.commands: list[SimpleCommand] = []
        self.worst: tuple[J, str, tuple[str, ...]] | None = None
        self.paths: list[str] = []
        self.assigned: set[str] = set()
        self.arrays: set[str] = set()  # the variables the script made arrays (evaluation.arrays_made)
        self.downloaded: set[str] = set()
        self.braces: list[int] = []  # where the last word's brace expansions start (in its value)
        self.literal: set[int] = set()  # positions of `<<` with a quoted delimiter
        self.spans: dict[int, Span] = {}  # `[[ ]]`, `(( ))`, `$(( ))` by where they start
        self.consumed: set[int] = set()  # the spans found in bashlex's tree where bash has them
        self.evaluated: dict[str, str] = {}  # variables arithmetic evaluates: where
        self.integers: set[str] = set()  # variables set to a literal integer or an arithmetic result
        self.others: set[str] = set()  # variables set to anything else
        self.any_assigned = False  # a builtin set a variable whose name is unknown

    def construct(self, name: str) -> None:
        if name not in self.constructs:
            self.constructs.append(name)

    def show(self, node) -> str:  # type: ignore[no-untyped-def]
        text = self.text[node.pos[0] : node.pos[1]].replace("\n", " ")
        return text if len(text) <= 60 else text[:57] + "..."

    # -- the tree ---------------------------------------------------------
    def node(self, n) -> None:  # type: ignore[no-untyped-def]
        kind = n.kind
        if kind in ("list", "pipeline"):
            for p in n.parts:
                if p.kind == "operator":
                    if p.op == "&":
                        raise _Stop(rej("background jobs (`&`) are not allowed",
                                        "run the command in the foreground; the tool applies a timeout"))
                elif p.kind != "pipe":
                    self.node(p)
        elif kind == "compound":
            first = n.list[0] if n.list else None
            if first is not None and first.kind == "reservedword":
                self.construct("subshell" if first.word == "(" else "group")
            for p in n.list:
                if p.kind != "reservedword":
                    self.node(p)
            for r in getattr(n, "redirects", None) or ():
                if r.kind == "redirect":
                    self.redirect_alone(r)
        elif kind in _CONSTRUCTS:
            self.construct(_CONSTRUCTS[kind])
            parts = n.parts
            if kind == "for":  # its variable takes the listed words: integers when all are
                items = [p.pos for p in parts[2:] if p.kind == "word"]
                integer = bool(items) and all(integer_text(self.s, a, b, self.spans, True) for a, b in items)
                (self.integers if integer else self.others).add(parts[1].word)
            for k, p in enumerate(parts):
                if p.kind == "word":
                    if kind == "for" and k == 1:
                        self.assigned.add(p.word)
                    else:
                        self.value(p)
                elif p.kind not in ("reservedword", "operator"):
                    self.node(p)
        elif kind == "function":
            self.construct("function")
            for p in n.parts:
                if p.kind not in ("word", "reservedword"):
                    self.node(p)
        elif kind == "command":
            self.command(n)
        elif kind in ("reservedword", "operator", "pipe"):
            pass
        else:
            raise _Stop(rej(f"a {kind} cannot be checked", "write plain commands, loops and conditions"))

    # -- words ------------------------------------------------------------
    def value(self, w) -> tuple[str, bool, bool]:  # type: ignore[no-untyped-def]
        """(value with expansions replaced, glob, had an unknown expansion)."""
        a, b = w.pos
        subs: dict[int, tuple[int, str]] = {}
        unknown = False
        for p in getattr(w, "parts", None) or ():
            if p.kind == "parameter" and not getattr(p, "value", None) and p.pos[1] - p.pos[0] == 1:
                subs[p.pos[0]] = (p.pos[1], "$")  # a `$` that starts no expansion is literal
            elif p.kind == "parameter":
                name = getattr(p, "value", "") or ""
                if any(x in name for x in ("$(", "`", "<(", ">(")):
                    raise _Stop(rej(f"a command inside the parameter expansion `{self.s[p.pos[0]:p.pos[1]]}` "
                                    "cannot be checked", "run the inner command on its own first"))
                problem = evaluating_expansion(name)
                if problem is not None:
                    raise _Stop(problem)
                self.others.update(DEFAULT_ASSIGNMENT.findall(name)[:1])  # `${n:=value}` sets n
                known = self.env.get(name) if NAME.fullmatch(name) and name not in self.assigned else None
                if known is None:
                    unknown = True
                    self.construct("$" + name if NAME.fullmatch(name) or len(name) == 1 else "${...}")
                subs[p.pos[0]] = (p.pos[1], PLACEHOLDER if known is None else known)
            elif p.kind in ("commandsubstitution", "processsubstitution"):
                self.construct("$(...)" if p.kind == "commandsubstitution" else "<(...)")
                lo = p.pos[0] + (1 if self.s[p.pos[0]] == "`" else 2)
                if not anchored([p.command], self.s, lo, p.pos[1] - 1):
                    raise _Stop(rej(f"the substitution `{self.text[p.pos[0]:p.pos[1]][:40]}` cannot be checked",
                                    "run the inner command on its own first"))
                self.node(p.command)
                unknown = True
                subs[p.pos[0]] = (p.pos[1], PLACEHOLDER)
            elif p.kind == "tilde":
                tilde = getattr(p, "value", "~")
                unknown = unknown or tilde != "~"
                subs[p.pos[0]] = (p.pos[1], SANDBOX_HOME if tilde == "~" else PLACEHOLDER)
            else:
                raise _Stop(rej(f"a {p.kind} inside a word cannot be checked", "write the word literally"))
        out: list[str] = []
        glob = False
        quote = ""
        i = a
        s = self.s
        while i < b:
            if i in subs:
                end, text = subs[i]
                out.append(text)
                i = end
                continue
            span = self.spans.get(i)
            if span is not None:  # bash expands `$((...))` here: a number, not known before it runs
                if span.kind != ARITH or quote == "'" or span.end > b:
                    raise _Stop(rej(f"`{s[i:span.end][:40]}` stands where bash would not read it as written",
                                    "write the test or the arithmetic as a command of its own"))
                self.consumed.add(i)
                self.construct(ARITH)
                out.append(PLACEHOLDER)
                unknown = True
                i = span.end
                continue
            c = s[i]
            if quote == "'":
                if c == "'":
                    quote = ""
                else:
                    out.append(c)
            elif c == "\\":
                nxt = s[i + 1 : i + 2]
                if quote == '"' and nxt not in ('"', "\\", "$", "`", "\n"):
                    out.append(c)
                elif nxt != "\n":
                    out.append(nxt)
                i += 2
                continue
            elif c == '"':
                quote = "" if quote else '"'
            elif c == "'" and not quote:
                quote = "'"
            else:
                if not quote and c in "*?[":
                    glob = True
                if not quote and c == "{":
                    m = BRACE.match(s, i)
                    if m is not None and m.end() <= b:
                        self.construct("brace expansion")
                        self.braces.append(len("".join(out)))
                out.append(c)
            i += 1
        text = "".join(out)
        return text, glob and text != "[", unknown

    def redirect(self, r):  # type: ignore[no-untyped-def]
        """A bashlex redirect as a Redir token (and whether its target is unknown)."""
        kind, fd = r.type, r.input
        a, b = r.pos
        if kind in ("<<", "<<-"):
            body = r.heredoc.value if getattr(r, "heredoc", None) is not None else ""
            body = body[: body.rstrip("\n").rfind("\n") + 1]  # bashlex includes the delimiter line
            if a in self.literal:  # a quoted delimiter: the body is data
                return Redir(a, b, 0, "<<", body), False
            if "$((" in body or "$[" in body:
                raise _Stop(rej("arithmetic in an unquoted here-document body cannot be checked",
                                "quote the delimiter (<<'EOF') and compute the number before"))
            if "$(" in body or "`" in body:
                self.construct("here-document with substitutions")
                self.body_commands(body)
                return Redir(a, b, 0, "<<", body), False
            if "$(" in body or "`" in body:
                raise _Stop(rej("command substitution in an unquoted here-document body cannot be checked",
                                "quote the delimiter (<<'EOF') so the body is taken literally"))
            if "$" in body:
                self.construct("here-document with variables")  # bash expands them in the body
            else:
                self.construct("unquoted here-document")
            return Redir(a, b, 0, "<<", body), False
        if kind == "<<<":
            text, _, unknown = self.value(r.output)
            return Redir(a, b, 0, "<<", text + "\n"), False
        if kind == ">&" and isinstance(r.output, int):
            return Redir(a, b, 1 if fd is None else fd, ">&", str(r.output)), False
        ops = {">": ">", ">>": ">>", "<": "<", "&>": ">", ">|": ">", ">&": ">"}
        if kind not in ops or isinstance(r.output, int):
            raise _Stop(rej(f"the redirection `{kind}` is not allowed", "use `>`, `>>`, `<` or `2>&1`"))
        target, glob, unknown = self.value(r.output)
        if glob:
            raise _Stop(rej(f"a glob in the redirection target `{self.show(r.output)}` is not allowed",
                            "name one file"))
        if kind in ("&>", ">&"):
            fd = -1
        elif fd is None:
            fd = 0 if kind == "<" else 1
        return Redir(a, b, fd, ops[kind], target), unknown

    def body_commands(self, body: str) -> None:
        """The command substitutions in an unquoted here-document body: each
        inner command is judged like any other (bash runs them)."""
        inners = substitutions(body)
        if isinstance(inners, J):
            raise _Stop(inners)
        for inner in inners:
            problem = scan(inner)
            if problem is None and unclosed_brace(inner):
                problem = rej("an unclosed `${` in a here-document body", "quote the delimiter (<<'EOF')")
            if problem is not None:
                raise _Stop(problem)
            try:
                trees = bashlex.parse(inner)
            except Exception:
                raise _Stop(rej(f"the command substitution `{inner[:40]}` in a here-document body cannot be parsed",
                                "quote the delimiter (<<'EOF') so the body is taken literally")) from None
            if not anchored(trees, inner):
                raise _Stop(rej("a command substitution in a here-document body cannot be checked",
                                "quote the delimiter (<<'EOF') so the body is taken literally"))
            sub = _Judge(inner, self.facts, self.env)
            sub.assigned, sub.downloaded, sub.arrays = self.assigned, self.downloaded, self.arrays
            for tree in trees:
                sub.node(tree)
            for name in sub.constructs:
                self.construct(name)
            self.commands.extend(sub.commands)
            self.paths.extend(sub.paths)
            if sub.worst is not None:
                self.note(*sub.worst)

    def redirect_alone(self, r) -> None:  # type: ignore[no-untyped-def]
        """A redirection of a whole loop or group: judged as if `cat` had it."""
        token, unknown = self.redirect(r)
        got = _command([Word(r.pos[0], r.pos[0], "true", False), token], None, self.facts)
        if isinstance(got, J):
            raise _Stop(got, self.show(r))
        command, j, _, paths = got
        self.paths.extend(paths)
        self.note(j._replace(destructive=j.destructive or (unknown and token.op == ">")), self.show(r), ())

    def note(self, j: J, where: str, argv: tuple[str, ...]) -> None:
        if self.worst is None or RANK[j.verdict] > RANK[self.worst[0].verdict] or (
            j.destructive and not self.worst[0].destructive and j.verdict == self.worst[0].verdict
        ):
            self.worst = (j, where, argv)

    # -- one simple command -------------------------------------------------
    def command(self, n) -> None:  # type: ignore[no-untyped-def]
        first = n.parts[0] if n.parts else None
        span = self.spans.get(first.pos[0]) if first is not None and first.kind == "word" else None
        if span is not None and span.kind in (COND, ARITH_COMMAND) and first.pos[1] == span.end:
            self.construct(span.kind)
            if len(n.parts) != 1:
                raise _Stop(rej(f"a {span.kind} with redirections or more words cannot be checked",
                                "write the test alone, and redirect the commands it guards"), self.show(n))
            self.consumed.add(span.start)
            if span.kind == COND:
                return self.conditional(span, n)
            self.commands.append(SimpleCommand(("((", "))"), (), (), None, "allow", "`((...))` only computes", False))
            return self.note(J("allow", "`((...))` only computes"), self.show(n), ("((",))
        tokens: list = []
        spread: list[tuple[int, list[str]]] = []  # brace words: token index, their expansions
        words = []
        unknown_target = False
        literal = True  # every word as written (no variable, substitution or brace)
        fixed: list[bool] = []  # the same, word by word
        for p in n.parts:
            if p.kind == "assignment" and not words:
                m = ASSIGNMENT.match(p.word)
                if m is None:
                    raise _Stop(rej(f"the assignment `{self.show(p)}` cannot be checked", "write NAME=value"))
                problem = assignment_problem(m.group(1))
                if problem is not None:
                    raise _Stop(problem, self.show(p))
                value, _, _ = self.value(p)
                self.assigned.add(m.group(1))
                integer = "+=" not in m.group(0) and integer_text(self.s, p.pos[0] + m.end(), p.pos[1], self.spans)
                (self.integers if integer else self.others).add(m.group(1))
                tokens.append(Assign(p.pos[0], p.pos[1], m.group(1), value.partition("=")[2]))
            elif p.kind in ("word", "assignment"):
                words.append(p)
                self.braces = []
                value, glob, unknown = self.value(p)
                if self.braces:
                    spread.append((len(tokens), alternatives(value, self.braces)))
                fixed.append(not (unknown or getattr(p, "parts", None) or self.braces))
                literal = literal and fixed[-1]
                if len(words) == 1 and (unknown or getattr(p, "parts", None) or self.braces):
                    what = "a brace expansion" if self.braces else "a variable or a substitution"
                    raise _Stop(rej(f"the program name `{self.show(p)}` is {what}: what runs "
                                    "cannot be known", "write the program's name literally"), self.show(n))
                tokens.append(Word(p.pos[0], p.pos[1], value, glob))
            elif p.kind == "redirect":
                token, unknown = self.redirect(p)
                unknown_target = unknown_target or (unknown and token.op == ">")
                tokens.append(token)
            else:
                raise _Stop(rej(f"a {p.kind} in a command cannot be checked", "write plain commands"))
        if not words:
            self.construct("variable assignment")
            if any(type(t) is Redir for t in tokens):
                raise _Stop(rej("a redirection without a command", "put the program before the redirection"))
            return
        first = next(t for t in tokens if type(t) is Word)
        problem = _first_word_problem(first)
        if problem is not None:
            raise _Stop(problem, self.show(n))
        name = first.value
        argv = tuple(t.value for t in tokens if type(t) is Word)
        wrapped = unwrap(argv) if name in UNWRAPPED else None
        if isinstance(wrapped, Wrapped) and not all(fixed[: wrapped.size + 1]):
            # bash expands the wrapper's words and its program's name before it runs: what runs cannot be known
            raise _Stop(rej(f"a word of `{name}` or the name of the program it runs is a variable, a substitution "
                            "or a brace expansion: what runs cannot be known",
                            "write the wrapper's options and the program's name literally"), self.show(n))
        if name in _NEVER and not (literal and lookup_only(argv)):  # `command -v NAME` only prints (its rule)
            raise _Stop(rej(f"`{name}` runs code the validator cannot see (or changes the shell itself)",
                            "run the command itself directly"), self.show(n))
        if name in ("set", "shopt") and any("k" in w[1:] and w[:1] in "-+" and w[1:2] != "-" or "keyword" in w
                                             for w in argv[1:]):
            # `set -k`: a later `ls LD_PRELOAD=./x.so` puts the word in ls's environment, not its arguments
            raise _Stop(rej(f"`{name} ... keyword` makes every `NAME=value` word of a later command part of its "
                            "environment", "write assignments before the program"), self.show(n))
        if name in SCRIPT_STATE:
            self.construct(f"`{name}`")  # what the plain plan, with no shell between its parts, cannot run
        raw = [self.s[p.pos[0]:p.pos[1]] for p in words]
        problem = (
            evaluating_builtin(argv) or (named_by_variable(argv, raw, fixed) if name in ASSIGNING else None)
            or variable_names_problem(argv, fixed, raw, self.arrays)
        )
        if problem is not None:
            raise _Stop(problem, self.show(n))
        if name in ASSIGNING:  # what arithmetic may later evaluate
            self.any_assigned = self.any_assigned or not all(fixed)
            for names, found in zip((self.integers, self.others), builtin_assignments(argv)):
                names.update(found)
        self.arrays.update(arrays_made(argv))
        if name in STATE_BUILTINS:
            if name == "unset":  # the script's later programs lose what the sandbox set for them
                for var in argv[1:]:
                    problem = unset_problem(var) if NAME.fullmatch(var) else None
                    if problem is not None:
                        raise _Stop(problem, self.show(n))
            if name in _ASSIGNING:
                for arg in read_names(argv[1:]) if name == "read" else argv[1:]:
                    var = arg.partition("=")[0]
                    if NAME.fullmatch(var):
                        problem = assignment_problem(var)
                        if problem is not None:
                            raise _Stop(problem, self.show(n))
                        self.assigned.add(var)
            j = J("allow", f"`{name}` is a shell builtin (the script's own state)")
            redirs = [t for t in tokens if type(t) is Redir]
            if redirs:
                got = _command([Word(n.pos[0], n.pos[0], "true", False), *redirs], None, self.facts)
                if isinstance(got, J):
                    raise _Stop(got, self.show(n))
                _, rj, _, paths = got
                self.paths.extend(paths)
                j = rj._replace(reason=f"`{name}`: {rj.reason}")
            command = SimpleCommand(argv, (), (), None, j.verdict, j.reason, j.destructive)  # type: ignore[arg-type]
        else:
            for k, options in reversed(spread):  # a brace word is the words bash expands it to
                tokens[k : k + 1] = [tokens[k]._replace(value=option) for option in options]
            got = _command(tokens, None, self.facts)
            if isinstance(got, J):
                raise _Stop(got, self.show(n))
            command, j, program, paths = got
            argv = command.argv
            ran = runs_download(program, paths, self.downloaded)
            if ran is not None:
                raise _Stop(ran, self.show(n))
            if program in ("curl", "wget"):
                self.downloaded.update(paths)
            self.paths.extend(paths)
        if unknown_target and not j.destructive:
            j = j._replace(destructive=True, reason=f"{j.reason}; writes a file named by a variable (may overwrite)")
        self.commands.append(command)
        self.note(j, self.show(n), argv)

    # -- `[[ ]]` and arithmetic ---------------------------------------------
    def conditional(self, span: Span, n) -> None:  # type: ignore[no-untyped-def]
        """A ``[[ ]]``: its words judged like any word, file tests as ``test``,
        arithmetic comparisons only of known integers."""
        where = self.show(n)
        checks = read_condition(self.s, tuple(self.spans.values()), span, lambda node: self.value(node)[0])
        if isinstance(checks, J):
            raise _Stop(checks, where)
        values, names, argvs = checks
        for name in names:
            self.evaluated.setdefault(name, where)
        for argv in argvs:  # file tests, judged as `test` (the path rules)
            got = _command([Word(n.pos[0], n.pos[0], w, False) for w in argv], None, self.facts)
            if isinstance(got, J):
                raise _Stop(got, where)
            _, j, _, paths = got
            self.paths.extend(paths)
            self.note(j._replace(reason=j.reason.replace("`test`", "`[[ ]]`")), where, ("[[",))
        j = J("allow", "`[[ ]]` only checks a condition")
        argv = ("[[", *values, "]]")
        self.commands.append(SimpleCommand(argv, (), (), None, "allow", j.reason, False))  # type: ignore[arg-type]
        self.note(j, where, argv)

    def arithmetic(self) -> None:
        """Every ``$(( ))`` and ``(( ))``: only numbers, operators and names."""
        for span in (sp for sp in self.spans.values() if sp.kind != COND):
            got = arithmetic(self.s, span)
            if isinstance(got, J):
                self.construct(span.kind)
                raise _Stop(got, self.text[span.start : span.end])
            self.evaluated.update({name: self.text[span.start : span.end] for name in got.used})
            self.integers.update(got.assigned)

    def finish(self) -> None:
        """After the whole script: every span was where bash reads it, and
        every variable arithmetic evaluates is an integer (conditions.py)."""
        for span in (sp for start, sp in self.spans.items() if start not in self.consumed):
            self.construct(span.kind)
            raise _Stop(rej(f"`{self.text[span.start:span.end][:40]}` stands where bash would not read it as "
                            "written", "write the test or the arithmetic as a command of its own"))
        for name, where in self.evaluated.items():
            problem = not_integer(name, self.env, self.integers, self.others | ({name} if self.any_assigned else set()))
            if problem is not None:
                raise _Stop(problem, where)


def judge_opaque(s: str, facts: WorkspaceFacts | None, env: dict[str, str], plain: str = "") -> Verdict | None:
    """The verdict of ``s`` as an opaque script, or None when it has no opaque
    construct (or bashlex cannot parse it): the plain subset's rejection stands.
    ``plain`` is that rejection's reason: a command the plain subset refused
    only for quoting it cannot cross-check (``'$'`` or ``->(`` inside a
    double-quoted word) is opaque too (construct "quoting")."""
    spans: list[Span] = []
    if "[[" in (joined := s.replace("\\\n", "")) or "((" in joined:
        found = find_spans(s)
        if found is None:
            return None
        if isinstance(found, J):
            return _reject(found, "")
        spans = found
    literal: set[int] = set()
    # arithmetic holds only numbers, names and operators (conditions.arithmetic): `<<` there is a shift
    problem = scan(stand_in(s, [sp for sp in spans if sp.kind != COND]), literal)
    if problem is not None:
        # the plain subset's reason stands when it is as good (no opaque construct in sight,
        # or a here-document idiom it already explained)
        if ("$" not in s and "(" not in s and "{" not in s) or "here-document" in plain:
            return None
        return _reject(problem, "")
    parsed = skeleton(s, literal) if literal else s
    if unclosed_brace(parsed):
        return None  # (see unclosed_brace) the plain subset's rejection stands
    read = stand_in(parsed, spans) if spans else parsed
    try:
        trees = bashlex.parse(read)
    except Exception:  # bashlex raises many exception types: keep the plain rejection
        return None
    if not anchored(trees, read):
        return None
    judge = _Judge(parsed, facts, env)
    judge.literal, judge.text = literal, s
    judge.spans = {span.start: span for span in spans}
    try:
        judge.arithmetic()
        for tree in trees:
            judge.node(tree)
        judge.finish()
    except _Stop as stop:
        if not judge.constructs:
            return None
        return _reject(stop.j, stop.where)
    except (AttributeError, IndexError, TypeError):  # a tree shape not foreseen: fail closed
        return None
    if not judge.constructs and "cannot be checked safely" in plain:
        judge.construct("quoting")
    if not judge.constructs and GLOB_AFTER_CHANGE in plain:
        judge.construct("a glob after a part that may change files")  # bash expands it when its turn comes
    if not judge.constructs or not judge.commands or judge.worst is None:
        return None
    j, where, argv = judge.worst
    what = ", ".join(judge.constructs)
    reads = f"; {READS_ONLY}" if j.verdict == "allow" else ""
    reason = f"{OPAQUE}: {what}{reads}; runs as a script whose effects are checked; strictest part `{where}`: {j.reason}"
    commands = tuple(
        c if RANK[c.verdict] >= RANK["ask"] else SimpleCommand(
            c.argv, c.globs, c.redirects, c.stdin_text, "ask", c.reason, c.destructive, c.env, c.wrapper)
        for c in judge.commands
    )
    plan = CommandList(tuple(Pipeline((c,)) for c in commands), (";",) * (len(commands) - 1), None, s)
    destructive = any(c.destructive for c in commands)
    program = argv[0].rsplit("/", 1)[-1] if argv else None
    return Verdict("ask", reason, None, program, argv, plan, destructive, tuple(judge.paths), True)


def _reject(j: J, where: str) -> Verdict:
    reason = f"{OPAQUE} command: `{where}` is rejected: {j.reason}" if where else j.reason
    return Verdict("reject", reason, j.hint)
