"""Nothing waits silently: one progress line on stderr while a command
waits, messages that say what it waits for and how to unblock it, and a
one-line goodbye on Ctrl-C or a closed pipe that says the work goes on.

On a terminal the progress line is rewritten in place; into a file or a pipe
each new state is one line (never a line per poll)."""

from __future__ import annotations

import os
import sys
import time
from typing import TextIO

from core.tools.formatting import shown

# What a person runs to follow the work this process started or waits on,
# said when the process is interrupted ("" before any).
_following: list[str] = []


def following(hint: str) -> None:
    """Remember how to follow the work in flight (the latest wins)."""
    _following[:] = [hint]


def farewell(why: str) -> str:
    hint = _following[0] if _following else ""
    if not hint:
        return f"{why}: stopped."
    return f"{why}: stopped waiting; the work goes on on the server. Follow it with: {hint}"


class ProgressLine:
    def __init__(self, quiet: bool = False, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.shown = ""
        self.started = time.monotonic()

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (BrokenPipeError, ValueError):  # stderr closed: nothing to say
            pass

    def update(self, text: str) -> None:
        """The current state (not repeated when unchanged; elapsed time is
        added on a terminal only)."""
        text = shown(text)
        if self.quiet or text == self.shown:
            if self.tty and not self.quiet and self.shown:
                self._paint(text)
            return
        if self.tty:
            self._paint(text)
        else:
            self._write(text + "\n")
        self.shown = text

    def _paint(self, text: str) -> None:
        elapsed = int(time.monotonic() - self.started)
        self._write(f"\r\x1b[2K{text}  ({elapsed} s)")

    def say(self, text: str) -> None:
        """A message that stays (what to do), above the progress line."""
        self.clear()
        self._write(shown(text, keep="\n") + "\n")
        if self.tty and self.shown and not self.quiet:
            self._paint(self.shown)

    def clear(self) -> None:
        if self.tty and self.shown and not self.quiet:
            self._write("\r\x1b[2K")


def quiet_stdout() -> None:
    """After a closed pipe: point stdout at /dev/null so the final flush
    cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
