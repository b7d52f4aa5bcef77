"""Where the parallel turn's time goes: the 8 x 200 ms turn of
``bench_turns`` (stand-in greps, one read stage), run N times on the
embedded default server, each history event's time and the client's own
marks (start call returned, result in hand) as medians from the client's
start. The gaps are the pipeline's pieces: the start call, the first
workflow task (planning included), the stage activity, the final workflow
task, the result's way back to the client.

    .venv/bin/python -m bench.turn_timeline [remote|local] [--runs N] [--no-eager]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import tempfile
import time
import uuid
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from temporalio.api.enums.v1 import EventType

from bench.turn_parts import PARALLEL_CALLS, Server, bench_worker, tool_call, turn_input
from core.contracts import TurnResult
from workflows.turn import AgentTurnWorkflow


async def _timeline(execution: str, runs: int, eager: bool) -> list[tuple[str, float]]:
    asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(max_workers=32))
    root = Path(tempfile.mkdtemp(prefix="bench-timeline-"))
    workspace = root / "ws"
    workspace.mkdir()
    marks: dict[str, list[float]] = defaultdict(list)
    try:
        async with Server(root, tuned=True) as client:
            queue = f"bench-tl-{uuid.uuid4().hex[:8]}"
            calls = [tool_call(i, "grep", pattern=f"p{i}") for i in range(PARALLEL_CALLS)]
            async with bench_worker(client, queue, stand_ins=True):
                for run in range(runs + 2):  # the first two warm up
                    turn = turn_input(workspace, queue, calls, execution)
                    started = time.time()
                    handle = await client.start_workflow(
                        AgentTurnWorkflow.run, turn, id=turn.turn_id, task_queue=queue, result_type=TurnResult,
                        request_eager_start=eager,
                    )
                    returned = time.time()
                    await handle.result()
                    done = time.time()
                    if run < 2:
                        continue
                    marks["client: start call returned"].append(returned - started)
                    seen: dict[str, int] = defaultdict(int)
                    for event in (await handle.fetch_history()).events:
                        name = EventType.Name(event.event_type).removeprefix("EVENT_TYPE_").lower()
                        seen[name] += 1
                        label = f"server: {name}" + (f" #{seen[name]}" if seen[name] > 1 else "")
                        marks[label].append(event.event_time.ToMicroseconds() / 1e6 - started)
                    marks["client: result in hand"].append(done - started)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return sorted(((k, statistics.median(v)) for k, v in marks.items()), key=lambda kv: kv[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("execution", nargs="?", choices=("remote", "local"), default="local")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--no-eager", action="store_true", help="start through matching, not eagerly")
    args = parser.parse_args()
    rows = asyncio.run(_timeline(args.execution, args.runs, not args.no_eager))
    print(f"turn of {PARALLEL_CALLS} x 200 ms safe calls ({args.execution}), medians of {args.runs} runs, ms:")
    last = 0.0
    for label, at in rows:
        print(f"  {at * 1000:7.1f}  (+{(at - last) * 1000:5.1f})  {label}")
        last = at
    os._exit(0)  # temporalio may crash at interpreter exit (sdk-python#300)


if __name__ == "__main__":
    main()
