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

from core.contracts import POLICY_MODES, Policy
from runtime.connection import ConnectionFailed, connect, connect_settings
from runtime.devserver import DevServer, DevServerError, port_open
from core.config import SANDBOX_ENV, SANDBOX_MODES, SettingError
from runtime.config import TASK_QUEUE_ENV, WorkerConfig
from runtime.queues import POLLER_FRESH_S, foreign_pollers, fresh_pollers, queue_for_workspace
from runtime.telemetry import configure_tracing, interceptors, metrics_runtime
from runtime.worker import build_worker

log = logging.getLogger("worker")


def _parse_args(argv: list[str] | None, config: WorkerConfig) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workspace", required=True, help="folder whose files this worker's tools may touch")
    parser.add_argument(
        "--task-queue",
        default=config.task_queue,
        help=f"default: {TASK_QUEUE_ENV}, or agent-tools-<hash of the workspace's real path>, the queue clients derive from --workspace",
    )
    parser.add_argument("--address", help="Temporal frontend host:port (default: TEMPORAL_ADDRESS or localhost:7233)")
    parser.add_argument("--namespace", help="Temporal namespace (default: TEMPORAL_NAMESPACE or 'default')")
    parser.add_argument("--dev-server", action="store_true", help="start the embedded dev server if none answers")
    parser.add_argument(
        "--metrics-port",
        type=int,
        help="serve Prometheus metrics (the SDK's and the tools') on 127.0.0.1:PORT/metrics",
    )
    parser.add_argument(
        "--stop-dev-server",
        action="store_true",
        help="stop the dev server this worker started when it exits (default: leave it for other workers)",
    )
    parser.add_argument("--data-dir", default=".data", help="where the dev server keeps its SQLite file and log")
    parser.add_argument("--ui-port", type=int, default=8233, help="dev server Web UI port")
    parser.add_argument(
        "--policy",
        choices=POLICY_MODES,
        default="ask-writes",
        help="default approval mode for turns that do not name a policy",
    )
    parser.add_argument(
        "--deployment-name",
        default=config.deployment_name,
        help="worker versioning: the deployment this worker belongs to (with --build-id)",
    )
    parser.add_argument(
        "--build-id",
        default=config.build_id,
        help="worker versioning: this build's id; turns stay pinned to the build that started them",
    )
    parser.add_argument(
        "--unsandboxed-workflows",
        action="store_true",
        help="run workflow code without the SDK sandbox (faster; see README)",
    )
    parser.add_argument(
        "--sandbox",
        choices=SANDBOX_MODES,
        default=config.tools.sandbox,
        help=f"bash OS sandbox (bubblewrap): auto uses it where it works, required refuses to run without it "
        f"(default: {SANDBOX_ENV} or auto)",
    )
    parser.add_argument(
        "--network-on-approval",
        action="store_true",
        default=config.tools.bash_network == "on-approval",
        help="a bash command that needs the network (pip install, npm install, curl) asks 'needs network' "
        "and, approved, runs with the host's network (still captured and gated). Off by default",
    )
    return parser.parse_args(argv)


async def _serve(args: argparse.Namespace, config: WorkerConfig) -> int:
    if bool(args.deployment_name) != bool(args.build_id):
        log.error("--deployment-name and --build-id go together (worker versioning needs both)")
        return 2
    workspace = Path(args.workspace).resolve()
    if not workspace.is_dir():
        log.error("workspace %s is not a folder: create it or pass another --workspace", workspace)
        return 2
    tools = config.tools.replace(sandbox=args.sandbox, bash_network="on-approval" if args.network_on_approval else "off")
    args.task_queue = args.task_queue or queue_for_workspace(str(workspace))

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
            runtime = metrics_runtime(args.metrics_port) if args.metrics_port else None
            tracing = configure_tracing()
            client = await connect(args.address, args.namespace, runtime=runtime)
        except ConnectionFailed as exc:
            log.error("%s", exc)
            return 2
        foreign = foreign_pollers(await fresh_pollers(client, args.task_queue), str(workspace))
        if foreign:
            # Two folders on one queue: each would take the other's turns.
            log.error(
                "refusing to start: the task queue %r is polled by a worker for another workspace (%s); "
                "this worker serves %s. Leave --task-queue out (each folder gets its own queue) or pick "
                "another name. A worker that was just stopped stays listed for up to %d s.",
                args.task_queue, ", ".join(sorted({p.describe() for p in foreign})), workspace, POLLER_FRESH_S,
            )
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
            tool_settings=tools,
            interceptors=interceptors(meter=runtime.metric_meter if runtime else None),
        )
        if args.metrics_port:
            log.info("metrics: http://127.0.0.1:%d/metrics", args.metrics_port)
        if tracing is not None:
            log.info("traces: exported over OTLP to %s", os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"])
        async with worker:
            log.info(
                "worker ready: task queue %r, workspace %s, default policy %s, bash sandbox %s",
                args.task_queue, workspace, args.policy, args.sandbox,
            )
            await stop.wait()
            log.info("shutting down (waiting up to 5 s for running tools)")
        return 0
    finally:
        if server is not None and args.stop_dev_server:
            server.stop()
            log.info("stopped the dev server")
        elif server is not None and server.process is not None:
            # Other workers (other folders) may use it: it keeps running. It
            # was started in its own session, so this worker's exit leaves it be.
            log.info(
                "the dev server keeps running for other workers (pid %d, state in %s); stop it with "
                "`kill %d`, or start the worker with --stop-dev-server to stop it on exit",
                server.process.pid, server.db_file, server.process.pid,
            )


def main(argv: list[str] | None = None) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        config = WorkerConfig.from_env()
    except SettingError as exc:
        log.error("%s", exc)
        code = 2
    else:
        code = asyncio.run(_serve(_parse_args(argv, config), config))
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    # temporalio's native runtime can crash at interpreter exit (sdk-python#300);
    # the work is done, so leave without running finalizers.
    os._exit(code)


if __name__ == "__main__":
    main()
