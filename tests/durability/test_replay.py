"""Recorded histories of real runs replay against the current workflow code;
a non-deterministic change is caught."""

from __future__ import annotations

import pytest
from temporalio import workflow
from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from tests.durability.record_histories import FIRST_RELEASE, HISTORIES, SCENARIOS
from tests.support import load_history
from core.names import TURN_WORKFLOW as WORKFLOW_NAME
from workflows.turn import AgentTurnWorkflow

with workflow.unsafe.imports_passed_through():
    from core.contracts import TurnInput, TurnResult


def load(name: str) -> WorkflowHistory:
    return load_history(HISTORIES, name)


def test_every_scenario_has_a_recorded_history() -> None:
    assert sorted(p.stem for p in HISTORIES.glob("*.json")) == sorted(SCENARIOS)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
async def test_history_replays_against_current_code(name: str) -> None:
    replayer = Replayer(workflows=[AgentTurnWorkflow], data_converter=pydantic_data_converter)
    result = await replayer.replay_workflow(load(name), raise_on_replay_failure=False)
    assert result.replay_failure is None, f"{name}: {result.replay_failure}"


@workflow.defn(name=WORKFLOW_NAME)
class ReorderedTurnWorkflow(AgentTurnWorkflow):
    """A careless refactor: run the stages back to front."""

    @workflow.init
    def __init__(self, turn: TurnInput) -> None:
        super().__init__(turn)

    @workflow.run
    async def run(self, turn: TurnInput) -> TurnResult:
        return await super().run(turn)

    async def _execute(self) -> None:
        assert self._plan is not None
        self._plan.stages.reverse()
        await super()._execute()


async def test_a_nondeterministic_change_is_caught() -> None:
    replayer = Replayer(workflows=[ReorderedTurnWorkflow], data_converter=pydantic_data_converter)
    result = await replayer.replay_workflow(load("mixed_failure_skips"), raise_on_replay_failure=False)
    assert result.replay_failure is not None
    assert "Nondeterminism" in type(result.replay_failure).__name__ or "nondetermin" in str(result.replay_failure).lower()


RECORDED_PLANS = sorted(n for n in SCENARIOS if n.startswith("plan_"))


@pytest.mark.parametrize("name", RECORDED_PLANS)
async def test_recorded_plans_replay_on_a_build_whose_planning_differs(name: str, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A turn that recorded its plan never plans again: even a build whose
    planning would blow up (or judge differently) replays it unchanged."""
    import core.turn.planning

    def exploding(*args: object, **kwargs: object) -> None:
        raise AssertionError("planning ran during replay")

    monkeypatch.setattr(core.turn.planning, "prepare_call", exploding)
    replayer = Replayer(workflows=[AgentTurnWorkflow], data_converter=pydantic_data_converter)
    result = await replayer.replay_workflow(load(name), raise_on_replay_failure=False)
    assert result.replay_failure is None, f"{name}: {result.replay_failure}"


def test_new_histories_record_their_plan_and_old_ones_do_not() -> None:
    def markers(name: str) -> list[str]:
        return [
            e.marker_recorded_event_attributes.marker_name
            for e in load(name).events
            if e.HasField("marker_recorded_event_attributes")
        ]

    assert "core_patch" in markers("plan_default_policy")
    assert all("core_patch" not in markers(n) for n in FIRST_RELEASE)
    assert all("core_patch" in markers(n) for n in SCENARIOS if n not in FIRST_RELEASE)


def test_turns_since_the_baseline_decide_every_patch_with_one_marker_first() -> None:
    """workflows.versions: one patch marker, ahead of every other marker, so
    no split of a later workflow task can strand a patch decision."""
    baseline = [n for n in SCENARIOS if n.startswith("baseline_")]
    assert baseline
    for name in baseline:
        names = [
            e.marker_recorded_event_attributes.marker_name
            for e in load(name).events
            if e.HasField("marker_recorded_event_attributes")
        ]
        assert names[0] == "core_patch" and names.count("core_patch") == 1, (name, names)
