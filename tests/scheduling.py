"""Test order for parallel runs (pytest-xdist): the slowest tests first.

Most of the suite's wall time is a few dozen tests that wait (a killed
worker's heartbeat timeout, a retry's backoff, a restarted server, thousands
of calls). Handed out in collection order they tend to start last, on
workers that are otherwise done, and the run ends with one worker waiting
alone. Started first (with ``--dist load --maxschedchunk 2``, so a worker
holds at most two tests ahead), they overlap each other and the many short
tests fill the gaps: longest-first scheduling.

The list is measured (each test's wall time in a full ``scripts/test`` run), longest first; a test
missing from it merely runs in its collection order. Prefixes match every
parametrization. A single-process run keeps the collection order. A test whose
cost is a module-scoped fixture shared with its neighbours (the shell corpus
report) is left out: moved away from them, it would build the fixture twice.
"""

from __future__ import annotations

import os

import pytest

SLOWEST_FIRST = (
    "tests/session/test_session_crash.py::test_worker_killed_during_a_model_call_and_during_a_turn",
    "tests/durability/test_session_random_kill.py::test_a_session_killed_at_random_moments_applies_and_reports_each_call_once",
    "tests/session/test_session_long.py::test_a_long_session_continues_as_new_and_stays_small",
    "tests/cli/test_client_cli.py::test_twenty_consecutive_runs_all_exit_zero",
    "tests/tools/test_limits.py::test_thousands_of_calls_complete_and_keep_every_result",
    "tests/cli/test_web_ui.py::test_approve_a_paused_turn_from_the_web_ui",
    "tests/session/test_session.py::test_a_model_call_heartbeats_while_its_dispatched_calls_are_still_being_sent",
    "tests/turn/test_streaming_crash.py::test_worker_killed_mid_stream_after_a_dispatched_call_ran",
    "tests/durability/test_worker_crash.py::test_killed_after_writes_landed_the_replay_reports_them_applied",
    "tests/txn/test_txn_worker_crash.py::test_sigkill_during_the_command_runs_it_again_once",
    "tests/cli/test_client_cli.py::test_every_bad_input_exits_2_with_a_message",
    "tests/txn/test_txn_rollback_crash.py::test_rollback_killed_midway_finishes_on_the_next_worker",
    "tests/turn/test_streaming_crash.py::test_worker_killed_after_an_early_read_stage_the_next_worker_runs_only_the_rest",
    "tests/cli/test_session_cli.py::test_session_commands",
    "tests/cli/test_client_cli.py::test_approve_by_signal_while_the_worker_is_down",
    "tests/cli/test_waiting.py::test_approve_right_after_the_worker_holding_the_turn_was_killed",
    "tests/txn/test_txn_worker_crash.py::test_sigkill_between_journal_and_apply_finishes_the_apply",
    "tests/cli/test_client_cli.py::test_pending_show_approve_reject_from_the_cli",
    "tests/txn/test_txn_worker_crash.py::test_without_capture_a_lost_command_is_not_run_again",
    "tests/mcp/test_mcp_hostile.py::test_client_vanishes_mid_call_and_the_turn_stays_durable",
    "tests/durability/test_worker_crash.py::test_worker_killed_mid_batch",
    "tests/gate/test_network_on_approval.py::test_without_the_option_the_sandbox_has_no_network",
    "tests/cli/test_workspace_queue.py::test_two_workers_two_folders_each_takes_only_its_own_turns",
    "tests/txn/test_txn_rollback.py::test_a_turns_changes_land_and_roll_back_after_a_restart",
    "tests/session/test_session_control.py::test_broken_stream_server_error_and_rate_limit_are_retried_honouring_retry_after",
    "tests/mcp/test_mcp_tasks.py::test_task_completes_through_a_new_server_after_sigkill",
    "tests/shell/test_bash_sandbox.py::test_one_memory_limit_for_all_the_command_processes",
    "tests/txn/test_txn_rollback.py::test_conflicts_escapes_and_timeouts",
    "tests/turn/test_streaming.py::test_cancelling_mid_stream_records_the_call_that_ran",
    "tests/mcp/test_mcp_inspector.py::test_inspector_lists_the_tools_and_calls_one",
    "tests/tools/test_file_tools.py::test_1gb_sparse_file_read_at_the_end_with_flat_memory",
    "tests/shell/against_bash/test_bash_differential.py::test_generated_commands_mean_what_bash_means",
    "tests/cli/test_client_cli.py::test_status_and_pending_explain_a_stuck_turn",
    "tests/gate/test_gate_restart.py::test_pause_at_a_call_survives_killing_worker_and_server",
    "tests/cli/test_client_cli.py::test_run_status_result_and_snapshot_carry",
    "tests/tools/test_workspace.py::test_very_long_paths_never_crash",
    "tests/session/test_session_crash.py::test_a_session_waiting_for_approval_survives_killing_worker_and_server",
    "tests/durability/test_restart_durability.py::test_pause_survives_killing_worker_and_server",
    "tests/cli/test_client_cli.py::test_clear_errors_for_bad_input_and_no_server",
    "tests/cli/test_console.py::test_approve_a_paused_turn_on_the_console_page",
    "tests/mcp/test_mcp_approval.py::test_an_approval_request_never_answered_is_rejected_after_the_timeout",
    "tests/mcp/test_mcp_approval.py::test_an_input_required_call_never_retried_is_rejected_after_the_timeout",
    "tests/cli/test_client_cli.py::test_tools_exports_both_formats",
    "tests/mcp/test_mcp_tasks.py::test_tasks_list_pages_through_this_servers_turns_only",
    "tests/cli/test_client_cli.py::test_run_says_within_seconds_that_no_worker_polls",
    "tests/txn/test_overlay_worker_crash.py::test_sigkill_of_the_worker_lands_the_effect_exactly_once",
    "tests/session/test_session.py::test_each_tool_call_surfaces_while_the_model_still_streams",
    "tests/mcp/test_mcp_approval.py::test_without_elicitation_progress_says_where_to_decide_then_times_out",
    "tests/durability/test_upgrade.py::test_turn_in_flight_finishes_on_a_build_that_rejects_a_command_it_already_ran",
)


def _rank(item: pytest.Item) -> int:
    name = item.nodeid.split("[", 1)[0]
    try:
        return SLOWEST_FIRST.index(name)
    except ValueError:
        return len(SLOWEST_FIRST)


def slowest_first(items: list[pytest.Item]) -> None:
    """Reorder ``items`` in place, slowest first, when this process is an
    xdist worker (every worker must collect the same order: the sort is
    stable and depends only on the node ids)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items.sort(key=_rank)
