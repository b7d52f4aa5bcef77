"""The transcript as a content-addressed chain. Pure: encoding, hashing,
verification; the store that puts nodes on disk is activities/model/transcript_store.py.

Each node holds one entry and the digest of the node before it, like a git
commit, so one digest (the head) names the whole conversation and appending
never rewrites anything. Appending the same entry to the same head gives the
same digest: a retried model call that re-appends is idempotent by
construction, and a retry that got a different answer simply starts another
branch; the history only ever references the head it recorded.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from core.session.contracts import TranscriptEntry


class TranscriptCorrupted(Exception):
    """A node's bytes do not hash to its name, or do not decode."""


def encode_node(parent: str | None, entry: TranscriptEntry) -> tuple[str, bytes]:
    node = {"parent": parent, "entry": entry.model_dump(mode="json", exclude_defaults=True)}
    data = json.dumps(node, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return hashlib.sha256(data).hexdigest(), data


def decode_node(digest: str, data: bytes) -> tuple[str | None, TranscriptEntry]:
    if hashlib.sha256(data).hexdigest() != digest:
        raise TranscriptCorrupted(f"transcript node {digest[:16]}… was modified: its content does not match its name")
    try:
        node: dict[str, Any] = json.loads(data)
        return node.get("parent"), TranscriptEntry.model_validate(node["entry"])
    except (ValueError, KeyError) as exc:
        raise TranscriptCorrupted(f"transcript node {digest[:16]}… does not decode: {exc}") from None


_DIGEST = re.compile(r"^[0-9a-f]{64}$")


def is_digest(value: str) -> bool:
    return bool(_DIGEST.match(value))


def session_folder_name(session_id: str) -> str:
    """A file-name-safe, collision-free folder name for a session id."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", session_id)[:80].strip(".") or "session"
    return f"{safe}-{hashlib.sha256(session_id.encode()).hexdigest()[:10]}"
