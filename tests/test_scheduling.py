"""The slowest-first list names tests that exist (a renamed test would
silently drop back to its collection order)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.scheduling import SLOWEST_FIRST

ROOT = Path(__file__).resolve().parent.parent


def test_every_listed_test_exists_once() -> None:
    assert len(set(SLOWEST_FIRST)) == len(SLOWEST_FIRST)
    for node in SLOWEST_FIRST:
        path, _, name = node.partition("::")
        source = (ROOT / path).read_text()
        assert re.search(rf"^(async )?def {re.escape(name)}\(", source, re.M), f"{node} not found"
