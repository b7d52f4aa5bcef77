"""A bash call's changes are applied only by the digest its turn's history
holds (workflows.bash_apply): the first half journals and reports the digest,
the second applies exactly that changeset; a retry of the first half never
trusts what an earlier attempt left. Real bubblewrap, real overlays, real
files; the last test runs the real workflow on the dev server."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from activities.bash.tool import run_bash
from activities.txn import journal
from activities.txn.activities import apply_journal
from activities.txn.store import call_dir, touch_durably
from core.contracts import Policy, ToolRequest, TurnResult
from core.names import APPLY_JOURNAL_ACTIVITY
from core.tools.specs import BashArgs
from runtime.worker import build_worker
from tests.support import call, turn
from tests.txn.support.helpers import needs_overlay
from workflows.turn import AgentTurnWorkflow

pytestmark = needs_overlay

TURN = "t-digest"
WRITE = "sh write.sh"


def first_half(ws: Path, command: str = WRITE, call_id: str = "c1") -> tuple[ToolRequest, BashArgs]:
    req = ToolRequest(call_id=call_id, tool="bash", workspace_root=str(ws), arguments={"command": command},
                      turn_id=TURN, journal_only=True)
    return req, BashArgs(command=command)


def second_half(ws: Path, digest: str, call_id: str = "c1") -> ToolRequest:
    return ToolRequest(call_id=call_id, tool=APPLY_JOURNAL_ACTIVITY, workspace_root=str(ws), arguments={},
                       turn_id=TURN, txn_digest=digest)


def seed(ws: Path) -> None:
    (ws / "write.sh").write_text("echo good > out.txt\ntouch ran-$$.marker\necho wrote\n")


def forge_content(ws: Path, call_id: str, data: bytes) -> None:
    """What an attacker with the state folder would do: rewrite the journaled
    content and the manifest's record of it, so the record is consistent."""
    j = journal.load(str(ws), TURN, call_id)
    assert j is not None
    change = next(c for c in j.changeset.changes if c.path == "out.txt")
    Path(j.dir, change.content).write_bytes(data)
    raw = json.loads(Path(j.dir, "manifest.json").read_text())
    for c in raw["changeset"]["changes"]:
        if c["path"] == "out.txt":
            c["new"]["sha256"], c["new"]["size"] = hashlib.sha256(data).hexdigest(), len(data)
    Path(j.dir, "manifest.json").write_text(json.dumps(raw))


def markers(ws: Path) -> list[str]:
    return sorted(p.name for p in ws.glob("ran-*.marker"))


async def test_the_first_half_changes_nothing_and_reports_the_digest_the_second_applies(workspace: Path) -> None:
    seed(workspace)
    first = await run_bash(*first_half(workspace))
    assert first.metadata["capture"] == "journaled" and "wrote" in first.output, first
    assert not (workspace / "out.txt").exists() and markers(workspace) == []
    kept = journal.load(str(workspace), TURN, "c1")
    assert kept is not None and kept.deferred and first.metadata["txn_digest"] == kept.changeset.digest()
    done = apply_journal(second_half(workspace, first.metadata["txn_digest"]))
    assert not done.is_error and done.metadata["capture"] == "applied", done
    assert (workspace / "out.txt").read_text() == "good\n" and len(markers(workspace)) == 1
    again = apply_journal(second_half(workspace, first.metadata["txn_digest"]))  # a retry: idempotent
    assert again.metadata["capture"] == "applied" and (workspace / "out.txt").read_text() == "good\n"


async def test_a_journal_rewritten_after_its_digest_was_recorded_is_not_applied(workspace: Path) -> None:
    seed(workspace)
    first = await run_bash(*first_half(workspace))
    forge_content(workspace, "c1", b"evil\n")
    done = apply_journal(second_half(workspace, first.metadata["txn_digest"]))
    assert done.is_error and done.metadata["capture"] == "refused", done
    assert "not the changeset the turn recorded" in done.output
    assert not (workspace / "out.txt").exists()


async def test_the_second_half_without_a_recorded_digest_applies_nothing(workspace: Path) -> None:
    seed(workspace)
    await run_bash(*first_half(workspace))
    done = apply_journal(second_half(workspace, ""))
    assert done.is_error and not (workspace / "out.txt").exists(), done


async def test_a_retry_discards_what_an_earlier_attempt_journaled_and_runs_the_command_again(workspace: Path) -> None:
    # The first attempt journaled, then its worker was lost before the
    # history recorded anything; the record is then rewritten, consistently.
    seed(workspace)
    await run_bash(*first_half(workspace))
    forge_content(workspace, "c1", b"evil\n")
    retry = await run_bash(*first_half(workspace))  # same call: what a retry of the first half sees
    assert retry.metadata["capture"] == "journaled", retry
    done = apply_journal(second_half(workspace, retry.metadata["txn_digest"]))
    assert done.metadata["capture"] == "applied", done
    assert (workspace / "out.txt").read_text() == "good\n"  # the command's own change, never the record's
    assert len(markers(workspace)) == 1  # only the run whose digest was recorded landed


async def test_a_retry_refuses_a_record_that_says_it_was_applied(workspace: Path) -> None:
    seed(workspace)
    await run_bash(*first_half(workspace))
    touch_durably(str(Path(call_dir(str(workspace), TURN, "c1")) / "applied"))
    retry = await run_bash(*first_half(workspace))
    assert retry.is_error and "Not run again" in retry.output, retry
    assert not (workspace / "out.txt").exists() and markers(workspace) == []


async def test_a_turn_records_the_digest_before_it_applies(client: Client, workspace: Path, task_queue: str) -> None:
    seed(workspace)
    t = turn(workspace, task_queue, [call(0, "bash", command=WRITE)], policy=Policy(mode="auto"))
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        result = await client.execute_workflow(
            AgentTurnWorkflow.run, t, id=t.turn_id, task_queue=task_queue, result_type=TurnResult
        )
    [r] = result.results
    assert not r.is_error and r.metadata["capture"] == "applied" and "wrote" in r.output, r
    assert (workspace / "out.txt").read_text() == "good\n"
    history = await client.get_workflow_handle(t.turn_id).fetch_history()
    scheduled = [
        e.activity_task_scheduled_event_attributes
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]
    assert [s.activity_type.name for s in scheduled] == ["bash", APPLY_JOURNAL_ACTIVITY]
    first_completed = next(e for e in history.events if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED)
    recorded = json.loads(first_completed.activity_task_completed_event_attributes.result.payloads[0].data)
    assert recorded["metadata"]["capture"] == "journaled"
    assert recorded["metadata"]["txn_digest"] == r.metadata["txn_digest"]
    applied_with = json.loads(scheduled[1].input.payloads[0].data)
    assert applied_with["txn_digest"] == recorded["metadata"]["txn_digest"]
