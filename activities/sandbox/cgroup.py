"""Per-command cgroups: a process cap and a memory limit for the whole command.

``pids``: unlike RLIMIT_NPROC it also binds root, and its member list is a
complete kill list for processes that left the process group (``setsid``).
``memory``: RLIMIT_AS bounds each process on its own; a command that starts
many processes (or fills the sandbox's tmpfs /tmp, whose pages are charged to
the writer's cgroup) is bounded only by a memory cgroup.

Both come from cgroup v2 where this process's v2 group has the controller,
else from the v1 hierarchy of that controller, created per command when the
cgroup filesystem is writable. Where neither works the command runs without
it and the result says why (``process_cap_reason``, ``memory_cap_reason``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import signal
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

CONTROLLERS = ("pids", "memory")
# The file a probe writes to prove it may set the controller's limit.
_PROBE_FILE = {("pids", "cgroup-v2"): "pids.max", ("pids", "cgroup-v1"): "pids.max",
               ("memory", "cgroup-v2"): "memory.max", ("memory", "cgroup-v1"): "memory.limit_in_bytes"}
_PROBE_VALUE = {"pids": "1\n", "memory": f"{64 << 20}\n"}


@dataclass(frozen=True)
class CgroupBase:
    kind: str  # "cgroup-v2" | "cgroup-v1"
    path: Path  # this process's own cgroup: per-command groups are made under it


_checked: dict[str, tuple[CgroupBase | None, str]] = {}


def _own_cgroup_paths(controller: str) -> tuple[str | None, str | None]:
    """(v2 path, v1 path of the controller's hierarchy) of this process."""
    v2 = v1 = None
    with open("/proc/self/cgroup") as f:
        for line in f:
            hier, _, rest = line.rstrip("\n").partition(":")
            controllers, _, path = rest.partition(":")
            if hier == "0" and controllers == "":
                v2 = path
            elif controller in controllers.split(","):
                v1 = path
    return v2, v1


def _cgroup_mounts(controller: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """([(mount root, mount point)] of cgroup2, [...] of the controller's v1 hierarchies)."""
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
            elif fstype == "cgroup" and controller in opts.split(","):
                v1.append((root, point))
    return v2, v1


def _join(point: str, mount_root: str, own: str) -> Path | None:
    rel = os.path.relpath(own, mount_root)
    if rel.startswith(".."):
        return None
    return Path(os.path.normpath(os.path.join(point, rel)))


def _try_cgroup_child(base: CgroupBase, controller: str) -> str:
    probe = base.path / f"agent-bash-probe-{os.getpid()}-{secrets.token_hex(3)}"
    limit_file = _PROBE_FILE[(controller, base.kind)]
    try:
        probe.mkdir()
    except OSError as exc:
        return f"cannot create a cgroup under {base.path}: {exc.strerror or exc}"
    try:
        (probe / limit_file).write_text(_PROBE_VALUE[controller])
        return ""
    except OSError as exc:
        return f"cannot set {limit_file} under {base.path}: {exc.strerror or exc}"
    finally:
        try:
            probe.rmdir()
        except OSError:
            pass


def _find_cgroup_base(controller: str) -> tuple[CgroupBase | None, str]:
    try:
        own_v2, own_v1 = _own_cgroup_paths(controller)
        mounts_v2, mounts_v1 = _cgroup_mounts(controller)
    except OSError as exc:
        return None, f"cannot read cgroup information: {exc}"
    reasons: list[str] = []
    if own_v2 is not None:
        for root, point in mounts_v2:
            path = _join(point, root, own_v2)
            if path is None:
                continue
            try:
                available = (path / "cgroup.controllers").read_text().split()
                enabled = (path / "cgroup.subtree_control").read_text().split()
            except OSError:
                continue
            if controller not in available:
                reasons.append(f"cgroup v2 at {point}: no {controller} controller")
                continue
            if controller not in enabled:
                try:
                    (path / "cgroup.subtree_control").write_text(f"+{controller}\n")
                except OSError as exc:
                    reasons.append(f"cgroup v2 at {path}: cannot enable {controller} ({exc.strerror or exc})")
                    continue
            base = CgroupBase("cgroup-v2", path)
            problem = _try_cgroup_child(base, controller)
            if not problem:
                return base, ""
            reasons.append(problem)
    if own_v1 is not None:
        for root, point in mounts_v1:
            path = _join(point, root, own_v1)
            if path is None:
                continue
            base = CgroupBase("cgroup-v1", path)
            problem = _try_cgroup_child(base, controller)
            if not problem:
                return base, ""
            reasons.append(problem)
    return None, "; ".join(reasons) or f"no writable {controller} cgroup found"


async def cgroup_base(controller: str = "pids") -> tuple[CgroupBase | None, str]:
    """Where per-command cgroups of ``controller`` can be made (probed once)."""
    if controller not in _checked:
        found = await asyncio.to_thread(_find_cgroup_base, controller)
        if found[0] is None:
            log.warning("bash has no %s cgroup (the command runs without that cap): %s", controller, found[1])
        _checked[controller] = found
    return _checked[controller]


class Cgroup:
    """The cgroups of one command: one folder per hierarchy (v2: one folder
    for both controllers; v1: one per controller), joined by the child
    between fork and exec through ``procs_fds``."""

    def __init__(self, bases: dict[str, CgroupBase], max_procs: int = 0, memory_bytes: int = 0) -> None:
        name = f"agent-bash-{os.getpid()}-{secrets.token_hex(4)}"
        self.dirs: dict[Path, str] = {}  # folder -> kind
        self.procs_fds: list[int] = []
        self.controllers = dict(bases)
        try:
            for base in bases.values():
                folder = base.path / name
                if folder not in self.dirs:
                    folder.mkdir()
                    self.dirs[folder] = base.kind
            if "pids" in bases and max_procs:
                (self._folder("pids") / "pids.max").write_text(f"{max_procs}\n")
            if "memory" in bases and memory_bytes:
                self._set_memory(memory_bytes)
            for folder in self.dirs:
                self.procs_fds.append(os.open(folder / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC))
        except OSError:
            for fd in self.procs_fds:
                os.close(fd)
            self._rmdirs()
            raise

    def _folder(self, controller: str) -> Path:
        return self.controllers[controller].path / next(iter(self.dirs)).name

    def _set_memory(self, limit: int) -> None:
        folder = self._folder("memory")
        if self.controllers["memory"].kind == "cgroup-v2":
            (folder / "memory.max").write_text(f"{limit}\n")
            swap = folder / "memory.swap.max"
            if swap.exists():
                swap.write_text("0\n")  # the limit is for RAM + swap: no escape into swap
        else:
            (folder / "memory.limit_in_bytes").write_text(f"{limit}\n")
            memsw = folder / "memory.memsw.limit_in_bytes"  # RAM + swap; must not be below the RAM limit
            if memsw.exists():
                try:
                    memsw.write_text(f"{limit}\n")
                except OSError:
                    pass  # swap accounting off: the RAM limit alone holds

    def memory_limit_hit(self) -> bool:
        """Whether the kernel's OOM killer acted in this command's memory cgroup
        (or, v1 without an oom_kill counter, allocations failed at the limit)."""
        if "memory" not in self.controllers:
            return False
        folder = self._folder("memory")
        try:
            if self.controllers["memory"].kind == "cgroup-v2":
                events = dict(line.split() for line in (folder / "memory.events").read_text().splitlines())
                return int(events.get("oom_kill", "0")) > 0 or int(events.get("oom", "0")) > 0
            control = dict(line.split() for line in (folder / "memory.oom_control").read_text().splitlines())
            if "oom_kill" in control:
                return int(control["oom_kill"]) > 0
            return int((folder / "memory.failcnt").read_text()) > 0
        except (OSError, ValueError):
            return False

    def pids(self) -> list[int]:
        found: set[int] = set()
        for folder in self.dirs:
            try:
                found.update(int(p) for p in (folder / "cgroup.procs").read_text().split())
            except OSError:
                pass
        return sorted(found)

    def kill_all(self) -> None:
        for folder, kind in self.dirs.items():
            kill_file = folder / "cgroup.kill"  # cgroup v2, Linux >= 5.14
            if kind == "cgroup-v2" and kill_file.exists():
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

    def _rmdirs(self) -> bool:
        done = True
        for folder in self.dirs:
            try:
                folder.rmdir()
            except FileNotFoundError:
                pass
            except OSError:
                done = False
        return done

    async def remove(self) -> None:
        for fd in self.procs_fds:
            os.close(fd)
        self.procs_fds = []
        for _ in range(100):  # killed processes need a moment to leave
            self.kill_all()
            if self._rmdirs():
                return
            await asyncio.sleep(0.05)
        log.warning("could not remove cgroups %s (still busy)", ", ".join(map(str, self.dirs)))
