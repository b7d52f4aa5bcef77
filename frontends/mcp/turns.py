"""The Temporal side of the MCP front-end: each tools/call is a turn.

Nothing here is kept in the server's memory that a restarted server would
need: the snapshots live in the session's McpSessionSnapshots workflow, the
call's state in its turn.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from temporalio.client import Client, WorkflowFailureError
from temporalio.service import RPCError, RPCStatusCode

from core.contracts import Policy, Snapshot, ToolCall, TurnProgress, TurnResult, TurnStatus
from frontends.mcp.settings import McpSettings
from runtime.api import TurnClient, build_turn_input, load_offloaded
from workflows.mcp_session import McpSessionState, McpSessionWorkflow


@dataclass
class Finished:
    turn_id: str
    result: TurnResult | None
    # Set when the turn ended without a result (failed, cancelled, terminated).
    failure: str | None = None


# Called when the turn is paused on a batch digest not handled yet; returns
# True to keep waiting, False to stop waiting (the caller answers otherwise).
OnPaused = Callable[[TurnProgress], Awaitable[bool]]


class McpTurns:
    def __init__(self, client: Client, settings: McpSettings) -> None:
        self.client = client
        self.settings = settings
        self.turns = TurnClient(client)

    # ------------------------------------------------------------ snapshots
    async def snapshots(self) -> list[Snapshot]:
        handle = self.client.get_workflow_handle(self.settings.snapshots_workflow_id)
        try:
            return await handle.query(McpSessionWorkflow.snapshots, result_type=list[Snapshot])
        except RPCError as exc:
            if exc.status == RPCStatusCode.NOT_FOUND:
                return []
            raise

    async def remember(self, snapshots: list[Snapshot]) -> None:
        if not snapshots:
            return
        await self.client.start_workflow(
            McpSessionWorkflow.run,
            McpSessionState(),
            id=self.settings.snapshots_workflow_id,
            task_queue=self.settings.task_queue,
            start_signal="remember_snapshots",
            start_signal_args=[snapshots],
        )

    # ---------------------------------------------------------------- turns
    def owns(self, turn_id: str) -> bool:
        return turn_id.startswith(self.settings.turn_prefix)

    async def start(self, name: str, arguments: dict[str, Any] | None) -> str:
        turn_id = f"{self.settings.turn_prefix}{uuid.uuid4().hex[:12]}"
        turn = build_turn_input(
            workspace_root=self.settings.workspace,
            task_queue=self.settings.task_queue,
            tool_calls=[ToolCall(id=f"mcp-{uuid.uuid4().hex[:8]}", name=name, arguments=arguments or {})],
            turn_id=turn_id,
            snapshots=await self.snapshots(),
            policy=Policy(mode=self.settings.policy) if self.settings.policy else None,  # type: ignore[arg-type]
            # The workflow runs on the workspace's own queue: fast tools may
            # run as local activities there.
            execution="local",
        )
        await self.turns.start_turn(turn)
        return turn_id

    async def state(self, turn_id: str) -> tuple[str | None, str | None]:
        """(turn status, batch digest) as the turn publishes them."""
        return await self.turns.pending_digest(turn_id)

    async def wait(self, turn_id: str, on_paused: OnPaused) -> Finished | None:
        """Wait for the turn's end; None when ``on_paused`` stopped the wait."""
        handle = self.client.get_workflow_handle(turn_id, result_type=TurnResult)
        waiting = asyncio.ensure_future(handle.result())
        handled: set[str] = set()
        try:
            while True:
                done, _ = await asyncio.wait({waiting}, timeout=self.settings.poll_interval_s)
                if done:
                    break
                try:
                    state, digest = await self.state(turn_id)
                except RPCError:
                    continue
                if state != TurnStatus.PAUSED.value or not digest or digest in handled:
                    continue
                handled.add(digest)
                progress = await self.turns.status(turn_id)
                if not await on_paused(progress):
                    return None
        finally:
            if not waiting.done():
                waiting.cancel()
        return await self.finish(turn_id, waiting)

    async def finish(self, turn_id: str, waiting: "asyncio.Future[TurnResult]") -> Finished:
        try:
            result = load_offloaded(waiting.result(), self.settings.workspace)
        except WorkflowFailureError as exc:
            return Finished(turn_id, None, f"turn {turn_id} did not finish: {exc.cause or exc}")
        await self.remember([r.snapshot for r in result.results if r.snapshot is not None])
        return Finished(turn_id, result)

    async def decide(self, turn_id: str, *, approve: bool, digest: str, approver: str, reason: str) -> str | None:
        """Approve or reject the batch ``digest``; a problem in words, or None."""
        try:
            await self.turns.decide(turn_id, approve=approve, approver=approver, reason=reason, digest=digest)
        except Exception as exc:  # noqa: BLE001 - decided elsewhere meanwhile, turn gone, ...: say so, keep waiting
            return f"{type(exc).__name__}: {exc}"
        return None

    async def cancel(self, turn_id: str) -> None:
        await self.client.get_workflow_handle(turn_id).cancel()
