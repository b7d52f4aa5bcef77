"""Adversarial corpus for core.shell.

REJECTS: (command, family, substring expected in the reason, case-insensitive).
ACCEPTS: (command, "allow" | "ask", expected argv or None).
"""

from tests.shell.shell_corpus.accepts import ACCEPTS
from tests.shell.shell_corpus.rejects import REJECTS

__all__ = ["ACCEPTS", "REJECTS"]
