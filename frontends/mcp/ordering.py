"""Arrival order for the calls of one MCP session.

Safe calls (reads, searches, read-only commands) run beside each other; an
unsafe call waits for every call that arrived before it and holds back every
call that arrives after it until it is done. So a client's parallel calls map
to concurrent turns exactly when our own planner would have put them in one
parallel stage, and writes happen in the order the client sent them.

A place in the order can outlive the request that took it: a 2026-07-28 call
paused for approval answers "input required" and is retried later, and its
turn still holds back the calls behind it until it ends (``hand_over``).
"""

from __future__ import annotations

import asyncio
from typing import Awaitable, Callable


class Place:
    def __init__(self, done: asyncio.Future[None], waits: list[asyncio.Future[None]]) -> None:
        self._done = done
        self._waits = waits

    async def ready(self) -> None:
        if self._waits:
            await asyncio.gather(*(asyncio.shield(f) for f in self._waits), return_exceptions=True)

    def release(self) -> None:
        if not self._done.done():
            self._done.set_result(None)


class CallOrder:
    def __init__(self) -> None:
        self._last_unsafe: asyncio.Future[None] | None = None
        self._safe_since: set[asyncio.Future[None]] = set()
        self._handed_over: set[asyncio.Task[None]] = set()

    def take(self, safe: bool) -> Place:
        """A place in line, taken at once (arrival order), ready later."""
        mine: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        before = self._last_unsafe
        if safe:
            self._safe_since.add(mine)
            mine.add_done_callback(self._safe_since.discard)
            waits = [before] if before is not None else []
        else:
            waits = [f for f in (before, *self._safe_since) if f is not None]
            self._last_unsafe = mine
            self._safe_since = set()
        return Place(mine, waits)

    def hand_over(self, place: Place, until: Callable[[], Awaitable[object]]) -> None:
        """Keep ``place`` until ``until()`` returns (or fails), in the background."""

        async def hold() -> None:
            try:
                await until()
            except BaseException:  # noqa: BLE001 - whatever ended the wait, the place is free
                pass
            finally:
                place.release()

        task = asyncio.ensure_future(hold())
        self._handed_over.add(task)
        task.add_done_callback(self._handed_over.discard)
