"""Stopping the worker that started the embedded dev server leaves the server
to the other workers (it says how to stop it); --stop-dev-server stops it."""

from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path

from runtime.devserver import free_port, port_open
from tests.processes import WorkerProcess


def test_the_dev_server_outlives_the_worker_that_started_it(tmp_path: Path) -> None:
    port = free_port()
    ws = tmp_path / "ws"
    ws.mkdir()
    log = tmp_path / "worker.log"
    worker = WorkerProcess(f"127.0.0.1:{port}", ws, None, log, "--dev-server", "--data-dir", str(tmp_path / "data"),
                           "--ui-port", str(free_port()))
    worker.start(timeout=90)
    pid = None
    try:
        assert worker.stop() == 0
        text = log.read_text()
        assert "keeps running for other workers" in text, text
        pid = int(re.search(r"stop it with `kill (\d+)`", text).group(1))  # type: ignore[union-attr]
        assert port_open("127.0.0.1", port)
    finally:
        if pid is not None:
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + 20
            while port_open("127.0.0.1", port) and time.monotonic() < deadline:
                time.sleep(0.2)
    assert not port_open("127.0.0.1", port)
