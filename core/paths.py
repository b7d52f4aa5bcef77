"""Path containment, the one lexical check every layer uses. Pure: it compares
the strings it is given, so resolve both (realpath, or a descriptor-based
walk) before asking about real files."""

from __future__ import annotations


def within(path: str, folder: str) -> bool:
    """Whether ``path`` is ``folder`` or lies beneath it ("/ws2" is not
    beneath "/ws"; everything is beneath "/")."""
    return path == folder or path.startswith(folder.rstrip("/") + "/")
