"""The snapshots of one MCP session, kept in Temporal.

A turn carries the snapshots its session holds (read-before-write, conflict
detection). Over MCP every `tools/call` is its own turn, so what the earlier
calls read must live somewhere that outlives the MCP server process: this
workflow. The front-end signals the snapshots each finished turn produced and
queries them before starting the next turn; a restarted server (or a second
one on the same namespace) reads the same state.

Its names are recorded in histories: they live in core/names.py.
"""

from __future__ import annotations

from pydantic import BaseModel, Field
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from core.contracts import Snapshot

from core.names import CLOSE_SIGNAL as SIGNAL_CLOSE  # noqa: E402
from core.names import MCP_REMEMBER_SIGNAL as SIGNAL_REMEMBER  # noqa: E402
from core.names import MCP_SESSION_WORKFLOW as WORKFLOW_NAME  # noqa: E402
from core.names import MCP_SNAPSHOTS_QUERY as QUERY_SNAPSHOTS  # noqa: E402

# Carry the state into a fresh run long before the history gets heavy: each
# remembered turn is one signal event.
MAX_HISTORY_EVENTS = 4000


class McpSessionState(BaseModel):
    snapshots: list[Snapshot] = Field(default_factory=list)


@workflow.defn(name=WORKFLOW_NAME)
class McpSessionWorkflow:
    @workflow.init
    def __init__(self, state: McpSessionState) -> None:
        self._snapshots: dict[str, Snapshot] = {s.path: s for s in state.snapshots}
        self._closed = False

    @workflow.run
    async def run(self, state: McpSessionState) -> None:
        def should_stop() -> bool:
            info = workflow.info()
            return (
                self._closed
                or info.is_continue_as_new_suggested()
                or info.get_current_history_length() > MAX_HISTORY_EVENTS
            )

        await workflow.wait_condition(should_stop)
        await workflow.wait_condition(workflow.all_handlers_finished)
        if not self._closed:
            workflow.continue_as_new(McpSessionState(snapshots=self._current()))

    @workflow.signal(name=SIGNAL_REMEMBER)
    def remember(self, snapshots: list[Snapshot]) -> None:
        # Later turns win: unsafe calls run one after another, so the turn
        # that reports last saw the file last.
        for snapshot in snapshots:
            self._snapshots[snapshot.path] = snapshot

    @workflow.signal(name=SIGNAL_CLOSE)
    def close(self) -> None:
        self._closed = True

    @workflow.query(name=QUERY_SNAPSHOTS)
    def snapshots(self) -> list[Snapshot]:
        return self._current()

    def _current(self) -> list[Snapshot]:
        return sorted(self._snapshots.values(), key=lambda s: s.path)
