"""Fail-closed validation of bash commands (placeholder: rejects everything
until the real validator lands)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Verdict:
    verdict: Literal["allow", "ask", "reject"]
    reason: str
    hint: str | None = None
    program: str | None = None


def validate_command(command: str) -> Verdict:
    return Verdict("reject", "validator not implemented yet", "do not use bash yet")
