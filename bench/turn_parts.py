"""The parts of the turn benchmark: stand-in and bare activities, the bare
workflow (the turn's shape without the turn), the bench worker, the server
and small helpers. Kept apart from ``bench_turns`` (the measurements and
their rows) so each stays readable."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    import asyncio
    import json
    import os
    import resource
    import statistics
    import time
    import uuid
    from dataclasses import dataclass
    from datetime import timedelta
    from pathlib import Path
    from typing import Any, Awaitable, Callable

    from temporalio import activity
    from temporalio.client import Client
    from temporalio.contrib.pydantic import pydantic_data_converter
    from temporalio.worker import Worker

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
    from runtime.devserver import DevServer, free_port
    from runtime.worker import build_worker
    from workflows.turn import AgentTurnWorkflow

STAND_IN_SLEEP_S = 0.2
PARALLEL_CALLS = 8
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
def stand_in(name: str) -> Callable[..., Any]:
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


def bench_worker(client: Client, task_queue: str, *, stand_ins: bool, sandboxed: bool = True) -> Worker:
    """worker.build_worker, plus the bench's workflow and activities (and the
    sleeping stand-ins in place of grep and write_file)."""
    extra = [noop_activity, sleep_activity]
    if stand_ins:
        extra += [stand_in(n) for n in ("grep", "write_file")]
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
def tool_call(i: int, name: str, **args: object) -> ToolCall:
    return ToolCall(id=f"call_{i}", name=name, arguments=json.dumps(args))


def turn_input(workspace: Path, task_queue: str, calls: list[ToolCall], execution: str) -> TurnInput:
    return TurnInput(
        turn_id=f"bench-{uuid.uuid4().hex[:12]}",
        workspace=Workspace(root=str(workspace), task_queue=task_queue),
        tool_calls=calls,
        policy=Policy(mode="auto"),
        options=TurnOptions(execution=execution),  # type: ignore[arg-type]
    )


async def run_turn(client: Client, turn: TurnInput, eager: bool = True) -> TurnResult:
    handle = await client.start_workflow(
        AgentTurnWorkflow.run,
        turn,
        id=turn.turn_id,
        task_queue=turn.workspace.task_queue,
        result_type=TurnResult,
        request_eager_start=eager,  # as TurnClient.start_turn (one at a time)
    )
    result = await handle.result()
    bad = [r for r in result.results if r.status != ToolStatus.OK]
    if bad:
        raise RuntimeError(f"turn {turn.turn_id}: {len(bad)} call(s) failed: {bad[0].output[:300]}")
    return result


async def run_bare(
    client: Client, task_queue: str, calls: int, local: bool, sequential: bool = False, sleep: bool = False,
    eager: bool = True,
) -> list[str]:
    handle = await client.start_workflow(
        BareWorkflow.run,
        args=[calls, local, sequential, sleep],
        id=f"bench-bare-{uuid.uuid4().hex[:12]}",
        task_queue=task_queue,
        result_type=list[str],
        request_eager_start=eager,  # started as the turns are
    )
    return await handle.result()


async def timed(coro: Awaitable[Any]) -> float:
    started = time.perf_counter()
    await coro
    return time.perf_counter() - started


def median(values: list[float]) -> float:
    return statistics.median(values)


def fmt_ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


class Server:
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


def own_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


