"""One task queue per workspace.

A worker holds one folder; a turn for another folder sent to its queue can
only fail. So the default queue is derived from the workspace's real path
(the worker and the client derive the same name from the same folder), and a
worker says which folder it serves in its identity, which the server lists
with each poller of a queue (DescribeTaskQueue). From that the worker refuses
to share a queue with a worker for another folder, and the client refuses to
start a turn on a queue whose workers serve another folder.
"""

from __future__ import annotations

import hashlib
import os
import re
import socket
from dataclasses import dataclass
from datetime import datetime

from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client

QUEUE_PREFIX = "agent-tools"
# A poller is listed for a while after its last poll (a long poll lasts ~60 s).
POLLER_FRESH_S = 75.0
_TAG = re.compile(r"\bws=([0-9a-f]{12})(?: (.*))?$")


def real_workspace(path: str) -> str:
    return os.path.realpath(path)


def workspace_hash(path: str) -> str:
    """Twelve hex digits of the SHA-256 of the folder's real path."""
    return hashlib.sha256(real_workspace(path).encode("utf-8", "surrogateescape")).hexdigest()[:12]


def queue_for_workspace(path: str) -> str:
    """The default task queue of the worker holding ``path``."""
    return f"{QUEUE_PREFIX}-{workspace_hash(path)}"


def default_identity() -> str:
    """The identity the SDK gives a client that names none."""
    return f"{os.getpid()}@{socket.gethostname()}"


def worker_identity(workspace: str | None) -> str | None:
    """``pid@host ws=<hash> <real path>``: the SDK's usual identity plus the
    folder this worker serves (None: a worker for any path keeps the default)."""
    if workspace is None:
        return None
    real = real_workspace(workspace)
    # The server keeps identities short; the hash is what is compared, the
    # path is there for the person reading the message.
    shown_path = real if len(real) <= 160 else "…" + real[-159:]
    return f"{default_identity()} ws={workspace_hash(real)} {shown_path}"


@dataclass(frozen=True)
class Poller:
    identity: str
    workspace_hash: str | None  # None: a worker that does not say
    workspace: str | None

    def describe(self) -> str:
        return self.workspace or (f"workspace hash {self.workspace_hash}" if self.workspace_hash else self.identity)


def parse_identity(identity: str) -> Poller:
    match = _TAG.search(identity)
    if match is None:
        return Poller(identity, None, None)
    return Poller(identity, match.group(1), match.group(2))


async def fresh_pollers(client: Client, task_queue: str) -> list[Poller]:
    """Workers that polled ``task_queue`` (workflow or activity side) recently."""
    now = datetime.now().timestamp()
    found: dict[str, Poller] = {}
    for queue_type in (TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW, TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY):
        response = await client.workflow_service.describe_task_queue(
            DescribeTaskQueueRequest(
                namespace=client.namespace, task_queue=TaskQueue(name=task_queue), task_queue_type=queue_type
            )
        )
        for poller in response.pollers:
            seen = poller.last_access_time.seconds if poller.HasField("last_access_time") else now
            if now - seen <= POLLER_FRESH_S:
                found.setdefault(poller.identity, parse_identity(poller.identity))
    return list(found.values())


def foreign_pollers(pollers: list[Poller], workspace: str) -> list[Poller]:
    """Pollers that declare a workspace that does not hold ``workspace``: a
    worker's tools reach its own root and what lies beneath it, nothing else."""
    real = real_workspace(workspace)
    mine = workspace_hash(real)
    foreign = []
    for p in pollers:
        if p.workspace_hash is None or p.workspace_hash == mine:
            continue
        if p.workspace and not p.workspace.startswith("…"):
            if real == p.workspace or real.startswith(p.workspace.rstrip("/") + "/"):
                continue
        foreign.append(p)
    return foreign


async def other_workspace_problem(client: Client, task_queue: str, workspace: str) -> str | None:
    """Why ``task_queue`` is the wrong queue for ``workspace``, or None."""
    foreign = foreign_pollers(await fresh_pollers(client, task_queue), workspace)
    if not foreign:
        return None
    others = ", ".join(sorted({p.describe() for p in foreign}))
    return (
        f"the task queue {task_queue!r} is polled by a worker for another workspace ({others}), "
        f"not for {real_workspace(workspace)}; use that folder's own queue "
        f"({queue_for_workspace(workspace)}, the default when --task-queue is left out)"
    )
