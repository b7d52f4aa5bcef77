"""Settings of the bash tool's fences: the variable names and defaults (from
``core.config``, where every ``AGENT_TOOLS_*`` variable is read and checked)
and the timing constants of a run."""

from __future__ import annotations

from activities.settings import current
from core.config import (
    BWRAP_ENV,
    FILE_SIZE_ENV,
    MAX_PROCS_ENV,
    MEMORY_ENV,
    SANDBOX_ENV,
    SANDBOX_MODES,
    TOTAL_MEMORY_ENV,
    SettingError,
    ToolSettings,
    choice,
)

__all__ = ["BWRAP_ENV", "FILE_SIZE_ENV", "MAX_PROCS_ENV", "MEMORY_ENV", "SANDBOX_ENV", "TOTAL_MEMORY_ENV",
           "BadSetting", "sandbox_mode"]

BadSetting = SettingError  # the name the bash tool reports it under

DEFAULT_MEMORY_BYTES = ToolSettings.bash_memory_bytes
DEFAULT_FILE_BYTES = ToolSettings.bash_file_bytes
DEFAULT_MAX_PROCS = ToolSettings.bash_max_procs
DEFAULT_TOTAL_MEMORY_BYTES = ToolSettings.bash_total_memory_bytes
CPU_MARGIN_S = 15  # RLIMIT_CPU = timeout + margin: the wall-clock timeout normally fires first

DRAIN_S = 2.0  # after the process exits or is killed, wait at most this long for EOF
HEARTBEAT_EVERY_S = 2.0


def network_on_approval() -> bool:
    """The worker's opt-in: a command a person approved as needing the
    network runs with the host's network (still captured and gated)."""
    return current().bash_network == "on-approval"


def sandbox_mode(value: str | None = None) -> str:
    """``value`` checked, or (None) the sandbox mode in force."""
    if value is None or not value.strip():
        return current().sandbox
    return choice(SANDBOX_ENV, value, SANDBOX_MODES)
