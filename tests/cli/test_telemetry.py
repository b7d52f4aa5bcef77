"""Traces (OpenTelemetry, in-memory exporter) and metrics (Prometheus endpoint
of the worker) of turns and tool calls; never argument contents."""

from __future__ import annotations

import asyncio
import urllib.request
from pathlib import Path

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from temporalio.client import Client

from core.contracts import Policy, TurnStatus
from runtime.api import TurnClient, build_turn_input
from runtime.connection import connect
from runtime.devserver import free_port
from runtime.telemetry import interceptors, kill_reason, metrics_runtime
from runtime.worker import build_worker
from tests.processes import server_address
from tests.support import call

SECRET = "s3cret-content-never-in-a-span"


async def test_spans_for_turns_and_tool_calls_without_contents(client: Client, workspace: Path, task_queue: str) -> None:
    (workspace / "notes.txt").write_text(f"{SECRET}\n")
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    traced = await connect(server_address(client))
    turn = build_turn_input(
        workspace_root=str(workspace), task_queue=task_queue, policy=Policy(mode="auto"),
        tool_calls=[call(0, "read_file", path="notes.txt"), call(1, "grep", pattern=SECRET),
                    call(2, "read_file", path="missing.txt")],
    )
    worker = build_worker(traced, task_queue=task_queue, workspace=str(workspace), interceptors=interceptors(tracer))
    async with worker:
        # The client's own start span too, with the same tracer.
        from temporalio.contrib.opentelemetry import TracingInterceptor

        starter = Client(traced.service_client, namespace=traced.namespace,
                         data_converter=traced.data_converter, interceptors=[TracingInterceptor(tracer)])
        result = await TurnClient(starter).run_turn(turn)
    assert result.status == TurnStatus.COMPLETED
    spans = exporter.get_finished_spans()
    names = [s.name for s in spans]
    assert "StartWorkflow:AgentTurnWorkflow" in names and "RunWorkflow:AgentTurnWorkflow" in names
    tools = {s.name: s for s in spans if s.name.startswith("RunActivity:")}
    # The three reads run as one read_stage activity: one child span per call.
    per_call = [s for s in spans if (s.attributes or {}).get("agent.tool.name")]
    assert sorted(s.attributes["agent.tool.name"] for s in per_call) == ["grep", "read_file", "read_file"]
    statuses = sorted(s.attributes["agent.tool.status"] for s in per_call if s.attributes["agent.tool.name"] == "read_file")
    assert statuses == ["error", "ok"]
    assert all(s.attributes.get("agent.tool.duration_ms") is not None for s in per_call)
    assert "agent.tool.status" not in (tools["RunActivity:plan_turn"].attributes or {})  # not a tool call
    # One trace from the start to the tools.
    assert len({s.context.trace_id for s in spans}) == 1
    for s in spans:
        assert SECRET not in repr(dict(s.attributes or {})) and SECRET not in s.name


async def test_prometheus_endpoint_has_sdk_and_tool_metrics(client: Client, workspace: Path, task_queue: str) -> None:
    port = free_port()
    runtime = metrics_runtime(port)
    metered = await connect(server_address(client), runtime=runtime)
    (workspace / "a.txt").write_text("x\n")
    turns = TurnClient(metered)
    ask = build_turn_input(workspace_root=str(workspace), task_queue=task_queue, policy=Policy(mode="ask-all"),
                           tool_calls=[call(0, "read_file", path="a.txt")])
    run = build_turn_input(workspace_root=str(workspace), task_queue=task_queue, policy=Policy(mode="auto"),
                           tool_calls=[call(0, "read_file", path="a.txt"), call(1, "bash", command="sleep 5",
                                                                                   timeout_seconds=1)])
    async with build_worker(metered, task_queue=task_queue, workspace=str(workspace),
                            interceptors=interceptors(meter=runtime.metric_meter)):
        await turns.run_turn(run)
        handle = await turns.start_turn(ask)
        while (await turns.pending_digest(ask.turn_id))[0] != "paused":
            await asyncio.sleep(0.1)
        await turns.approve(ask.turn_id, approver="test")
        await handle.result()
        await asyncio.sleep(1.5)  # the SDK exports metrics periodically
        text = await asyncio.to_thread(lambda: urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics").read().decode())
    assert 'agent_tool_calls{' in text and 'tool="read_file"' in text and 'status="ok"' in text
    assert "agent_turns_paused" in text
    assert 'agent_sandbox_kills{' in text and 'reason="timeout"' in text
    assert "agent_tool_output_bytes" in text
    assert "temporal_workflow_completed" in text or "temporal_activity_execution_latency" in text


def test_kill_reasons() -> None:
    assert kill_reason({"timed_out": "true"}) == "timeout"
    assert kill_reason({"timed_out": "false", "memory_limit_hit": "true"}) == "memory"
    assert kill_reason({"exit_code": "137"}) == "sigkill"
    assert kill_reason({"exit_code": "0", "timed_out": "false"}) is None


def test_agent_worker_serves_metrics_on_its_port(client: Client, workspace: Path, tmp_path: Path) -> None:
    from tests.processes import WorkerProcess

    port = free_port()
    worker = WorkerProcess(server_address(client), workspace, None, tmp_path / "w.log", "--metrics-port", str(port))
    worker.start()
    try:
        assert f"metrics: http://127.0.0.1:{port}/metrics" in (tmp_path / "w.log").read_text()
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
        assert "temporal_" in text
    finally:
        worker.stop()
