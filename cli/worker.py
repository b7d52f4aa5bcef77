"""The worker: runs agent-turn workflows and the tools for one workspace.

    agent-worker --workspace ./my-project --dev-server

connects to TEMPORAL_ADDRESS (default localhost:7233) or, with --dev-server,
starts the embedded Temporal dev server (state in a SQLite file, Web UI on
port 8233) when none answers, and stops it again on exit.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from core.contracts import Policy
from runtime.connection import ConnectionFailed, connect, connect_settings
from runtime.devserver import DevServer, DevServerError, port_open
from runtime.worker import DEFAULT_TASK_QUEUE, build_worker

log = logging.getLogger("worker")


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workspace", required=True, help="folder whose files this worker's tools may touch")
    parser.add_argument("--task-queue", default=os.environ.get("AGENT_TASK_QUEUE", DEFAULT_TASK_QUEUE))
    parser.add_argument("--address", help="Temporal frontend host:port (default: TEMPORAL_ADDRESS or localhost:7233)")
    parser.add_argument("--namespace", help="Temporal namespace (default: TEMPORAL_NAMESPACE or 'default')")
    parser.add_argument("--dev-server", action="store_true", help="start the embedded dev server if none answers")
    parser.add_argument("--data-dir", default=".data", help="where the dev server keeps its SQLite file and log")
    parser.add_argument("--ui-port", type=int, default=8233, help="dev server Web UI port")
    parser.add_argument(
        "--policy",
        choices=["auto", "ask-writes", "ask-all"],
        default="ask-writes",
        help="default approval mode for turns that do not name a policy",
    )
    parser.add_argument(
        "--deployment-name",
        default=os.environ.get("AGENT_DEPLOYMENT_NAME"),
        help="worker versioning: the deployment this worker belongs to (with --build-id)",
    )
    parser.add_argument(
        "--build-id",
        default=os.environ.get("AGENT_BUILD_ID"),
        help="worker versioning: this build's id; turns stay pinned to the build that started them",
    )
    parser.add_argument(
        "--unsandboxed-workflows",
        action="store_true",
        help="run workflow code without the SDK sandbox (faster; see README)",
    )
    parser.add_argument(
        "--sandbox",
        choices=["auto", "required", "off"],
        default=os.environ.get("AGENT_TOOLS_SANDBOX", "auto"),
        help="bash OS sandbox (bubblewrap): auto uses it where it works, required refuses to run without it",
    )
    parser.add_argument(
        "--network-on-approval",
        action="store_true",
        default=os.environ.get("AGENT_TOOLS_BASH_NETWORK", "off") == "on-approval",
        help="a bash command that needs the network (pip install, npm install, curl) asks 'needs network' "
        "and, approved, runs with the host's network (still captured and gated). Off by default",
    )
    return parser.parse_args(argv)


async def _serve(args: argparse.Namespace) -> int:
    if bool(args.deployment_name) != bool(args.build_id):
        log.error("--deployment-name and --build-id go together (worker versioning needs both)")
        return 2
    workspace = Path(args.workspace).resolve()
    if not workspace.is_dir():
        log.error("workspace %s is not a folder: create it or pass another --workspace", workspace)
        return 2
    os.environ["AGENT_TOOLS_SANDBOX"] = args.sandbox
    os.environ["AGENT_TOOLS_BASH_NETWORK"] = "on-approval" if args.network_on_approval else "off"

    server: DevServer | None = None
    settings = connect_settings(args.address, args.namespace)
    if args.dev_server:
        host, _, port = settings["target_host"].rpartition(":")
        host = host or "127.0.0.1"
        if port_open(host, int(port)):
            log.info("a Temporal server already answers at %s; using it", settings["target_host"])
        else:
            data = Path(args.data_dir).resolve()
            server = DevServer(
                db_file=data / "temporal.sqlite",
                host="127.0.0.1" if host == "localhost" else host,
                port=int(port),
                ui_port=args.ui_port,
                log_file=data / "temporal-server.log",
            )
            try:
                server.start()
            except DevServerError as exc:
                log.error("%s", exc)
                return 2
            log.info("started the dev server at %s (state in %s); Web UI: %s", server.address, server.db_file, server.ui_url)

    try:
        try:
            client = await connect(args.address, args.namespace)
        except ConnectionFailed as exc:
            log.error("%s", exc)
            return 2
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        # File tools run in threads (asyncio.to_thread); the default pool of
        # cpu+4 threads would cap a batch of parallel reads on small machines.
        loop.set_default_executor(ThreadPoolExecutor(max_workers=32, thread_name_prefix="tool"))
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        worker = build_worker(
            client,
            task_queue=args.task_queue,
            workspace=str(workspace),
            default_policy=Policy(mode=args.policy),
            sandboxed_workflows=not args.unsandboxed_workflows,
            deployment=(args.deployment_name, args.build_id) if args.deployment_name else None,
        )
        async with worker:
            log.info(
                "worker ready: task queue %r, workspace %s, default policy %s, bash sandbox %s",
                args.task_queue, workspace, args.policy, args.sandbox,
            )
            await stop.wait()
            log.info("shutting down (waiting up to 5 s for running tools)")
        return 0
    finally:
        if server is not None:
            server.stop()
            log.info("stopped the dev server")


def main(argv: list[str] | None = None) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    code = asyncio.run(_serve(_parse_args(argv)))
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    # temporalio's native runtime can crash at interpreter exit (sdk-python#300);
    # the work is done, so leave without running finalizers.
    os._exit(code)


if __name__ == "__main__":
    main()
