"""The turn pipeline's own cost on the embedded default: parallel stage,
per-call overhead and throughput, each beside its floor measured in the same
run.

Servers: the embedded default (``runtime.devserver.DevServer`` with our
dynamic config and SQLite pragmas, headless, free ports, SQLite file in a temp
dir) and, for the per-call overhead, the untuned dev server (Temporal's own
defaults: transfer queue read at 20/s, SQLite rollback journal) so the gain of
the tuning shows. One server runs at a time.

1. Parallel stage. Real tools finish in ~ms, so a stand-in that sleeps
   200 ms is registered under the tool names ``grep`` (concurrency-safe) and
   ``write_file`` (unsafe): the same 8 calls go through the same workflow,
   once as 8 greps (one parallel stage) and once as 8 write_files (8
   sequential stages). Goal: the gathered turn, client start to result,
   within 15 ms of the ideal max(t) = 200 ms. Notes give the Temporal floor:
   a bare workflow gathering 8 x 200 ms activities, and empty turn/bare
   workflows.
2. Per-call overhead. A turn of N write_file calls to distinct new files
   (unsafe: one stage each, so they run one after another); wall time / N,
   beside the floor: a bare workflow of N sequential no-op activities of the
   same kind, alternated with the turns. Goal: at most 1 ms over the floor
   per call. Notes give ``activities.files.write.write_file`` called
   in-process N times on the same disk (the write's own cost).
3. Throughput. C concurrent turns of 4 read_file calls (one parallel stage)
   beside a bare workflow that gathers 4 no-op activities (local activities
   for the local turn, regular ones for the remote turn), on one worker
   registered with both, so worker settings are identical. Goal: 90% of the
   bare rate. Notes give the CPU per workflow of this process (worker +
   client) and of the server.

Workers are ``runtime.worker.build_worker`` (with the bench's workflow and
activities added, ``bench.turn_parts``) and the 32-thread default executor
that ``worker.py`` installs. One extra per-call row runs the workflow code
without the SDK sandbox (``worker.py --unsandboxed-workflows``). The client
and the worker share this process (and its GIL), as in the tests.

    .venv/bin/python -m bench.bench_turns [--quick] [--overhead]
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
import time
import traceback
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any, Awaitable, Callable

from temporalio.client import Client

from activities.files.write import write_file
from bench.turn_parts import (
    FULL,
    PARALLEL_CALLS,
    QUICK,
    READS_PER_TURN,
    STAND_IN_SLEEP_S,
    Server,
    Sizes,
    bench_worker,
    fmt_ms,
    median,
    own_cpu_seconds,
    run_bare,
    run_turn,
    timed,
    tool_call,
    turn_input,
)
from core.contracts import ToolCall, ToolRequest
from core.tools.specs import WriteFileArgs

PARALLEL_SLACK_MS = 15.0
OVERHEAD_GOAL_MS = 1.0
THROUGHPUT_GOAL = 0.9


# ------------------------------------------------------------------ 1. parallel
async def _parallel(client: Client, workspace: Path, sizes: Sizes, execution: str) -> dict[str, Any]:
    task_queue = f"bench-par-{uuid.uuid4().hex[:8]}"
    local = execution == "local"
    safe = [tool_call(i, "grep", pattern=f"p{i}") for i in range(PARALLEL_CALLS)]
    unsafe = [tool_call(i, "write_file", path=f"seq/{i}.txt", content="x") for i in range(PARALLEL_CALLS)]
    times: dict[str, list[float]] = {"gathered": [], "sequential": [], "bare": [], "empty_turn": [], "empty_bare": []}

    def turn(calls: list[ToolCall]) -> Awaitable[Any]:
        return run_turn(client, turn_input(workspace, task_queue, calls, execution))

    async with bench_worker(client, task_queue, stand_ins=True):
        await turn(safe)  # warm-up
        await run_bare(client, task_queue, PARALLEL_CALLS, local, sleep=True)
        for _ in range(sizes.parallel_reps):
            times["gathered"].append(await timed(turn(safe)))
            times["sequential"].append(await timed(turn(unsafe)))
            times["bare"].append(await timed(run_bare(client, task_queue, PARALLEL_CALLS, local, sleep=True)))
            times["empty_turn"].append(await timed(turn([])))
            times["empty_bare"].append(await timed(run_bare(client, task_queue, 0, local)))
    m: dict[str, Any] = {k: median(v) for k, v in times.items()}
    m["gathered_runs"] = times["gathered"]
    return m


def _parallel_row(m: dict[str, Any], execution: str, reps: int) -> dict[str, Any]:
    ideal = STAND_IN_SLEEP_S
    speedup = m["sequential"] / m["gathered"]
    over = (m["gathered"] - ideal) * 1000
    kind = "local" if execution == "local" else "regular"
    return {
        "benchmark": f"turn, {PARALLEL_CALLS} safe calls of 200 ms, one parallel stage ({execution})",
        "measured": f"{fmt_ms(m['gathered'])} (+{over:.1f} ms over the ideal)",
        "baseline": f"ideal {ideal * 1000:.0f} ms (the slowest call)",
        "ratio": round(speedup, 2),
        "goal": f"<= ideal + {PARALLEL_SLACK_MS:.0f} ms",
        "met": over <= PARALLEL_SLACK_MS,
        "notes": (
            f"ratio = speedup over sequential {fmt_ms(m['sequential'])} (the same calls under the unsafe "
            f"name write_file: {PARALLEL_CALLS} stages); median of {reps} (gathered runs "
            f"{', '.join(f'{t * 1000:.0f}' for t in m['gathered_runs'])} ms); "
            "stand-in activities sleep 200 ms (real tools take ~ms, so this isolates pipeline overhead); "
            "wall time client start -> result, incl. the turn's start and finish; Temporal floor, a "
            f"bare workflow gathering 8 x 200 ms {kind} activities: {fmt_ms(m['bare'])}; "
            f"empty turn {fmt_ms(m['empty_turn'])}, empty bare workflow {fmt_ms(m['empty_bare'])}"
        ),
    }


# ------------------------------------------------------------------ 2. overhead
def _in_process_writes(workspace: Path, calls: int) -> float:
    """``write_file`` called directly ``calls`` times on new files; seconds per call."""
    prefix = f"inproc-{uuid.uuid4().hex[:8]}"
    requests = []
    for i in range(calls):
        args = WriteFileArgs(path=f"{prefix}/f{i}.txt", content=f"line {i}\n")
        request = ToolRequest(
            call_id=f"c{i}", tool="write_file", workspace_root=str(workspace), arguments=args.model_dump()
        )
        requests.append((request, args))
    started = time.perf_counter()
    for request, args in requests:
        result = write_file(request, args)
        if result.is_error:
            raise RuntimeError(result.output)
    return (time.perf_counter() - started) / calls


async def _overhead(
    client: Client, workspace: Path, sizes: Sizes, execution: str, sandboxed: bool = True
) -> dict[str, float]:
    """Turn per call, in-process per call (alternated with the turns, since
    fsync latency drifts), and the bare floor: a workflow of N sequential
    no-op activities of the same kind."""
    task_queue = f"bench-ovh-{uuid.uuid4().hex[:8]}"
    n = sizes.overhead_calls
    turn: list[float] = []
    inproc: list[float] = []
    bare: list[float] = []
    empty: list[float] = []
    local = execution == "local"

    async def one_turn() -> float:
        prefix = f"turn-{execution}-{uuid.uuid4().hex[:8]}"
        calls = [tool_call(i, "write_file", path=f"{prefix}/f{i}.txt", content=f"line {i}\n") for i in range(n)]
        return await timed(run_turn(client, turn_input(workspace, task_queue, calls, execution))) / n

    async def one_bare() -> float:
        return await timed(run_bare(client, task_queue, n, local, sequential=True)) / n

    async with bench_worker(client, task_queue, stand_ins=False, sandboxed=sandboxed):
        await one_turn()  # warm-up
        await one_bare()
        _in_process_writes(workspace, n)
        for _ in range(sizes.overhead_reps):
            inproc.append(_in_process_writes(workspace, n))
            turn.append(await one_turn())
            bare.append(await one_bare())
            empty.append(await timed(run_turn(client, turn_input(workspace, task_queue, [], execution))))
    return {
        "marginal": median([t - e / n for t, e in zip(turn, empty)]),
        "turn": median(turn),
        "inproc": median(inproc),
        "bare": median(bare),
        "overhead": median([t - b for t, b in zip(turn, bare)]),
    }


def _overhead_row(
    m: dict[str, float], execution: str, server: str, sizes: Sizes, sandboxed: bool = True
) -> dict[str, Any]:
    overhead_ms = m["overhead"] * 1000
    kind = "local" if execution == "local" else "regular"
    sandbox = "" if sandboxed else ", unsandboxed workflows"
    tuned = server == "tuned"
    return {
        "benchmark": f"turn, per sequential write_file ({execution} activities, {server} server{sandbox})",
        "measured": f"{m['turn'] * 1000:.2f} ms/call ({overhead_ms:+.2f} ms over the floor)",
        "baseline": f"floor: bare no-op {kind} activity {m['bare'] * 1000:.2f} ms/call",
        "ratio": round(m["turn"] / m["bare"], 2),
        "goal": (f"overhead over the floor <= {OVERHEAD_GOAL_MS:g} ms" if tuned
                 else "informational (untuned server)"),
        "met": overhead_ms <= OVERHEAD_GOAL_MS if tuned else None,
        "notes": (
            f"a turn of {sizes.overhead_calls} write_file calls to new files (unsafe: one at a time, in order; "
            f"consecutive writes run as one write_stage activity, workflows/stages/writes.py, so the turn "
            f"makes one round trip where the floor makes {sizes.overhead_calls}; a write between calls of "
            f"other kinds is still its own activity), "
            f"wall / {sizes.overhead_calls}, incl. the turn's start and finish, beside a bare workflow of "
            f"{sizes.overhead_calls} sequential no-op {kind} activities (its start and finish included "
            f"alike), same worker, alternated; overhead = median of {sizes.overhead_reps} (turn - bare) "
            f"pairs; write_file in-process {m['inproc'] * 1000:.2f} ms/call (the write's own cost, fsyncs "
            f"included); the turn per call without its start and finish ((turn - empty turn) / "
            f"{sizes.overhead_calls}): {m['marginal'] * 1000:.2f} ms"
        ),
    }


# ------------------------------------------------------------------ 3. throughput
async def _throughput(
    client: Client, workspace: Path, sizes: Sizes, server_cpu: Callable[[], float]
) -> dict[str, dict[str, Any]]:
    task_queue = f"bench-thr-{uuid.uuid4().hex[:8]}"
    (workspace / "small.txt").write_text("".join(f"line {i}\n" for i in range(20)))
    reads = [tool_call(i, "read_file", path="small.txt") for i in range(READS_PER_TURN)]

    # Started through matching, not eagerly: 200 eager starts at once hand
    # the worker 200 workflow tasks in one go (tasks then wait seconds).
    def turn_runs(execution: str) -> Callable[[int], Awaitable[Any]]:
        return lambda count: asyncio.gather(
            *[run_turn(client, turn_input(workspace, task_queue, reads, execution), eager=False) for _ in range(count)]
        )

    def bare_runs(local: bool) -> Callable[[int], Awaitable[Any]]:
        return lambda count: asyncio.gather(
            *[run_bare(client, task_queue, READS_PER_TURN, local, eager=False) for _ in range(count)]
        )

    variants: dict[str, Callable[[int], Awaitable[Any]]] = {
        "bare-remote": bare_runs(False),
        "turn-remote": turn_runs("remote"),
        "bare-local": bare_runs(True),
        "turn-local": turn_runs("local"),
    }
    stats: dict[str, dict[str, Any]] = {k: {"rates": [], "own_cpu": 0.0, "server_cpu": 0.0} for k in variants}
    count = sizes.concurrent_turns
    async with bench_worker(client, task_queue, stand_ins=False):
        for run in variants.values():  # warm-up
            await run(min(5, count))
        for rep in range(sizes.throughput_reps):
            # Alternate the order so drift (SQLite growth, GC) hits both sides alike.
            order = list(variants.items()) if rep % 2 == 0 else list(reversed(variants.items()))
            for name, run in order:
                own, srv = own_cpu_seconds(), server_cpu()
                stats[name]["rates"].append(count / await timed(run(count)))
                stats[name]["own_cpu"] += own_cpu_seconds() - own
                stats[name]["server_cpu"] += server_cpu() - srv
    for s in stats.values():
        workflows = count * sizes.throughput_reps
        s["own_ms"] = s.pop("own_cpu") * 1000 / workflows
        s["server_ms"] = s.pop("server_cpu") * 1000 / workflows
    return stats


def _throughput_row(stats: dict[str, dict[str, Any]], execution: str, sizes: Sizes) -> dict[str, Any]:
    t, b = stats[f"turn-{execution}"], stats[f"bare-{execution}"]
    turn, bare = median(t["rates"]), median(b["rates"])
    # Each repetition runs the turn and the bare batch back to back, so their
    # ratio cancels the drift between repetitions (other load on the machine).
    paired = median([x / y for x, y in zip(t["rates"], b["rates"])])
    kind = "local" if execution == "local" else "regular"
    return {
        "benchmark": (
            f"throughput, {sizes.concurrent_turns} concurrent turns x {READS_PER_TURN} read_file ({execution})"
        ),
        "measured": f"{turn:.1f} turns/s",
        "baseline": f"bare workflow, {READS_PER_TURN} gathered no-op {kind} activities: {bare:.1f} wf/s",
        "ratio": round(paired, 3),
        "goal": f">= {THROUGHPUT_GOAL:.0%} of the bare rate",
        "met": paired >= THROUGHPUT_GOAL,
        "notes": (
            f"one worker registered with both (same options), tuned server; {sizes.throughput_reps} repetitions, "
            f"order alternated; ratio = median of the per-repetition turn/bare ratios (ratio of the medians "
            f"{turn / bare:.3f}); turn runs {', '.join(f'{r:.1f}' for r in t['rates'])}, "
            f"bare runs {', '.join(f'{r:.1f}' for r in b['rates'])}; CPU per workflow: "
            f"turn {t['own_ms']:.1f} ms worker+client / {t['server_ms']:.1f} ms server, "
            f"bare {b['own_ms']:.1f} / {b['server_ms']:.1f} ms"
        ),
    }


# ------------------------------------------------------------------ run
def _error_row(name: str, exc: BaseException) -> dict[str, Any]:
    return {
        "benchmark": name,
        "measured": f"FAILED: {type(exc).__name__}: {exc}"[:300],
        "baseline": None,
        "ratio": None,
        "goal": None,
        "met": None,
        "notes": "the measurement raised; see the traceback on stderr",
        "error": True,
    }


async def _run(quick: bool, only_overhead: bool = False) -> list[dict[str, Any]]:
    sizes = QUICK if quick else FULL
    loop = asyncio.get_running_loop()
    # As worker.py: file tools run in threads; cpu+4 would cap parallel reads.
    executor = ThreadPoolExecutor(max_workers=32, thread_name_prefix="tool")
    loop.set_default_executor(executor)
    root = Path(tempfile.mkdtemp(prefix="bench-turns-"))
    workspace = root / "ws"
    workspace.mkdir()
    rows: list[dict[str, Any]] = []

    async def section(name: str, measure: Callable[[], Awaitable[list[dict[str, Any]]]]) -> None:
        """One measurement: timed, printed, and kept as an error row if it
        raises, so one failure does not lose the other rows."""
        started = time.perf_counter()
        try:
            got = await measure()
        except Exception as exc:
            traceback.print_exc()
            got = [_error_row(name, exc)]
        rows.extend(got)
        print(f"    turns: {name}: {time.perf_counter() - started:.1f} s", flush=True)

    def parallel(client: Client, execution: str) -> Callable[[], Awaitable[list[dict[str, Any]]]]:
        async def measure() -> list[dict[str, Any]]:
            m = await _parallel(client, workspace, sizes, execution)
            return [_parallel_row(m, execution, sizes.parallel_reps)]
        return measure

    def overhead(
        client: Client, execution: str, server: str, sandboxed: bool = True
    ) -> Callable[[], Awaitable[list[dict[str, Any]]]]:
        reps = sizes.overhead_reps if server == "tuned" else sizes.untuned_reps
        local_sizes = replace(sizes, overhead_reps=reps)

        async def measure() -> list[dict[str, Any]]:
            m = await _overhead(client, workspace, local_sizes, execution, sandboxed)
            return [_overhead_row(m, execution, server, local_sizes, sandboxed)]
        return measure

    try:
        tuned = Server(root, tuned=True)
        try:
            async with tuned as client:
                for execution in () if only_overhead else ("remote", "local"):
                    await section(f"parallel stage ({execution})", parallel(client, execution))
                for execution in ("local", "remote"):
                    await section(f"per-call overhead ({execution}, tuned)", overhead(client, execution, "tuned"))
                if only_overhead:
                    return rows
                await section(
                    "per-call overhead (local, tuned, unsandboxed)",
                    overhead(client, "local", "tuned", sandboxed=False),
                )

                async def throughput() -> list[dict[str, Any]]:
                    stats = await _throughput(client, workspace, sizes, tuned.cpu_seconds)
                    return [_throughput_row(stats, e, sizes) for e in ("remote", "local")]

                await section("throughput", throughput)
        except Exception as exc:  # the server itself
            traceback.print_exc()
            rows.append(_error_row("embedded default server", exc))
        try:
            async with Server(root, tuned=False) as client:
                for execution in ("remote", "local"):
                    await section(
                        f"per-call overhead ({execution}, untuned)", overhead(client, execution, "untuned")
                    )
        except Exception as exc:
            traceback.print_exc()
            rows.append(_error_row("untuned server", exc))
    finally:
        shutil.rmtree(root, ignore_errors=True)
        executor.shutdown(wait=False)
    return rows


def run(quick: bool = False, only_overhead: bool = False) -> list[dict[str, Any]]:
    return asyncio.run(_run(quick, only_overhead))


def main() -> None:
    started = time.perf_counter()
    # --overhead: only the per-call rows (write_file turns beside the bare no-op floor)
    rows = run(quick="--quick" in sys.argv[1:], only_overhead="--overhead" in sys.argv[1:])
    for row in rows:
        print(row["benchmark"])
        print(f"    measured {row['measured']} | baseline {row['baseline']} | ratio {row['ratio']}")
        print(f"    goal {row['goal']} | met {row['met']}")
        print(f"    {row['notes']}")
    print(f"({time.perf_counter() - started:.1f} s)")
    sys.stdout.flush()
    sys.stderr.flush()
    # temporalio may crash at interpreter exit (sdk-python#300).
    os._exit(1 if any(row.get("error") for row in rows) else 0)


if __name__ == "__main__":
    main()
