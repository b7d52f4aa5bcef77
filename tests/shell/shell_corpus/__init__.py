"""Adversarial corpus for core.shell.

REJECTS: (command, family, substring expected in the reason, case-insensitive).
ACCEPTS: (command, "allow" | "ask", expected argv or None).
OPAQUE: (command, construct named in the reason): `ask` with opaque=True.
"""

from tests.shell.shell_corpus.accepts import ACCEPTS, OPAQUE
from tests.shell.shell_corpus.rejects import REJECTS

__all__ = ["ACCEPTS", "OPAQUE", "REJECTS"]
