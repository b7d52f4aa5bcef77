"""``client.py rollback TURN_ID [--json]``: undo what a turn changed in its
workspace (write_file, edit_file and bash alike), on the worker holding it.

Prints exactly what was restored, and lists the files it refused to touch
because someone changed them since the turn (exit 1 then)."""

from __future__ import annotations

import argparse
import json

from temporalio.client import Client, WorkflowFailureError

from runtime.txn_api import RollbackLookupFailed, rollback

EXIT_OK, EXIT_FAILED = 0, 1


def add_parser(sub) -> None:  # type: ignore[no-untyped-def]
    p = sub.add_parser("rollback", help="restore every file a turn changed (pre-images); lists conflicts")
    p.add_argument("turn_id")
    p.add_argument("--json", action="store_true")
    p.add_argument("--workspace", help="workspace root (default: the one the turn ran with)")
    p.add_argument("--task-queue", help="task queue of the worker holding it (default: the turn's)")


async def cmd_rollback(client: Client, args: argparse.Namespace) -> int:
    try:
        result = await rollback(client, args.turn_id, workspace_root=args.workspace, task_queue=args.task_queue)
    except RollbackLookupFailed as exc:
        print(f"error: {exc}")
        return EXIT_FAILED
    except WorkflowFailureError as exc:
        cause = exc.cause
        while getattr(cause, "cause", None) is not None:
            cause = cause.cause
        print(f"error: rollback of {args.turn_id} failed: {getattr(cause, 'message', None) or cause or exc}")
        return EXIT_FAILED
    if args.json:
        print(json.dumps(result.model_dump(mode="json"), indent=2))
    else:
        print(result.text)
    return EXIT_OK if result.clean else EXIT_FAILED
