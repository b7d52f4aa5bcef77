"""A third-party client: the MCP Inspector's CLI (npm), through
scripts/mcp-inspector-check. Skipped where npx is missing (or
AGENT_TOOLS_SKIP_NPM is set, for offline machines)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from tests.processes import REPO


@pytest.mark.skipif(shutil.which("npx") is None, reason="npx (node) is not installed")
@pytest.mark.skipif(bool(os.environ.get("AGENT_TOOLS_SKIP_NPM")), reason="AGENT_TOOLS_SKIP_NPM is set")
@pytest.mark.timeout(600)
def test_inspector_lists_the_tools_and_calls_one() -> None:
    done = subprocess.run(
        [str(REPO / "scripts" / "mcp-inspector-check")],
        cwd=REPO, capture_output=True, text=True, timeout=540, env={**os.environ, "PYTHON": sys.executable},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "tools/list: the six tools" in done.stdout
    assert "tools/call read_file: ok" in done.stdout
