"""Network on approval (an opt-in worker option): `pip install` from a
package index served on loopback asks "needs network" and, approved, runs
with the network, captured and gated; without the option the sandbox has no
network at all."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os
import sys
import http.server
import threading
import uuid
import zipfile
from pathlib import Path
from typing import Iterator

import pytest
from temporalio.client import Client

from core.config import NETWORK_ENV
from core.contracts import ApprovalDecision, Policy, TurnInput, TurnProgress, TurnResult, TurnStatus, Workspace
from runtime.worker import build_worker
from tests.support import call
from tests.txn.support.helpers import needs_overlay
from workflows.turn import AgentTurnWorkflow

pytestmark = needs_overlay


def build_wheel(folder: Path) -> Path:
    """A minimal pure-Python wheel: gatepkg 1.0."""
    name = "gatepkg-1.0-py3-none-any.whl"
    files = {
        "gatepkg/__init__.py": b"VALUE = 42\n",
        "gatepkg-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: gatepkg\nVersion: 1.0\n",
        "gatepkg-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append("gatepkg-1.0.dist-info/RECORD,,")
    with zipfile.ZipFile(folder / name, "w") as zf:
        for path, data in files.items():
            zf.writestr(path, data)
        zf.writestr("gatepkg-1.0.dist-info/RECORD", "\n".join(record) + "\n")
    return folder / name


@pytest.fixture
def index(tmp_path: Path) -> Iterator[str]:
    """A PEP 503 simple index on 127.0.0.1 with the one wheel."""
    root = tmp_path / "index"
    (root / "simple" / "gatepkg").mkdir(parents=True)
    wheel = build_wheel(root / "simple" / "gatepkg")
    (root / "simple" / "gatepkg" / "index.html").write_text(f'<a href="{wheel.name}">{wheel.name}</a>\n')
    (root / "simple" / "index.html").write_text('<a href="gatepkg/">gatepkg</a>\n')
    handler = lambda *a, **kw: http.server.SimpleHTTPRequestHandler(*a, directory=str(root), **kw)  # noqa: E731
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple/"
    finally:
        server.shutdown()


# The interpreter itself (a version manager's shim may try to write its own
# folder after an install and fail in the sandbox).
PYTHON = os.path.join(sys.base_prefix, "bin", "python3")


def pip(url: str) -> str:
    return f"{PYTHON} -m pip install --no-cache-dir --disable-pip-version-check --index-url {url} --target vendor gatepkg"


async def _paused(handle) -> TurnProgress:  # type: ignore[no-untyped-def]
    for _ in range(600):
        desc = await handle.describe()
        if (await desc.memo()).get("turn_status") == TurnStatus.PAUSED.value:
            return await handle.query(AgentTurnWorkflow.status, result_type=TurnProgress)
        assert desc.status is not None and desc.status.name == "RUNNING", "finished without pausing"
        await asyncio.sleep(0.05)
    raise AssertionError("never paused")


async def _turn(client: Client, workspace: Path, queue: str, command: str, mode: str) -> tuple[TurnProgress, TurnResult]:
    t = TurnInput(turn_id=f"net-{uuid.uuid4().hex[:8]}", workspace=Workspace(root=str(workspace), task_queue=queue),
                  tool_calls=[call(0, "bash", command=command)], policy=Policy(mode=mode))  # type: ignore[arg-type]
    async with build_worker(client, task_queue=queue, workspace=str(workspace)):
        handle = await client.start_workflow(AgentTurnWorkflow.run, t, id=t.turn_id, task_queue=queue,
                                             result_type=TurnResult)
        progress = await _paused(handle)
        await handle.execute_update(AgentTurnWorkflow.decide,
                                    ApprovalDecision(batch_digest=progress.batch_digest, approver="alice"))
        return progress, await handle.result()


async def test_approved_install_runs_with_network_when_the_worker_opted_in(
    client: Client, workspace: Path, task_queue: str, index: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(NETWORK_ENV, "on-approval")
    progress, result = await _turn(client, workspace, task_queue, pip(index), mode="auto")
    assert progress.pending[0].reason.startswith("needs network"), progress.pending[0].reason
    r = result.results[0]
    assert not r.is_error, r.output
    assert r.metadata["network"] == "true" and r.metadata["capture"] == "applied"  # captured like any write
    assert (workspace / "vendor" / "gatepkg" / "__init__.py").read_text() == "VALUE = 42\n"


async def test_without_the_option_the_sandbox_has_no_network(
    client: Client, workspace: Path, task_queue: str, index: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(NETWORK_ENV, raising=False)
    progress, result = await _turn(client, workspace, task_queue, pip(index), mode="ask-writes")
    assert "needs network" not in progress.pending[0].reason
    r = result.results[0]
    assert r.is_error and "network" not in r.metadata
    assert not (workspace / "vendor").exists()
