"""Settings of the bash tool's fences: environment variable names, defaults,
and how a value is read (fail closed: a bad value is an error, never a
silently weaker fence). Pure apart from reading os.environ."""

from __future__ import annotations

import os

SANDBOX_ENV = "AGENT_TOOLS_SANDBOX"
BWRAP_ENV = "AGENT_TOOLS_BWRAP"
MEMORY_ENV = "AGENT_TOOLS_BASH_MEMORY_MB"
FILE_SIZE_ENV = "AGENT_TOOLS_BASH_FILE_MB"
MAX_PROCS_ENV = "AGENT_TOOLS_BASH_MAX_PROCS"
TOTAL_MEMORY_ENV = "AGENT_TOOLS_BASH_TOTAL_MEMORY_MB"  # memory cgroup: all the command's processes together

DEFAULT_MEMORY_BYTES = 4 << 30
DEFAULT_FILE_BYTES = 1 << 30
DEFAULT_MAX_PROCS = 512
DEFAULT_TOTAL_MEMORY_BYTES = 4 << 30
CPU_MARGIN_S = 15  # RLIMIT_CPU = timeout + margin: the wall-clock timeout normally fires first

DRAIN_S = 2.0  # after the process exits or is killed, wait at most this long for EOF
HEARTBEAT_EVERY_S = 2.0


class BadSetting(Exception):
    """A setting (environment variable) has a value we cannot use."""


NETWORK_ENV = "AGENT_TOOLS_BASH_NETWORK"  # "off" (default) | "on-approval"


def network_on_approval() -> bool:
    """The worker's opt-in: a command a person approved as needing the
    network runs with the host's network (still captured and gated)."""
    value = os.environ.get(NETWORK_ENV, "off").strip().lower()
    if value not in ("off", "on-approval", ""):
        raise BadSetting(f"{NETWORK_ENV}={value!r}: use 'off' or 'on-approval'")
    return value == "on-approval"


def int_setting(name: str, default: int, scale: int = 1) -> int:
    raw = os.environ.get(name, "").strip()
    if raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise BadSetting(f"{name}={raw!r} is not a whole number") from None
    if value < 0:
        raise BadSetting(f"{name}={raw!r} must be 0 (no limit) or more")
    return value * scale


def sandbox_mode(value: str | None = None) -> str:
    mode = (value if value is not None else os.environ.get(SANDBOX_ENV, "auto")).strip().lower() or "auto"
    if mode not in ("auto", "required", "off"):
        # Fail closed: a typo must not silently turn the sandbox off.
        raise BadSetting(f"{SANDBOX_ENV}={mode!r} is not one of auto, required, off")
    return mode

