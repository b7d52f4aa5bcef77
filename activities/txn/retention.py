"""What artifact retention removed of a turn's records, kept so that a later
rollback says so instead of "no recorded file changes".

Retention (activities.workspace.artifacts) deletes applied call folders and
idle turn logs older than its cut; each deletion leaves a small note in the
workspace's state folder (``pruned/<turn key>.json``: how many call records
and whether the file tools' log went, and when). The notes themselves go
once they are ``NOTE_KEEP_FACTOR`` times older than the cut that made them.
"""

from __future__ import annotations

import os
import time

from activities.txn.state import id_key, state_folder
from activities.txn.store import read_json, write_json_durably
from core.config import ARTIFACTS_MAX_AGE_ENV

PRUNED_DIR = "pruned"
NOTE_KEEP_FACTOR = 4


def _note_path(root: str, turn_key: str, create: bool = False) -> str:
    return os.path.join(state_folder(root, PRUNED_DIR, create=create), f"{turn_key}.json")


def note_pruned(root: str, turn_key: str, *, calls: int = 0, log: bool = False) -> None:
    """Record that retention removed ``calls`` call records (and the file
    tools' log, ``log``) of the turn whose folder is ``turn_key``."""
    path = _note_path(root, turn_key, create=True)
    note = read_note(path) or {"calls": 0, "log": False}
    note["calls"] = int(note.get("calls", 0)) + calls
    note["log"] = bool(note.get("log")) or log
    note["at"] = time.time()
    write_json_durably(path, note)


def read_note(path: str) -> dict | None:
    try:
        note = read_json(path)
    except (OSError, ValueError):
        return None
    return note if isinstance(note, dict) else None


def pruned_text(root: str, turn_id: str) -> str:
    """What retention removed of this turn, as a sentence ('' when nothing)."""
    note = read_note(_note_path(root, id_key(turn_id)))
    if note is None:
        return ""
    what = []
    if int(note.get("calls", 0)):
        what.append(f"{int(note['calls'])} bash call record(s)")
    if note.get("log"):
        what.append("the write_file/edit_file records")
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(float(note.get("at", 0))))
    return (f"retention removed {' and '.join(what) or 'records'} of this turn on {when} "
            f"(older than {ARTIFACTS_MAX_AGE_ENV}): what they changed cannot be rolled back")


def prune_notes(root: str, older_than: float) -> None:
    """Drop notes made long before the cut (NOTE_KEEP_FACTOR times its age)."""
    folder = state_folder(root, PRUNED_DIR)
    age = time.time() - older_than
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        path = os.path.join(folder, name)
        try:
            if time.time() - os.lstat(path).st_mtime > NOTE_KEEP_FACTOR * age:
                os.unlink(path)
        except OSError:
            pass
