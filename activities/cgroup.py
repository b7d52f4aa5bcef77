"""The process cap: a ``pids`` cgroup per command, v2 or v1, created when the
cgroup filesystem is writable. Unlike RLIMIT_NPROC it also binds root, and it
doubles as a complete kill list for processes that left the process group
(``setsid``)."""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import signal
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

@dataclass(frozen=True)
class _CgroupBase:
    kind: str  # "cgroup-v2" | "cgroup-v1"
    path: Path


_cgroup_checked: list[tuple[_CgroupBase | None, str]] = []


def _own_cgroup_paths() -> tuple[str | None, str | None]:
    """(v2 path, v1 pids path) of this process."""
    v2 = v1 = None
    with open("/proc/self/cgroup") as f:
        for line in f:
            hier, _, rest = line.rstrip("\n").partition(":")
            controllers, _, path = rest.partition(":")
            if hier == "0" and controllers == "":
                v2 = path
            elif "pids" in controllers.split(","):
                v1 = path
    return v2, v1


def _cgroup_mounts() -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """([(mount root, mount point)] of cgroup2, [...] of v1 pids hierarchies)."""
    v2: list[tuple[str, str]] = []
    v1: list[tuple[str, str]] = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fields, rfields = left.split(), right.split()
            if len(fields) < 5 or len(rfields) < 3:
                continue
            root, point, fstype, opts = fields[3], fields[4], rfields[0], rfields[2]
            if fstype == "cgroup2":
                v2.append((root, point))
            elif fstype == "cgroup" and "pids" in opts.split(","):
                v1.append((root, point))
    return v2, v1


def _join(point: str, mount_root: str, own: str) -> Path | None:
    rel = os.path.relpath(own, mount_root)
    if rel.startswith(".."):
        return None
    return Path(os.path.normpath(os.path.join(point, rel)))


def _try_cgroup_child(base: _CgroupBase) -> str:
    probe = base.path / f"agent-bash-probe-{os.getpid()}-{secrets.token_hex(3)}"
    try:
        probe.mkdir()
    except OSError as exc:
        return f"cannot create a cgroup under {base.path}: {exc.strerror or exc}"
    try:
        (probe / "pids.max").write_text("1\n")
        return ""
    except OSError as exc:
        return f"cannot set pids.max under {base.path}: {exc.strerror or exc}"
    finally:
        try:
            probe.rmdir()
        except OSError:
            pass


def _find_cgroup_base() -> tuple[_CgroupBase | None, str]:
    try:
        own_v2, own_v1 = _own_cgroup_paths()
        mounts_v2, mounts_v1 = _cgroup_mounts()
    except OSError as exc:
        return None, f"cannot read cgroup information: {exc}"
    reasons: list[str] = []
    if own_v2 is not None:
        for root, point in mounts_v2:
            path = _join(point, root, own_v2)
            if path is None:
                continue
            try:
                controllers = (path / "cgroup.controllers").read_text().split()
                enabled = (path / "cgroup.subtree_control").read_text().split()
            except OSError:
                continue
            if "pids" not in controllers:
                reasons.append(f"cgroup v2 at {point}: no pids controller")
                continue
            if "pids" not in enabled:
                try:
                    (path / "cgroup.subtree_control").write_text("+pids\n")
                except OSError as exc:
                    reasons.append(f"cgroup v2 at {path}: cannot enable pids ({exc.strerror or exc})")
                    continue
            base = _CgroupBase("cgroup-v2", path)
            problem = _try_cgroup_child(base)
            if not problem:
                return base, ""
            reasons.append(problem)
    if own_v1 is not None:
        for root, point in mounts_v1:
            path = _join(point, root, own_v1)
            if path is None:
                continue
            base = _CgroupBase("cgroup-v1", path)
            problem = _try_cgroup_child(base)
            if not problem:
                return base, ""
            reasons.append(problem)
    return None, "; ".join(reasons) or "no writable pids cgroup found"


async def cgroup_base() -> tuple[_CgroupBase | None, str]:
    if not _cgroup_checked:
        found = await asyncio.to_thread(_find_cgroup_base)
        if found[0] is None:
            log.warning("bash has no process cap (no usable pids cgroup): %s", found[1])
        _cgroup_checked.append(found)
    return _cgroup_checked[0]


class Cgroup:
    """One pids cgroup per command: the process cap and the complete kill list."""

    def __init__(self, base: _CgroupBase, max_procs: int) -> None:
        self.kind = base.kind
        self.path = base.path / f"agent-bash-{os.getpid()}-{secrets.token_hex(4)}"
        self.path.mkdir()
        try:
            (self.path / "pids.max").write_text(f"{max_procs}\n")
            self.procs_fd = os.open(self.path / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC)
        except OSError:
            self._rmdir()
            raise

    def pids(self) -> list[int]:
        try:
            text = (self.path / "cgroup.procs").read_text()
        except OSError:
            return []
        return [int(p) for p in text.split()]

    def kill_all(self) -> None:
        kill_file = self.path / "cgroup.kill"  # cgroup v2, Linux >= 5.14
        if self.kind == "cgroup-v2" and kill_file.exists():
            try:
                kill_file.write_text("1\n")
                return
            except OSError:
                pass
        # v1: a process may fork between the read and the kill; repeat (the
        # pids cap bounds how many there can be).
        for _ in range(50):
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def _rmdir(self) -> bool:
        try:
            self.path.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError:
            return False

    async def remove(self) -> None:
        if self.procs_fd >= 0:
            os.close(self.procs_fd)
            self.procs_fd = -1
        for _ in range(100):  # killed processes need a moment to leave
            self.kill_all()
            if self._rmdir():
                return
            await asyncio.sleep(0.05)
        log.warning("could not remove cgroup %s (still busy)", self.path)

