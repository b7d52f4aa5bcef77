"""Demo: a whole agent session against a scripted local model server (no key).

    python demo.session.py                   # embedded dev server, worker and model server in this process
    python demo.session.py --provider anthropic

The scripted server speaks the real OpenAI / Anthropic HTTP protocols, so the
official SDKs, streaming, the transcript store, child turns, an approval and
the final answer are all the real thing; only the model's words are canned.
``run_session_demo`` is what demo.py (or anyone) calls with a client and a
worker already running for ``workspace``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path
from typing import Callable

from temporalio.client import Client

from core.session.providers import entry_text
from core.session.contracts import SessionView
from runtime import session_api as sessions
from tests.model_server import Reply, ScriptedModelServer, tool

ROOT = Path.cwd()  # the demo keeps its workspaces and dev-server state where it is run
QUEUE = "agent-session-demo"

PROJECT = {
    "stats.py": "def mean(values):\n    return sum(values) / (len(values) + 1)  # BUG: off by one\n",
    "test_stats.py": (
        "import unittest\n\nfrom stats import mean\n\n\n"
        "class StatsTest(unittest.TestCase):\n"
        "    def test_mean(self):\n        self.assertEqual(mean([2, 4, 6]), 4)\n\n\n"
        "if __name__ == '__main__':\n    unittest.main()\n"
    ),
}

SCRIPT = [
    Reply(text="I'll look at the project first.",
          tool_calls=[tool("glob", pattern="*.py"), tool("read_file", path="stats.py"), tool("read_file", path="test_stats.py")],
          tokens_per_second=400),
    Reply(text="Let me run the test to see the failure.",
          tool_calls=[tool("bash", command="python3 -m unittest -q test_stats")], tokens_per_second=400),
    Reply(text="mean() divides by len + 1. Fixing it and re-running the test.",
          tool_calls=[tool("edit_file", path="stats.py", old_string="/ (len(values) + 1)  # BUG: off by one",
                           new_string="/ len(values)"),
                      tool("bash", command="python3 -m unittest -q test_stats")], tokens_per_second=400),
    Reply(text="Fixed: `mean()` in stats.py divided by `len(values) + 1`; it now divides by `len(values)`. "
               "`python3 -m unittest test_stats` passes.", tokens_per_second=400),
]


def seed(workspace: Path) -> None:
    for name, text in PROJECT.items():
        (workspace / name).write_text(text)


async def run_session_demo(
    client: Client,
    workspace: Path,
    task_queue: str,
    *,
    provider: str = "openai",
    say: Callable[[str], None] = print,
    approve: bool = True,
) -> SessionView:
    """Seed ``workspace`` with a small buggy project and run a session on it
    against a scripted model server. The worker serving ``task_queue`` must
    run in this process (it reads the model's URL and key from the
    environment set here). With ``approve`` the demo approves paused turns
    itself; otherwise it waits for you (CLI or Web UI)."""
    seed(workspace)
    server = ScriptedModelServer(list(SCRIPT)).start()
    os.environ["OPENAI_API_KEY" if provider == "openai" else "ANTHROPIC_API_KEY"] = "demo-no-key-needed"
    os.environ["OPENAI_BASE_URL"] = server.openai_base_url
    os.environ["ANTHROPIC_BASE_URL"] = server.anthropic_base_url
    try:
        sid = await sessions.start_session(
            client, workspace=workspace, task_queue=task_queue, provider=provider, model="scripted-demo-model",
            prompt="The test in test_stats.py fails. Find out why and fix it.", policy="ask-writes",
        )
        say(f"session {sid} started ({provider} protocol, scripted model at {server.base_url})")

        async def on_pause(view: SessionView) -> None:
            say(f"\nturn {view.current_turn_id} waits for approval (batch {view.current_batch_digest[:12]}…):")
            for p in view.pending:
                say(f"  #{p.index + 1} {p.name} {p.arguments}: {p.reason}")
            if approve:
                await sessions.approve(client, sid, approver="demo", reason="demo approves")
                say("  approved by the demo (python client.py session approve ID does the same)")
            else:
                say(f"  approve: python client.py session approve {sid}   (or signal 'approve' on the turn in the Web UI)")

        view = await sessions.wait_for_answer(client, sid, on_approval_needed=on_pause)
        say("\ntranscript:")
        for entry in await sessions.transcript(client, sid):
            if entry.kind != "system":
                say(f"[{entry.kind}] " + entry_text(entry).replace("\n", "\n    ")[:600])
        say(f"\nfinal answer: {view.last_answer}")
        say(f"model calls {view.model_calls}, turns {view.turns}, tokens {view.usage.input_tokens} in / "
            f"{view.usage.output_tokens} out; transcript head {view.transcript_head}")
        result = await sessions.close(client, sid, "demo finished")
        say(f"session {result.state.value}; stats.py now: {(workspace / 'stats.py').read_text().strip()}")
        return view
    finally:
        server.stop()


async def _main(args: argparse.Namespace) -> int:
    from runtime.connection import connect
    from runtime.devserver import DevServer, port_open
    from runtime.worker import build_worker

    workspace = (ROOT / "demo-session-workspace").resolve()
    workspace.mkdir(exist_ok=True)
    server = None
    if not port_open("127.0.0.1", 7233):
        data = ROOT / ".data"
        server = DevServer(db_file=data / "demo-session.sqlite", log_file=data / "demo-session-server.log")
        server.start()
        print(f"started the dev server; Web UI: {server.ui_url}")
    try:
        client = await connect("localhost:7233")
        async with build_worker(client, task_queue=QUEUE, workspace=str(workspace)):
            await run_session_demo(client, workspace, QUEUE, provider=args.provider, approve=not args.wait_for_human)
        return 0
    finally:
        if server is not None:
            server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--provider", choices=["openai", "anthropic"], default="openai")
    parser.add_argument("--wait-for-human", action="store_true", help="approve paused turns yourself")
    code = asyncio.run(_main(parser.parse_args()))
    sys.stdout.flush()
    os._exit(code)  # temporalio's runtime can crash at interpreter exit (sdk-python#300)


if __name__ == "__main__":
    main()
