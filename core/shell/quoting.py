"""Quote removal and the quoting shapes bashlex cannot be trusted with. Pure."""

from __future__ import annotations

import re


from core.shell.verdict import J, rej


_QUOTE_PART = re.compile(r"'([^']*)'|\"([^\"]*)\"|([^'\"]+)")


def unquote(raw: str) -> str:
    if "'" not in raw and '"' not in raw:
        return raw
    return "".join(a or b or c for a, b, c in _QUOTE_PART.findall(raw))


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
