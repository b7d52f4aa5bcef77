"""The independent cross-check: bashlex must see exactly the structure we lexed. Pure.

bashlex parses the *skeleton* (here-document bodies blanked, the
``"$(cat <<'EOF' ...)"`` idiom replaced by a same-length quoted filler; see
tokens.py) and both structures are flattened to the same shape: commands,
their word and redirection spans, and the ``&& || | ;`` operators between
them (newlines count as ``;``). Any difference, any bashlex exception, any
other node kind (compound commands, functions, assignments, expansions inside
a word) rejects. ``bashlex_trap`` keeps from bashlex the quoting it misreads.
"""

from __future__ import annotations

import re

import bashlex

from core.shell.tokens import Op, Redir, Token, Word
from core.shell.verdict import H_PLAIN, J, rej

_AFTER_CONTINUES = ("&&", "||", "|")


class _Mismatch(Exception):
    pass


def _flatten_ours(tokens: list[Token]) -> list:
    """Commands ("c"), word spans (start, end), redirections ("r", start, end)
    and operators ("&&" "||" "|" ";") in order."""
    out: list = []
    in_command = False
    for t in tokens:
        kind = type(t)
        if kind is Op:
            op = ";" if t.op == "\n" else t.op  # type: ignore[union-attr]
            if op == ";" and (not out or type(out[-1]) is str and out[-1] != "c"):
                continue  # bash allows a newline after && || | and blank lines
            out.append(op)
            in_command = False
            continue
        if not in_command:
            out.append("c")
            in_command = True
        out.append(("r", t[0], t[1]) if kind is Redir else t[:2])
    while out and out[-1] == ";":
        out.pop()
    return out


def _flatten_bashlex(node, out: list) -> None:
    kind = node.kind
    if kind in ("list", "pipeline"):
        for part in node.parts:
            if part.kind == "operator":
                out.append(";" if part.op == "\n" else part.op)
            elif part.kind == "pipe":
                if part.pipe != "|":
                    raise _Mismatch(f"pipe {part.pipe!r}")
                out.append("|")
            else:
                _flatten_bashlex(part, out)
        return
    if kind != "command":
        raise _Mismatch(f"a {kind}")
    out.append("c")
    for part in node.parts:
        if part.kind in ("word", "assignment"):
            if getattr(part, "parts", None):
                raise _Mismatch("an expansion inside a word")
            out.append(tuple(part.pos))
        elif part.kind == "redirect":
            out.append(("r", *part.pos))
        else:
            raise _Mismatch(f"a {part.kind}")


def _parse(skeleton: str) -> list | J:
    try:
        return bashlex.parse(skeleton)
    except Exception as exc:  # bashlex raises many exception types: fail closed on all
        return rej(
            f"the command could not be parsed safely ({type(exc).__name__}: {str(exc)[:120]})",
            H_PLAIN,
        )


def bashlex_check(skeleton: str, tokens: list[Token]) -> J | None:
    trees = _parse_one(skeleton)
    if isinstance(trees, J):
        return trees
    theirs: list = []
    try:
        for k, tree in enumerate(trees):
            if k and theirs and theirs[-1] != ";":
                theirs.append(";")
            _flatten_bashlex(tree, theirs)
    except _Mismatch as exc:
        return rej(f"only plain commands, lists and pipelines are allowed, found {exc}", H_PLAIN)
    while theirs and theirs[-1] == ";":
        theirs.pop()
    if theirs != _flatten_ours(tokens):
        return rej("the parser and the validator disagree about the words of this command", H_PLAIN)
    return None


def _parse_one(skeleton: str) -> list | J:
    """``_parse`` for a command that should be one top-level node: bashlex's
    ``parsesingle`` skips the search for further nodes that ``parse`` makes
    after the first (a visitor class built and walked per call, ~15% of the
    parse). When the node does not reach the end, the full parse decides."""
    try:
        tree = bashlex.parser.parsesingle(skeleton)
    except Exception:  # noqa: BLE001 - the full parse reports it (fail closed there)
        return _parse(skeleton)
    if isinstance(tree, bashlex.ast.node) and tree.pos[1] == len(skeleton):
        return [tree]  # the whole input (a heredoc's body would lie past the node's end)
    return _parse(skeleton)


def bashlex_check_plain(skeleton: str, words: list[Word]) -> J | None:
    """``bashlex_check`` for one command made of words only (the common case):
    bashlex must see one command whose plain words sit at the same spans."""
    trees = _parse_one(skeleton)
    if isinstance(trees, J):
        return trees
    if len(trees) != 1 or trees[0].kind != "command" or len(trees[0].parts) != len(words):
        return rej("the parser and the validator disagree about the words of this command", H_PLAIN)
    for node, word in zip(trees[0].parts, words):
        if node.kind not in ("word", "assignment") or getattr(node, "parts", None) or tuple(node.pos) != (word.start, word.end):
            return rej("the parser and the validator disagree about the words of this command", H_PLAIN)
    return None


_BASHLEX_TRAP = re.compile(r"[$`]|[<>]\(")


def bashlex_trap(s: str, spans: list[tuple[int, int]]) -> J | None:
    """bashlex (0.18) mishandles a single-quoted part of a word unless the word
    both starts and ends with a single quote: ``string.find("'", i)`` finds the
    opening quote itself, so the quoted text is expanded as if unquoted. With
    ``$`` that yields phantom expansions, and ``'${'+`` makes it loop forever.
    Such words never reach bashlex: a pure function cannot time it out."""
    for a, b in spans:
        if s[a] == "'" and s[b - 1] == "'" and b - a > 1:
            continue  # bashlex takes a word that starts and ends with ' as literal
        word = s[a:b]
        if _BASHLEX_TRAP.search(word):
            return rej(
                f"'$', '`' or '<(' inside quotes that do not span the whole word {word!r} "
                "cannot be checked safely",
                "quote the whole word from its first character to its last, e.g. '--opt=$x' "
                "instead of --opt='$x'",
            )
    return None
