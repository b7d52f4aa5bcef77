"""Command-line client: start agent turns, watch them, approve or reject them.

    python client.py run --workspace DIR --calls calls.json
    python client.py pending
    python client.py show TURN_ID
    python client.py approve TURN_ID --reason "looks right"
    python client.py tools --format openai
    echo 'rm -rf /' | python client.py check-command

Exit codes: 0 success; 1 the turn failed or is not in the asked-for state;
2 bad input or no server; 3 the turn was rejected.
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import json
import os
import sys
import traceback
import uuid
from pathlib import Path
from typing import Any

from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError, WorkflowUpdateFailedError
from temporalio.service import RPCError

import cli_session  # session hook
from core.call_documents import CallDocumentError, calls_from_document
from core.contracts import (
    ApprovalDecision,
    Policy,
    Snapshot,
    TurnInput,
    TurnOptions,
    TurnProgress,
    TurnResult,
    TurnStatus,
    Workspace,
)
from core.formatting import describe_pending_call, render_text
from core.shell_validator import validate_command
from core.tool_specs import tool_definitions
from runtime.connection import ConnectionFailed, connect
from workflows.turn import WORKFLOW_NAME, AgentTurnWorkflow

DEFAULT_TASK_QUEUE = "agent-tools"
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_REJECTED = 0, 1, 2, 3


class UsageError(Exception):
    """Bad input from the user: the message says what and how to fix it."""


def _out(text: str = "") -> None:
    sys.stdout.write(text + "\n")


def _err(text: str) -> None:
    sys.stderr.write(text + "\n")


def _dump(model: Any) -> str:
    return json.dumps(model.model_dump(mode="json"), indent=2)


# ---------------------------------------------------------------- offline
def cmd_tools(args: argparse.Namespace) -> int:
    _out(json.dumps(tool_definitions(args.format), indent=2))
    return EXIT_OK


def cmd_check_command(args: argparse.Namespace) -> int:
    text = sys.stdin.read()
    if args.json:
        try:
            commands = json.loads(text)
        except ValueError as exc:
            raise UsageError(f"--json expects a JSON array of strings on stdin: {exc}") from None
        if not isinstance(commands, list) or not all(isinstance(c, str) for c in commands):
            raise UsageError("--json expects a JSON array of strings on stdin")
    else:
        commands = [line for line in text.splitlines() if line.strip()]
    for command in commands:
        verdict = validate_command(command)
        _out(
            json.dumps(
                {"command": command, "verdict": verdict.verdict, "reason": verdict.reason, "hint": verdict.hint}
            )
        )
    return EXIT_OK


def _load_json_file(path: str, what: str) -> Any:
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise UsageError(f"{what} file {path} does not exist") from None
    except ValueError as exc:
        raise UsageError(f"{what} file {path} is not valid JSON: {exc}") from None


def load_turn_input(args: argparse.Namespace) -> TurnInput:
    workspace = Path(args.workspace).resolve()
    if not workspace.is_dir():
        raise UsageError(f"workspace {workspace} is not a folder")
    try:
        calls = calls_from_document(_load_json_file(args.calls, "calls"))
    except CallDocumentError as exc:
        raise UsageError(f"calls file {args.calls}: {exc}") from None
    snapshots: list[Snapshot] = []
    if args.snapshots:
        raw = _load_json_file(args.snapshots, "snapshots")
        if isinstance(raw, dict) and "snapshots" in raw:  # a whole TurnResult is fine too
            raw = raw["snapshots"]
        try:
            snapshots = [Snapshot.model_validate(s) for s in raw]
        except Exception as exc:
            raise UsageError(
                f"snapshots file {args.snapshots}: expected the 'snapshots' list a turn returned: {exc}"
            ) from None
    return TurnInput(
        turn_id=args.turn_id or f"turn-{uuid.uuid4().hex[:12]}",
        workspace=Workspace(root=str(workspace), task_queue=args.task_queue),
        tool_calls=calls,
        snapshots=snapshots,
        policy=Policy(mode=args.policy) if args.policy else None,
        options=TurnOptions(execution=_execution(args)),
    )


def _execution(args: argparse.Namespace) -> str:
    """Local activities only when the workflow runs where the files are."""
    colocated = not args.workflow_task_queue or args.workflow_task_queue == args.task_queue
    if args.execution == "local" and not colocated:
        raise UsageError("--execution local needs the workflow on the workspace's task queue")
    if args.execution == "auto":
        return "local" if colocated else "remote"
    return args.execution


# ---------------------------------------------------------------- online
def print_result(result: TurnResult, as_json: bool) -> None:
    if as_json:
        _out(_dump(result))
        return
    _out(f"turn {result.turn_id}: {result.status.value}")
    if result.decision:
        d = result.decision
        _out(f"decision: {'approved' if d.approve else 'rejected'} by {d.approver} via {d.via}"
             + (f" ({d.reason})" if d.reason else ""))
    for i, r in enumerate(result.results):
        _out(render_text(r, i))


def print_progress(progress: TurnProgress, as_json: bool) -> None:
    if as_json:
        _out(_dump(progress))
        return
    _out(f"turn {progress.turn_id}: {progress.status.value}  (batch digest {progress.batch_digest})")
    for c in progress.calls:
        status = f" [{c.status.value}]" if c.status else ""
        _out(f"  #{c.index + 1} {c.name:<10} {c.state}{status}")
    if progress.pending:
        _out("waiting for approval of:")
        for p in progress.pending:
            _out(f"  #{p.index + 1} {p.name}: {p.reason}")


async def _progress(client: Client, turn_id: str) -> TurnProgress:
    return await client.get_workflow_handle(turn_id).query(AgentTurnWorkflow.status, result_type=TurnProgress)


async def cmd_run(client: Client, args: argparse.Namespace) -> int:
    turn = load_turn_input(args)
    handle = await client.start_workflow(
        AgentTurnWorkflow.run,
        turn,
        id=turn.turn_id,
        task_queue=args.workflow_task_queue or args.task_queue,
        result_type=TurnResult,
    )
    if args.no_wait:
        _out(turn.turn_id)
        return EXIT_OK
    waiting = asyncio.ensure_future(handle.result())
    told_paused = False
    while True:
        done, _ = await asyncio.wait({waiting}, timeout=1.0)
        if done:
            break
        if not told_paused:
            try:
                progress = await _progress(client, turn.turn_id)
            except RPCError:
                continue
            if progress.status == TurnStatus.PAUSED:
                told_paused = True
                _err(
                    f"turn {turn.turn_id} is paused waiting for approval ({len(progress.pending)} call(s)).\n"
                    f"  see:     python client.py show {turn.turn_id}\n"
                    f"  approve: python client.py approve {turn.turn_id} --reason ...\n"
                    f"  reject:  python client.py reject {turn.turn_id} --reason ...\n"
                    "  or send the signal 'approve' from the Temporal Web UI."
                )
    try:
        result: TurnResult = waiting.result()
    except WorkflowFailureError as exc:
        _err(f"turn {turn.turn_id} failed: {exc.cause or exc}")
        return EXIT_FAILED
    print_result(result, args.json)
    return EXIT_REJECTED if result.status == TurnStatus.REJECTED else EXIT_OK


async def cmd_status(client: Client, args: argparse.Namespace) -> int:
    print_progress(await _progress(client, args.turn_id), args.json)
    return EXIT_OK


async def cmd_result(client: Client, args: argparse.Namespace) -> int:
    handle = client.get_workflow_handle(args.turn_id, result_type=TurnResult)
    desc = await handle.describe()
    if desc.status == WorkflowExecutionStatus.RUNNING:
        progress = await _progress(client, args.turn_id)
        _err(f"turn {args.turn_id} has no result yet: it is {progress.status.value}")
        return EXIT_FAILED
    try:
        result = await handle.result()
    except WorkflowFailureError as exc:
        _err(f"turn {args.turn_id} failed: {exc.cause or exc}")
        return EXIT_FAILED
    print_result(result, args.json)
    return EXIT_REJECTED if result.status == TurnStatus.REJECTED else EXIT_OK


async def paused_turns(client: Client) -> list[dict[str, Any]]:
    query = f'WorkflowType="{WORKFLOW_NAME}" AND ExecutionStatus="Running"'
    found = []
    async for execution in client.list_workflows(query):
        memo = await execution.memo()
        if memo.get("turn_status") == TurnStatus.PAUSED.value:
            found.append(
                {
                    "turn_id": execution.id,
                    "batch_digest": memo.get("batch_digest"),
                    "started": execution.start_time.isoformat() if execution.start_time else None,
                    "task_queue": execution.task_queue,
                }
            )
    return found


async def cmd_pending(client: Client, args: argparse.Namespace) -> int:
    turns = await paused_turns(client)
    if args.json:
        _out(json.dumps(turns, indent=2))
    elif not turns:
        _out("no turn is waiting for approval")
    else:
        for t in turns:
            _out(f"{t['turn_id']}  started {t['started']}  digest {t['batch_digest'][:16]}…")
    return EXIT_OK


async def cmd_show(client: Client, args: argparse.Namespace) -> int:
    progress = await _progress(client, args.turn_id)
    if args.json:
        _out(_dump(progress))
        return EXIT_OK
    if progress.status != TurnStatus.PAUSED:
        _out(f"turn {args.turn_id} is {progress.status.value}; nothing waits for approval")
        return EXIT_OK
    _out(f"turn {args.turn_id} waits for approval of {len(progress.pending)} call(s)")
    _out(f"batch digest: {progress.batch_digest}\n")
    for pending in progress.pending:
        _out(describe_pending_call(pending, validate_command))
        _out()
    return EXIT_OK


async def cmd_decide(client: Client, args: argparse.Namespace, approve: bool) -> int:
    progress = await _progress(client, args.turn_id)
    if progress.status != TurnStatus.PAUSED:
        _err(f"turn {args.turn_id} is {progress.status.value}, not waiting for approval")
        return EXIT_FAILED
    decision = ApprovalDecision(
        batch_digest=args.digest or progress.batch_digest,
        approve=approve,
        approver=args.approver,
        reason=args.reason or "",
    )
    handle = client.get_workflow_handle(args.turn_id)
    if args.signal:
        await handle.signal(AgentTurnWorkflow.approve if approve else AgentTurnWorkflow.reject, decision)
        _out(f"sent {'approve' if approve else 'reject'} signal to {args.turn_id}")
        return EXIT_OK
    try:
        await handle.execute_update(AgentTurnWorkflow.decide, decision)
    except WorkflowUpdateFailedError as exc:
        _err(f"the turn refused the decision: {exc.cause.message if exc.cause else exc}")
        return EXIT_FAILED
    _out(f"{'approved' if approve else 'rejected'} turn {args.turn_id} as {args.approver}")
    return EXIT_OK


# ------------------------------------------------------------------ main
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="client.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--address", help="Temporal host:port (default: TEMPORAL_ADDRESS or localhost:7233)")
    parser.add_argument("--namespace", help="Temporal namespace (default: TEMPORAL_NAMESPACE or 'default')")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run one batch of tool calls as a turn")
    run.add_argument("--workspace", required=True, help="workspace root, as the worker sees it")
    run.add_argument("--calls", required=True, help="JSON file with tool calls (OpenAI or Anthropic shape)")
    run.add_argument("--task-queue", default=DEFAULT_TASK_QUEUE, help="task queue of the worker holding the workspace")
    run.add_argument("--workflow-task-queue", help="run the workflow itself on another queue")
    run.add_argument("--turn-id", help="workflow id (default: a new random one)")
    run.add_argument("--snapshots", help="JSON 'snapshots' an earlier turn returned")
    run.add_argument("--policy", choices=["auto", "ask-writes", "ask-all"], help="default: the worker's")
    run.add_argument(
        "--execution",
        choices=["auto", "local", "remote"],
        default="auto",
        help="auto: local activities when the workflow runs on the workspace's queue",
    )
    run.add_argument("--json", action="store_true", help="print the TurnResult as JSON")
    run.add_argument("--no-wait", action="store_true", help="print the turn id and return at once")

    for name, text in (("status", "state and per-call progress"), ("result", "the finished turn's result")):
        p = sub.add_parser(name, help=text)
        p.add_argument("turn_id")
        p.add_argument("--json", action="store_true")

    pending = sub.add_parser("pending", help="turns waiting for approval")
    pending.add_argument("--json", action="store_true")
    show = sub.add_parser("show", help="what a paused turn wants to do")
    show.add_argument("turn_id")
    show.add_argument("--json", action="store_true")

    for name in ("approve", "reject"):
        p = sub.add_parser(name, help=f"{name} a paused turn's batch")
        p.add_argument("turn_id")
        p.add_argument("--reason", required=(name == "reject"))
        p.add_argument("--approver", default=os.environ.get("USER") or getpass.getuser())
        p.add_argument("--digest", help="the batch digest you reviewed (default: the pending one)")
        p.add_argument("--signal", action="store_true", help="send a signal instead of an update (no answer)")

    tools = sub.add_parser("tools", help="tool definitions for a model API")
    tools.add_argument("--format", choices=["openai", "anthropic"], default="openai")
    check = sub.add_parser("check-command", help="validate bash commands (one per line on stdin)")
    check.add_argument("--json", action="store_true", help="stdin is a JSON array of strings")
    cli_session.register(sub)  # session hook
    return parser


async def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "tools":
        return cmd_tools(args)
    if args.command == "check-command":
        return cmd_check_command(args)
    if args.command == "session":  # session hook
        return await cli_session.dispatch(args)
    if args.command == "run":
        load_turn_input(args)  # bad input fails before we talk to the server
    client = await connect(args.address, args.namespace)
    handlers = {
        "run": cmd_run,
        "status": cmd_status,
        "result": cmd_result,
        "pending": cmd_pending,
        "show": cmd_show,
    }
    if args.command in handlers:
        return await handlers[args.command](client, args)
    return await cmd_decide(client, args, approve=args.command == "approve")


def run_cli(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return asyncio.run(_dispatch(args))
    except UsageError as exc:
        _err(f"error: {exc}")
        return EXIT_USAGE
    except ConnectionFailed as exc:
        _err(f"error: {exc}")
        return EXIT_USAGE
    except RPCError as exc:
        turn = getattr(args, "turn_id", None)
        _err(f"error: the server refused the request{f' for turn {turn}' if turn else ''}: {exc.message}")
        return EXIT_FAILED


def main(argv: list[str] | None = None) -> None:
    try:
        code = run_cli(argv)
    except SystemExit as exc:  # argparse's usage errors
        code = exc.code if isinstance(exc.code, int) else EXIT_USAGE
    except Exception:  # a bug: show it, but still leave cleanly
        traceback.print_exc()
        code = EXIT_FAILED
    sys.stdout.flush()
    sys.stderr.flush()
    # temporalio's native runtime can crash at interpreter exit (sdk-python#300):
    # the work is done and flushed, so leave without finalizers.
    os._exit(code)


if __name__ == "__main__":
    main()
