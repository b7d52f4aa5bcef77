"""What crosses boundaries for turn rollback: the request the
client sends and the report the worker holding the workspace answers. Pure."""

from __future__ import annotations

from pydantic import BaseModel, Field, field_validator

from core.contracts import check_id


class RollbackRequest(BaseModel):
    workspace_root: str
    turn_id: str

    @field_validator("turn_id")
    @classmethod
    def _turn_id_bounded(cls, value: str) -> str:
        return check_id(value, "turn id")


class RollbackResult(BaseModel):
    turn_id: str
    workspace_root: str = ""
    restored: list[str] = Field(default_factory=list)  # put back to their state before the turn
    already: list[str] = Field(default_factory=list)  # already in that state (a rollback run again)
    conflicts: list[str] = Field(default_factory=list)  # changed since by someone else: left alone, listed
    not_restorable: list[str] = Field(default_factory=list)  # no pre-image kept (size caps)
    unchecked: list[str] = Field(default_factory=list)  # restored without a "changed since?" check
    pruned: str = ""  # what retention removed of the turn's records: those changes cannot be rolled back
    text: str = ""

    @property
    def clean(self) -> bool:
        return not (self.conflicts or self.not_restorable or self.pruned)
