"""Traces and metrics.

Traces: Temporal's OpenTelemetry ``TracingInterceptor`` gives a span for
every session and turn workflow (``RunWorkflow:AgentSessionWorkflow``,
``RunWorkflow:AgentTurnWorkflow``), every model call (``RunActivity:call_model``)
and every tool call (``RunActivity:<tool>``), linked across client, workflow
and activities. ``ToolTelemetry`` adds to each tool span its tool name,
status and duration: never the arguments' or the output's contents. Spans
are exported over OTLP when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set and the
OTLP exporter is installed, and go nowhere otherwise.

Metrics: the SDK's own (task latencies, slots, polls) and ours, on one
Prometheus endpoint (``agent-worker --metrics-port N``, served by the SDK's
runtime): ``agent_tool_calls{tool,status}``, ``agent_turns_paused``,
``agent_sandbox_kills{reason}``, ``agent_tool_output_bytes{tool}``.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

from temporalio import activity
from temporalio.common import MetricMeter
from temporalio.runtime import PrometheusConfig, Runtime, TelemetryConfig
from temporalio.worker import (
    ActivityInboundInterceptor,
    ExecuteActivityInput,
    Interceptor,
)

log = logging.getLogger("telemetry")

TOOL_CALLS = "agent_tool_calls"
TURNS_PAUSED = "agent_turns_paused"
SANDBOX_KILLS = "agent_sandbox_kills"
OUTPUT_BYTES = "agent_tool_output_bytes"


def metrics_runtime(port: int, host: str = "127.0.0.1") -> Runtime:
    """A Temporal runtime serving Prometheus metrics on ``host:port``."""
    return Runtime(telemetry=TelemetryConfig(metrics=PrometheusConfig(bind_address=f"{host}:{port}")))


def configure_tracing(service_name: str = "agent-tools") -> Any | None:
    """A tracer provider exporting over OTLP when OTEL_EXPORTER_OTLP_ENDPOINT
    is set (None otherwise: spans are then no-ops). Installed as the global
    provider, which the TracingInterceptor uses."""
    endpoint = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    if not endpoint:
        return None
    try:
        from opentelemetry import trace
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter  # type: ignore[import-not-found]
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        log.warning(
            "OTEL_EXPORTER_OTLP_ENDPOINT is set but the OTLP exporter is not installed "
            "(pip install opentelemetry-exporter-otlp); traces are not exported"
        )
        return None
    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    return provider


def interceptors(tracer: Any | None = None, meter: MetricMeter | None = None) -> list[Interceptor]:
    """The tracing interceptor (when OpenTelemetry is importable) and ours."""
    found: list[Interceptor] = []
    try:
        from temporalio.contrib.opentelemetry import TracingInterceptor
    except ImportError:  # opentelemetry-api missing: metrics only
        pass
    else:
        found.append(TracingInterceptor(tracer))
    found.append(ToolTelemetry(meter, tracer))
    return found


class ToolTelemetry(Interceptor):
    """Tool-call metrics and span attributes (an activity interceptor)."""

    def __init__(self, meter: MetricMeter | None = None, tracer: Any | None = None) -> None:
        self.meter = meter
        self.tracer = tracer  # None: the global tracer provider's

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _ToolActivity(next, self)


def _meter(root: ToolTelemetry) -> MetricMeter:
    return root.meter or activity.metric_meter()


class _ToolActivity(ActivityInboundInterceptor):
    def __init__(self, next: ActivityInboundInterceptor, root: ToolTelemetry) -> None:
        super().__init__(next)
        self.root = root

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        started = time.monotonic()
        result = await super().execute_activity(input)
        status = getattr(result, "status", None)
        if status is not None and hasattr(result, "tool_call_id"):
            # One tool call: this activity's own span describes it.
            self._record(result, activity.info().activity_type, round((time.monotonic() - started) * 1000, 3),
                         span=_current_span())
        elif isinstance(getattr(result, "results", None), list):
            # A stage of reads run as one activity: a child span and the
            # metrics for each call, as if each had been its own activity.
            for call in result.results:
                if hasattr(call, "tool_call_id") and getattr(call, "status", None) is not None:
                    with _child_span(self.root.tracer, f"RunTool:{call.name}") as span:
                        self._record(call, call.name, round(float(call.elapsed_ms), 3), span=span)
        return result

    def _record(self, result: Any, tool: str, duration_ms: float, span: Any) -> None:
        status = result.status
        status_text = getattr(status, "value", str(status))
        metadata = getattr(result, "metadata", {}) or {}
        if span is not None:
            span.set_attribute("agent.tool.name", tool)
            span.set_attribute("agent.tool.status", status_text)
            span.set_attribute("agent.tool.duration_ms", duration_ms)
        meter = _meter(self.root)
        meter.create_counter(TOOL_CALLS, "tool calls by tool and status").with_additional_attributes(
            {"tool": tool, "status": status_text}
        ).add(1)
        meter.create_histogram(OUTPUT_BYTES, "bytes of a tool call's output", "By").with_additional_attributes(
            {"tool": tool}
        ).record(len((getattr(result, "output", "") or "").encode("utf-8", "surrogatepass")))
        reason = kill_reason(metadata)
        if reason:
            meter.create_counter(SANDBOX_KILLS, "commands killed by the sandbox").with_additional_attributes(
                {"reason": reason}
            ).add(1)


def _current_span() -> Any:
    try:
        from opentelemetry import trace
    except ImportError:
        return None
    return trace.get_current_span()


def _child_span(tracer: Any | None, name: str) -> Any:
    """A span under the current one (the read stage's activity span); a
    no-op context when OpenTelemetry is not installed."""
    try:
        from opentelemetry import trace
    except ImportError:
        import contextlib

        return contextlib.nullcontext(None)
    return (tracer or trace.get_tracer(__name__)).start_as_current_span(name)


def kill_reason(metadata: dict[str, str]) -> str | None:
    if metadata.get("timed_out") == "true":
        return "timeout"
    if metadata.get("memory_limit_hit") == "true":
        return "memory"
    if metadata.get("exit_code") in ("-9", "137"):
        return "sigkill"
    return None
