"""The names recorded in histories are pinned, declared once, and used.

A changed value makes every recorded history unreplayable (and every running
turn stuck on the next worker deploy); a second declaration of the same
string elsewhere is how the two drift apart."""

from __future__ import annotations

import ast

from temporalio import workflow

import core.names as names
from tests.layout_support import source_modules
from workflows.rollback import TurnRollbackWorkflow
from workflows.session import AgentSessionWorkflow
from workflows.turn import AgentTurnWorkflow

PINNED = {
    "TURN_WORKFLOW": "AgentTurnWorkflow",
    "SESSION_WORKFLOW": "AgentSessionWorkflow",
    "ROLLBACK_WORKFLOW": "TurnRollbackWorkflow",
    "MCP_SESSION_WORKFLOW": "McpSessionSnapshots",
    "READ_FILE": "read_file",
    "WRITE_FILE": "write_file",
    "EDIT_FILE": "edit_file",
    "GREP": "grep",
    "GLOB": "glob",
    "BASH": "bash",
    "PLAN_TURN_ACTIVITY": "plan_turn",
    "DEFAULT_POLICY_ACTIVITY": "default_policy",
    "SAVE_RESULT_PART_ACTIVITY": "save_turn_result_part",
    "BASH_PREVIEW_ACTIVITY": "bash_preview",
    "DISCARD_PREVIEW_ACTIVITY": "bash_discard_preview",
    "APPLY_JOURNAL_ACTIVITY": "bash_apply_journal",
    "ROLLBACK_ACTIVITY": "rollback_turn",
    "CALL_MODEL_ACTIVITY": "call_model",
    "APPEND_TRANSCRIPT_ACTIVITY": "append_transcript",
    "DESCRIBE_TURN_ACTIVITY": "describe_turn",
    "ABANDON_BATCH_ACTIVITY": "abandon_batch",
    "READ_STAGE_ACTIVITY": "read_stage",
    "WRITE_STAGE_ACTIVITY": "write_stage",
    "APPROVE_SIGNAL": "approve",
    "REJECT_SIGNAL": "reject",
    "DISPATCH_SIGNAL": "dispatch",
    "DISPATCH_CALLS_SIGNAL": "dispatch_calls",
    "SEND_SIGNAL": "send",
    "CLOSE_SIGNAL": "close",
    "DECIDE_UPDATE": "decide",
    "CLOSE_BATCH_UPDATE": "close_batch",
    "STATUS_QUERY": "status",
    "CLOSED_BATCH_QUERY": "closed_batch",
    "MCP_REMEMBER_SIGNAL": "remember_snapshots",
    "MCP_SNAPSHOTS_QUERY": "snapshots",
    "RECORDED_PLAN_PATCH": "recorded-plan",
    "BASH_RETRY_PATCH": "bash-retry-with-capture",
    "PREVIEW_PATCH": "bash-preview",
    "STREAMING_DISPATCH_PATCH": "streaming-dispatch",
    "SHORT_DIGEST_PATCH": "short-digest",
    "DECISION_INTEGRITY_PATCH": "decision-integrity",
    "READ_STAGE_PATCH": "read-stage-activity",
    "EARLY_READ_STAGE_PATCH": "early-read-stage",
    "EFFECT_GATE_PATCH": "effect-gate",
    "FORWARD_CALL_DIGEST_PATCH": "session-forward-call-digest",
    "SESSION_NAMED_DIGEST_PATCH": "session-named-digest",
    "SEARCH_ATTRIBUTES_PATCH": "turn-search-attributes",
    "ROLLBACK_HEARTBEAT_PATCH": "rollback-heartbeat",
    "TURN_BASELINE_PATCH": "turn-patches-at-start",
}


def _declared() -> dict[str, str]:
    return {k: v for k, v in vars(names).items() if k.isupper() and isinstance(v, str)}


def test_recorded_names_never_change() -> None:
    assert _declared() == PINNED


def test_the_workflows_answer_to_the_pinned_names() -> None:
    turn = workflow._Definition.must_from_class(AgentTurnWorkflow)
    session = workflow._Definition.must_from_class(AgentSessionWorkflow)
    rollback = workflow._Definition.must_from_class(TurnRollbackWorkflow)
    assert (turn.name, session.name, rollback.name) == (names.TURN_WORKFLOW, names.SESSION_WORKFLOW, names.ROLLBACK_WORKFLOW)
    assert set(turn.signals) == {names.APPROVE_SIGNAL, names.REJECT_SIGNAL, names.DISPATCH_SIGNAL, names.DISPATCH_CALLS_SIGNAL}
    assert set(turn.updates) == {names.DECIDE_UPDATE, names.CLOSE_BATCH_UPDATE}
    assert set(turn.queries) == {names.STATUS_QUERY, names.CLOSED_BATCH_QUERY}
    assert set(session.signals) == {names.SEND_SIGNAL, names.CLOSE_SIGNAL, names.APPROVE_SIGNAL, names.REJECT_SIGNAL}
    assert set(session.queries) == {names.STATUS_QUERY}


def test_the_worker_registers_every_activity_name() -> None:
    from runtime.plugin import AgentToolsPlugin

    registered = {a.__temporal_activity_definition.name for a in AgentToolsPlugin(workspace=None).registered_activities()}  # type: ignore[attr-defined]
    activity_names = {v for k, v in PINNED.items() if k.endswith("_ACTIVITY")} | set(names.TOOL_ACTIVITIES)
    assert activity_names <= registered


def _name_literals(tree: ast.AST) -> list[tuple[int, str]]:
    """String literals in the places a history name is declared: a module
    or class assignment, a ``name=`` keyword, ``workflow.patched(...)``."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            if all(isinstance(t, ast.Name) and t.id.isupper() for t in node.targets):
                found.append((node.lineno, node.value.value))
        elif isinstance(node, ast.keyword) and node.arg == "name":
            if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                found.append((node.value.lineno, node.value.value))
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) in ("patched", "deprecate_patch"):
            for arg in node.args:
                if isinstance(arg, ast.Constant):
                    found.append((arg.lineno, arg.value))
    return found


def test_no_other_module_declares_a_recorded_name() -> None:
    values = set(PINNED.values())
    elsewhere = [
        f"{path}:{line}: {value!r}"
        for path in source_modules()
        if path.name != "names.py" or path.parent.name != "core"
        for line, value in _name_literals(ast.parse(path.read_text()))
        if value in values
    ]
    assert elsewhere == [], "declare these in core/names.py and import them:\n" + "\n".join(elsewhere)


def test_the_pinning_check_sees_a_second_declaration() -> None:
    planted = ast.parse('PLAN = "plan_turn"\n@activity.defn(name="call_model")\ndef f(): workflow.patched("recorded-plan")\n')
    assert {v for _, v in _name_literals(planted)} == {"plan_turn", "call_model", "recorded-plan"}


