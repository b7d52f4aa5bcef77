"""A guided demo: four agent turns on a small Python project with a bug, then
a whole agent session (model calls as activities, turns as child workflows)
against a scripted local model server that speaks the OpenAI protocol.

    scripts/demo                  # approves the paused turn by signal itself
    scripts/demo --wait-for-human # you approve it in the Web UI or with the CLI
    scripts/demo --keep-server    # leave the dev server (and Web UI) running

It starts the embedded Temporal dev server (unless one already answers on
localhost:7233) and a worker in this process, creates ./demo-workspace, and
plays the tool calls a model would send, printing each turn's results.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import time
from pathlib import Path

from temporalio.client import Client, WorkflowHandle

from core.contracts import Policy, PolicyRule, Snapshot, ToolCall, TurnProgress, TurnResult, TurnStatus
from core.tools.formatting import render_text, shown
from core.tools.specs import describe_pending_call
from core.shell import validate_command
from demo.session import run_session_demo
from runtime.api import TurnClient, build_turn_input, load_offloaded
from runtime.connection import connect
from runtime.devserver import DevServer, port_open
from runtime.worker import build_worker
from workflows.turn import AgentTurnWorkflow

ROOT = Path.cwd()  # the demo keeps its workspaces and dev-server state where it is run
QUEUE = "agent-tools-demo"

SAMPLE = {
    "calc.py": (
        '"""Tiny calculator used by the demo."""\n\n\n'
        "def add(a, b):\n    return a + b\n\n\n"
        "def average(values):\n"
        "    if not values:\n        raise ValueError('average of nothing')\n"
        "    return sum(values) / (len(values) + 1)  # BUG: off by one\n"
    ),
    "test_calc.py": (
        "import unittest\n\nfrom calc import add, average\n\n\n"
        "class CalcTest(unittest.TestCase):\n"
        "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n"
        "    def test_average(self):\n        self.assertEqual(average([2, 4, 6]), 4)\n\n\n"
        "if __name__ == '__main__':\n    unittest.main()\n"
    ),
    "tools/lint.py": (
        "import sys\n\nprint('lint: calc.py:12: line too long (demo failure)')\nsys.exit(1)\n"
    ),
    "README.md": "# calc\n\nA calculator with a bug for the demo.\n",
}


def say(text: str = "") -> None:
    print(text, flush=True)


def banner(text: str) -> None:
    say()
    say("=" * 78)
    say(text)
    say("=" * 78)


def call(i: int, name: str, **args: object) -> ToolCall:
    return ToolCall(id=f"call_{i}", name=name, arguments=json.dumps(args))


def make_workspace(path: Path) -> None:
    if path.exists():
        shutil.rmtree(path)
    for rel, text in SAMPLE.items():
        target = path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)


class Demo:
    def __init__(self, client: Client, workspace: Path, ui_url: str | None, wait_for_human: bool) -> None:
        self.client = client
        self.workspace = workspace
        self.ui_url = ui_url
        self.wait_for_human = wait_for_human
        self.snapshots: list[Snapshot] = []
        self.turns = 0

    async def turn(self, title: str, calls: list[ToolCall], policy: Policy) -> TurnResult:
        self.turns += 1
        turn_id = f"demo-turn-{self.turns}-{int(time.time())}"
        banner(f"Turn {self.turns}: {title}  (policy {policy.mode}, {len(calls)} calls)")
        for i, c in enumerate(calls):
            say(f"  #{i + 1} {shown(c.name)} {shown(c.arguments)}")
        started = time.monotonic()
        turns = TurnClient(self.client)
        handle = await turns.start_turn(
            build_turn_input(
                workspace_root=str(self.workspace),
                task_queue=QUEUE,
                tool_calls=calls,
                turn_id=turn_id,
                snapshots=self.snapshots,
                policy=policy,
                execution="local",
            )
        )
        await self._approve_if_paused(handle, turn_id)
        result: TurnResult = load_offloaded(await handle.result(), str(self.workspace))
        elapsed = (time.monotonic() - started) * 1000
        self.snapshots = result.snapshots  # carried to the next turn, as an agent loop would
        say(f"\n-> {result.status.value} in {elapsed:.0f} ms")
        for i, r in enumerate(result.results):
            say(render_text(r, i))
        return result

    async def _approve_if_paused(self, handle: WorkflowHandle, turn_id: str) -> None:
        await asyncio.sleep(0.2)
        progress = await handle.query(AgentTurnWorkflow.status, result_type=TurnProgress)
        if progress.status != TurnStatus.PAUSED:
            return
        say(f"\n** PAUSED: the turn waits for approval (batch digest {progress.batch_digest[:16]}…) **")
        for pending in progress.pending:
            say(describe_pending_call(pending, validate_command))
        if self.ui_url:
            say(f"\nWeb UI: {self.ui_url}/namespaces/default/workflows/{turn_id}")
        body = json.dumps({"batch_digest": progress.batch_digest, "approver": "you", "reason": "looks right"})
        if self.wait_for_human:
            say("\nApprove it yourself, either way works:")
            say(f"  python client.py approve {turn_id} --reason 'looks right'")
            say(f"  Web UI → More Actions → Send a Signal → approve → Data: {body}")
            while (await handle.query(AgentTurnWorkflow.status, result_type=TurnProgress)).status == TurnStatus.PAUSED:
                await asyncio.sleep(1)
            return
        say("\nApproving by signal (run with --wait-for-human to do it yourself) ...")
        await asyncio.sleep(1.0)
        await TurnClient(self.client).approve(
            turn_id, approver="demo-script", reason="demo approval", digest=progress.batch_digest, signal=True
        )

    async def run(self) -> int:
        explore = await self.turn(
            "explore the project (parallel reads)",
            [
                call(0, "read_file", path="calc.py"),
                call(1, "read_file", path="test_calc.py"),
                call(2, "grep", pattern=r"def \w+", include="*.py"),
                call(3, "glob", pattern="**/*.py"),
            ],
            Policy(mode="ask-writes"),
        )
        fix = await self.turn(
            "fix the bug (an edit: needs approval)",
            [
                call(0, "edit_file", path="calc.py",
                     old_string="    return sum(values) / (len(values) + 1)  # BUG: off by one",
                     new_string="    return sum(values) / len(values)"),
                call(1, "read_file", path="calc.py", offset=9, limit=4),
            ],
            Policy(mode="ask-writes"),
        )
        tests = await self.turn(
            "run the tests (a policy rule allows the test command)",
            [call(0, "bash", command="python3 -m unittest -v test_calc")],
            Policy(mode="ask-writes", rules=[PolicyRule(action="allow", tool="bash", command_prefix="python3 -m unittest")]),
        )
        skips = await self.turn(
            "a failing command makes later unsafe calls skip",
            [
                call(0, "bash", command="python3 tools/lint.py"),
                call(1, "write_file", path="CHANGELOG.md", content="- fixed average()\n"),
                call(2, "read_file", path="README.md"),
                call(3, "bash", command="rm -rf /"),
            ],
            Policy(mode="auto"),
        )
        banner("Summary")
        ok = (
            all(r.status.value == "ok" for r in explore.results)
            and fix.status == TurnStatus.COMPLETED and not fix.results[0].is_error
            and tests.results[0].status.value == "ok"
            and [r.status.value for r in skips.results] == ["error", "skipped", "ok", "error"]
        )
        say("explore: 4 calls in one parallel stage; fix: paused, approved, applied;")
        say("tests: passed after the fix; last turn: lint failed, the write was skipped, the read ran,")
        say("and 'rm -rf /' was rejected by the validator before anything ran.")
        say(f"workspace: {self.workspace}")
        return 0 if ok else 1


async def main_async(args: argparse.Namespace) -> int:
    server: DevServer | None = None
    ui_url: str | None = "http://localhost:8233"
    if port_open("127.0.0.1", 7233):
        say("using the Temporal server already listening on localhost:7233")
    else:
        data = ROOT / ".data"
        server = DevServer(db_file=data / "demo.sqlite", log_file=data / "demo-server.log")
        say(f"starting the embedded Temporal dev server (state: {server.db_file}) ...")
        server.start()
        ui_url = server.ui_url
        say(f"dev server at {server.address}, Web UI at {ui_url}")
    workspace = Path(args.workspace).resolve()
    make_workspace(workspace)
    say(f"sample project created in {workspace}")
    try:
        client = await connect("localhost:7233")
        async with build_worker(client, task_queue=QUEUE, workspace=str(workspace)):
            code = await Demo(client, workspace, ui_url, args.wait_for_human).run()
        if code == 0 and not args.no_session:
            code = await session_demo(client, workspace.parent / "demo-session-workspace", args.wait_for_human)
        return code
    finally:
        if server is not None:
            if args.keep_server:
                say(f"\nthe dev server keeps running (pid {server.process.pid}); Web UI: {ui_url}")  # type: ignore[union-attr]
            else:
                server.stop()
                say("\nstopped the dev server")


async def session_demo(client: Client, workspace: Path, wait_for_human: bool) -> int:
    """The whole loop: a session whose model is a scripted local server (no
    key needed); its tool calls run as child turns on a worker of its own."""
    banner("An agent session: the model loop itself is durable")
    if workspace.exists():
        shutil.rmtree(workspace)
    workspace.mkdir(parents=True)
    queue = QUEUE + "-session"
    async with build_worker(client, task_queue=queue, workspace=str(workspace)):
        view = await run_session_demo(client, workspace, queue, say=say, approve=not wait_for_human)
    fixed = "len(values) + 1" not in (workspace / "stats.py").read_text()
    say(f"session: {view.model_calls} model calls, {view.turns} turns; the bug is {'fixed' if fixed else 'NOT fixed'}")
    return 0 if fixed and view.last_answer else 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workspace", default=str(ROOT / "demo-workspace"))
    parser.add_argument("--no-session", action="store_true", help="only the four turns, no agent session")
    parser.add_argument("--wait-for-human", action="store_true", help="wait for your approval in the UI or CLI")
    parser.add_argument("--keep-server", action="store_true", help="leave the dev server running at the end")
    code = asyncio.run(main_async(parser.parse_args()))
    sys.stdout.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
