"""TurnRollbackWorkflow: run the ``rollback_turn`` activity on the worker that
holds the workspace, so ``client.py rollback`` works from any machine."""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from core.names import ROLLBACK_ACTIVITY, ROLLBACK_WORKFLOW
    from core.txn_contracts import RollbackRequest, RollbackResult



@workflow.defn(name=ROLLBACK_WORKFLOW)
class TurnRollbackWorkflow:
    @workflow.run
    async def run(self, request: RollbackRequest) -> RollbackResult:
        return await workflow.execute_activity(
            ROLLBACK_ACTIVITY,
            request,
            result_type=RollbackResult,
            start_to_close_timeout=timedelta(minutes=10),
            heartbeat_timeout=None,
            # Idempotent: a path already back in its pre-turn state counts as done.
            retry_policy=RetryPolicy(maximum_attempts=5, non_retryable_error_types=["RollbackRefused"]),
        )
