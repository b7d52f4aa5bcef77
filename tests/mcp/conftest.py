from __future__ import annotations

from pathlib import Path
from typing import AsyncIterator

import pytest_asyncio
from temporalio.client import Client

from core.contracts import Policy
from runtime.worker import build_worker


@pytest_asyncio.fixture
async def mcp_worker(client: Client, workspace: Path, task_queue: str) -> AsyncIterator[None]:
    """A worker for the workspace in the test process; the MCP servers under
    test are separate processes that only talk to Temporal."""
    async with build_worker(client, task_queue=task_queue, workspace=str(workspace), default_policy=Policy(mode="ask-writes")):
        yield
