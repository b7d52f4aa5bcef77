"""The independent cross-check: bashlex must see exactly the structure we lexed. Pure."""

from __future__ import annotations

import bashlex

from core.shell.verdict import H_PLAIN, H_SEPARATE, J, rej


def bashlex_check(s: str, spans: list[tuple[int, int]]) -> J | None:
    try:
        trees = bashlex.parse(s)
    except Exception as exc:  # bashlex raises many exception types: fail closed on all
        return rej(
            f"the command could not be parsed safely ({type(exc).__name__}: {str(exc)[:120]})",
            H_PLAIN,
        )
    if len(trees) != 1:
        return rej("more than one statement found", H_SEPARATE)
    tree = trees[0]
    if tree.kind != "command":
        return rej(f"only a plain command is allowed, found a {tree.kind}", H_PLAIN)
    parts = tree.parts
    if len(parts) != len(spans):
        return rej("the parser and the validator disagree about the words of this command", H_PLAIN)
    for node, span in zip(parts, spans):
        if node.kind != "word":
            return rej(f"only plain words are allowed, found a {node.kind}", H_PLAIN)
        if getattr(node, "parts", None):
            # bashlex expands `$`/backticks inside a single-quoted part that does not
            # start the word (--eval='$x'); bash would not, but fail closed.
            word = s[span[0] : span[1]]
            return rej(
                f"the parser sees an expansion in the word {word!r} ('$' or '`' inside quotes "
                "that do not span the whole word)",
                "quote the whole word from its first character, e.g. '--opt=$x' instead of --opt='$x'",
            )
        if tuple(node.pos) != span:
            return rej("the parser and the validator disagree about the words of this command", H_PLAIN)
    return None
