"""The MCP front-end: the six tools for any MCP client, each call a turn.

    turns = McpTurns(await connect(), McpSettings(workspace="/srv/ws", task_queue="agent-tools"))
    server = build_server(turns)
    await serve_stdio(server)       # or: await serve_http(server, host="127.0.0.1", port=8765, token=None)

The worker serving the queue must include ``McpSessionWorkflow`` (the
snapshot store); ``runtime.worker.build_worker`` does.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from frontends.mcp.server import build_server
    from frontends.mcp.settings import McpSettings
    from frontends.mcp.transport import serve_http, serve_stdio
    from frontends.mcp.turns import McpTurns

__all__ = ["McpSettings", "McpTurns", "build_server", "serve_http", "serve_stdio"]

# Imported when first used: the `mcp` SDK takes ~0.5 s to import, and every
# `agent-turn` command (its --help included) reads the settings module.
_HOMES = {"build_server": "server", "McpSettings": "settings", "serve_http": "transport",
          "serve_stdio": "transport", "McpTurns": "turns"}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"frontends.mcp.{home}"), name)
