"""Control requests that race on one turn, on the real dev server with an
in-process worker and real files: an approve and a reject sent at the same
moment (updates, signals, two CLI processes), two rollbacks at once (two
clients, two CLI processes), a rollback while the turn waits, after a later
turn changed the file, and right after a cancel during the apply; one turn id
started twice (at once, and again after the first finished); an approval
signalled while no worker ran, before the approval timeout passed. Each race
must have one clear outcome: one decision, one restore, one execution."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.exceptions import WorkflowAlreadyStartedError

from core.contracts import ApprovalDecision, Policy, ToolStatus, TurnInput, TurnResult, TurnStatus
from runtime.api import TurnClient, TurnProblem
from runtime.worker import build_worker
from tests.processes import run_client, server_address
from tests.support import call, turn
from tests.turn.test_approval import start, wait_paused
from tests.txn.support.helpers import needs_overlay
from tests.txn.support.pipeline import bash_call
from workflows.turn import AgentTurnWorkflow

FILES = [f"f{i}.txt" for i in range(12)]


def writes(workspace: Path, task_queue: str, *, mode: str = "ask-writes", text: str = "new\n") -> TurnInput:
    calls = [call(i, "write_file", path=name, content=text) for i, name in enumerate(FILES)]
    return turn(workspace, task_queue, calls, prefix="race", policy=Policy(mode=mode))  # type: ignore[arg-type]


def seed(workspace: Path) -> None:
    """Back to before any turn: the files the batches create do not exist."""
    for name in FILES:
        (workspace / name).unlink(missing_ok=True)


def contents(workspace: Path) -> set[str | None]:
    return {(workspace / name).read_text() if (workspace / name).exists() else None for name in FILES}


async def test_approve_and_reject_at_once_one_decision_wins(client: Client, workspace: Path, task_queue: str) -> None:
    seed(workspace)
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        for _ in range(4):  # the winner differs from round to round; each round must be consistent
            t = writes(workspace, task_queue)
            handle = await start(client, t)
            digest = (await wait_paused(handle)).batch_digest

            def decision(who: str, approve: bool) -> ApprovalDecision:
                return ApprovalDecision(batch_digest=digest, approve=approve, approver=who)

            # Updates through the client API (as `agent-turn approve` sends
            # them) racing raw signals (as the Web UI sends them).
            outcomes = await asyncio.gather(
                TurnClient(client).approve(t.turn_id, approver="u-yes", digest=digest),
                TurnClient(client).reject(t.turn_id, approver="u-no", digest=digest),
                handle.signal(AgentTurnWorkflow.approve, decision("s-yes", True)),
                handle.signal(AgentTurnWorkflow.reject, decision("s-no", False)),
                return_exceptions=True,
            )
            result: TurnResult = await handle.result()
            decided = result.decision
            assert decided is not None
            accepted = [o for o in outcomes[:2] if isinstance(o, ApprovalDecision)]
            # Every losing update is told so in the turn's terms, never with
            # the server's raw "unexpected workflow task failure".
            told = [str(o.cause) if isinstance(o, WorkflowUpdateFailedError) else str(o) for o in outcomes[:2]
                    if isinstance(o, (WorkflowUpdateFailedError, TurnProblem))]
            assert len(accepted) + len(told) == 2, outcomes
            assert all(any(w in m for w in ("already decided", "not waiting", "too late")) for m in told), told
            assert len(accepted) == (1 if decided.via == "update" else 0), (outcomes, decided)
            if accepted:
                assert accepted[0].approver == decided.approver and accepted[0].approve == decided.approve
            assert decided.approver == {True: {"update": "u-yes", "signal": "s-yes"},
                                        False: {"update": "u-no", "signal": "s-no"}}[decided.approve][decided.via]
            if decided.approve:
                assert result.status == TurnStatus.COMPLETED and contents(workspace) == {"new\n"}
                assert all(r.status == ToolStatus.OK for r in result.results)
            else:  # nothing ran after the reject
                assert result.status == TurnStatus.REJECTED and contents(workspace) == {None}
                assert all(r.status == ToolStatus.DENIED for r in result.results)
            seed(workspace)


async def test_approve_and_reject_from_two_cli_processes(client: Client, workspace: Path, task_queue: str) -> None:
    seed(workspace)
    address = server_address(client)
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        t = writes(workspace, task_queue)
        handle = await start(client, t)
        await wait_paused(handle)
        early = await asyncio.to_thread(run_client, "--address", address, "rollback", t.turn_id)
        yes, no = await asyncio.gather(
            asyncio.to_thread(run_client, "--address", address, "approve", t.turn_id, "--approver", "cli-yes"),
            asyncio.to_thread(run_client, "--address", address, "reject", t.turn_id, "--approver", "cli-no", "--reason", "no"),
        )
        result: TurnResult = await handle.result()
    assert result.decision is not None
    winner, loser = (yes, no) if result.decision.approve else (no, yes)
    assert winner.returncode in (0, 3), winner.stdout + winner.stderr  # 3: the batch was rejected
    # The loser hears that it lost: refused by the paused turn, or too late
    # for a turn the winner already finished (not "no such turn").
    said = loser.stdout + loser.stderr
    assert loser.returncode == 1 and any(w in said for w in ("already decided", "not waiting", "too late")), said
    assert "no turn" not in said
    # A rollback while the turn waits for its decision is refused, and says why.
    assert early.returncode != 0 and "still running" in early.stdout + early.stderr, early.stdout + early.stderr
    assert result.decision.approver == ("cli-yes" if result.decision.approve else "cli-no")
    assert contents(workspace) == ({"new\n"} if result.decision.approve else {None})


async def test_two_rollbacks_at_once_restore_each_file_once(client: Client, workspace: Path, task_queue: str) -> None:
    seed(workspace)
    turns = TurnClient(client)
    address = server_address(client)
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        t = writes(workspace, task_queue, mode="auto")
        assert (await turns.run_turn(t)).status == TurnStatus.COMPLETED and contents(workspace) == {"new\n"}
        first, second = await asyncio.gather(turns.rollback(t.turn_id), turns.rollback(t.turn_id))
        assert contents(workspace) == {None}
        # The same from two CLI processes, on a second turn.
        t2 = writes(workspace, task_queue, mode="auto")
        await turns.run_turn(t2)
        cli = await asyncio.gather(*(asyncio.to_thread(run_client, "--address", address, "rollback", t2.turn_id)
                                     for _ in range(2)))
    assert contents(workspace) == {None}
    for report in (first, second):
        assert report.conflicts == [] and report.not_restorable == [], report.text
    # Each file was put back by exactly one of them; the other found it back.
    assert sorted(first.restored + second.restored) == sorted(FILES), (first.text, second.text)
    assert sorted(first.already + second.already) == sorted(FILES), (first.text, second.text)
    said = sorted(c.stdout for c in cli)
    assert all(c.returncode == 0 for c in cli), said
    assert "restored 0 path(s)" in said[0] and f"{len(FILES)} path(s) were already" in said[0], said
    assert f"restored {len(FILES)} path(s)" in said[1], said


async def test_one_turn_id_runs_its_batch_once(
    client: Client, workspace: Path, task_queue: str, tmp_path: Path
) -> None:
    seed(workspace)
    turns = TurnClient(client)
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        t = writes(workspace, task_queue, mode="auto")
        started = await asyncio.gather(turns.start_turn(t), turns.start_turn(t), return_exceptions=True)
        handles = [s for s in started if not isinstance(s, BaseException)]
        assert len(handles) == 1 and isinstance([s for s in started if s not in handles][0], WorkflowAlreadyStartedError)
        assert (await handles[0].result()).status == TurnStatus.COMPLETED
        # The same id after the first run completed: a second batch under it
        # would share the first one's records (rollback, applied calls).
        again = t.model_copy(update={"tool_calls": writes(workspace, task_queue, text="again\n").tool_calls})
        with pytest.raises(WorkflowAlreadyStartedError):
            await turns.start_turn(again)
        batch = tmp_path / "calls.json"
        batch.write_text(json.dumps([{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                                 for c in again.tool_calls]))
        cli = await asyncio.to_thread(
            run_client, "--address", server_address(client), "run", "--workspace", str(workspace),
            "--task-queue", task_queue, "--calls", str(batch), "--turn-id", t.turn_id, "--policy", "auto",
        )
    assert cli.returncode == 1 and f"a turn {t.turn_id} already exists" in cli.stderr, cli.stdout + cli.stderr
    assert contents(workspace) == {"new\n"}
    runs = [w async for w in client.list_workflows(f"WorkflowId = '{t.turn_id}'")]
    assert len(runs) == 1


async def test_rolling_back_an_earlier_turn_keeps_a_later_turns_change(
    client: Client, workspace: Path, task_queue: str
) -> None:
    auto = Policy(mode="auto")  # type: ignore[arg-type]
    turns = TurnClient(client)
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        a = turn(workspace, task_queue, [call(0, "write_file", path="a.txt", content="A\n")], policy=auto)
        await turns.run_turn(a)
        b = turn(workspace, task_queue, [call(0, "read_file", path="a.txt"),
                                         call(1, "edit_file", path="a.txt", old_string="A", new_string="B")],
                 policy=auto)
        assert not (await turns.run_turn(b)).results[1].is_error
        kept = await turns.rollback(a.turn_id)
        assert (workspace / "a.txt").read_text() == "B\n"  # B's change is not undone by A's rollback
        undo_b = await turns.rollback(b.turn_id)
        assert (workspace / "a.txt").read_text() == "A\n"
        undo_a = await turns.rollback(a.turn_id)  # now A's own state is current again: it goes
    assert kept.restored == [] and [c for c in kept.conflicts if "a.txt" in c], kept.text
    assert undo_b.restored == ["a.txt"] and undo_a.restored == ["a.txt"], (undo_b.text, undo_a.text)
    assert not (workspace / "a.txt").exists()


@needs_overlay
async def test_a_rollback_after_a_cancel_during_apply_leaves_nothing_behind(
    client: Client, workspace: Path, task_queue: str
) -> None:
    # Enough new files (under the gate's 1000) that applying them takes a
    # while: the cancel lands while the worker's apply thread copies them in.
    (workspace / "gen.py").write_text("import os\nos.mkdir('d')\nfor i in range(900):\n"
                                      "    open(f'd/{i}', 'w').write(str(i) * 30000)\n")
    t = turn(workspace, task_queue, [bash_call("python3 gen.py")], policy=Policy(mode="auto"))  # type: ignore[arg-type]
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        handle = await start(client, t)
        for _ in range(1200):  # the apply has begun once the folder shows up
            if (workspace / "d").exists():
                break
            await asyncio.sleep(0.02)
        else:
            raise AssertionError("the changeset was never applied")
        await handle.cancel()
        # The turn ends either way (the cancelled apply is reported as "may
        # or may not have run"); the apply thread on the worker goes on.
        await asyncio.gather(handle.result(), return_exceptions=True)
        report = await TurnClient(client).rollback(t.turn_id)
        await asyncio.sleep(2)  # anything still being applied would land now
    left = sorted(p.name for p in (workspace / "d").iterdir()) if (workspace / "d").exists() else []
    assert left == [] and not (workspace / "d").exists(), (len(left), report.text[:500])
    assert report.conflicts == [], report.text[:500]


async def test_a_decision_sent_before_the_timeout_wins_when_both_wait_for_the_worker(
    client: Client, workspace: Path, task_queue: str
) -> None:
    # The person approves (as a signal: no worker needs to answer) while no
    # worker runs; the approval timeout then passes too. The worker that
    # comes back finds both in the history, the approval first.
    seed(workspace)
    t = writes(workspace, task_queue)
    t.policy.approval_timeout_seconds = 4  # type: ignore[union-attr]
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        handle = await start(client, t)
        digest = (await wait_paused(handle)).batch_digest
    decision = await TurnClient(client).approve(t.turn_id, approver="alice", digest=digest, signal=True)
    await asyncio.sleep(6)  # the timeout's timer fires on the server meanwhile
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
        result: TurnResult = await handle.result()
    assert result.decision is not None and (result.decision.approver, result.decision.via) == ("alice", "signal")
    assert result.status == TurnStatus.COMPLETED and contents(workspace) == {"new\n"}, decision


def test_a_task_the_server_failed_because_a_decision_arrived_is_not_a_stuck_turn() -> None:
    """Two decisions at once: the server fails the task that tried to finish
    while the second one arrived (unhandled command / update) and the next
    task follows. The loser must be told who won, not that the turn is stuck;
    a failure of the worker's own still is."""
    from temporalio.api.enums.v1 import EventType, WorkflowTaskFailedCause as Cause
    from temporalio.api.history.v1 import HistoryEvent

    from runtime.api import stuck_task

    def failed(cause: int, message: str = "") -> HistoryEvent:
        event = HistoryEvent(event_type=EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED)
        event.workflow_task_failed_event_attributes.cause = cause
        event.workflow_task_failed_event_attributes.failure.message = message
        return event

    completed = HistoryEvent(event_type=EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED)
    routine = [Cause.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND, Cause.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_UPDATE,
               Cause.WORKFLOW_TASK_FAILED_CAUSE_RESET_STICKY_TASK_QUEUE]
    for cause in routine:
        assert stuck_task("t", [failed(cause), completed], 1) is None
        assert stuck_task("t", [failed(cause)], 1) is None
    broken = failed(Cause.WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_WORKER_UNHANDLED_FAILURE, "boom\nat line 3")
    found = stuck_task("t", [failed(routine[0]), broken, completed], 3)
    assert found is not None and found.first_line == "boom" and found.attempts == 3
    assert "workflow worker unhandled failure" in found.cause
    assert stuck_task("t", [completed, broken], 1) is None
