"""The MCP front-end: the six tools for any MCP client, each call a turn.

    server = build_server(McpTurns(client, McpSettings(workspace="/srv/ws")))
    await serve_stdio(server)            # or serve_http(server, settings, host, port, token)
"""

from frontends.mcp.server import build_server
from frontends.mcp.settings import McpSettings
from frontends.mcp.turns import McpTurns

__all__ = ["McpSettings", "McpTurns", "build_server"]
