"""The turn pipeline's own cost on the embedded default: parallel speedup,
per-call overhead and throughput, each beside its baseline in the same run.

Servers: the embedded default (``runtime.devserver.DevServer`` with our
dynamic config and SQLite pragmas, headless, free ports, SQLite file in a temp
dir) and, for the per-call overhead, the untuned dev server (Temporal's own
defaults: transfer queue read at 20/s, SQLite rollback journal) so the gain of
the tuning shows. One server runs at a time.

1. Parallel speedup. Real tools finish in ~ms, so a stand-in that sleeps
   200 ms is registered under the tool names ``grep`` (concurrency-safe) and
   ``write_file`` (unsafe): the same 8 calls go through the same workflow,
   once as 8 greps (one parallel stage, gathered) and once as 8 write_files
   (8 sequential stages). Only the plan differs, so the difference is what
   the parallel stage buys. Ideal: max(t) = 200 ms. (Eight separate
   one-call turns would also pay eight workflow starts, which is not what
   the stage planner changes.) Notes give the Temporal floor: a bare
   workflow gathering 8 x 200 ms activities, and empty turn/bare workflows.
2. Per-call overhead. A turn of N write_file calls to distinct new files
   (unsafe: one stage each, so they run one after another); wall time / N,
   beside ``activities.files.write.write_file(request, args)`` called in-process N
   times on the same disk, alternated with the turns. The turn figure
   includes the turn's start and finish, spread over the N calls. Notes give
   the floor: a bare workflow of N sequential no-op activities.
3. Throughput. C concurrent turns of 4 read_file calls (one parallel stage)
   beside a bare workflow that gathers 4 no-op activities (local activities
   for the local turn, regular ones for the remote turn), on one worker
   registered with both, so worker settings are identical. Notes give the
   CPU per workflow of this process (worker + client) and of the server.

Workers are ``worker.build_worker`` (with the bench's workflow and
activities added) and the 32-thread default executor that ``worker.py``
installs. One extra per-call row runs the workflow code without the SDK
sandbox (``worker.py --unsandboxed-workflows``). The client and the worker
share this process (and its GIL), as in the tests.

    .venv/bin/python -m bench.bench_turns [--quick] [--overhead]
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    import asyncio
    import json
    import os
    import resource
    import shutil
    import statistics
    import sys
    import tempfile
    import traceback
    import time
    import uuid
    from concurrent.futures import ThreadPoolExecutor
    from dataclasses import dataclass, replace
    from datetime import timedelta
    from pathlib import Path
    from typing import Any, Awaitable, Callable

    from temporalio import activity
    from temporalio.client import Client
    from temporalio.contrib.pydantic import pydantic_data_converter
    from temporalio.worker import Worker

    from activities.files.write import write_file
    from core.contracts import (
        Policy,
        ToolCall,
        ToolRequest,
        ToolResult,
        ToolStatus,
        TurnInput,
        TurnOptions,
        TurnResult,
        Workspace,
    )
    from core.tools.specs import WriteFileArgs
    from runtime.devserver import DevServer, free_port
    from runtime.worker import build_worker
    from workflows.turn import AgentTurnWorkflow

STAND_IN_SLEEP_S = 0.2
PARALLEL_CALLS = 8
PARALLEL_SLACK_MS = 30.0
PARALLEL_MIN_SPEEDUP = 7.0
OVERHEAD_GOAL_MS = 5.0
THROUGHPUT_GOAL = 0.8
READS_PER_TURN = 4
UNTUNED_DYNAMIC_CONFIG = {"frontend.enableUpdateWorkflowExecution": "true"}
NOOP_ACTIVITY = "bench_noop"
SLEEP_ACTIVITY = "bench_sleep"


@dataclass(frozen=True)
class Sizes:
    parallel_reps: int
    overhead_calls: int
    overhead_reps: int
    concurrent_turns: int
    throughput_reps: int
    untuned_reps: int  # the untuned server's remote calls take ~50-100 ms each


QUICK = Sizes(
    parallel_reps=2, overhead_calls=20, overhead_reps=3, concurrent_turns=50, throughput_reps=2, untuned_reps=2
)
FULL = Sizes(
    parallel_reps=5, overhead_calls=20, overhead_reps=7, concurrent_turns=200, throughput_reps=4, untuned_reps=5
)


# ------------------------------------------------------------ bench worker parts
def _stand_in(name: str) -> Callable[..., Any]:
    @activity.defn(name=name)
    async def sleeping_tool(request: ToolRequest) -> ToolResult:
        await asyncio.sleep(STAND_IN_SLEEP_S)
        return ToolResult.ok(
            request.call_id, request.tool, f"stand-in: slept {STAND_IN_SLEEP_S * 1000:.0f} ms",
            elapsed_ms=STAND_IN_SLEEP_S * 1000,
        )

    sleeping_tool.__name__ = sleeping_tool.__qualname__ = f"sleeping_{name}"
    return sleeping_tool


@activity.defn(name=NOOP_ACTIVITY)
async def noop_activity(value: str) -> str:
    return value


@activity.defn(name=SLEEP_ACTIVITY)
async def sleep_activity(value: str) -> str:
    await asyncio.sleep(STAND_IN_SLEEP_S)
    return value


@workflow.defn(name="BenchBareWorkflow")
class BareWorkflow:
    """The turn's shape without the turn: trivial activities (no-op, or a
    200 ms sleep), gathered or one after another, local or regular."""

    @workflow.run
    async def run(self, calls: int, local: bool, sequential: bool = False, sleep: bool = False) -> list[str]:
        name = SLEEP_ACTIVITY if sleep else NOOP_ACTIVITY

        def one(i: int) -> Awaitable[str]:
            if local:
                return workflow.execute_local_activity(
                    name, f"c{i}", result_type=str, start_to_close_timeout=timedelta(seconds=60)
                )
            return workflow.execute_activity(
                name, f"c{i}", result_type=str, start_to_close_timeout=timedelta(seconds=120)
            )

        if sequential:
            return [await one(i) for i in range(calls)]
        return list(await asyncio.gather(*[one(i) for i in range(calls)]))


def _bench_worker(client: Client, task_queue: str, *, stand_ins: bool, sandboxed: bool = True) -> Worker:
    """worker.build_worker, plus the bench's workflow and activities (and the
    sleeping stand-ins in place of grep and write_file)."""
    extra = [noop_activity, sleep_activity]
    if stand_ins:
        extra += [_stand_in(n) for n in ("grep", "write_file")]
    return build_worker(
        client,
        task_queue=task_queue,
        workspace=None,
        default_policy=Policy(mode="auto"),
        sandboxed_workflows=sandboxed,
        extra_workflows=[BareWorkflow],
        extra_activities=extra,
    )


# ------------------------------------------------------------------ helpers
def _call(i: int, name: str, **args: object) -> ToolCall:
    return ToolCall(id=f"call_{i}", name=name, arguments=json.dumps(args))


def _turn(workspace: Path, task_queue: str, calls: list[ToolCall], execution: str) -> TurnInput:
    return TurnInput(
        turn_id=f"bench-{uuid.uuid4().hex[:12]}",
        workspace=Workspace(root=str(workspace), task_queue=task_queue),
        tool_calls=calls,
        policy=Policy(mode="auto"),
        options=TurnOptions(execution=execution),  # type: ignore[arg-type]
    )


async def _run_turn(client: Client, turn: TurnInput) -> TurnResult:
    result = await client.execute_workflow(
        AgentTurnWorkflow.run,
        turn,
        id=turn.turn_id,
        task_queue=turn.workspace.task_queue,
        result_type=TurnResult,
    )
    bad = [r for r in result.results if r.status != ToolStatus.OK]
    if bad:
        raise RuntimeError(f"turn {turn.turn_id}: {len(bad)} call(s) failed: {bad[0].output[:300]}")
    return result


async def _run_bare(
    client: Client, task_queue: str, calls: int, local: bool, sequential: bool = False, sleep: bool = False
) -> list[str]:
    return await client.execute_workflow(
        BareWorkflow.run,
        args=[calls, local, sequential, sleep],
        id=f"bench-bare-{uuid.uuid4().hex[:12]}",
        task_queue=task_queue,
        result_type=list[str],
    )


async def _timed(coro: Awaitable[Any]) -> float:
    started = time.perf_counter()
    await coro
    return time.perf_counter() - started


def _median(values: list[float]) -> float:
    return statistics.median(values)


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


class _Server:
    """A DevServer in its own temp dir, stopped (and the dir removed) on exit."""

    def __init__(self, root: Path, tuned: bool) -> None:
        self.dir = root / ("tuned" if tuned else "untuned")
        kwargs: dict[str, Any] = {}
        if not tuned:
            kwargs = {"dynamic_config": dict(UNTUNED_DYNAMIC_CONFIG), "sqlite_pragmas": []}
        self.server = DevServer(
            db_file=self.dir / "temporal.sqlite",
            port=free_port(),
            ui_port=None,
            log_file=self.dir / "server.log",
            **kwargs,
        )

    async def __aenter__(self) -> Client:
        await asyncio.to_thread(self.server.start)
        try:
            return await Client.connect(self.server.address, data_converter=pydantic_data_converter)
        except BaseException:
            await asyncio.to_thread(self.server.stop)
            raise

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self.server.stop)

    def cpu_seconds(self) -> float:
        """User + system CPU time the server process has used so far."""
        assert self.server.process is not None
        try:
            with open(f"/proc/{self.server.process.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            return float("nan")


def _own_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


# ------------------------------------------------------------------ 1. parallel
async def _parallel(client: Client, workspace: Path, sizes: Sizes, execution: str) -> dict[str, Any]:
    task_queue = f"bench-par-{uuid.uuid4().hex[:8]}"
    local = execution == "local"
    safe = [_call(i, "grep", pattern=f"p{i}") for i in range(PARALLEL_CALLS)]
    unsafe = [_call(i, "write_file", path=f"seq/{i}.txt", content="x") for i in range(PARALLEL_CALLS)]
    times: dict[str, list[float]] = {"gathered": [], "sequential": [], "bare": [], "empty_turn": [], "empty_bare": []}

    def turn(calls: list[ToolCall]) -> Awaitable[Any]:
        return _run_turn(client, _turn(workspace, task_queue, calls, execution))

    async with _bench_worker(client, task_queue, stand_ins=True):
        await turn(safe)  # warm-up
        await _run_bare(client, task_queue, PARALLEL_CALLS, local, sleep=True)
        for _ in range(sizes.parallel_reps):
            times["gathered"].append(await _timed(turn(safe)))
            times["sequential"].append(await _timed(turn(unsafe)))
            times["bare"].append(await _timed(_run_bare(client, task_queue, PARALLEL_CALLS, local, sleep=True)))
            times["empty_turn"].append(await _timed(turn([])))
            times["empty_bare"].append(await _timed(_run_bare(client, task_queue, 0, local)))
    m: dict[str, Any] = {k: _median(v) for k, v in times.items()}
    m["gathered_runs"] = times["gathered"]
    return m


def _parallel_row(m: dict[str, Any], execution: str, reps: int) -> dict[str, Any]:
    ideal = STAND_IN_SLEEP_S
    speedup = m["sequential"] / m["gathered"]
    over = (m["gathered"] - ideal) * 1000
    kind = "local" if execution == "local" else "regular"
    return {
        "benchmark": f"turn, {PARALLEL_CALLS} safe calls of 200 ms, one parallel stage ({execution})",
        "measured": f"gathered {_ms(m['gathered'])} (ideal {ideal * 1000:.0f} ms, +{over:.1f} ms)",
        "baseline": f"sequential {_ms(m['sequential'])} ({PARALLEL_CALLS} stages)",
        "ratio": round(speedup, 2),
        "goal": f"<= ideal + {PARALLEL_SLACK_MS:.0f} ms and >= {PARALLEL_MIN_SPEEDUP:.0f}x over sequential",
        "met": over <= PARALLEL_SLACK_MS and speedup >= PARALLEL_MIN_SPEEDUP,
        "notes": (
            f"ratio = speedup; median of {reps} (gathered runs "
            f"{', '.join(f'{t * 1000:.0f}' for t in m['gathered_runs'])} ms); "
            "stand-in activities sleep 200 ms (real tools take ~ms, so this isolates pipeline overhead); "
            "sequential = the same 8 calls under the unsafe name write_file, planned as 8 stages; "
            "wall time client start -> result, incl. the turn's start and finish; "
            f"bare workflow gathering 8 x 200 ms {kind} activities: {_ms(m['bare'])}; "
            f"empty turn {_ms(m['empty_turn'])}, empty bare workflow {_ms(m['empty_bare'])}"
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
        calls = [_call(i, "write_file", path=f"{prefix}/f{i}.txt", content=f"line {i}\n") for i in range(n)]
        return await _timed(_run_turn(client, _turn(workspace, task_queue, calls, execution))) / n

    async def one_bare() -> float:
        return await _timed(_run_bare(client, task_queue, n, local, sequential=True)) / n

    async with _bench_worker(client, task_queue, stand_ins=False, sandboxed=sandboxed):
        await one_turn()  # warm-up
        await one_bare()
        _in_process_writes(workspace, n)
        for _ in range(sizes.overhead_reps):
            inproc.append(_in_process_writes(workspace, n))
            turn.append(await one_turn())
            bare.append(await one_bare())
            empty.append(await _timed(_run_turn(client, _turn(workspace, task_queue, [], execution))))
    return {
        "marginal": _median([t - e / n for t, e in zip(turn, empty)]),
        "turn": _median(turn),
        "inproc": _median(inproc),
        "bare": _median(bare),
        "overhead": _median([t - i for t, i in zip(turn, inproc)]),
    }


def _overhead_row(
    m: dict[str, float], execution: str, server: str, sizes: Sizes, sandboxed: bool = True
) -> dict[str, Any]:
    overhead_ms = m["overhead"] * 1000
    kind = "local" if execution == "local" else "regular"
    sandbox = "" if sandboxed else ", unsandboxed workflows"
    return {
        "benchmark": f"turn, per sequential call ({execution} activities, {server} server{sandbox})",
        "measured": f"{m['turn'] * 1000:.2f} ms/call (overhead {overhead_ms:.2f} ms)",
        "baseline": f"write_file in-process {m['inproc'] * 1000:.2f} ms/call",
        "ratio": round(m["turn"] / m["inproc"], 2),
        "goal": f"overhead <= {OVERHEAD_GOAL_MS:.0f} ms per sequential call"
        + (" (embedded default)" if server == "tuned" else " (informational: untuned)"),
        "met": overhead_ms <= OVERHEAD_GOAL_MS,
        "notes": (
            f"a turn of {sizes.overhead_calls} write_file calls to new files (unsafe: one stage each), "
            f"wall / {sizes.overhead_calls}, incl. the turn's start and finish; overhead = median of "
            f"{sizes.overhead_reps} (turn - in-process) pairs, alternated (both fsync on the same disk); "
            f"Temporal floor, a bare workflow of {sizes.overhead_calls} sequential no-op {kind} activities: "
            f"{m['bare'] * 1000:.2f} ms/call; the turn per call without its start and finish "
            f"((turn - empty turn) / {sizes.overhead_calls}): {m['marginal'] * 1000:.2f} ms"
        ),
    }


# ------------------------------------------------------------------ 3. throughput
async def _throughput(
    client: Client, workspace: Path, sizes: Sizes, server_cpu: Callable[[], float]
) -> dict[str, dict[str, Any]]:
    task_queue = f"bench-thr-{uuid.uuid4().hex[:8]}"
    (workspace / "small.txt").write_text("".join(f"line {i}\n" for i in range(20)))
    reads = [_call(i, "read_file", path="small.txt") for i in range(READS_PER_TURN)]

    def turn_runs(execution: str) -> Callable[[int], Awaitable[Any]]:
        return lambda count: asyncio.gather(
            *[_run_turn(client, _turn(workspace, task_queue, reads, execution)) for _ in range(count)]
        )

    def bare_runs(local: bool) -> Callable[[int], Awaitable[Any]]:
        return lambda count: asyncio.gather(
            *[_run_bare(client, task_queue, READS_PER_TURN, local) for _ in range(count)]
        )

    variants: dict[str, Callable[[int], Awaitable[Any]]] = {
        "bare-remote": bare_runs(False),
        "turn-remote": turn_runs("remote"),
        "bare-local": bare_runs(True),
        "turn-local": turn_runs("local"),
    }
    stats: dict[str, dict[str, Any]] = {k: {"rates": [], "own_cpu": 0.0, "server_cpu": 0.0} for k in variants}
    count = sizes.concurrent_turns
    async with _bench_worker(client, task_queue, stand_ins=False):
        for run in variants.values():  # warm-up
            await run(min(5, count))
        for rep in range(sizes.throughput_reps):
            # Alternate the order so drift (SQLite growth, GC) hits both sides alike.
            order = list(variants.items()) if rep % 2 == 0 else list(reversed(variants.items()))
            for name, run in order:
                own, srv = _own_cpu_seconds(), server_cpu()
                stats[name]["rates"].append(count / await _timed(run(count)))
                stats[name]["own_cpu"] += _own_cpu_seconds() - own
                stats[name]["server_cpu"] += server_cpu() - srv
    for s in stats.values():
        workflows = count * sizes.throughput_reps
        s["own_ms"] = s.pop("own_cpu") * 1000 / workflows
        s["server_ms"] = s.pop("server_cpu") * 1000 / workflows
    return stats


def _throughput_row(stats: dict[str, dict[str, Any]], execution: str, sizes: Sizes) -> dict[str, Any]:
    t, b = stats[f"turn-{execution}"], stats[f"bare-{execution}"]
    turn, bare = _median(t["rates"]), _median(b["rates"])
    # Each repetition runs the turn and the bare batch back to back, so their
    # ratio cancels the drift between repetitions (other load on the machine).
    paired = _median([x / y for x, y in zip(t["rates"], b["rates"])])
    kind = "local" if execution == "local" else "regular"
    return {
        "benchmark": (
            f"throughput, {sizes.concurrent_turns} concurrent turns x {READS_PER_TURN} read_file ({execution})"
        ),
        "measured": f"{turn:.1f} turns/s",
        "baseline": f"bare workflow, {READS_PER_TURN} gathered no-op {kind} activities: {bare:.1f} wf/s",
        "ratio": round(paired, 3),
        "goal": f">= {THROUGHPUT_GOAL:.0%} of the bare figure",
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
        tuned = _Server(root, tuned=True)
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
            async with _Server(root, tuned=False) as client:
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
