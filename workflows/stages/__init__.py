"""Several calls of a turn as one activity: a parallel stage of reads
(``ReadStage``), a run of consecutive writes and edits (``WriteStage``)."""

from workflows.stages.reads import ReadStage
from workflows.stages.writes import WriteStage, write_run

__all__ = ["ReadStage", "WriteStage", "write_run"]
