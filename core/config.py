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
MCP_TOKEN_ENV = "AGENT_TOOLS_MCP_TOKEN"
CHANGESET_MB_ENV = "AGENT_TOOLS_CHANGESET_MB"
CHANGESET_FILES_ENV = "AGENT_TOOLS_CHANGESET_FILES"
ALLOWED_MODEL_URLS_ENV = "AGENT_TOOLS_ALLOWED_MODEL_URLS"
NETWORK_ENV = "AGENT_TOOLS_BASH_NETWORK"
SCRATCH_ENV = "AGENT_TOOLS_BASH_SCRATCH"
SCRATCH_SIZE_ENV = "AGENT_TOOLS_BASH_SCRATCH_MB"
SCRATCH_MAX_AGE_ENV = "AGENT_TOOLS_BASH_SCRATCH_MAX_AGE_H"
NETWORK_MODES = ("off", "on-approval")
SCRATCH_MODES = ("on", "off")
STATE_DIR_ENV = "AGENT_TOOLS_STATE_DIR"

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


def _absolute_path(name: str, raw: str) -> str:
    path = raw.strip()
    if not path.startswith("/"):
        raise SettingError(f"{name}={raw!r} is not an absolute path; give the full path of a folder outside "
                           "every workspace")
    return path


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
    mcp_token: str = ""  # the bearer token the MCP front-end's HTTP transport requires
    changeset_bytes: int = 2 << 30  # what one captured command may change, in bytes (0 = no bound)
    changeset_files: int = 200_000  # and in paths
    bash_network: str = "off"  # on-approval: an approved "needs network" command runs with the network
    bash_scratch: str = "on"  # the sandbox's /tmp is a per-workspace scratch folder kept across calls (off: a private tmpfs)
    bash_scratch_bytes: int = 1 << 30  # the scratch folder, bounded between commands
    bash_scratch_max_age_s: int = 168 * HOUR  # a scratch folder unused this long is removed
    bash_network: str = "off"  # on-approval: an approved "needs network" command runs with the network
    bash_scratch: str = "on"  # the sandbox's /tmp is a per-workspace scratch folder kept across calls (off: a private tmpfs)
    bash_scratch_bytes: int = 1 << 30  # the scratch folder, bounded between commands
    bash_scratch_max_age_s: int = 168 * HOUR  # a scratch folder unused this long is removed
    allowed_model_urls: str = ""  # base URLs a session may name besides the worker's own (comma or space separated)
    state_dir: str = ""  # the worker's state folder ("": ~/.local/state/agent-tools); outside every workspace

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

    @classmethod
    def value_from_env(cls, field: str, env: Mapping[str, str]) -> object:
        """One setting from its variable (its default when unset), checked
        like ``from_env`` does."""
        name, parse = _VARIABLES[field]
        raw = env.get(name, "")
        return parse(name, raw) if raw.strip() else cls.__dataclass_fields__[field].default

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
    "mcp_token": (MCP_TOKEN_ENV, _path),
    "changeset_bytes": (CHANGESET_MB_ENV, _mib),
    "changeset_files": (CHANGESET_FILES_ENV, whole),
    "allowed_model_urls": (ALLOWED_MODEL_URLS_ENV, _path),
    "bash_network": (NETWORK_ENV, lambda n, r: choice(n, r, NETWORK_MODES)),
    "bash_scratch": (SCRATCH_ENV, lambda n, r: choice(n, r, SCRATCH_MODES)),
    "bash_scratch_bytes": (SCRATCH_SIZE_ENV, _mib),
    "bash_scratch_max_age_s": (SCRATCH_MAX_AGE_ENV, lambda n, r: whole(n, r, HOUR, " of hours")),
    "state_dir": (STATE_DIR_ENV, _absolute_path),
}
VARIABLES: tuple[str, ...] = tuple(name for name, _ in _VARIABLES.values())
