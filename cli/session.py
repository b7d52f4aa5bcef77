"""`client.py session ...`: agent sessions from the command line.

    python client.py session run --workspace DIR --provider anthropic --model claude-sonnet-4-5 \
        --prompt "Fix the failing test" [--task-queue Q] [--base-url URL] [--policy MODE] \
        [--max-turns N] [--json] [--no-wait]
    python client.py session status ID [--json]
    python client.py session send ID "Now add a test for it"
    python client.py session approve ID      /  session reject ID --reason "not that file"
    python client.py session transcript ID [--json]
    python client.py session close ID        /  session cancel ID

`run` waits for the first answer and prints it (the session stays open for
`send`); `--json` prints the session's status with its session_id;
`--no-wait` prints the session id at once. The model's API key is read by the
worker from its environment (OPENAI_API_KEY / ANTHROPIC_API_KEY), never
passed here.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import sys
from typing import Any, Callable

from core.session.providers import entry_text
from core.session.contracts import SessionResult, SessionState, SessionView
from cli.progress import ProgressLine, following
from runtime import session_api as sessions
from core.contracts import POLICY_MODES
from runtime.connection import connect

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_REJECTED = 0, 1, 2, 3


def _err(text: str) -> None:
    print(text, file=sys.stderr)


def _dump(model: Any) -> str:
    return json.dumps(model.model_dump(mode="json"), indent=2)


def register(sub: Any) -> None:
    """Add the `session` command to client.py's subcommands."""
    session = sub.add_parser("session", help="agent sessions: a model driving turns (run, status, send, ...)",
                             description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = session.add_subparsers(dest="session_command", required=True)

    run = commands.add_parser("run", help="start a session and wait for its first answer")
    run.add_argument("--workspace", required=True, help="workspace root, as the worker sees it")
    run.add_argument("--task-queue", help="task queue of the worker holding the workspace "
                     "(default: the one derived from the workspace's real path, as the worker derives it)")
    run.add_argument("--provider", required=True, choices=["openai", "anthropic"],
                     help="openai: Chat Completions (any compatible server); anthropic: Messages")
    run.add_argument("--model", required=True, help="model name, e.g. gpt-4.1 or claude-sonnet-4-5")
    run.add_argument("--base-url", help="API base URL (default: the worker's OPENAI_BASE_URL / ANTHROPIC_BASE_URL)")
    run.add_argument("--prompt", required=True, help="what the agent should do")
    run.add_argument("--policy", choices=POLICY_MODES, help="approval mode (default: the worker's)")
    run.add_argument("--max-turns", type=int, help="stop after this many model calls (default 100)")
    run.add_argument("--max-output-tokens", type=int,
                     help="cap on one response's tokens (Anthropic default 8192; OpenAI: none sent)")
    run.add_argument("--session-id", help="workflow id (default: a new random one)")
    run.add_argument("--json", action="store_true", help="print the session's status as JSON (with session_id)")
    run.add_argument("--no-wait", action="store_true", help="print the session id and return at once")
    run.add_argument("--quiet", action="store_true", help="no progress line while waiting")
    run.add_argument("--no-streaming-dispatch", action="store_true",
                     help="run tool calls only after the whole model response (default: safe calls start as they stream)")

    status = commands.add_parser("status", help="state, usage, and what a paused turn asks")
    status.add_argument("session_id")
    status.add_argument("--json", action="store_true")

    send = commands.add_parser("send", help="send the next user message and print the answer")
    send.add_argument("session_id")
    send.add_argument("text")
    send.add_argument("--no-wait", action="store_true", help="return once the message is delivered")
    send.add_argument("--json", action="store_true")
    send.add_argument("--quiet", action="store_true", help="no progress line while waiting")

    for name in ("approve", "reject"):
        p = commands.add_parser(name, help=f"{name} the batch the session's turn waits on")
        p.add_argument("session_id")
        p.add_argument("--reason", default="")
        p.add_argument("--approver", default=os.environ.get("USER") or getpass.getuser())
        p.add_argument("--digest", help="the batch digest you reviewed (default: the pending one)")

    transcript = commands.add_parser("transcript", help="the conversation so far (run where the workspace is)")
    transcript.add_argument("session_id")
    transcript.add_argument("--json", action="store_true")

    for name, text in (("close", "end the session after its current step"),
                       ("cancel", "cancel the session and its running turn now")):
        p = commands.add_parser(name, help=text)
        p.add_argument("session_id")
        p.add_argument("--json", action="store_true")


def _print_view(view: SessionView) -> None:
    print(f"session {view.session_id}: {view.state.value}  ({view.provider} {view.model})")
    if view.message:
        print(f"  {view.message}")
    print(f"  model calls {view.model_calls}, turns {view.turns}, runs {view.runs}, "
         f"tokens {view.usage.input_tokens} in / {view.usage.output_tokens} out")
    if view.current_turn_id:
        print(f"  running turn {view.current_turn_id} (batch digest {view.current_batch_digest})")
    for p in view.pending:
        print(f"    #{p.index + 1} {p.name}: {p.reason}")
    if view.last_answer and not view.current_turn_id:
        print("\nlast answer:\n" + view.last_answer)


def _print_result(result: SessionResult, as_json: bool) -> None:
    if as_json:
        print(_dump(result))
        return
    print(f"session {result.session_id}: {result.state.value}: {result.message}")
    print(f"  model calls {result.model_calls}, turns {result.turns}, "
         f"tokens {result.usage.input_tokens} in / {result.usage.output_tokens} out")


def _tell_paused(view: SessionView) -> None:
    _err(
        f"turn {view.current_turn_id} waits for approval of {len(view.pending)} call(s):\n"
        + "".join(f"  #{p.index + 1} {p.name}: {p.reason}\n" for p in view.pending)
        + f"  approve: agent-turn session approve {view.session_id}\n"
        f"  reject:  agent-turn session reject {view.session_id} --reason ...\n"
        "  or send the signal 'approve' to the turn from the Temporal Web UI."
    )


def _waiting_line(args: argparse.Namespace, sid: str) -> ProgressLine:
    line = ProgressLine(quiet=getattr(args, "quiet", False))
    following(f"agent-turn session status {sid}")
    if not getattr(args, "no_wait", False):
        line.say(f"waiting for session {sid} to answer (Ctrl-C stops waiting, not the session)")
    return line


def _paused_teller(line: ProgressLine) -> Callable[[SessionView], None]:
    def tell(view: SessionView) -> None:
        line.clear()
        _tell_paused(view)
    return tell


def _answered(view: SessionView, as_json: bool) -> int:
    if as_json:
        print(_dump(view))
    elif view.state == SessionState.WAITING_FOR_USER:
        print(view.last_answer)
        _err(f"\nsession {view.session_id} waits for your next message: "
             f"python client.py session send {view.session_id} \"...\"  (or: session close {view.session_id})")
    else:
        _err(f"session {view.session_id} ended: {view.state.value}: {view.message}")
    return EXIT_OK if view.state == SessionState.WAITING_FOR_USER or view.state == SessionState.CLOSED else EXIT_FAILED


async def dispatch(args: argparse.Namespace) -> int:
    try:
        return await _dispatch(args)
    except sessions.SessionError as exc:
        _err(f"error: {exc}")
        return EXIT_FAILED


async def _dispatch(args: argparse.Namespace) -> int:
    command = args.session_command
    start: dict[str, Any] = {}
    if command == "run":
        start = dict(
            workspace=args.workspace, task_queue=args.task_queue, provider=args.provider, model=args.model,
            prompt=args.prompt, base_url=args.base_url, policy=args.policy, max_model_calls=args.max_turns,
            max_output_tokens=args.max_output_tokens,
            streaming_dispatch=not args.no_streaming_dispatch,
        )
        try:
            sessions.session_input(**start)  # bad input fails before we talk to the server
        except sessions.SessionError as exc:
            _err(f"error: {exc}")
            return EXIT_USAGE
    client = await connect(args.address, args.namespace)
    sid = getattr(args, "session_id", None)
    if command == "run":
        sid = await sessions.start_session(client, session_id=args.session_id, **start)
        if args.no_wait:
            print(sid)
            return EXIT_OK
        line = _waiting_line(args, sid)
        view = await sessions.wait_for_answer(
            client, sid, on_approval_needed=_paused_teller(line), on_progress=line.update
        )
        line.clear()
        return _answered(view, args.json)
    if command == "status":
        view = await sessions.session_status(client, sid)
        print(_dump(view)) if args.json else _print_view(view)
        return EXIT_OK
    if command == "send":
        line = _waiting_line(args, sid)
        answer = await sessions.send(
            client, sid, args.text, wait=not args.no_wait,
            on_approval_needed=_paused_teller(line), on_progress=line.update,
        )
        line.clear()
        if answer is None:
            print(f"sent to {sid}")
            return EXIT_OK
        return _answered(answer, args.json)
    if command in ("approve", "reject"):
        decide = sessions.approve if command == "approve" else sessions.reject
        record = await decide(client, sid, approver=args.approver, reason=args.reason, digest=args.digest)
        print(f"{'approved' if record.approve else 'rejected'} the batch {record.batch_digest[:16]}… of session {sid} "
             f"as {record.approver}")
        return EXIT_OK
    if command == "transcript":
        entries = await sessions.transcript(client, sid)
        if args.json:
            print(json.dumps([e.model_dump(mode="json", exclude_defaults=True) for e in entries], indent=2))
        else:
            for entry in entries:
                print(f"[{entry.kind}{' ' + entry.turn_id if entry.turn_id else ''}]")
                print(entry_text(entry) + "\n")
        return EXIT_OK
    result = await (sessions.close(client, sid) if command == "close" else sessions.cancel(client, sid))
    _print_result(result, args.json)
    return EXIT_OK
