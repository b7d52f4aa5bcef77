"""Run worker.py and client.py as real processes, as a user would."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def server_address(client) -> str:  # type: ignore[no-untyped-def]
    return client.service_client.config.target_host


class WorkerProcess:
    def __init__(self, address: str, workspace: Path, task_queue: str | None, log: Path, *extra: str) -> None:
        self.log_path = log
        self.args = [
            sys.executable, str(REPO / "worker.py"),
            "--address", address,
            "--workspace", str(workspace),
            *(["--task-queue", task_queue] if task_queue else []),  # None: the folder's own queue
            *extra,
        ]
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 30) -> "WorkerProcess":
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            self.args, cwd=REPO, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if "worker ready" in self.log_path.read_text(errors="replace"):
                return self
            if self.proc.poll() is not None:
                raise RuntimeError(f"worker exited early:\n{self.log_path.read_text()}")
            time.sleep(0.1)
        raise RuntimeError(f"worker not ready in {timeout} s:\n{self.log_path.read_text()}")

    def kill(self) -> None:
        """SIGKILL the worker, as a crash or an OOM kill would."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> int:
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            return self.proc.wait()


def run_client(*args: str, stdin: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(REPO / "client.py"), *args],
        cwd=REPO,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
