"""AgentToolsPlugin: the one worker assembly (what build_worker, add_to_worker
and library users get)."""

from __future__ import annotations

from pathlib import Path

from temporalio import activity
from temporalio.client import Client
from temporalio.contrib.pydantic import PydanticPayloadConverter, pydantic_data_converter
from temporalio.converter import DataConverter
from temporalio.worker import Worker

from core.contracts import Policy, ToolRequest, ToolResult
from core.names import MCP_SESSION_WORKFLOW, ROLLBACK_WORKFLOW, SESSION_WORKFLOW, TURN_WORKFLOW
from runtime.api import add_to_worker
from runtime.plugin import AgentToolsPlugin, _pydantic_payloads, activity_name
from runtime.worker import build_worker


@activity.defn(name="read_file")
async def stand_in(request: ToolRequest) -> ToolResult:
    return ToolResult.ok(request.call_id, "read_file", "stand-in")


def _names(worker: Worker) -> tuple[set[str], dict[str, object]]:
    config = worker.config(active_config=True)
    workflows = {w.__temporal_workflow_definition.name for w in config["workflows"]}  # type: ignore[attr-defined]
    return workflows, {activity_name(a): a for a in config["activities"]}


async def test_every_workflow_and_activity_is_registered_once(client: Client, workspace: Path) -> None:
    worker = Worker(client, task_queue="plugin-1", plugins=[AgentToolsPlugin(workspace=str(workspace))])
    workflows, activities = _names(worker)
    assert workflows == {TURN_WORKFLOW, SESSION_WORKFLOW, ROLLBACK_WORKFLOW, MCP_SESSION_WORKFLOW}
    assert len(activities) == len(worker.config(active_config=True)["activities"])  # no name twice


async def test_a_given_activity_replaces_ours_and_given_workflows_stay(client: Client, workspace: Path) -> None:
    worker = build_worker(client, task_queue="plugin-2", workspace=str(workspace), extra_activities=[stand_in])
    _, activities = _names(worker)
    assert activities["read_file"] is stand_in


async def test_add_to_worker_includes_sessions(client: Client, workspace: Path) -> None:
    options = add_to_worker({"task_queue": "plugin-3"}, workspace_root=str(workspace), default_policy=Policy(mode="auto"))
    workflows, activities = _names(Worker(client, **options))
    assert SESSION_WORKFLOW in workflows and "call_model" in activities


def test_the_client_side_keeps_a_codec_but_payloads_go_through_pydantic() -> None:
    assert _pydantic_payloads(None) is pydantic_data_converter
    assert _pydantic_payloads(DataConverter.default) is pydantic_data_converter
    assert _pydantic_payloads(pydantic_data_converter) is pydantic_data_converter
    codec = object()
    custom = DataConverter(payload_codec=codec)  # type: ignore[arg-type]
    converted = _pydantic_payloads(custom)
    assert converted.payload_codec is codec and converted.payload_converter_class is PydanticPayloadConverter


def test_the_sandbox_takes_our_pure_packages_from_the_host_and_keeps_a_given_runner() -> None:
    from temporalio.worker import UnsandboxedWorkflowRunner
    from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

    from runtime.plugin import SANDBOX_PASSTHROUGH, _passthrough_runner

    default = _passthrough_runner(None)
    assert isinstance(default, SandboxedWorkflowRunner)
    assert set(SANDBOX_PASSTHROUGH) <= default.restrictions.passthrough_modules
    assert not default.restrictions.passthrough_all_modules  # everything else is still re-imported
    assert default.restrictions.invalid_module_members == SandboxRestrictions.default.invalid_module_members
    unsandboxed = UnsandboxedWorkflowRunner()
    assert _passthrough_runner(unsandboxed) is unsandboxed


async def test_a_workflow_of_ours_runs_in_the_sandbox_which_still_refuses_nondeterminism(
    client: Client, workspace: Path
) -> None:
    """Passing our packages through keeps the sandbox's guard for workflow
    code it re-imports (this test module's workflow)."""
    import uuid

    from temporalio.client import WorkflowFailureError

    from tests.sandbox_probe import ClockReadingWorkflow

    queue = f"plugin-sandbox-{uuid.uuid4().hex[:6]}"
    async with build_worker(client, task_queue=queue, workspace=str(workspace), extra_workflows=[ClockReadingWorkflow]):
        handle = await client.start_workflow(ClockReadingWorkflow.run, id=queue, task_queue=queue)
        try:
            await handle.result()
            raised = ""
        except WorkflowFailureError as err:
            raised = str(err.cause)
    assert "datetime.datetime.now" in raised or "Cannot access" in raised, raised
