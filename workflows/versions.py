"""Which behaviours a workflow run has, decided by patch markers.

New runs decide every patch in their first activation, before their first
await, through one baseline marker. The reason is how ``workflow.patched``
answers on replay: from the markers of the workflow task it is asked in.
When a query reaches the worker while a local activity is running, the
activity's marker can be recorded in one workflow task and what the code did
after it in the next. A replay then resumes that code in the earlier task, a
``patched`` asked there finds no marker, and the marker met in the next task
fails the run ("Non-deprecated patch marker encountered ... no corresponding
change command"). A run whose markers all sit in its first task cannot be
split that way.

Runs recorded before the baseline keep asking each patch where they always
did, so their histories replay unchanged. A behaviour added later gets its
own patch asked in ``__init__`` of the workflow, next to the baseline, never
after an await.
"""

from __future__ import annotations

from temporalio import workflow


class Versions:
    """The patches of one run (construct it in the workflow's ``__init__``)."""

    def __init__(self, baseline: str) -> None:
        self._baseline = workflow.patched(baseline)

    @property
    def baseline(self) -> bool:
        """The run started on a build that decides its patches up front."""
        return self._baseline

    def has(self, patch_id: str) -> bool:
        """The run has the behaviour ``patch_id`` introduced. For runs before
        the baseline this asks the SDK where the caller stands, as the code
        of their time did; call it at the same points and under the same
        conditions as before."""
        return self._baseline or workflow.patched(patch_id)
