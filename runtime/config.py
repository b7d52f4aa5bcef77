"""Worker-level settings: the task queue and worker versioning (the tools'
own settings are ``core.config.ToolSettings``)."""

from __future__ import annotations

DEFAULT_TASK_QUEUE = "agent-tools"
