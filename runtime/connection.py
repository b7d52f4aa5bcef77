"""Connecting to Temporal with the standard settings.

Address, namespace, API key and TLS come from Temporal's own environment
configuration (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY,
TEMPORAL_TLS_CLIENT_CERT_PATH, TEMPORAL_TLS_CLIENT_KEY_PATH, ...,
TEMPORAL_PROFILE and the TOML config file), so a worker moves from the dev
server to a cluster or Temporal Cloud without code changes. Explicit
arguments win over the environment.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.envconfig import ClientConfig

DEFAULT_ADDRESS = "localhost:7233"
# A server that has just opened its port answers "Frontend is not healthy
# yet" for a moment (the embedded dev server right after start): wait for it.
STARTING_UP = "not healthy yet"
STARTING_UP_WAIT_S = 30.0


class ConnectionFailed(RuntimeError):
    pass


def connect_settings(address: str | None = None, namespace: str | None = None) -> dict[str, Any]:
    settings: dict[str, Any] = dict(ClientConfig.load_client_connect_config())
    settings.setdefault("target_host", DEFAULT_ADDRESS)
    settings.setdefault("namespace", "default")
    if address:
        settings["target_host"] = address
    if namespace:
        settings["namespace"] = namespace
    return settings


async def connect(address: str | None = None, namespace: str | None = None, runtime: Any = None) -> Client:
    """``runtime``: a temporalio Runtime (e.g. one serving Prometheus metrics)."""
    settings = connect_settings(address, namespace)
    if runtime is not None:
        settings["runtime"] = runtime
    deadline = time.monotonic() + STARTING_UP_WAIT_S
    while True:
        try:
            return await Client.connect(data_converter=pydantic_data_converter, **settings)
        except Exception as exc:  # the SDK raises RuntimeError with a transport message
            if STARTING_UP in str(exc) and time.monotonic() < deadline:
                await asyncio.sleep(0.2)
                continue
            raise ConnectionFailed(
                f"no Temporal server answers at {settings['target_host']} "
                f"(namespace {settings['namespace']}): {exc}\n"
                "Start one with `agent-worker --dev-server --workspace DIR` (embedded dev server), "
                "or point TEMPORAL_ADDRESS at your cluster."
            ) from None
