"""Tool work in a thread that never outlives its activity attempt.

Python cannot kill a thread, and ``asyncio.to_thread`` abandons its thread
when the awaiting task is cancelled: four cancelled reads of a 300 GiB file
kept hashing for minutes, and the worker then ignored SIGTERM. So a
tool runs in a thread of its own with a stop flag that long loops check
(``check()``, once per chunk or folder); when the activity is cancelled (or
times out) the flag is set and the activity waits for the thread to stop
before it reports the cancellation. ``check()`` also sees the activity's own
cancellation, so a tool run by ``asyncio.to_thread`` stops too (without the
wait).
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from typing import Any, Callable, TypeVar

from temporalio import activity

T = TypeVar("T")
THREAD_PREFIX = "agent-tool:"

_stop: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar("agent_tool_stop", default=None)


class Cancelled(Exception):
    """The attempt was cancelled; the work stops where it is."""


def check() -> None:
    """Raise Cancelled if the attempt running this code was cancelled: by
    ``run_in_thread``'s flag, or (in a thread that ``asyncio.to_thread``
    started, which copies the activity's context) by the activity's own
    cancellation, which the SDK sets before it cancels the task."""
    event = _stop.get()
    if event is not None and event.is_set():
        raise Cancelled
    if activity.in_activity() and activity.is_cancelled():
        raise Cancelled


async def run_in_thread(fn: Callable[..., T], *args: Any, name: str) -> T:
    """``fn(*args)`` in its own thread; on cancellation, stop it and wait for it."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()
    event = threading.Event()
    context = contextvars.copy_context()
    context.run(_stop.set, event)

    def settle(ok: bool, value: Any) -> None:
        if not done.done():
            done.set_result(value) if ok else done.set_exception(value)

    def target() -> None:
        try:
            value, ok = context.run(fn, *args), True
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting task
            value, ok = exc, False
        try:
            loop.call_soon_threadsafe(settle, ok, value)
        except RuntimeError:  # the loop is gone: nobody is waiting any more
            pass

    thread = threading.Thread(target=target, name=THREAD_PREFIX + name[:80], daemon=True)
    thread.start()
    try:
        return await asyncio.shield(done)
    except asyncio.CancelledError:
        event.set()
        while not done.done():  # each check() is at most one chunk away
            try:
                await asyncio.shield(done)
            except asyncio.CancelledError:
                continue
            except BaseException:  # noqa: BLE001 - Cancelled, or whatever it stopped with
                break
        raise
    finally:
        # The thread has handed over its outcome and is about to end: wait
        # the moment it takes, so none is left alive when the activity returns.
        if done.done():
            thread.join(1.0)
