"""The settings the tools run with, read when a call needs them.

By default every read parses the ``AGENT_TOOLS_*`` variables afresh (a few
microseconds), so a library user or a test that changes the environment is
seen at once. A worker started from the command line fixes them instead
(``use``): its flags override the environment without writing to it.
"""

from __future__ import annotations

import os

from core.config import SettingError, ToolSettings

__all__ = ["SettingError", "ToolSettings", "current", "current_value", "use"]

_fixed: ToolSettings | None = None


def current() -> ToolSettings:
    """The settings in force. Raises SettingError naming a bad variable."""
    return _fixed if _fixed is not None else ToolSettings.from_env(os.environ)


def current_value(field: str) -> object:
    """One setting in force, reading only its own variable: for paths that
    ask on every call (each write asks for the state folder several times;
    parsing every variable costs ~80 us)."""
    if _fixed is not None:
        return getattr(_fixed, field)
    return ToolSettings.value_from_env(field, os.environ)


def use(settings: ToolSettings | None) -> None:
    """Fix the settings of every tool in this process (None: back to the
    environment, read at each call)."""
    global _fixed
    _fixed = settings
