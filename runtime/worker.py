"""Worker assembly: one Temporal worker with every workflow and activity of
this project, for a workspace (or any path, in tests and benchmarks)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Callable, Sequence

from temporalio.client import Client
from temporalio.common import VersioningBehavior
from temporalio.worker import UnsandboxedWorkflowRunner, Worker, WorkerDeploymentConfig, WorkerDeploymentVersion

from activities.read_stage import READ_STAGE_ACTIVITY, build_read_stage_activity
from activities.registry import build_activities
from core.contracts import Policy
from workflows.rollback import TurnRollbackWorkflow
from workflows.session import AgentSessionWorkflow
from workflows.turn import AgentTurnWorkflow

DEFAULT_TASK_QUEUE = "agent-tools"


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
) -> Worker:
    """A worker that runs turn workflows and the tools for ``workspace``
    (None: any path; tests and the benchmark use that).

    ``extra_activities`` replace tools of the same name (the benchmark's
    stand-ins do). ``sandboxed_workflows=False`` runs workflow code without
    the SDK's sandbox: about 8-10 ms less CPU per turn and ~1.5 ms less per
    local tool call (bench/), at the price of the sandbox's runtime guard
    against non-deterministic calls; tests and replay always keep it on."""
    from activities.model.activity import session_activities  # lazy: keeps the model SDKs out of workflow sandboxes

    extra_names = {a.__temporal_activity_definition.name for a in extra_activities}  # type: ignore[attr-defined]
    activities = [
        a
        for a in [*build_activities(workspace, default_policy), *session_activities(workspace)]
        if a.__temporal_activity_definition.name not in extra_names  # type: ignore[attr-defined]
    ]
    # The read stage runs the read tools this worker registers, replacements included.
    activities = [a for a in activities if a.__temporal_activity_definition.name != READ_STAGE_ACTIVITY]  # type: ignore[attr-defined]
    if READ_STAGE_ACTIVITY not in extra_names:
        activities.append(build_read_stage_activity([*activities, *extra_activities]))
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
        workflows=[AgentTurnWorkflow, AgentSessionWorkflow, TurnRollbackWorkflow, *extra_workflows],
        activities=[*activities, *extra_activities],
        max_concurrent_activities=max_concurrent_activities,
        # A parallel stage schedules all its calls in one workflow task; by
        # default the worker eagerly takes only 3 of them and the rest go
        # through matching (4-12 ms later). Take a whole typical batch.
        max_eager_activity_reservations_per_workflow_task=8,
        graceful_shutdown_timeout=timedelta(seconds=5),
        **options,
    )
