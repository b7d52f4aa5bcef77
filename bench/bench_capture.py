"""Transactional bash: the cost of capture against direct execution, both in
bubblewrap.

Direct: bubblewrap's argv run as a process on a fresh workspace. Capture: the
same argv wrapped by ``txn.start(...).wrap`` (unshare + overlay mount), then
``txn.finish`` (scan the upper layer, journal with fsync'd manifest and one
syncfs, check, apply with pre-images, mark applied). Both leave the same
files in the workspace. Commands: a small one (write one file) and one that
creates 10,000 files (a shell loop of builtin ``echo``s). Each figure is the
median wall time of alternating repetitions, every repetition on a fresh
workspace; the capture column is split into the run (incl. mount) and the
finish (scan + journal + apply).

    .venv/bin/python -m bench.bench_capture [--quick]
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from activities.txn import overlay
from activities.txn import api as txn
from activities.bash.tool import bwrap_argv
from activities.sandbox.environment import DEFAULT_PATH

BWRAP = shutil.which("bwrap") or "/usr/bin/bwrap"
SMALL = "echo hello > out.txt"
MANY = "mkdir many && cd many && i=0; while [ $i -lt 10000 ]; do echo $i > f$i; i=$((i+1)); done"
GOALS = {SMALL: ("<= +50 ms over direct", lambda d, c: c - d <= 0.050),
         MANY: ("<= 3x direct", lambda d, c: c <= 3 * d)}


def _argv(ws: str, script: str) -> list[str]:
    return bwrap_argv(BWRAP, ws, ["/bin/sh", "-c", script], DEFAULT_PATH)


def _direct(script: str) -> float:
    ws = tempfile.mkdtemp(prefix="bench-direct-")
    try:
        started = time.perf_counter()
        subprocess.run(_argv(ws, script), check=True, env={"PATH": DEFAULT_PATH}, capture_output=True)
        return time.perf_counter() - started
    finally:
        shutil.rmtree(ws)


def _captured(script: str, n: int) -> tuple[float, float, float]:
    ws = tempfile.mkdtemp(prefix="bench-capture-")
    try:
        started = time.perf_counter()
        st = txn.start(ws, "bench", f"call-{n}")
        proc = subprocess.run(st.wrap(_argv(st.root, script)), env={"PATH": DEFAULT_PATH}, capture_output=True)
        ran = time.perf_counter()
        done = txn.finish(st, verdict="ask", completed=True, result={"exit_code": proc.returncode})
        finished = time.perf_counter()
        if done.capture != "applied":
            raise RuntimeError(f"capture did not apply: {done.capture}: {done.text}")
        return finished - started, ran - started, finished - ran
    finally:
        shutil.rmtree(ws)


def run(quick: bool = False) -> list[dict]:
    probe = tempfile.mkdtemp(prefix="bench-probe-")  # same filesystem as the workspaces below
    try:
        ok, reason = overlay.overlay_status(probe)
    finally:
        shutil.rmtree(probe)
    if not ok:
        return [{"benchmark": "bash capture", "measured": "", "baseline": "", "ratio": None, "goal": "",
                 "met": False, "notes": f"capture=unavailable: {reason}"}]
    rows = []
    for label, script, reps in (("small command (one file)", SMALL, 5 if quick else 21),
                                ("10,000 files created", MANY, 3 if quick else 7)):
        _direct(script), _captured(script, -1)  # warm up caches
        direct, total, runs, finishes = [], [], [], []
        for i in range(reps):
            direct.append(_direct(script))
            t, r, f = _captured(script, i)
            total.append(t), runs.append(r), finishes.append(f)
        d, c = statistics.median(direct), statistics.median(total)
        goal, check = GOALS[script]
        rows.append({
            "benchmark": f"bash with capture vs direct (both bwrap): {label}",
            "measured": f"{c * 1000:.1f} ms",
            "baseline": f"{d * 1000:.1f} ms direct",
            "ratio": round(c / d, 2),
            "goal": goal,
            "met": check(d, c),
            "notes": (f"median of {reps}; capture = run {statistics.median(runs) * 1000:.1f} ms "
                      f"+ scan/journal/apply {statistics.median(finishes) * 1000:.1f} ms; "
                      f"overhead {(c - d) * 1000:+.1f} ms"),
        })
    return rows


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    rows = run(quick="--quick" in argv)
    print(f"{'benchmark':<66} {'capture':>10} {'direct':>10} {'ratio':>6}  goal")
    for row in rows:
        print(f"{row['benchmark']:<66} {row['measured']:>10} {row['baseline'].split()[0] + ' ms':>10} "
              f"{row['ratio']:>6}  {row['goal']} ({'met' if row['met'] else 'MISSED'})")
        print(f"    {row['notes']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
