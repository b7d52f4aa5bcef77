"""A worker's configuration, read from the environment once at start: the
task queue, worker versioning, and the tools' settings
(``core.config.ToolSettings``: every ``AGENT_TOOLS_*`` variable). A bad
value stops the start with a message naming the variable and what it takes.

Command-line flags override these; ``agent-worker`` passes the result to the
worker (``AgentToolsPlugin(tool_settings=...)``), never through os.environ.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Mapping

from core.config import SettingError, ToolSettings

__all__ = ["DEFAULT_TASK_QUEUE", "SettingError", "WorkerConfig"]

DEFAULT_TASK_QUEUE = "agent-tools"
TASK_QUEUE_ENV = "AGENT_TASK_QUEUE"
DEPLOYMENT_NAME_ENV = "AGENT_DEPLOYMENT_NAME"
BUILD_ID_ENV = "AGENT_BUILD_ID"


@dataclass(frozen=True)
class WorkerConfig:
    task_queue: str = DEFAULT_TASK_QUEUE
    deployment_name: str | None = None  # worker versioning: with build_id
    build_id: str | None = None
    tools: ToolSettings = field(default_factory=ToolSettings)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "WorkerConfig":
        """Raises SettingError on the first bad value."""
        env = os.environ if env is None else env
        deployment, build = env.get(DEPLOYMENT_NAME_ENV, "").strip(), env.get(BUILD_ID_ENV, "").strip()
        return cls(
            task_queue=env.get(TASK_QUEUE_ENV, "").strip() or DEFAULT_TASK_QUEUE,
            deployment_name=deployment or None,
            build_id=build or None,
            tools=ToolSettings.from_env(env),
        )
