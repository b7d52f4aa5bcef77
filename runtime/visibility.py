"""Turns as the server's visibility store shows them: the custom search
attributes ``AgentTurnStatus`` and ``AgentWorkspace`` (when the server has
them registered: the embedded dev server does, a production server after
``temporal operator search-attribute create``), and the static summary and
details the Web UI shows for each turn."""

from __future__ import annotations

from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.client import Client
from temporalio.common import SearchAttributePair, TypedSearchAttributes
from temporalio.service import RPCError

from core.contracts import TurnInput
from workflows.turn_console import TURN_STATUS_KEY, WORKSPACE_KEY

_registered: dict[tuple[int, str], bool] = {}


async def has_turn_search_attributes(client: Client) -> bool:
    """Whether the namespace has both attributes (asked once per client)."""
    key = (id(client), client.namespace)
    if key not in _registered:
        try:
            response = await client.operator_service.list_search_attributes(
                ListSearchAttributesRequest(namespace=client.namespace)
            )
            names = set(response.custom_attributes)
            _registered[key] = {TURN_STATUS_KEY.name, WORKSPACE_KEY.name} <= names
        except RPCError:  # no operator access (some clouds): go without
            _registered[key] = False
    return _registered[key]


async def start_attributes(client: Client, turn: TurnInput) -> TypedSearchAttributes | None:
    if not await has_turn_search_attributes(client):
        return None
    return TypedSearchAttributes(
        [SearchAttributePair(TURN_STATUS_KEY, "running"), SearchAttributePair(WORKSPACE_KEY, turn.workspace.root)]
    )


async def session_attributes(client: Client, workspace_root: str) -> TypedSearchAttributes | None:
    """A session carries its workspace; its turns (children) then get both
    attributes from it (workflows.turn_console.child_turn_attributes)."""
    if not await has_turn_search_attributes(client):
        return None
    return TypedSearchAttributes([SearchAttributePair(WORKSPACE_KEY, workspace_root)])
