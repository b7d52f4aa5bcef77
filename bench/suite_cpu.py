"""Where a command's CPU goes, by process kind: run COMMAND (the test suite,
say) and read every process's CPU from ``/proc/PID/stat`` every 0.2 s while
it runs, then print the total per kind of process (pytest-xdist workers,
``client.py`` and its subcommand, ``worker.py``, Temporal dev servers,
bwrap, git ...). Processes already running when it starts are left out.

A process that lives less than one sampling period may be missed, and one
that is sampled is counted up to its last sample (at most 0.2 s short), so
the totals are a floor; the suite's processes mostly live for seconds.

    .venv/bin/python -m bench.suite_cpu -- scripts/test
    .venv/bin/python -m bench.suite_cpu -- .venv/bin/python -m pytest -n 4 tests/cli
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import defaultdict

PERIOD_S = 0.2
TICK = os.sysconf("SC_CLK_TCK")


def kind(cmdline: list[str]) -> str:
    """A short name for what a process is, from its argv."""
    if not cmdline:
        return "?"
    program = os.path.basename(cmdline[0])
    if program == "temporal" and "start-dev" in cmdline:
        return "temporal dev server"
    if program.startswith("python"):
        rest = cmdline[1:]
        if rest[:1] == ["-u"] and any("exec(eval(" in a for a in rest):
            return "pytest-xdist worker"
        script = next((a for a in rest if not a.startswith("-")), "")
        name = os.path.basename(script)
        if name == "client.py":
            sub = next((a for a in rest[rest.index(script) + 1:] if not a.startswith("-") and ":" not in a), "")
            return f"client.py {sub}".rstrip()
        if rest[:1] == ["-m"] and len(rest) > 1:
            return f"python -m {rest[1]}"
        return f"python {name}" if name else "python"
    return program


def _stat(pid: str) -> tuple[str, float] | None:
    """(start time, CPU seconds) of a process, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return fields[19], (int(fields[11]) + int(fields[12])) / TICK


def _cmdline(pid: str) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return []


def census(command: list[str]) -> tuple[int, dict[str, list[float]]]:
    """Run ``command``; its exit code and, per kind, the CPU of each process."""
    before = {pid for pid in os.listdir("/proc") if pid.isdigit()}
    seen: dict[tuple[str, str], list] = {}
    me = str(os.getpid())
    proc = subprocess.Popen(command)
    while True:
        done = proc.poll() is not None
        for pid in os.listdir("/proc"):
            if not pid.isdigit() or pid in before or pid == me:
                continue
            stat = _stat(pid)
            if stat is None:
                continue
            started, cpu = stat
            entry = seen.get((pid, started))
            if entry is None:
                seen[(pid, started)] = [kind(_cmdline(pid)), cpu]
            else:
                entry[1] = cpu
        if done:
            break
        time.sleep(PERIOD_S)
    kinds: dict[str, list[float]] = defaultdict(list)
    for name, cpu in seen.values():
        kinds[name].append(cpu)
    return proc.returncode, kinds


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        print("usage: python -m bench.suite_cpu -- COMMAND [ARG ...]", file=sys.stderr)
        return 2
    started = time.monotonic()
    code, kinds = census(argv)
    wall = time.monotonic() - started
    total = sum(sum(v) for v in kinds.values())
    print(f"\n{' '.join(argv)}: exit {code}, {wall:.0f} s wall, {total:.0f} s CPU in its processes")
    print(f"{'CPU s':>8} {'processes':>9}  kind")
    for name, cpus in sorted(kinds.items(), key=lambda kv: -sum(kv[1]))[:25]:
        print(f"{sum(cpus):8.1f} {len(cpus):9d}  {name}")
    return code


if __name__ == "__main__":
    sys.exit(main())
