"""Serving the MCP server over stdio or streamable HTTP.

HTTP takes a bearer token (AGENT_TOOLS_MCP_TOKEN); without one it listens
only on a loopback address, where the SDK's DNS-rebinding protection also
applies.
"""

from __future__ import annotations

import hmac
import ipaddress
from typing import Any, Awaitable, Callable

import anyio
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from frontends.mcp.errors import reply_to_unreadable

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class TransportError(ValueError):
    """The transport cannot be served as configured; the message says why and what to do."""


async def serve_stdio(server: Server[Any]) -> None:
    async with stdio_server() as (read_stream, write_stream):
        # The SDK's stdio transport passes a line it cannot read as a message
        # on as an exception, which the server only logs: a request with an id
        # would never be answered. Answer those here; pass the rest on.
        relay_send, relayed = anyio.create_memory_object_stream[Any](0)

        async def relay() -> None:
            async with relay_send:
                async for item in read_stream:
                    if isinstance(item, ValidationError):
                        reply = reply_to_unreadable(item.errors(include_url=False))
                        if reply is not None:
                            await write_stream.send(SessionMessage(reply))
                        continue
                    await relay_send.send(item)

        async with anyio.create_task_group() as tg:
            tg.start_soon(relay)
            await server.run(relayed, write_stream, server.create_initialization_options())
            tg.cancel_scope.cancel()


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


def loopback_security(host: str) -> TransportSecuritySettings | None:
    """DNS-rebinding protection (Host and Origin must name this machine) for
    a loopback address. The SDK turns it on by itself only for 127.0.0.1,
    localhost and ::1; on any other loopback address (127.0.0.2, ...) a web
    page could otherwise reach a server that has no token. None elsewhere:
    such a server needs a token, which a web page cannot send."""
    if not is_loopback(host):
        return None
    names = ["127.0.0.1", "localhost", "[::1]"]
    own = f"[{host}]" if ":" in host else host
    if own not in names:
        names.append(own)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{name}:*" for name in names],
        allowed_origins=[f"http://{name}:*" for name in names],
    )


def http_app(server: Server[Any], *, host: str, token: str | None) -> Any:
    check_listen(host, token)
    app: Any = server.streamable_http_app(host=host, transport_security=loopback_security(host))
    return BearerToken(app, token) if token else app


async def serve_http(server: Server[Any], *, host: str, port: int, token: str | None) -> None:
    import uvicorn

    app = http_app(server, host=host, token=token)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    await uvicorn.Server(config).serve()
