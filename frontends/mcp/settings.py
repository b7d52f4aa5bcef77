"""What an MCP front-end serves: one workspace through one task queue."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from runtime.config import DEFAULT_TASK_QUEUE

DEFAULT_APPROVAL_TIMEOUT_S = 600.0
# A turn's own approval bound runs this much longer than the server's wait, so
# a live server rejects first (saying why); the turn's timer is the backstop
# for a server that was killed while a call waited.
TURN_APPROVAL_GRACE_S = 2.0
DEFAULT_UI_URL = "http://localhost:8233"


@dataclass(frozen=True)
class McpSettings:
    workspace: str
    task_queue: str = DEFAULT_TASK_QUEUE
    # None: the worker's default policy.
    policy: str | None = None
    # How long a paused call waits for a decision when the client cannot be
    # asked (no elicitation) or does not answer; then the turn is rejected.
    approval_timeout_s: float = DEFAULT_APPROVAL_TIMEOUT_S
    # The key of the snapshot store (the McpSessionSnapshots workflow). The
    # default is derived from the workspace and queue, so a restarted server
    # with the same configuration continues with what the agent has read.
    session: str | None = None
    ui_url: str | None = DEFAULT_UI_URL
    namespace: str = "default"
    # How often a waiting call looks at its turn (paused? decided elsewhere?).
    poll_interval_s: float = 0.3
    # How often a call that waits for a decision says so (progress notification).
    progress_interval_s: float = 5.0

    @property
    def session_key(self) -> str:
        if self.session:
            return self.session
        digest = hashlib.sha256(f"{self.workspace}\0{self.task_queue}".encode()).hexdigest()[:16]
        return f"mcp-{digest}"

    @property
    def snapshots_workflow_id(self) -> str:
        return f"{self.session_key}-snapshots"

    @property
    def turn_prefix(self) -> str:
        """Every turn this front-end starts has an id with this prefix: the
        id an MCP client echoes back (request state, task id) is checked
        against it, so a client cannot decide or read another front-end's turn."""
        return f"{self.session_key}-turn-"

    def web_ui_link(self, turn_id: str) -> str | None:
        if not self.ui_url:
            return None
        return f"{self.ui_url.rstrip('/')}/namespaces/{self.namespace}/workflows/{turn_id}"
