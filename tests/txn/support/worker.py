"""A worker process for the transactional-bash crash tests (run as
``python -m tests.txn.support.worker ADDRESS TASK_QUEUE``): one activity that runs a
shell script in bubblewrap through activities/txn/api.py, the way the bash
activity will once it is wired, retried by a one-step workflow.

``TXN_PAUSE_FILE`` (environment): after journaling, touch that file and hang
before applying, so a test can SIGKILL the worker between journal and apply.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from datetime import timedelta

from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.common import RetryPolicy
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from activities.txn import journal
from activities.txn import api as txn
from tests.txn.support.helpers import DEFAULT_PATH, sandboxed


@activity.defn(name="txn_bash")
async def txn_bash(args: list[str]) -> dict:
    root, turn_id, call_id, script = args
    attempt = activity.info().attempt
    started = txn.start(root, turn_id, call_id)
    if started.mode in ("resume", "done"):  # a retry after a lost worker: never run again
        done = txn.resume(root, turn_id, call_id)
        return {"mode": started.mode, "capture": done.capture, "stored": done.stored, "attempt": attempt}
    proc = await asyncio.create_subprocess_exec(
        *started.wrap(sandboxed(root, script)), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        env={"PATH": DEFAULT_PATH, "ATTEMPT": str(attempt)},
    )
    reading = asyncio.ensure_future(proc.stdout.read())
    while not reading.done():
        activity.heartbeat()
        await asyncio.wait({reading}, timeout=0.5)
    await proc.wait()
    result = {"exit_code": proc.returncode, "output": reading.result().decode()}
    done = txn.finish(started, verdict="ask", completed=True, result=result)
    return {"mode": started.mode, "capture": done.capture, "stored": result, "attempt": attempt}


@workflow.defn(name="TxnBashWorkflow")
class TxnBashWorkflow:
    @workflow.run
    async def run(self, args: list[str]) -> dict:
        return await workflow.execute_activity(
            "txn_bash", args, start_to_close_timeout=timedelta(seconds=120), heartbeat_timeout=timedelta(seconds=2),
            retry_policy=RetryPolicy(maximum_attempts=3, initial_interval=timedelta(milliseconds=100)),
        )


def _pause_after_journal() -> None:
    pause = os.environ.get("TXN_PAUSE_FILE")
    if not pause:
        return
    real = journal.apply_journal

    def hang_first(*args, **kwargs):
        open(pause, "w").close()
        time.sleep(600)  # blocks the worker: the test kills it here
        return real(*args, **kwargs)

    journal.apply_journal = hang_first


async def main(address: str, task_queue: str) -> None:
    _pause_after_journal()
    client = await Client.connect(address, data_converter=pydantic_data_converter)
    worker = Worker(client, task_queue=task_queue, workflows=[TxnBashWorkflow], activities=[txn_bash],
                    workflow_runner=UnsandboxedWorkflowRunner(),
                    max_cached_workflows=0)  # no sticky queue: a killed worker delays nothing
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    print("worker ready", flush=True)
    await worker.run()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
