"""`agent-turn mcp`: the six tools for any MCP client (Claude Code, Codex CLI,
VS Code, ...), every call a durable turn.

    agent-turn mcp --workspace DIR [--task-queue Q] [--policy MODE] [--dev-server]
    agent-turn mcp --workspace DIR --transport http [--host 127.0.0.1] [--port 8765]

stdio by default (stdout carries only MCP messages; logs go to stderr).
--dev-server starts the embedded Temporal dev server when none answers and a
worker for the workspace in this process when none polls the queue, so one
line in a client's configuration is enough. HTTP needs AGENT_TOOLS_MCP_TOKEN
to listen on anything but a loopback address.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from core.config import ToolSettings
from frontends.mcp.settings import DEFAULT_APPROVAL_TIMEOUT_S, DEFAULT_UI_URL, McpSettings
from runtime.queues import queue_for_workspace

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
DEV_SERVER_PATIENCE_S = 60.0
log = logging.getLogger("agent-tools.mcp")


def register(sub: Any) -> None:
    """Add the `mcp` command to agent-turn's subcommands."""
    p = sub.add_parser("mcp", help="serve the tools over the Model Context Protocol (stdio or HTTP)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workspace", required=True, help="workspace root, as the worker sees it")
    p.add_argument("--task-queue", default=os.environ.get("AGENT_TASK_QUEUE"),
                   help="task queue of the worker holding the workspace (default: the one agent-worker derives from it)")
    p.add_argument("--policy", choices=["auto", "ask-writes", "ask-all"], help="approval mode (default: the worker's)")
    p.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    p.add_argument("--host", default="127.0.0.1", help="HTTP: address to listen on (non-loopback needs a token)")
    p.add_argument("--port", type=int, default=8765, help="HTTP: port (the endpoint is /mcp)")
    p.add_argument("--dev-server", action="store_true",
                   help="start the embedded Temporal dev server and a worker here when none runs")
    p.add_argument("--data-dir", default=None,
                   help="--dev-server: where its SQLite file lives (default: $XDG_STATE_HOME/agent-tools/dev-server, "
                        "i.e. ~/.local/state/...; one dev server serves every workspace on the machine)")
    p.add_argument("--ui-port", type=int, default=8233, help="--dev-server: its Web UI port (0: none)")
    p.add_argument("--approval-timeout", type=float, default=DEFAULT_APPROVAL_TIMEOUT_S, metavar="S",
                   help="seconds a call waits for a decision before its turn is rejected")
    p.add_argument("--session", help="name of the snapshot store (default: derived from workspace and queue)")
    p.add_argument("--ui-url", default=DEFAULT_UI_URL, help="Temporal Web UI base URL named in approval notices")


async def _serve(args: argparse.Namespace) -> int:
    from frontends.mcp import McpTurns, build_server
    from frontends.mcp.transport import TransportError, check_listen, serve_http, serve_stdio
    from runtime.connection import connect_settings

    workspace = Path(args.workspace).resolve()
    if not workspace.is_dir():
        log.error("workspace %s is not a folder: create it or pass another --workspace", workspace)
        return EXIT_USAGE
    token = ToolSettings.from_env(os.environ).mcp_token or None
    if args.transport == "http":
        try:
            check_listen(args.host, token)
        except TransportError as exc:
            log.error("%s", exc)
            return EXIT_USAGE
    args.task_queue = args.task_queue or queue_for_workspace(str(workspace))
    conn = connect_settings(args.address, args.namespace)
    settings = McpSettings(
        workspace=str(workspace),
        task_queue=args.task_queue,
        policy=args.policy,
        approval_timeout_s=args.approval_timeout,
        session=args.session,
        ui_url=args.ui_url,
        namespace=conn["namespace"],
    )
    turns = McpTurns(None, settings)
    server = build_server(turns)
    async with AsyncExitStack() as stack:
        # Answer initialize and tools/list at once; calls wait until Temporal
        # (and, with --dev-server, the dev server and worker) is there.
        connecting = asyncio.ensure_future(_connect(stack, args, turns, workspace, conn["target_host"]))
        try:
            if args.transport == "http":
                log.info("MCP over HTTP at http://%s:%d/mcp (%s)", args.host, args.port,
                         "token required" if token else "no token")
                await serve_http(server, host=args.host, port=args.port, token=token)
            else:
                await serve_stdio(server)
        finally:
            connecting.cancel()
            await asyncio.gather(connecting, return_exceptions=True)
    return EXIT_OK


async def _connect(stack: AsyncExitStack, args: argparse.Namespace, turns: Any, workspace: Path, target: str) -> None:
    from runtime.connection import ConnectionFailed

    try:
        if args.dev_server:
            problem = await _start_dev_server(stack, target, args.data_dir, workspace, args.ui_port)
            if problem:
                raise ConnectionFailed(problem)
        client = await _connect_patiently(args, patience_s=DEV_SERVER_PATIENCE_S if args.dev_server else 0.0)
        if args.dev_server:
            from runtime.api import TurnClient
            from runtime.worker import build_worker

            if await TurnClient(client).workers_polling(args.task_queue) == 0:
                worker = build_worker(client, task_queue=args.task_queue, workspace=str(workspace))
                await stack.enter_async_context(worker)
                log.info("started a worker for %s on task queue %r", workspace, args.task_queue)
        turns.attach(client)
    except ConnectionFailed as exc:
        log.error("%s", exc)
        turns.fail(str(exc))
    except Exception as exc:  # noqa: BLE001 - the calls must hear why, not hang
        log.exception("could not get Temporal ready")
        turns.fail(f"could not get Temporal ready: {exc}")


async def _connect_patiently(args: argparse.Namespace, patience_s: float) -> Any:
    """A dev server that has just opened its port can still answer "frontend
    is not healthy yet" for a few seconds (longer on a loaded machine)."""
    from runtime.connection import ConnectionFailed, connect

    deadline = time.monotonic() + patience_s
    while True:
        try:
            return await connect(args.address, args.namespace)
        except ConnectionFailed:
            if time.monotonic() >= deadline:
                raise
            await asyncio.sleep(0.5)


async def _start_dev_server(
    stack: AsyncExitStack, target: str, data_dir: str | None, workspace: Path, ui_port: int
) -> str | None:
    """Start the dev server unless one answers; a problem in words, or None."""
    from runtime.devserver import DevServer, DevServerError, port_open

    host, _, port = target.rpartition(":")
    host = "127.0.0.1" if host in ("", "localhost") else host
    if port_open(host, int(port)):
        log.info("a Temporal server already answers at %s; using it", target)
        return None
    # Per user, not per workspace (the dev server on this port serves them
    # all), and never inside a workspace, where the agent's tools could see
    # or delete it.
    state_home = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    data = Path(data_dir).resolve() if data_dir else state_home / "agent-tools" / "dev-server"
    server = DevServer(db_file=data / "temporal.sqlite", host=host, port=int(port), ui_port=ui_port or None,
                       log_file=data / "temporal-server.log")
    stack.callback(server.stop)
    try:
        await asyncio.to_thread(server.start)  # it waits for the port: not on the event loop
    except DevServerError as exc:
        return f"the dev server did not start: {exc}"
    log.info("started the dev server at %s (state in %s); Web UI: %s", server.address, server.db_file, server.ui_url)
    return None


def dispatch(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # SIGTERM (a client closing us, a service manager) unwinds like Ctrl-C, so
    # the dev server and worker this process started are stopped too.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        return asyncio.run(_serve(args))
    except KeyboardInterrupt:
        return EXIT_OK
