"""Serving the MCP server over stdio or streamable HTTP.

HTTP takes a bearer token (AGENT_TOOLS_MCP_TOKEN); without one it listens
only on a loopback address, where the SDK's DNS-rebinding protection also
applies.
"""

from __future__ import annotations

import hmac
import ipaddress
from typing import Any, Awaitable, Callable

from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class TransportError(ValueError):
    """The transport cannot be served as configured; the message says why and what to do."""


async def serve_stdio(server: Server[Any]) -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_listen(host: str, token: str | None) -> None:
    if not token and not is_loopback(host):
        raise TransportError(
            f"refusing to listen on {host} without a token: anyone who reaches that address could run "
            "commands in the workspace. Set AGENT_TOOLS_MCP_TOKEN to a long random secret (clients send "
            "`Authorization: Bearer <token>`), or listen on 127.0.0.1."
        )


class BearerToken:
    """ASGI middleware: every request needs `Authorization: Bearer <token>`."""

    def __init__(self, app: Callable[..., Awaitable[None]], token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = dict(scope.get("headers") or []).get(b"authorization", b"")
        if not hmac.compare_digest(given, self.expected):
            body = b'{"error":"unauthorized: send Authorization: Bearer <AGENT_TOOLS_MCP_TOKEN>"}'
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"www-authenticate", b'Bearer realm="agent-tools"'),
                        (b"content-length", str(len(body)).encode()),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)


def http_app(server: Server[Any], *, host: str, token: str | None) -> Any:
    check_listen(host, token)
    app: Any = server.streamable_http_app(host=host)
    return BearerToken(app, token) if token else app


async def serve_http(server: Server[Any], *, host: str, port: int, token: str | None) -> None:
    import uvicorn

    app = http_app(server, host=host, token=token)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    await uvicorn.Server(config).serve()
