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
from frontends.mcp.settings import TURN_APPROVAL_GRACE_S, McpSettings
from runtime.api import OffloadedResultChanged, TurnClient, build_turn_input, load_offloaded
from workflows.mcp_session import SIGNAL_REMEMBER, McpSessionState, McpSessionWorkflow


@dataclass
class Finished:
    turn_id: str
    result: TurnResult | None
    # Set when the turn ended without a result (failed, cancelled, terminated).
    failure: str | None = None


# Called when the turn is paused on a batch digest not handled yet; returns
# True to keep waiting, False to stop waiting (the caller answers otherwise).
OnPaused = Callable[[TurnProgress], Awaitable[bool]]


class NotConnected(RuntimeError):
    """Temporal could not be reached (or the dev server not started); the message says why."""


class McpTurns:
    """Pass the client now, or ``None`` and ``attach`` it later: a server
    that answers initialize and tools/list at once while the dev server
    starts keeps within a client's start-up timeout (Codex: 10 s)."""

    def __init__(self, client: Client | None, settings: McpSettings) -> None:
        self.settings = settings
        self._client = client
        self._turns = TurnClient(client) if client is not None else None
        self._problem: str | None = None
        self._ready = asyncio.Event()
        if client is not None:
            self._ready.set()

    def attach(self, client: Client) -> None:
        self._client, self._turns = client, TurnClient(client)
        self._ready.set()

    def fail(self, problem: str) -> None:
        self._problem = problem
        self._ready.set()

    async def ready(self) -> None:
        await self._ready.wait()
        if self._client is None:
            raise NotConnected(self._problem or "not connected to Temporal")

    @property
    def client(self) -> Client:
        if self._client is None:
            raise NotConnected(self._problem or "not connected to Temporal yet")
        return self._client

    @property
    def turns(self) -> TurnClient:
        if self._turns is None:
            raise NotConnected(self._problem or "not connected to Temporal yet")
        return self._turns

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
            start_signal=SIGNAL_REMEMBER,
            start_signal_args=[snapshots],
        )

    # ---------------------------------------------------------------- turns
    def owns(self, turn_id: str) -> bool:
        return turn_id.startswith(self.settings.turn_prefix)

    async def start(self, name: str, arguments: dict[str, Any] | None) -> str:
        await self.ready()
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
            # The turn's own durable bound, a little after this server's: it
            # rejects the call even if this server is killed while waiting.
            approval_timeout_seconds=self.settings.approval_timeout_s + TURN_APPROVAL_GRACE_S,
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
        except OffloadedResultChanged as exc:
            return Finished(turn_id, None, str(exc))
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
