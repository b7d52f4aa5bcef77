"""Buggy and hostile MCP clients over streamable HTTP: tokens, Host and
Origin checks (DNS rebinding), oversized and malformed bodies, sessions that
are not the client's. Each answer is a clear refusal, and the server keeps
serving."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import httpx2
import pytest
from temporalio.client import Client

from tests.mcp.support import HttpServer
from tests.mcp.hostile_support import hostile_queue, hostile_worker, hostile_ws  # noqa: F401  (fixtures)


# ------------------------------------------------------------------ HTTP
TOKEN = "hostile-token-" + "z" * 32


@pytest.fixture(scope="module")
def http_server(hostile_worker: Client, hostile_ws: Path, hostile_queue: str,
                tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    server = HttpServer(hostile_worker, hostile_ws, hostile_queue, tmp_path_factory.mktemp("http") / "http.log",
                        "--policy", "auto", token=TOKEN).start()
    try:
        yield server
    finally:
        server.kill()


def post(server: HttpServer, body: Any, *, token: str | None = TOKEN, **headers: str) -> httpx2.Response:
    sent = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if token:
        sent["Authorization"] = f"Bearer {token}"
    sent.update({k.replace("_", "-"): v for k, v in headers.items()})
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx2.post(server.url, content=content, headers=sent, timeout=30)


INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "hostile-http", "version": "0"}}}


def http_still_serving(server: HttpServer) -> None:
    response = post(server, INITIALIZE)
    assert response.status_code == 200, response.text
    assert "agent-tools" in response.text


@pytest.mark.parametrize("authorization", [None, "Bearer wrong", f"Basic {TOKEN}", f"bearer  {TOKEN}x", TOKEN])
def test_http_without_the_right_token(http_server: HttpServer, authorization: str | None) -> None:
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if authorization:
        headers["Authorization"] = authorization
    for method in ("POST", "GET", "DELETE"):
        response = httpx2.request(method, http_server.url, headers=headers, content=json.dumps(INITIALIZE).encode())
        assert response.status_code == 401, (method, response.status_code, response.text)
        assert "AGENT_TOOLS_MCP_TOKEN" in response.text
    http_still_serving(http_server)


def test_http_oversized_body_refused_before_auth_and_after(http_server: HttpServer) -> None:
    big = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"b","content":"' \
        + b"a" * (6 * 1024 * 1024) + b'"}}}'
    assert post(http_server, big, token=None).status_code == 401
    assert post(http_server, big).status_code == 413
    http_still_serving(http_server)


@pytest.mark.parametrize("headers, status", [
    ({"Host": "evil.example:8765"}, 421),
    ({"Host": "evil.example"}, 421),
    ({"Origin": "http://evil.example"}, 403),
    ({"Origin": "http://127.0.0.1.evil.example:80"}, 403),
    ({"Origin": "null"}, 403),
])
def test_http_foreign_host_or_origin_refused(http_server: HttpServer, headers: dict[str, str], status: int) -> None:
    response = post(http_server, INITIALIZE, **headers)
    assert response.status_code == status, (response.status_code, response.text)
    http_still_serving(http_server)


@pytest.mark.parametrize("body", [b"{not json", b"[]", b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[]}',
                                  b'"just a string"', b""])
def test_http_malformed_body(http_server: HttpServer, body: bytes) -> None:
    response = post(http_server, body)
    assert 400 <= response.status_code < 500, (response.status_code, response.text)
    assert "error" in response.text.lower()
    http_still_serving(http_server)


def test_http_get_and_delete_without_or_with_a_foreign_session(http_server: HttpServer) -> None:
    auth = {"Authorization": f"Bearer {TOKEN}", "Accept": "text/event-stream"}
    for method in ("GET", "DELETE"):
        response = httpx2.request(method, http_server.url, headers=auth, timeout=10)
        assert 400 <= response.status_code < 500, (method, response.status_code, response.text)
        response = httpx2.request(method, http_server.url, headers={**auth, "Mcp-Session-Id": "f" * 32}, timeout=10)
        assert response.status_code == 404, (method, response.status_code, response.text)
    http_still_serving(http_server)


def test_http_wrong_content_type(http_server: HttpServer) -> None:
    response = post(http_server, INITIALIZE, Content_Type="text/plain")
    assert response.status_code in (400, 415), response.text
    http_still_serving(http_server)


@pytest.mark.parametrize("host", ["127.0.0.2", "localhost"])
def test_http_any_loopback_address_without_a_token_checks_host_and_origin(
    hostile_worker: Client, hostile_ws: Path, hostile_queue: str, tmp_path: Path, host: str
) -> None:
    """Without a token a loopback server's only guard against a web page
    (DNS rebinding, a cross-site POST) is the Host and Origin check."""
    server = HttpServer(hostile_worker, hostile_ws, hostile_queue, tmp_path / "lo.log", host=host).start()
    try:
        assert post(server, INITIALIZE, token=None, Host="rebound.evil.example").status_code == 421
        assert post(server, INITIALIZE, token=None, Origin="http://evil.example").status_code == 403
        response = post(server, INITIALIZE, token=None)
        assert response.status_code == 200, response.text
    finally:
        server.kill()
