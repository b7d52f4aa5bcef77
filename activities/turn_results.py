"""Offloading a turn's results when they do not fit in one Temporal payload.

A TurnResult is the workflow's result: one payload, at most 2 MiB. The
results of thousands of calls are larger than that; without this, the
workflow task fails for ever and every result is lost although all the
calls ran. The workflow instead writes the full TurnResult's JSON into the
workspace's artifacts folder, in parts small enough to pass as activity
inputs, and returns a TurnResult that names the folder
(``results_artifact``). ``runtime.api.load_offloaded`` reads it back.
"""

from __future__ import annotations

import asyncio
import hashlib
import os

from pydantic import BaseModel
from temporalio import activity

from activities.workspace.paths import ARTIFACTS_DIR, workspace_root
from core.names import SAVE_RESULT_PART_ACTIVITY

RESULTS_DIR = "turn-results"


class ResultPart(BaseModel):
    workspace_root: str
    turn_id: str
    index: int
    text: str


def results_folder(turn_id: str) -> str:
    """Relative to the workspace root."""
    name = hashlib.sha256(turn_id.encode("utf-8", "backslashreplace")).hexdigest()[:32]
    return f"{ARTIFACTS_DIR}/{RESULTS_DIR}/{name}"


def save_part(part: ResultPart) -> str:
    folder = workspace_root(part.workspace_root) / results_folder(part.turn_id)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{part.index:05d}.part"
    temp = target.with_suffix(".tmp")
    with open(temp, "w", encoding="utf-8") as f:
        f.write(part.text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(temp, target)
    return results_folder(part.turn_id)


@activity.defn(name=SAVE_RESULT_PART_ACTIVITY)
async def save_turn_result_part(part: ResultPart) -> str:
    return await asyncio.to_thread(save_part, part)
