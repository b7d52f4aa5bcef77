"""Helpers of the bash execution tests: default settings, finding a test's own
processes in /proc."""

from __future__ import annotations

import asyncio
import os
import random
import sys
import time
from pathlib import Path

import pytest
from hypothesis import settings

from activities.bash import tool as bash


PY = sys.executable


@pytest.fixture(autouse=True)
def _default_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (bash.SANDBOX_ENV, bash.BWRAP_ENV, bash.MEMORY_ENV, bash.FILE_SIZE_ENV, bash.MAX_PROCS_ENV):
        monkeypatch.delenv(name, raising=False)


async def _require_bwrap() -> None:
    box, reason, _ = await bash.sandbox_status("auto")
    assert box == "bwrap", f"bubblewrap should work on this machine but does not: {reason}"


def _marker() -> str:
    """A unique `sleep` duration: lets a test find its own processes in /proc,
    whatever PID namespace they were started in."""
    return f"{random.randint(300, 900)}.{random.randint(100000, 999999)}"


def _pids_with(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            args = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in args and state not in ("Z", "X"):
            found.append(int(entry))
    return found


async def _gone(marker: str, within_s: float = 3.0) -> list[int]:
    deadline = time.monotonic() + within_s
    while (pids := _pids_with(marker)) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    return pids


def _kill(marker: str) -> None:
    for pid in _pids_with(marker):
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
