"""Transactional bash, as the bash tool uses it: which attempt of a
call may run its command, and how the capture's outcome joins the result.

The workflow retries a bash call after a lost worker (patch
``bash-retry-with-capture``); it cannot know whether the worker that ran the
first attempt had capture. This module decides, per attempt, from what the
first attempt left in its transaction folder (``<state>/txn/<turn>/<call>/``,
the worker's state folder):

- a journal (``txn.start`` -> resume/done/previewed): finish it, never run again;
- a ``launched`` marker saying ``direct`` (the command ran without capture,
  directly on the workspace): it may or may not have run; refuse to run it
  again and say so;
- a ``launched`` marker saying ``capture`` or ``read-only`` (an ``allow``
  command on the read-only workspace bind), or no marker at all (the first
  attempt never got as far as starting the command): running it again is safe.

The marker is written (fsync'd) right before the command is launched. A
direct run that finishes also stores its result (``direct-result.json``), so
a retry after a worker lost between the command's end and the server
hearing of it returns that result instead of "may or may not have run".
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

from activities.txn.store import call_dir, read_json, write_json_durably
from activities.workspace.paths import WorkspaceError

log = logging.getLogger(__name__)

LAUNCHED = "launched"
DIRECT_RESULT = "direct-result.json"
MAY_HAVE_RUN = "may-or-may-not-have-run"

MAY_HAVE_RUN_TEXT = (
    "An earlier attempt of this command ran on a worker that was lost before it reported back, and it ran "
    "without copy-on-write capture ({why}), directly on the workspace: it may or may not have run (fully or "
    "partly). It was NOT run again. Check the workspace (for example with read_file or git status) before "
    "running it again."
)


@dataclass
class Prior:
    """What an earlier attempt of this call left (attempts > 1 only)."""

    safe_to_run: bool
    mode: str = ""  # "direct" | "capture" | "" (never launched)
    result: dict | None = None  # a direct run that finished: its result
    reason: str = ""  # why it is not safe


def _folder(root: str, turn_id: str, call_id: str, create: bool) -> str:
    return call_dir(root, turn_id, call_id, create=create)


def prior_attempt(root: str, turn_id: str, call_id: str) -> Prior:
    """Whether this attempt may run the command (no journal was found)."""
    try:
        folder = _folder(root, turn_id, call_id, create=False)
    except WorkspaceError as exc:
        return Prior(False, reason=f"its transaction folder cannot be trusted: {exc}")
    try:
        marker = read_json(os.path.join(folder, LAUNCHED))
    except FileNotFoundError:
        return Prior(True)  # never launched: nothing can have happened
    except NotADirectoryError:
        return Prior(False, reason="its transaction folder is not a folder, so its start could not be recorded")
    except (OSError, ValueError) as exc:
        return Prior(False, reason=f"its start marker is unreadable: {exc}")
    mode = str(marker.get("mode", ""))
    if mode in ("capture", "read-only"):  # nothing reached the workspace unless journaled
        return Prior(True, mode)
    try:
        return Prior(False, mode, result=read_json(os.path.join(folder, DIRECT_RESULT)))
    except (OSError, ValueError):
        return Prior(False, mode, reason=str(marker.get("reason") or "capture unavailable"))


def mark_launched(root: str, turn_id: str, call_id: str, mode: str, attempt: int, reason: str = "") -> bool:
    """Durably note that the command is about to start. False: could not be
    recorded (the artifacts folder is unusable); the caller logs it."""
    try:
        folder = _folder(root, turn_id, call_id, create=True)
        write_json_durably(os.path.join(folder, LAUNCHED), {"mode": mode, "attempt": attempt, "reason": reason})
        return True
    except (OSError, WorkspaceError) as exc:
        log.warning("bash call %s of turn %s: cannot record its start (%s)", call_id, turn_id, exc)
        return False


def store_direct_result(root: str, turn_id: str, call_id: str, result: dict) -> None:
    try:
        write_json_durably(os.path.join(_folder(root, turn_id, call_id, create=False), DIRECT_RESULT), result)
    except (OSError, WorkspaceError, TypeError) as exc:
        log.warning("bash call %s: cannot store its result for a retry: %s", call_id, exc)


def result_dict(output: str, is_error: bool, metadata: dict[str, str], exit_code: int | None) -> dict:
    """What the journal keeps of a result, so a retry returns it again."""
    return {"exit_code": exit_code, "output": output, "is_error": is_error, "metadata": dict(metadata)}


def join_text(output: str, extra: str) -> str:
    if not extra:
        return output
    if not output or output == "(no output)":
        return extra
    return f"{output}\n\n{extra}"


# --- previews -----------------------------------------------------------------------

NOCHANGE_PREVIEW = "preview-no-changes.json"


def store_nochange_preview(root: str, turn_id: str, call_id: str, result: dict) -> None:
    """A preview in which the command changed nothing: its result, returned
    on approval instead of running the command a second time."""
    try:
        write_json_durably(os.path.join(_folder(root, turn_id, call_id, create=True), NOCHANGE_PREVIEW), result)
    except (OSError, WorkspaceError) as exc:
        log.warning("bash call %s: cannot keep its preview: %s", call_id, exc)


def load_nochange_preview(root: str, turn_id: str, call_id: str) -> dict | None:
    try:
        return read_json(os.path.join(_folder(root, turn_id, call_id, create=False), NOCHANGE_PREVIEW))
    except (OSError, ValueError, WorkspaceError):
        return None


def discard_nochange_preview(root: str, turn_id: str, call_id: str) -> None:
    try:
        os.unlink(os.path.join(_folder(root, turn_id, call_id, create=False), NOCHANGE_PREVIEW))
    except (OSError, WorkspaceError):
        pass


def load_preview(root: str, turn_id: str, call_id: str) -> tuple[dict, str, str]:
    """(the command's result, the preview text, the changeset digest) of a kept preview."""
    from activities.txn.changeset import summary
    from activities.txn.journal import load
    from activities.txn.preview import DIFF_FILE, Preview

    j = load(root, turn_id, call_id)
    if j is None:
        return {}, "", ""
    try:
        with open(os.path.join(j.dir, DIFF_FILE), encoding="utf-8") as fh:
            diff = fh.read()
    except OSError:
        diff = ""
    text = Preview(turn_id, call_id, summary(j.changeset), diff, len(j.changeset.changes)).text()
    return j.result, text, j.changeset.digest()
