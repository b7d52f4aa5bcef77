"""The MCP server: tools/list and tools/call over the low-level SDK Server.

Why the low-level ``Server`` and not FastMCP (``MCPServer``): our tools are
not Python functions whose signatures make the schema. Their JSON Schemas are
generated from the tool specs (the same as ``agent-turn tools``), results must
carry our own text plus structuredContent and isError, a call may answer
with an ``InputRequiredResult`` (2026-07-28 elicitation) and approvals need
the raw session (``elicitation/create`` on handshake-era connections). The
low-level handlers take and return exactly those protocol objects.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from core.contracts import TurnProgress, TurnStatus
from core.tools.formatting import shown
from core.tools.specs import TOOLS, command_verdict
from frontends.mcp.approval import DECISION_SCHEMA, answer_from, decode_state, encode_state, review_text, where_to_decide
from frontends.mcp.errors import invalid_params_message
from frontends.mcp.ordering import CallOrder
from frontends.mcp.tools import call_result, failed_result, is_concurrency_safe, mcp_tools
from frontends.mcp.turns import McpTurns, NotConnected
from runtime.api import NoWorker, TurnInputError

log = logging.getLogger("agent-tools.mcp")

SERVER_NAME = "agent-tools"
APPROVAL_KEY = "approval"
# How long a call whose request was cancelled may take to cancel its turn and see it end.
ABANDON_TIMEOUT_S = 5.0
# A sealed requestState outlives the approval timeout a little: the turn is
# rejected at the timeout anyway, a later retry only hears that.
REQUEST_STATE_GRACE_S = 60.0
INSTRUCTIONS = (
    "Coding tools for one workspace. Every call runs as a durable Temporal turn: read a file before "
    "writing it (a write to a file changed since your read is refused as a conflict); calls that need "
    "a person's approval wait for it."
)


class McpFrontend:
    """The handlers, over one Temporal client. Per process: only the call
    order (which in-flight calls a new one waits for) lives in memory."""

    def __init__(self, turns: McpTurns) -> None:
        self.turns = turns
        self.settings = turns.settings
        self.order = CallOrder()

    async def list_tools(self, ctx: ServerRequestContext[Any], params: Any) -> types.ListToolsResult:
        # Task support is a 2025-11-25 notion (tools/call with `task`).
        return types.ListToolsResult(tools=mcp_tools(tasks=ctx.protocol_version == "2025-11-25"))

    async def call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        if params.name not in TOOLS:
            raise MCPError(
                types.INVALID_PARAMS, f"unknown tool {params.name!r}: the tools are {', '.join(TOOLS)} (tools/list)"
            )
        if params.request_state is not None:
            return await self._resume(ctx, params)
        place = self.order.take(is_concurrency_safe(params.name, params.arguments))
        handed_over = False
        try:
            await place.ready()
            try:
                turn_id = await self.turns.start(params.name, params.arguments)
            except (TurnInputError, NoWorker, NotConnected) as exc:
                return failed_result("", f"the call was not started: {exc}")
            try:
                result = await self._wait(ctx, turn_id)
            except asyncio.CancelledError:
                # The client cancelled the request (notifications/cancelled) or
                # went away (end of stdin): nobody waits for this turn any more.
                with anyio.CancelScope(shield=True):
                    await self._abandon(turn_id)
                raise
            if isinstance(result, types.InputRequiredResult):
                # The turn is paused and the client will retry with the
                # decision: the calls behind it still wait for its end.
                self.order.hand_over(place, lambda: self._until_decided(turn_id))
                handed_over = True
            return result
        finally:
            if not handed_over:
                place.release()

    async def _abandon(self, turn_id: str) -> None:
        """A call whose request ended unanswered (cancelled by the client, or
        the client went away): its turn is cancelled, as tasks/cancel does (a
        running command is killed, what ran is recorded), and its end awaited
        so the calls behind it still run in order. Left alone, a turn
        paused for approval would wait for ever: the wait that rejects it at
        the approval timeout ended with the request."""
        with anyio.move_on_after(ABANDON_TIMEOUT_S):
            try:
                await self.turns.cancel(turn_id)
                # Its end, before the calls behind it (in order) may start.
                await self.turns.client.get_workflow_handle(turn_id).result()
            except Exception as exc:  # noqa: BLE001 - already over, Temporal gone: nothing more to do here
                log.info("abandoned turn %s: %s", turn_id, exc)

    # ------------------------------------------------------------ waiting
    async def _wait(self, ctx: ServerRequestContext[Any], turn_id: str) -> types.CallToolResult | types.InputRequiredResult:
        modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        caps = ctx.session.client_capabilities
        can_elicit = caps is not None and caps.elicitation is not None
        asked: list[types.InputRequiredResult] = []

        async def on_paused(progress: TurnProgress) -> bool:
            text = review_text(progress, command_verdict)
            if can_elicit and modern:
                # 2026-07-28 has no server-to-client requests: the call answers
                # "input required" and the client retries it with the answer.
                # The state names the turn and digest; nothing is kept here.
                asked.append(
                    types.InputRequiredResult(
                        input_requests={
                            APPROVAL_KEY: types.ElicitRequest(
                                params=types.ElicitRequestFormParams(message=text, requested_schema=DECISION_SCHEMA)
                            )
                        },
                        request_state=encode_state(turn_id, progress.batch_digest),
                    )
                )
                return False
            if can_elicit:
                await self._ask_or_wait(ctx, turn_id, progress, text)
                return True
            await self._wait_elsewhere(ctx, turn_id, progress)
            return True

        finished = await self.turns.wait(turn_id, on_paused)
        if finished is None:
            return asked[-1]
        if finished.result is None:
            return failed_result(turn_id, finished.failure or f"turn {turn_id} ended without a result")
        return call_result(finished.result)

    async def _ask_or_wait(self, ctx: ServerRequestContext[Any], turn_id: str, progress: TurnProgress,
                           text: str) -> None:
        """Handshake era: ask the client (elicitation/create) and, at the same
        time, wait as without it: a decision made elsewhere (Web UI, CLI) or
        the approval timeout ends the wait even when the client never answers."""
        ask = asyncio.ensure_future(
            ctx.session.elicit_form(text, DECISION_SCHEMA, related_request_id=ctx.request_id)
        )
        elsewhere = asyncio.ensure_future(self._wait_elsewhere(ctx, turn_id, progress))
        try:
            done, _ = await asyncio.wait({ask, elsewhere}, return_when=asyncio.FIRST_COMPLETED)
            if ask in done:
                exc = ask.exception()
                if exc is None:
                    elsewhere.cancel()
                    await self._apply(ctx, turn_id, progress.batch_digest, ask.result())
                    return
                # The client could not ask: keep waiting for a decision elsewhere.
                log.warning("elicitation for %s failed (%s); waiting for a decision elsewhere", turn_id, exc)
            await elsewhere
        finally:
            for task in (ask, elsewhere):
                task.cancel()
            await asyncio.gather(ask, elsewhere, return_exceptions=True)

    async def _until_decided(self, turn_id: str) -> None:
        """The end of a turn whose client was asked to retry with a decision;
        a client that never comes back gets the approval timeout's rejection
        (the calls behind it would otherwise wait for ever)."""
        handle = self.turns.client.get_workflow_handle(turn_id)
        try:
            await asyncio.wait_for(handle.result(), self.settings.approval_timeout_s)
        except asyncio.TimeoutError:
            await self.turns.decide(
                turn_id, approve=False, digest="", approver="mcp-front-end",
                reason=f"no decision within {self.settings.approval_timeout_s:g} s",
            )
            await handle.result()

    async def _resume(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        try:
            turn_id, digest = decode_state(params.request_state or "")
        except ValueError as exc:
            raise MCPError(types.INVALID_PARAMS, str(exc)) from None
        if not self.turns.owns(turn_id):
            raise MCPError(types.INVALID_PARAMS, "requestState names a turn this server did not start")
        await self.turns.ready()
        answer = (params.input_responses or {}).get(APPROVAL_KEY)
        if isinstance(answer, types.ElicitResult):
            await self._apply(ctx, turn_id, digest, answer)
        return await self._wait(ctx, turn_id)

    async def _apply(self, ctx: ServerRequestContext[Any], turn_id: str, digest: str, result: types.ElicitResult) -> None:
        answer = answer_from(result.action, dict(result.content or {}))
        problem = await self.turns.decide(
            turn_id, approve=answer.approve, digest=digest, approver=_approver(ctx), reason=shown(answer.reason)
        )
        if problem:
            # Decided elsewhere meanwhile (CLI, Web UI) or a new batch: the
            # turn itself refuses a decision for a digest it is not waiting on.
            log.info("decision for %s not applied: %s", turn_id, problem)

    async def _wait_elsewhere(self, ctx: ServerRequestContext[Any], turn_id: str, progress: TurnProgress) -> None:
        """No way to ask the client: say where to decide, until the turn moves
        on or the approval timeout rejects it."""
        message = where_to_decide(turn_id, self.settings.web_ui_link(turn_id))
        started = time.monotonic()
        told = -self.settings.progress_interval_s
        while True:
            waited = time.monotonic() - started
            if waited >= self.settings.approval_timeout_s:
                await self.turns.decide(
                    turn_id,
                    approve=False,
                    digest=progress.batch_digest,
                    approver="mcp-front-end",
                    reason=f"no decision within {self.settings.approval_timeout_s:g} s",
                )
                return
            if waited - told >= self.settings.progress_interval_s:
                told = waited
                try:
                    await ctx.session.report_progress(waited, self.settings.approval_timeout_s, message)
                except Exception:  # noqa: BLE001 - a client that cannot take progress still gets the result
                    pass
            state, digest = await self.turns.state(turn_id)
            if state != TurnStatus.PAUSED.value or digest != progress.batch_digest:
                return
            await asyncio.sleep(self.settings.poll_interval_s)


def _approver(ctx: ServerRequestContext[Any]) -> str:
    params = ctx.session.client_params
    name = params.client_info.name if params is not None and params.client_info is not None else "client"
    # The client names itself: escaped before the name is kept in the turn's
    # decision, which people read later in their terminals (agent-turn result).
    return f"mcp:{shown(name)}"


async def readable_invalid_params(ctx: ServerRequestContext[Any], call_next: Any) -> Any:
    """A ServerMiddleware: params that fail validation are answered with what
    is wrong (the SDK alone says only "Invalid request parameters")."""
    try:
        return await call_next(ctx)
    except ValidationError as exc:
        message = invalid_params_message(ctx.method, exc.errors(include_input=False, include_url=False))
        raise MCPError(types.INVALID_PARAMS, message) from None


def build_server(turns: McpTurns) -> Server[Any]:
    from frontends.mcp.tasks import TaskMiddleware

    frontend = McpFrontend(turns)
    server: Server[Any] = Server(
        SERVER_NAME,
        version="0.1",
        instructions=INSTRUCTIONS,
        on_list_tools=frontend.list_tools,
        on_call_tool=frontend.call_tool,
    )
    server.middleware.append(readable_invalid_params)
    # The requestState a 2026-07-28 client echoes is the client's to forge:
    # sealed under a key only this process holds (AES-GCM, bound to the call
    # it answers, expiring after the approval timeout), a retry can decide
    # only a turn and digest this server put to a client. Unsealed, any client
    # of the front-end could approve any of its paused turns, an empty digest
    # standing for whatever batch was pending. (2026-07-28 has no sessions:
    # the sealed state is a bearer capability of whoever was asked.)
    security = RequestStateSecurity.ephemeral(
        ttl=max(turns.settings.approval_timeout_s, 0.0) + REQUEST_STATE_GRACE_S, audience=SERVER_NAME
    )
    server.middleware.append(RequestStateBoundary(security, default_audience=SERVER_NAME))
    server.middleware.append(TaskMiddleware(frontend))
    return server

