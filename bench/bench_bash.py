"""What the bash fences cost per call, in the sandbox (bubblewrap, cgroups).

Alternating, so drift hits both sides equally, median of several runs after
a warm-up:

* a plain command (``true``) through ``execute_plan`` (direct execve in the
  sandbox, cgroups, rlimits) vs. the same ``true`` spawned raw with
  ``subprocess.run``: the whole fence's overhead;
* a compound plan (``true | true && true``, rebuilt as a bash script) vs. the
  plain command through the same fence: what running the validated
  structure adds;
* ``head -c 40M /dev/zero`` (output bounded, artifact capped at 8 MiB) vs.
  raw ``head`` into /dev/null.

Wall-clock figures: the machine is shared, so read them as orders of
magnitude. Goal for the compound plan: <= 1.5x the plain command.

    .venv/bin/python -m bench.bench_bash [--quick]
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Awaitable, Callable

from activities.bash.executor import execute_plan, plan_from_argv
from core.shell.command_plan import CommandList, Pipeline, SimpleCommand

GOAL = 1.5


def _compound() -> CommandList:
    true = SimpleCommand(argv=("true",))
    return CommandList(items=(Pipeline((true, true)), Pipeline((true,))), ops=("&&",))


async def _median_pair(a: Callable[[], Awaitable[object]], b: Callable[[], Awaitable[object]],
                       reps: int) -> tuple[float, float]:
    await a()
    await b()
    ta: list[float] = []
    tb: list[float] = []
    for _ in range(reps):
        for fn, out in ((a, ta), (b, tb)):
            started = time.perf_counter()
            await fn()
            out.append(time.perf_counter() - started)
    return statistics.median(ta), statistics.median(tb)


async def _run(quick: bool) -> list[dict]:
    reps = 5 if quick else 20
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-bash-") as ws:
        async def plain():
            return await execute_plan(plan_from_argv(("true",)), ws, 30, sandbox="auto")

        async def compound():
            return await execute_plan(_compound(), ws, 30, sandbox="auto")

        async def raw_true():
            return await asyncio.to_thread(subprocess.run, ["true"])

        async def flood():
            return await execute_plan(plan_from_argv(("head", "-c", str(40 << 20), "/dev/zero")), ws, 30,
                                      sandbox="auto", artifact_root=ws)

        async def raw_flood():
            return await asyncio.to_thread(subprocess.run, ["head", "-c", str(40 << 20), "/dev/zero"],
                                           stdout=subprocess.DEVNULL)

        box = (await plain()).sandbox
        fence, raw = await _median_pair(plain, raw_true, reps)
        rows.append({
            "benchmark": f"bash fence, plain command (sandbox={box})",
            "measured": f"{fence * 1e3:.1f} ms", "baseline": f"{raw * 1e3:.1f} ms (raw spawn)",
            "ratio": round(fence / raw, 1), "goal": "report", "met": True,
            "notes": f"median of {reps}; bubblewrap + cgroups + rlimits + bounded output",
        })
        comp, plain_t = await _median_pair(compound, plain, reps)
        rows.append({
            "benchmark": "bash fence, compound plan (true | true && true) vs plain command",
            "measured": f"{comp * 1e3:.1f} ms", "baseline": f"{plain_t * 1e3:.1f} ms (plain)",
            "ratio": round(comp / plain_t, 2), "goal": f"<= {GOAL}x", "met": comp / plain_t <= GOAL,
            "notes": f"median of {reps}; rebuilt script run by bash in the same sandbox",
        })
        fl, raw_fl = await _median_pair(flood, raw_flood, max(3, reps // 4))
        rows.append({
            "benchmark": "bash fence, 40 MiB of output (bounded, 8 MiB artifact)",
            "measured": f"{fl * 1e3:.0f} ms", "baseline": f"{raw_fl * 1e3:.0f} ms (raw head > /dev/null)",
            "ratio": round(fl / raw_fl, 1), "goal": "report", "met": True,
            "notes": "collector + capped artifact",
        })
    return rows


def run(quick: bool = False) -> list[dict]:
    return asyncio.run(_run(quick))


if __name__ == "__main__":
    for row in run("--quick" in sys.argv):
        print(f"{row['benchmark']}: {row['measured']} vs {row['baseline']} = {row['ratio']}x "
              f"(goal {row['goal']}, met {row['met']}) - {row['notes']}")
