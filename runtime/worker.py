"""One Temporal worker with every workflow and activity of this project (the
``AgentToolsPlugin``), for a workspace (or any path, in tests and benchmarks),
with the worker settings the project tunes."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Callable, Sequence

from temporalio.client import Client
from temporalio.common import VersioningBehavior
from temporalio.worker import UnsandboxedWorkflowRunner, Worker, WorkerDeploymentConfig, WorkerDeploymentVersion

from core.config import ToolSettings
from core.contracts import Policy
from runtime.config import DEFAULT_TASK_QUEUE
from runtime.plugin import AgentToolsPlugin

__all__ = ["DEFAULT_TASK_QUEUE", "AgentToolsPlugin", "build_worker"]


def build_worker(
    client: Client,
    *,
    task_queue: str,
    workspace: str | None,
    default_policy: Policy | None = None,
    max_concurrent_activities: int = 64,
    sandboxed_workflows: bool = True,
    extra_workflows: Sequence[type] = (),
    extra_activities: Sequence[Callable[..., Any]] = (),
    deployment: tuple[str, str] | None = None,
    tool_settings: ToolSettings | None = None,
) -> Worker:
    """A worker that runs turn workflows and the tools for ``workspace``
    (None: any path; tests and the benchmark use that).

    ``extra_activities`` replace tools of the same name (the benchmark's
    stand-ins do). ``sandboxed_workflows=False`` runs workflow code without
    the SDK's sandbox: about 8-10 ms less CPU per turn and ~1.5 ms less per
    local tool call (bench/), at the price of the sandbox's runtime guard
    against non-deterministic calls; tests and replay always keep it on.
    ``tool_settings`` fixes the tools' settings for this process (None:
    they are read from the environment at each call)."""
    options: dict[str, Any] = {}
    if not sandboxed_workflows:
        options["workflow_runner"] = UnsandboxedWorkflowRunner()
    if deployment is not None:
        # Worker versioning: turns stay PINNED to the build that started them,
        # for a workflow change that cannot be patched (README "Upgrading workers").
        name, build_id = deployment
        options["deployment_config"] = WorkerDeploymentConfig(
            version=WorkerDeploymentVersion(deployment_name=name, build_id=build_id),
            use_worker_versioning=True,
            default_versioning_behavior=VersioningBehavior.PINNED,
        )
    return Worker(
        client,
        task_queue=task_queue,
        workflows=list(extra_workflows),
        activities=list(extra_activities),
        plugins=[AgentToolsPlugin(workspace=workspace, default_policy=default_policy, tool_settings=tool_settings)],
        max_concurrent_activities=max_concurrent_activities,
        # A parallel stage schedules all its calls in one workflow task; by
        # default the worker eagerly takes only 3 of them and the rest go
        # through matching (4-12 ms later). Take a whole typical batch.
        max_eager_activity_reservations_per_workflow_task=8,
        graceful_shutdown_timeout=timedelta(seconds=5),
        **options,
    )
