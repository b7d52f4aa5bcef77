"""Arrival order for the calls of one MCP session.

Safe calls (reads, searches, read-only commands) run beside each other; an
unsafe call waits for every call that arrived before it and holds back every
call that arrives after it until it is done. So a client's parallel calls map
to concurrent turns exactly when our own planner would have put them in one
parallel stage, and writes happen in the order the client sent them.
"""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager
from typing import AsyncIterator


class CallOrder:
    def __init__(self) -> None:
        self._last_unsafe: asyncio.Future[None] | None = None
        self._safe_since: set[asyncio.Future[None]] = set()

    @asynccontextmanager
    async def turn(self, safe: bool) -> AsyncIterator[None]:
        mine: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        before = self._last_unsafe
        if safe:
            self._safe_since.add(mine)
            waits = [before] if before is not None else []
        else:
            waits = [f for f in (before, *self._safe_since) if f is not None]
            self._last_unsafe = mine
            self._safe_since = set()
        try:
            if waits:
                await asyncio.gather(*(asyncio.shield(f) for f in waits), return_exceptions=True)
            yield
        finally:
            if not mine.done():
                mine.set_result(None)
            self._safe_since.discard(mine)
            if self._last_unsafe is mine:
                self._last_unsafe = None
