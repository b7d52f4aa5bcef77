"""What the command line loads at start: it runs once per command, so every
module it imports is paid again by each `agent-turn status`, `approve`,
`run` (and by the suite, which starts it hundreds of times)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.processes import REPO

PROBE = (
    "import json, sys, cli.turn; "
    "print(json.dumps(sorted(m for m in sys.modules if m == 'bashlex' or m.startswith(('bashlex.', 'workflows')))))"
)


def test_the_command_line_loads_neither_the_workflows_nor_the_shell_parser() -> None:
    """Workflows are named by their pinned names (core.names), and the shell
    validator (whose import builds bashlex's parser tables, ~0.1 s of CPU) is
    loaded only by a command that validates (`check-command`, `show`)."""
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=REPO, capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout)
    assert [m for m in loaded if m.startswith("bashlex")] == [], loaded
    # workflows.turn_console is the search attribute keys only (no workflow class).
    assert [m for m in loaded if m.startswith("workflows") and m not in ("workflows", "workflows.turn_console")] == [], loaded


def test_the_mcp_server_loads_the_shell_parser_only_to_review_a_command() -> None:
    """`agent-turn mcp` starts once per client session (every agent that
    connects over stdio); it validates a command only to show a reviewer."""
    probe = ("import json, sys; from frontends.mcp import McpTurns, build_server; "
             "from frontends.mcp.transport import serve_http, serve_stdio; "
             "print(json.dumps(sorted(m for m in sys.modules if m == 'bashlex' or m.startswith('bashlex.'))))")
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []
