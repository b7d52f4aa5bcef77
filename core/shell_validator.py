"""Compatibility shim: the bash command validator lives in the package ``core.shell``.

Import from here or from ``core.shell``; ``validate_command(command)`` stays
the public entry point.
"""

from __future__ import annotations

import bashlex  # noqa: F401  (tests patch ``shell_validator.bashlex.parse``)

from core.shell import MAX_COMMAND_CHARS, Verdict, validate_command

__all__ = ["MAX_COMMAND_CHARS", "Verdict", "validate_command"]
