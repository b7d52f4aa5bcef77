"""`agent-turn console`: a small local web page listing the paused turns of a
namespace with what each will change (diffs with real hunk lines, commands
with their verdicts, previewed changesets), and Approve / Reject buttons that
send the digest-bound decision. The page refreshes every two seconds.

Safety: it listens on 127.0.0.1 unless told otherwise; on any other host a
token is required for every request (printed at start). Every decision (a
POST) needs the page's token in a header whatever the host, so another web
site open in the same browser cannot approve anything, and a Host header
that is not this server's is refused (DNS rebinding). All text reaching the
page went through the one escaping path (``core.tools.display``) and is put
in the page as text, never as markup.
"""

from __future__ import annotations

import asyncio
import getpass
import hmac
import json
import os
import secrets
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.service import RPCError

from cli.console_page import PAGE
from core.contracts import TurnStatus
from core.tools.display import short_digest
from core.tools.formatting import shown
from core.tools.specs import command_verdict, describe_pending_call
from runtime.api import TurnClient, TurnProblem

LOOPBACK = {"127.0.0.1", "localhost", "::1"}
MAX_BODY = 64 * 1024


@dataclass
class Console:
    client: Client
    host: str = "127.0.0.1"
    port: int = 8788
    token: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    approver: str = field(default_factory=lambda: f"{os.environ.get('USER') or getpass.getuser()} (console)")
    server: asyncio.AbstractServer | None = None

    @property
    def loopback(self) -> bool:
        return self.host in LOOPBACK

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        suffix = "" if self.loopback else f"/?token={self.token}"
        return f"http://{host}:{self.port}{suffix or '/'}"

    async def start(self) -> "Console":
        self.server = await asyncio.start_server(self._serve, self.host, self.port)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()

    # ------------------------------------------------------------ data
    async def turns(self) -> list[dict[str, Any]]:
        turns = TurnClient(self.client)
        listed = []
        for t in await turns.pending():
            entry: dict[str, Any] = {
                "turn_id": shown(t["turn_id"]),
                "workspace": shown(t.get("workspace") or ""),
                "task_queue": shown(t.get("task_queue") or ""),
                "started": t.get("started"),
                "stuck": shown(t["stuck"], keep="\n") if t["stuck"] else None,
                "calls": [],
            }
            if not t["stuck"]:
                try:
                    progress = await turns.status(t["turn_id"])
                except (TurnProblem, RPCError) as exc:
                    entry["problem"] = shown(str(exc), keep="\n")
                else:
                    if progress.status != TurnStatus.PAUSED:
                        continue
                    entry["digest"] = progress.batch_digest
                    entry["short_digest"] = short_digest(progress.batch_digest)
                    entry["ignored"] = shown(progress.ignored_decision)
                    entry["calls"] = [
                        {"title": f"#{p.index + 1} {shown(p.name)}", "reason": shown(p.reason),
                         "text": describe_pending_call(p, command_verdict)}
                        for p in progress.pending
                    ]
            listed.append(entry)
        return listed

    async def decide(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        turn_id, digest = body.get("turn_id"), body.get("digest")
        if not isinstance(turn_id, str) or not isinstance(digest, str) or not isinstance(body.get("approve"), bool):
            return 400, {"error": "send turn_id, digest (the one shown) and approve (true or false)"}
        turns = TurnClient(self.client)
        try:
            await turns.decide(
                turn_id, approve=body["approve"], approver=self.approver, reason=str(body.get("reason") or ""),
                digest=digest, wait_for_worker_s=10,
            )
        except WorkflowUpdateFailedError as exc:
            return 409, {"error": f"the turn refused the decision: {exc.cause.message if exc.cause else exc}"}
        except (TurnProblem, RPCError) as exc:
            return 409, {"error": shown(str(exc))}
        verb = "approved" if body["approve"] else "rejected"
        if turns.last_via == "signal":
            return 200, {"message": f"{verb}: sent as a signal (no worker answered yet); it applies when one runs the turn"}
        return 200, {"message": f"{verb} turn {shown(turn_id)} as {shown(self.approver)}"}

    # ------------------------------------------------------------ http
    def _allowed(self, headers: dict[str, str], query: dict[str, list[str]], post: bool) -> str | None:
        host = headers.get("host", "")
        name = host.rsplit(":", 1)[0].strip("[]") if host else ""
        if self.loopback and name not in LOOPBACK:
            return f"this console answers to {self.url} only (Host {host!r} refused)"
        given = headers.get("x-console-token") or (query.get("token") or [""])[0]
        if post or not self.loopback:
            if not hmac.compare_digest(given.encode(), self.token.encode()):
                return "a valid token is required (the console printed its URL with the token at start)"
        return None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            status, ctype, payload = await self._handle(reader)
        except (asyncio.IncompleteReadError, ConnectionError, ValueError, asyncio.LimitOverrunError):
            status, ctype, payload = 400, "text/plain; charset=utf-8", b"bad request"
        head = (
            f"HTTP/1.1 {status} {'OK' if status == 200 else 'Error'}\r\n"
            f"Content-Type: {ctype}\r\nContent-Length: {len(payload)}\r\nConnection: close\r\n"
            "Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nX-Frame-Options: DENY\r\n"
            "Content-Security-Policy: default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
            "connect-src 'self'\r\n\r\n"
        )
        try:
            writer.write(head.encode() + payload)
            await writer.drain()
            writer.close()
        except ConnectionError:
            pass

    async def _handle(self, reader: asyncio.StreamReader) -> tuple[int, str, bytes]:
        request = (await reader.readline()).decode("latin-1").split()
        if len(request) != 3:
            raise ValueError("no request line")
        method, target, _ = request
        headers: dict[str, str] = {}
        while (line := (await reader.readline()).decode("latin-1").strip()):
            key, _, value = line.partition(":")
            headers[key.strip().lower()] = value.strip()
        url = urlsplit(target)
        query = parse_qs(url.query)
        problem = self._allowed(headers, query, post=method == "POST")
        if problem:
            return 403, "text/plain; charset=utf-8", problem.encode()
        if method == "GET" and url.path == "/":
            page = PAGE.replace("__TOKEN__", json.dumps(self.token))
            return 200, "text/html; charset=utf-8", page.encode()
        if method == "GET" and url.path == "/api/turns":
            return _json(200, {"turns": await self.turns()})
        if method == "POST" and url.path == "/api/decide":
            length = int(headers.get("content-length") or 0)
            if length > MAX_BODY or not headers.get("content-type", "").startswith("application/json"):
                return _json(400, {"error": "send a JSON body (Content-Type: application/json) under 64 KiB"})
            try:
                body = json.loads(await reader.readexactly(length))
            except ValueError:
                return _json(400, {"error": "the body is not JSON"})
            return _json(*await self.decide(body if isinstance(body, dict) else {}))
        return 404, "text/plain; charset=utf-8", b"not found"


def _json(status: int, data: dict[str, Any]) -> tuple[int, str, bytes]:
    return status, "application/json", json.dumps(data).encode()


async def cmd_console(client: Client, args: Any) -> int:
    if args.host not in LOOPBACK and not args.token:
        args.token = secrets.token_urlsafe(24)
    console = Console(client, host=args.host, port=args.port, **({"token": args.token} if args.token else {}))
    await console.start()
    print(f"approval console: {console.url}  (Ctrl-C to stop; turns are not affected)", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await console.close()
    return 0
