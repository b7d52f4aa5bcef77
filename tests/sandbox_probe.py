"""A workflow that reads the wall clock, which the workflow sandbox must
refuse (tests/test_plugin.py): kept in its own module so the sandbox
re-imports it as it does any workflow code outside our packages."""

from __future__ import annotations

import datetime

from temporalio import workflow
from temporalio.exceptions import ApplicationError


@workflow.defn(name="SandboxProbeClockReading", failure_exception_types=[Exception])
class ClockReadingWorkflow:
    @workflow.run
    async def run(self) -> str:
        try:
            return datetime.datetime.now().isoformat()
        except Exception as exc:  # the sandbox's refusal, handed back to the test
            raise ApplicationError(f"{type(exc).__name__}: {exc}", non_retryable=True) from exc
