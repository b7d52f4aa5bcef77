"""The project as one Temporal plugin: every workflow and activity a
workspace worker runs, registered the way the SDK's own plugins do it.

    worker = Worker(client, task_queue="agent-tools", plugins=[AgentToolsPlugin(workspace="/srv/ws")])

or, on the client (then every worker built from that client gets it, and
the client gets the pydantic data converter the contracts need):

    client = await Client.connect("localhost:7233", plugins=[AgentToolsPlugin(workspace="/srv/ws")])

An activity the worker is given directly with the same name as one of ours
replaces ours (the benchmark's stand-ins and the tests' hooks do that).
``runtime.worker.build_worker`` is this plugin plus the worker settings the
project tunes (concurrency, eager activities, shutdown grace, versioning).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Sequence

from temporalio.contrib.pydantic import PydanticPayloadConverter, pydantic_data_converter
from temporalio.converter import DataConverter
from temporalio.plugin import SimplePlugin
from temporalio.worker import WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

# The activities before the workflows: a workflow sandbox that re-imports this
# module (a test workflow's module importing the worker does) otherwise ends
# up with two copies of the contracts.
from activities.read_stage import READ_STAGE_ACTIVITY, build_read_stage_activity
from activities.write_stage import WRITE_STAGE_ACTIVITY, build_write_stage_activity
from activities.registry import build_activities
from core.config import ToolSettings
from core.contracts import Policy
from workflows.mcp_session import McpSessionWorkflow
from workflows.rollback import TurnRollbackWorkflow
from workflows.session import AgentSessionWorkflow
from workflows.turn import AgentTurnWorkflow

PLUGIN_NAME = "durable-agent-tools"
# McpSessionWorkflow: the MCP front-end's per-session snapshot store.
WORKFLOWS: tuple[type, ...] = (AgentTurnWorkflow, AgentSessionWorkflow, TurnRollbackWorkflow, McpSessionWorkflow)


def activity_name(fn: Callable[..., Any]) -> str:
    definition = getattr(fn, "__temporal_activity_definition", None)
    if definition is None or definition.name is None:
        raise TypeError(f"{fn!r} is not a named activity: decorate it with @activity.defn(name=...)")
    return definition.name


# Packages the workflow sandbox takes from the host instead of re-importing
# them for every workflow run: the workflows themselves and the pure parts they
# call hold no module state (tests/test_layout.py: no ``global``), and re-executing
# workflows/turn.py with its decorators cost ~3 ms of every turn (and about
# a third of a worker's CPU per turn under load). The price: calls our
# workflow code makes through modules it imported are no longer checked at
# run time by the sandbox (it still checks workflow code it re-imports, a
# user's own); the replay tests over recorded histories are the guard.
SANDBOX_PASSTHROUGH = ("workflows", "core")


def _passthrough_runner(given: WorkflowRunner | None) -> WorkflowRunner:
    """The worker's sandbox with our pure packages passed through; an
    unsandboxed or custom runner is kept as it is."""
    if given is None:
        given = SandboxedWorkflowRunner()
    if not isinstance(given, SandboxedWorkflowRunner):
        return given
    return SandboxedWorkflowRunner(
        restrictions=given.restrictions.with_passthrough_modules(*SANDBOX_PASSTHROUGH),
        runner_class=given.runner_class,
    )


def _pydantic_payloads(given: DataConverter | None) -> DataConverter:
    """The contracts are pydantic models: keep a converter's codec and
    failure converter, but its payloads must go through pydantic."""
    if given is None or given is DataConverter.default:
        return pydantic_data_converter
    if issubclass(given.payload_converter_class, PydanticPayloadConverter):
        return given
    return dataclasses.replace(given, payload_converter_class=PydanticPayloadConverter)


class AgentToolsPlugin(SimplePlugin):
    """Turns, sessions and rollbacks, with the tools confined to
    ``workspace`` (None: any path; tests and the benchmark use that).

    ``default_policy`` answers turns that name no policy (default
    ``Policy()``, ask-writes). ``on_closed_call`` sees each model tool call
    the moment its JSON closes in the stream. ``tool_settings`` fixes the
    tools' settings for the process once the worker is built (the command
    line's flags over the environment); None reads the ``AGENT_TOOLS_*``
    variables at each call."""

    def __init__(
        self,
        *,
        workspace: str | None,
        default_policy: Policy | None = None,
        on_closed_call: Callable[..., None] | None = None,
        tool_settings: ToolSettings | None = None,
    ) -> None:
        self.workspace = workspace
        self.default_policy = default_policy
        self.on_closed_call = on_closed_call
        self.tool_settings = tool_settings
        super().__init__(
            PLUGIN_NAME,
            data_converter=_pydantic_payloads,
            workflows=self._with_workflows,
            activities=self._with_activities,
            workflow_runner=_passthrough_runner,
        )

    def registered_activities(self) -> list[Callable[..., Any]]:
        """Every activity this plugin registers."""
        from activities.model.activity import session_activities  # here: keeps the model SDKs out of workflow sandboxes
        from activities import settings

        if self.tool_settings is not None:
            settings.use(self.tool_settings)
        return [
            *build_activities(self.workspace, self.default_policy),
            *session_activities(self.workspace, on_closed_call=self.on_closed_call),
        ]

    def _with_workflows(self, given: Sequence[type] | None) -> list[type]:
        given = list(given or ())
        return [*given, *(w for w in WORKFLOWS if w not in given)]

    def _with_activities(self, given: Sequence[Callable[..., Any]] | None) -> list[Callable[..., Any]]:
        given = list(given or ())
        taken = {activity_name(a) for a in given}
        merged = [*given, *(a for a in self.registered_activities() if activity_name(a) not in taken)]
        # The stages run the tools this worker registers, replacements included
        # (unless a stage itself is replaced).
        stages = {READ_STAGE_ACTIVITY: build_read_stage_activity, WRITE_STAGE_ACTIVITY: build_write_stage_activity}
        rebuilt = [build(merged) for name, build in stages.items() if name not in taken]
        names = {activity_name(a) for a in rebuilt}
        return [*(a for a in merged if activity_name(a) not in names), *rebuilt]
