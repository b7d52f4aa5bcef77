"""The tools' settings: every ``AGENT_TOOLS_*`` environment variable, read in
one place and checked in one way. Pure: it reads the mapping it is given.

Fail closed: a value that cannot be used is an error naming the variable and
what it accepts, never a silently weaker fence or a default in its place.
An empty variable counts as unset. 0 turns a size or count limit off.

    settings = ToolSettings.from_env(os.environ)
    settings.bash_memory_bytes
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, Literal, Mapping

SANDBOX_ENV = "AGENT_TOOLS_SANDBOX"
BWRAP_ENV = "AGENT_TOOLS_BWRAP"
HIDE_ENV = "AGENT_TOOLS_SANDBOX_HIDE"
MEMORY_ENV = "AGENT_TOOLS_BASH_MEMORY_MB"
FILE_SIZE_ENV = "AGENT_TOOLS_BASH_FILE_MB"
MAX_PROCS_ENV = "AGENT_TOOLS_BASH_MAX_PROCS"
TOTAL_MEMORY_ENV = "AGENT_TOOLS_BASH_TOTAL_MEMORY_MB"
TMP_SIZE_ENV = "AGENT_TOOLS_BASH_TMP_MB"
SHM_SIZE_ENV = "AGENT_TOOLS_BASH_SHM_MB"
TXN_ENV = "AGENT_TOOLS_TXN"
PREIMAGE_FILE_ENV = "AGENT_TOOLS_TXN_PREIMAGE_MB"
PREIMAGE_CALL_ENV = "AGENT_TOOLS_TXN_PREIMAGE_CALL_MB"
ARTIFACTS_MAX_TOTAL_ENV = "AGENT_TOOLS_ARTIFACTS_MAX_MB"
ARTIFACTS_MAX_AGE_ENV = "AGENT_TOOLS_ARTIFACTS_MAX_AGE_H"
RG_ENV = "AGENT_TOOLS_RG"

SandboxMode = Literal["auto", "required", "off"]
SANDBOX_MODES: tuple[str, ...] = ("auto", "required", "off")
TxnMode = Literal["auto", "off"]
TXN_MODES: tuple[str, ...] = ("auto", "off")

MIB = 1 << 20
HOUR = 3600


class SettingError(ValueError):
    """A setting (environment variable) has a value we cannot use."""


def choice(name: str, raw: str, choices: tuple[str, ...]) -> str:
    value = raw.strip().lower()
    if value not in choices:
        # A typo must not silently turn a fence off.
        raise SettingError(f"{name}={raw!r} is not one of {', '.join(choices)}")
    return value


def whole(name: str, raw: str, scale: int = 1, unit: str = "") -> int:
    try:
        value = int(raw.strip())
    except ValueError:
        raise SettingError(f"{name}={raw!r} is not a whole number{unit}: set 0 (no limit) or more, or unset it") from None
    if value < 0:
        raise SettingError(f"{name}={raw!r} must be 0 (no limit) or more")
    return value * scale


def _absolute_paths(name: str, raw: str) -> tuple[str, ...]:
    paths = tuple(p for p in raw.split(":") if p)
    relative = [p for p in paths if not p.startswith("/")]
    if relative:
        raise SettingError(f"{name}={raw!r}: {relative[0]!r} is not an absolute path (':'-separated absolute paths)")
    return paths


def _path(name: str, raw: str) -> str:
    return raw.strip()


@dataclass(frozen=True)
class ToolSettings:
    sandbox: SandboxMode = "auto"  # bash's OS sandbox: auto uses it where it works
    bwrap: str = ""  # the bubblewrap binary ("": bwrap on PATH)
    sandbox_hide: tuple[str, ...] = ()  # more paths to hide inside the sandbox
    bash_memory_bytes: int = 4 << 30  # RLIMIT_AS of each process
    bash_file_bytes: int = 1 << 30  # RLIMIT_FSIZE
    bash_max_procs: int = 512  # pids cgroup
    bash_total_memory_bytes: int = 4 << 30  # memory cgroup: the command's processes together
    bash_tmp_bytes: int = 512 << 20  # the sandbox's /tmp
    bash_shm_bytes: int = 64 << 20  # its /dev/shm
    txn: TxnMode = "auto"  # transactional bash (capture, journal, rollback)
    txn_preimage_file_bytes: int = 64 << 20  # pre-images kept for rollback, per file
    txn_preimage_call_bytes: int = 512 << 20  # and per call
    artifacts_max_total_bytes: int = 256 << 20  # the artifacts folder as a whole
    artifacts_max_age_s: int = 168 * HOUR  # artifacts older than this are deleted
    rg: str = ""  # another ripgrep binary ("": the bundled one)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> "ToolSettings":
        """Every variable that is set (and not empty), checked; the others
        keep their defaults. Raises SettingError on the first bad value."""
        values: dict[str, object] = {}
        for field, (name, parse) in _VARIABLES.items():
            raw = env.get(name, "")
            if raw.strip():
                values[field] = parse(name, raw)
        return cls(**values)  # type: ignore[arg-type]

    def replace(self, **changes: object) -> "ToolSettings":
        """A copy with ``changes`` (checked like the variables: a flag that
        overrides one, say)."""
        for field, value in changes.items():
            name, parse = _VARIABLES[field]
            if isinstance(value, str):
                changes[field] = parse(name, value)
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]


def _mib(name: str, raw: str) -> int:
    return whole(name, raw, MIB, " of MiB")


_VARIABLES: dict[str, tuple[str, Callable[[str, str], object]]] = {
    "sandbox": (SANDBOX_ENV, lambda n, r: choice(n, r, SANDBOX_MODES)),
    "bwrap": (BWRAP_ENV, _path),
    "sandbox_hide": (HIDE_ENV, _absolute_paths),
    "bash_memory_bytes": (MEMORY_ENV, _mib),
    "bash_file_bytes": (FILE_SIZE_ENV, _mib),
    "bash_max_procs": (MAX_PROCS_ENV, whole),
    "bash_total_memory_bytes": (TOTAL_MEMORY_ENV, _mib),
    "bash_tmp_bytes": (TMP_SIZE_ENV, _mib),
    "bash_shm_bytes": (SHM_SIZE_ENV, _mib),
    "txn": (TXN_ENV, lambda n, r: choice(n, r, TXN_MODES)),
    "txn_preimage_file_bytes": (PREIMAGE_FILE_ENV, _mib),
    "txn_preimage_call_bytes": (PREIMAGE_CALL_ENV, _mib),
    "artifacts_max_total_bytes": (ARTIFACTS_MAX_TOTAL_ENV, _mib),
    "artifacts_max_age_s": (ARTIFACTS_MAX_AGE_ENV, lambda n, r: whole(n, r, HOUR, " of hours")),
    "rg": (RG_ENV, _path),
}
VARIABLES: tuple[str, ...] = tuple(name for name, _ in _VARIABLES.values())
