"""The set of activities a workspace worker registers."""

from __future__ import annotations

from typing import Any, Callable

from temporalio import activity

from activities.base import tool_activity
from activities.bash.tool import run_bash
from activities.plan import build_plan_activity
from activities.read_stage import build_read_stage_activity
from activities.write_stage import build_write_stage_activity
from activities.turn_results import save_turn_result_part
from activities.files.write import edit_file, read_file, write_file
from activities.search.grep import glob_files, grep
from core.contracts import Policy
from core.names import DEFAULT_POLICY_ACTIVITY
from core.tools.specs import BASH, EDIT_FILE, GLOB, GREP, READ_FILE, TOOLS, WRITE_FILE


def build_activities(
    workspace_root: str | None = None, default_policy: Policy | None = None
) -> list[Callable[..., Any]]:
    """Every tool as an activity (type = tool name), confined to
    ``workspace_root`` when given, plus the activity that tells a turn without
    an explicit policy what this worker's default is (turns recorded before
    plans were) and the one that records a turn's plan."""
    policy = default_policy or Policy()

    @activity.defn(name=DEFAULT_POLICY_ACTIVITY)
    async def default_policy_activity() -> Policy:
        return policy

    tools = [
        tool_activity(READ_FILE, read_file, allowed_root=workspace_root),
        tool_activity(WRITE_FILE, write_file, allowed_root=workspace_root),
        tool_activity(EDIT_FILE, edit_file, allowed_root=workspace_root),
        tool_activity(GREP, grep, allowed_root=workspace_root),
        tool_activity(GLOB, glob_files, allowed_root=workspace_root),
        tool_activity(BASH, run_bash, in_thread=False, allowed_root=workspace_root),
    ]
    assert {a.__temporal_activity_definition.name for a in tools} == set(TOOLS)  # type: ignore[attr-defined]
    from activities.txn.activities import build_txn_activities  # rollback, bash preview

    return [*tools, build_read_stage_activity(tools), build_write_stage_activity(tools), default_policy_activity,
            build_plan_activity(policy, allowed_root=workspace_root), save_turn_result_part,
            *build_txn_activities(workspace_root)]
