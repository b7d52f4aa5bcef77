"""Command-line client: start agent turns, watch them, approve or reject them.

    python client.py run --workspace DIR --calls calls.json
    python client.py pending
    python client.py show TURN_ID
    python client.py approve TURN_ID --reason "looks right"
    python client.py rollback TURN_ID
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
from pathlib import Path
from typing import Any

from temporalio.client import Client, WorkflowFailureError, WorkflowUpdateFailedError
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

import cli.rollback
from runtime.queues import queue_for_workspace
from cli.console import cmd_console
from cli.progress import ProgressLine, farewell, following, quiet_stdout
from runtime.api import NoWorker, TurnClient, TurnInputError, TurnProblem, build_turn_input, load_offloaded

import cli.mcp
import cli.session
from core.tools.call_documents import CallDocumentError, calls_from_document
from core.contracts import Policy, Snapshot, TurnInput, TurnProgress, TurnResult, TurnStatus
from core.tools.formatting import render_text, shown
from core.tools.specs import command_verdict, describe_pending_call, tool_definitions
from core.contracts import POLICY_MODES
from runtime.connection import ConnectionFailed, connect

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
        verdict = command_verdict(command)
        _out(
            json.dumps(
                {
                    "command": command,
                    "verdict": verdict.verdict,
                    "destructive": verdict.destructive,
                    "reason": verdict.reason,
                    "hint": verdict.hint,
                }
            )
        )
    return EXIT_OK


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds (e.g. 10 or 2.5)") from None
    if not 0 <= value <= 3600:
        raise argparse.ArgumentTypeError(f"{text} s is out of range: give 0 to 3600 seconds")
    return value


def _load_json_file(path: str, what: str) -> Any:
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise UsageError(f"{what} file {path} does not exist") from None
    except IsADirectoryError:
        raise UsageError(f"{what} file {path} is a folder; pass the JSON file inside it") from None
    except OSError as exc:
        raise UsageError(f"{what} file {path} cannot be read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{what} file {path} is not UTF-8 text: {exc.reason}") from None
    except RecursionError:
        raise UsageError(f"{what} file {path} is nested too deeply to read; tool arguments are flat objects") from None
    except ValueError as exc:
        raise UsageError(f"{what} file {path} is not valid JSON: {str(exc)[:200]}") from None


def load_turn_input(args: argparse.Namespace) -> TurnInput:
    workspace = Path(args.workspace).resolve()
    if not workspace.is_dir():
        raise UsageError(f"workspace {workspace} is not a folder")
    if not args.task_queue:  # the same name the worker derives from the folder
        args.task_queue = queue_for_workspace(str(workspace))
    try:
        calls = calls_from_document(_load_json_file(args.calls, "calls"))
    except (CallDocumentError, ValueError, RecursionError) as exc:
        raise UsageError(f"calls file {args.calls}: {str(exc)[:500] or 'nested too deeply'}") from None
    snapshots: list[Snapshot] = []
    if args.snapshots:
        raw = _load_json_file(args.snapshots, "snapshots")
        if isinstance(raw, dict) and "snapshots" in raw:  # a whole TurnResult is fine too
            raw = raw["snapshots"]
        try:
            snapshots = [Snapshot.model_validate(s) for s in raw]
        except (ValueError, TypeError) as exc:
            raise UsageError(
                f"snapshots file {args.snapshots}: expected the 'snapshots' list a turn returned: {exc}"
            ) from None
    try:
        return build_turn_input(
            workspace_root=str(workspace),
            task_queue=args.task_queue,
            tool_calls=calls,
            turn_id=args.turn_id,
            snapshots=snapshots,
            policy=Policy(mode=args.policy) if args.policy else None,
            execution=_execution(args),
        )
    except TurnInputError as exc:
        raise UsageError(f"calls file {args.calls}: {exc}") from None


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
    if result.results_artifact:
        _out(f"results ({result.result_counts}) are kept in the workspace folder {result.results_artifact}")
    if result.decision:
        d = result.decision
        _out(f"decision: {'approved' if d.approve else 'rejected'} by {shown(d.approver)} via {d.via}"
             + (f" ({shown(d.reason)})" if d.reason else ""))
    for i, r in enumerate(result.results):
        _out(render_text(r, i))


def print_progress(progress: TurnProgress, as_json: bool) -> None:
    if as_json:
        _out(_dump(progress))
        return
    _out(f"turn {progress.turn_id}: {progress.status.value}  (batch digest {progress.batch_digest})")
    for c in progress.calls:
        status = f" [{c.status.value}]" if c.status else ""
        _out(f"  #{c.index + 1} {shown(c.name):<10} {c.state}{status}")
    if progress.ignored_decision:
        _out(f"last decision ignored: {shown(progress.ignored_decision)}")
    if progress.pending:
        _out("waiting for approval of:")
        for p in progress.pending:
            _out(f"  #{p.index + 1} {shown(p.name)}: {shown(p.reason)}")


async def _progress(client: Client, turn_id: str) -> TurnProgress:
    return await TurnClient(client).status(turn_id)


def _paused_notice(turn_id: str, pending: int) -> str:
    return (
        f"turn {turn_id} is paused waiting for approval ({pending} call(s)).\n"
        f"  see:     agent-turn show {turn_id}\n"
        f"  approve: agent-turn approve {turn_id} --reason ...\n"
        f"  reject:  agent-turn reject {turn_id} --reason ...\n"
        "  or: agent-turn console (a page listing paused turns), or the signal 'approve' in the Temporal Web UI."
    )


async def cmd_run(client: Client, args: argparse.Namespace) -> int:
    turn = load_turn_input(args)
    turns = TurnClient(client)
    queue = args.workflow_task_queue or args.task_queue
    try:
        handle = await turns.start_turn(turn, workflow_task_queue=queue, require_worker=not args.wait_for_worker)
    except NoWorker as exc:
        _err(f"error: {exc}; nothing was started")
        return EXIT_FAILED
    except WorkflowAlreadyStartedError:
        _err(f"error: a turn {turn.turn_id} already exists (running or finished); a turn id runs one batch "
             f"once: nothing was started. Its result: agent-turn result {turn.turn_id}; a new batch needs a new --turn-id")
        return EXIT_FAILED
    if args.no_wait:
        _out(turn.turn_id)
        return EXIT_OK
    waiting = asyncio.ensure_future(handle.result())
    line = ProgressLine(quiet=args.quiet)
    following(f"agent-turn status {turn.turn_id}  (result: agent-turn result {turn.turn_id})")
    line.say(f"turn {turn.turn_id} started on task queue {queue!r}; waiting for its result "
             "(Ctrl-C stops waiting, not the turn)")
    await follow_turn(turns, turn.turn_id, queue, waiting, line)
    line.clear()
    try:
        result: TurnResult = load_offloaded(waiting.result(), turn.workspace.root)
    except WorkflowFailureError as exc:
        _err(f"turn {turn.turn_id} failed: {exc.cause or exc}")
        return EXIT_FAILED
    print_result(result, args.json)
    return EXIT_REJECTED if result.status == TurnStatus.REJECTED else EXIT_OK


async def follow_turn(
    turns: TurnClient, turn_id: str, queue: str, waiting: "asyncio.Future[Any]", line: ProgressLine
) -> None:
    """Keep ``line`` current until ``waiting`` is done: the turn's state and
    calls, and once each: that it is paused (and how to approve), stuck, or
    that no worker polls its queue."""
    told: set[str] = set()
    while True:
        done, _ = await asyncio.wait({waiting}, timeout=1.0 if not told else 2.0)
        if done:
            return
        told.add("looked")
        try:
            stuck = await turns.stuck(turn_id)
            if stuck is not None:
                if "stuck" not in told:
                    told.add("stuck")
                    line.say(stuck.explain())
                line.update(f"turn {turn_id}: stuck (its workflow task keeps failing)")
                continue
            if await turns.workers_polling(queue) == 0:
                if "worker" not in told:
                    told.add("worker")
                    line.say(f"no worker polls the task queue {queue!r}; the turn waits until one starts: "
                             "agent-worker --workspace DIR (the same folder)")
                line.update(f"turn {turn_id}: waiting for a worker on {queue!r}")
                continue
            state, _ = await turns.pending_digest(turn_id)
            if state == TurnStatus.PAUSED.value:
                progress = await turns.status(turn_id)
                if "paused" not in told:
                    told.add("paused")
                    line.say(_paused_notice(turn_id, len(progress.pending)))
                line.update(f"turn {turn_id}: paused, waiting for approval of {len(progress.pending)} call(s)")
                continue
            progress = await turns.status(turn_id)
            finished = sum(1 for c in progress.calls if c.state == "done")
            running = sum(1 for c in progress.calls if c.state == "running")
            line.update(f"turn {turn_id}: {progress.status.value}, {finished} of {len(progress.calls)} "
                        f"call(s) done, {running} running")
        except (RPCError, TurnProblem):
            continue


async def cmd_status(client: Client, args: argparse.Namespace) -> int:
    print_progress(await _progress(client, args.turn_id), args.json)
    return EXIT_OK


async def cmd_result(client: Client, args: argparse.Namespace) -> int:
    turns = TurnClient(client)
    if await turns.is_running(args.turn_id):
        progress = await turns.status(args.turn_id)
        _err(f"turn {args.turn_id} has no result yet: it is {progress.status.value}")
        return EXIT_FAILED
    try:
        result = await turns.result(args.turn_id)
    except WorkflowFailureError as exc:
        _err(f"turn {args.turn_id} failed: {exc.cause or exc}")
        return EXIT_FAILED
    print_result(result, args.json)
    return EXIT_REJECTED if result.status == TurnStatus.REJECTED else EXIT_OK


async def cmd_pending(client: Client, args: argparse.Namespace) -> int:
    turns = await TurnClient(client).pending()
    if args.json:
        _out(json.dumps(turns, indent=2))
    elif not turns:
        _out("no turn is waiting for approval")
    else:
        for t in turns:
            if t["stuck"]:
                _out(f"{shown(t['turn_id'])}  STUCK  {shown(t['stuck'], keep=chr(10))}")
            else:
                where = f"  in {shown(t['workspace'])}" if t.get("workspace") else ""
                _out(f"{shown(t['turn_id'])}  started {t['started']}  digest {shown(t['batch_digest'] or '?')[:12]}{where}")
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
        _out(describe_pending_call(pending, command_verdict))  # escaped, cuts said
        _out()
    return EXIT_OK


async def cmd_decide(client: Client, args: argparse.Namespace, approve: bool) -> int:
    verb = "approve" if approve else "reject"
    line = ProgressLine(quiet=args.quiet)
    following(f"agent-turn status {args.turn_id}")
    turns = TurnClient(client)
    try:
        await turns.decide(
            args.turn_id,
            approve=approve,
            approver=args.approver,
            reason=args.reason or "",
            digest=args.digest,
            signal=args.signal,
            wait_for_worker_s=args.worker_timeout,
            on_wait=line.update,
        )
    except WorkflowUpdateFailedError as exc:
        line.clear()
        _err(f"the turn refused the decision: {exc.cause.message if exc.cause else exc}")
        return EXIT_FAILED
    line.clear()
    if turns.last_via == "signal":
        why = "" if args.signal else " (no worker answered in time)"
        _out(f"sent {verb} signal to {args.turn_id}{why}; it takes effect when a worker runs the turn: "
             f"agent-turn status {args.turn_id}")
    else:
        _out(f"{'approved' if approve else 'rejected'} turn {args.turn_id} as {args.approver}")
    return EXIT_OK


# ------------------------------------------------------------------ main
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--address", help="Temporal host:port (default: TEMPORAL_ADDRESS or localhost:7233)")
    parser.add_argument("--namespace", help="Temporal namespace (default: TEMPORAL_NAMESPACE or 'default')")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run one batch of tool calls as a turn")
    run.add_argument("--workspace", required=True, help="workspace root, as the worker sees it")
    run.add_argument("--calls", required=True, help="JSON file with tool calls (OpenAI or Anthropic shape)")
    run.add_argument("--task-queue", help="task queue of the worker holding the workspace "
                     "(default: the one derived from the workspace's real path, as the worker derives it)")
    run.add_argument("--workflow-task-queue", help="run the workflow itself on another queue")
    run.add_argument("--turn-id", help="workflow id (default: a new random one)")
    run.add_argument("--snapshots", help="JSON 'snapshots' an earlier turn returned")
    run.add_argument("--policy", choices=POLICY_MODES, help="default: the worker's")
    run.add_argument(
        "--execution",
        choices=["auto", "local", "remote"],
        default="auto",
        help="auto: local activities when the workflow runs on the workspace's queue",
    )
    run.add_argument("--json", action="store_true", help="print the TurnResult as JSON")
    run.add_argument("--no-wait", action="store_true", help="print the turn id and return at once")
    run.add_argument("--quiet", action="store_true", help="no progress line while waiting")
    run.add_argument(
        "--wait-for-worker",
        action="store_true",
        help="start the turn even when no worker polls its task queue yet (it waits for one)",
    )

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
        p.add_argument("--quiet", action="store_true", help="no progress line while waiting for a worker")
        p.add_argument("--worker-timeout", type=_seconds, default=30.0, metavar="SECONDS",
                       help="how long the update waits for a worker to answer (default 30; a restarted "
                            "worker takes over within 10-15 s)")

    console = sub.add_parser("console", help="a local web page to review and approve paused turns")
    console.add_argument("--port", type=int, default=8788, help="port (default 8788; 0: any free port)")
    console.add_argument("--host", default="127.0.0.1",
                         help="listen address (default loopback; any other needs the printed token)")
    console.add_argument("--token", help="the token for other hosts (default: a random one, printed)")

    tools = sub.add_parser("tools", help="tool definitions for a model API")
    tools.add_argument("--format", choices=["openai", "anthropic"], default="openai")
    check = sub.add_parser("check-command", help="validate bash commands (one per line on stdin)")
    check.add_argument(
        "--json", action="store_true",
        help="read stdin as a JSON array of command strings (the output is JSON lines either way)",
    )
    cli.rollback.add_parser(sub)  # client.py rollback
    cli.session.register(sub)
    cli.mcp.register(sub)
    return parser


async def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "tools":
        return cmd_tools(args)
    if args.command == "check-command":
        return cmd_check_command(args)
    if args.command == "session":
        return await cli.session.dispatch(args)
    if args.command == "run":
        load_turn_input(args)  # bad input fails before we talk to the server
    client = await connect(args.address, args.namespace)
    handlers = {
        "run": cmd_run,
        "status": cmd_status,
        "result": cmd_result,
        "pending": cmd_pending,
        "show": cmd_show,
        "rollback": cli.rollback.cmd_rollback,
        "console": cmd_console,
    }
    if args.command in handlers:
        return await handlers[args.command](client, args)
    return await cmd_decide(client, args, approve=args.command == "approve")


def run_cli(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "mcp":  # runs its own event loop (and maybe a worker)
        return cli.mcp.dispatch(args)
    try:
        return asyncio.run(_dispatch(args))
    except UsageError as exc:
        _err(f"error: {exc}")
        return EXIT_USAGE
    except ConnectionFailed as exc:
        _err(f"error: {exc}")
        return EXIT_USAGE
    except TurnProblem as exc:
        _err(f"error: {shown(exc, keep=chr(10))}")
        return EXIT_FAILED
    except RPCError as exc:
        turn = getattr(args, "turn_id", None)
        if exc.status == RPCStatusCode.NOT_FOUND and turn:
            _err(f"error: no turn {turn} on this server (namespace {args.namespace or 'default'})")
            return EXIT_FAILED
        _err(f"error: the server refused the request{f' for turn {turn}' if turn else ''}: {exc.message}")
        return EXIT_FAILED


def main(argv: list[str] | None = None) -> None:
    try:
        code = run_cli(argv)
    except KeyboardInterrupt:
        _err("\n" + farewell("interrupted"))
        code = 130
    except BrokenPipeError:
        quiet_stdout()
        _err(farewell("output closed"))
        code = EXIT_FAILED
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
