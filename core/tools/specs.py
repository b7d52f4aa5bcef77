"""The tool contract and registry: names, model-facing descriptions, parameter
models, and concurrency safety. Pure: the workflow imports it to validate
arguments and plan stages; activities import it to re-validate.

Tool definitions for model APIs are generated from the parameter models, so
the schema a model sees and the validation it gets can never drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from core.contracts import PendingCall
from core.names import BASH, EDIT_FILE, GLOB, GREP, READ_FILE, WRITE_FILE
from core.tools.display import folded
from core.tools.formatting import shown
from core.tools.review import review_arguments, review_command, review_edit, review_write

if TYPE_CHECKING:
    from core.shell import Verdict

DEFAULT_READ_LIMIT = 2000
MAX_READ_LIMIT = 10_000
DEFAULT_BASH_TIMEOUT_S = 180
MAX_BASH_TIMEOUT_S = 600


class ToolArgs(BaseModel):
    # A hallucinated field is an error the model should hear about, not
    # something to drop silently.
    model_config = ConfigDict(extra="forbid")


class FileArgs(ToolArgs):
    """The arguments of a tool that takes one file."""

    path: str = Field(description="File path, relative to the workspace root.")

    @field_validator("path")
    @classmethod
    def _names_a_file(cls, path: str) -> str:
        # The file system would take `f.txt/` for `f.txt` on some paths and
        # refuse it on others: say it once, the same way, before anything runs.
        if path.endswith("/") and path.strip("/"):
            raise ValueError(
                f"{shown(path)} ends with '/', which names a folder; give the file's path without the "
                f"trailing slash ({shown(path.rstrip('/'))})"
            )
        return path


class ReadFileArgs(FileArgs):
    offset: int = Field(1, ge=1, description="1-based line number to start from.")
    limit: int = Field(
        DEFAULT_READ_LIMIT,
        ge=1,
        le=MAX_READ_LIMIT,
        description="Maximum number of lines to return.",
    )


class WriteFileArgs(FileArgs):
    content: str = Field(description="The complete new content of the file.")


class EditFileArgs(FileArgs):
    old_string: str = Field(
        min_length=1,
        description="Exact text to replace. Must occur exactly once unless replace_all is true; "
        "include surrounding lines to make it unique.",
    )
    new_string: str = Field(description="Replacement text.")
    replace_all: bool = Field(False, description="Replace every occurrence of old_string.")


class GrepArgs(ToolArgs):
    pattern: str = Field(min_length=1, description="Regular expression (Rust regex syntax).")
    path: str = Field(".", description="File or folder to search, relative to the workspace root.")
    include: str | None = Field(
        None, description="Only search files whose path matches this glob, e.g. '*.py'."
    )
    ignore_case: bool = Field(False, description="Match case-insensitively.")


class GlobArgs(ToolArgs):
    pattern: str = Field(
        min_length=1, description="Glob pattern; '**' matches any number of folders, e.g. 'src/**/*.py'."
    )
    path: str = Field(".", description="Folder to search from, relative to the workspace root.")


class BashArgs(ToolArgs):
    command: str = Field(
        min_length=1,
        description="A command, e.g. 'pytest -q tests/test_x.py'. Accepted: commands joined with "
        "'&&', '||', ';', newlines or pipes '|'; a leading 'cd DIR &&' inside the workspace; globs in "
        "arguments; 2>&1, N>/dev/null, < FILE and > / >> FILE inside the workspace; a quoted "
        "here-document (<<'EOF') as input; \"$(cat <<'EOF' ... EOF)\" as a literal argument. "
        "Not accepted: $VAR, other substitutions, subshells, '&', loops and other control flow.",
    )
    timeout_seconds: int = Field(
        DEFAULT_BASH_TIMEOUT_S,
        ge=1,
        le=MAX_BASH_TIMEOUT_S,
        description="Kill the command after this many seconds.",
    )


@dataclass(frozen=True)
class ActivityProfile:
    """How the tool's activity is scheduled (workflows/activity_options.py
    turns this into Temporal options)."""

    start_to_close_s: int = 120
    # When set, start_to_close is the call's own timeout (this argument, as
    # the recorded plan holds it) plus this margin to kill and drain.
    own_timeout_margin_s: int | None = None
    # "freely": reads, and writes whose snapshot check makes a repeat safe.
    # "after-capture": never on turns from before the capture patch; after it,
    # the activity decides from what the first attempt left on disk.
    retry: Literal["freely", "after-capture"] = "freely"
    # Whether it may run as a local activity in the workflow's own worker.
    may_run_locally: bool = True


@dataclass(frozen=True)
class ToolSpec:
    """Everything about one tool, in one place."""

    name: str
    description: str
    params: type[ToolArgs]
    # Whether a call may run in parallel with other safe calls. For bash this
    # depends on the command, so it is a function of the validated arguments.
    concurrency_safe: Callable[[ToolArgs], bool]
    # Whether the tool can change the workspace (drives the ask-writes policy).
    writes: bool
    # Whether the call carries the snapshot the session holds for its path.
    needs_snapshot: bool = False
    activity: ActivityProfile = ActivityProfile()
    # How a pending call is shown to the approver (core/tools/review.py).
    review: Callable[[dict[str, Any], Callable[[str], Any]], list[str]] = review_arguments
    # What a result says when the worker was lost mid-call and the tool's
    # effects are unknown; None: the generic "may be retried".
    lost_worker_text: str | None = None

    def json_schema(self) -> dict[str, Any]:
        schema = self.params.model_json_schema()
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
        return schema

    def openai_definition(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.json_schema(),
            },
        }

    def anthropic_definition(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "input_schema": self.json_schema()}


def _always(_: ToolArgs) -> bool:
    return True


def _never(_: ToolArgs) -> bool:
    return False


def command_verdict(command: str) -> Verdict:
    """``core.shell.validate_command``, imported at the first call: the shell
    validator builds bashlex's parser tables when first imported (~0.1 s of
    CPU), which a process that only starts turns or reads their status (the
    command line) never needs. The workflows and activities import core.shell
    themselves, at load time."""
    from core.shell import validate_command

    return validate_command(command)


def bash_verdict(args: ToolArgs) -> Verdict:
    assert isinstance(args, BashArgs)
    return command_verdict(args.command)


def _bash_is_read_only(args: ToolArgs) -> bool:
    return bash_verdict(args).verdict == "allow"


TOOLS: dict[str, ToolSpec] = {
    spec.name: spec
    for spec in [
        ToolSpec(
            READ_FILE,
            "Read a text file from the workspace. Returns numbered lines ('     1|text'). "
            "Use offset and limit to page through large files. Reading a file is required "
            "before overwriting it with write_file.",
            ReadFileArgs,
            _always,
            writes=False,
        ),
        ToolSpec(
            WRITE_FILE,
            "Create a file or replace its whole content, atomically. Parent folders are created. "
            "An existing file must have been read first in this session; if it changed since, "
            "the write is refused as a conflict.",
            WriteFileArgs,
            _never,
            writes=True,
            needs_snapshot=True,
            review=review_write,
        ),
        ToolSpec(
            EDIT_FILE,
            "Replace an exact piece of text in a file. old_string must match exactly once "
            "(whitespace included) unless replace_all is true.",
            EditFileArgs,
            _never,
            writes=True,
            needs_snapshot=True,
            review=review_edit,
        ),
        ToolSpec(
            GREP,
            "Search file contents with a regular expression (ripgrep, Rust regex syntax). "
            "Respects .gitignore; searches hidden files but never .git or the artifacts folder. "
            "Returns 'path:line:text' lines sorted by path, at most 50 in total (a notice says "
            "when there were more: then narrow the pattern, path or include).",
            GrepArgs,
            _always,
            writes=False,
        ),
        ToolSpec(
            GLOB,
            "List files (not folders) whose path matches a glob pattern, sorted by path, at most "
            "1000. '**' matches any number of folders and {a,b} alternatives work; names starting "
            "with a dot match only when the pattern writes the dot (e.g. '**/.env*'); symlinks "
            "are listed but never followed.",
            GlobArgs,
            _always,
            writes=False,
        ),
        ToolSpec(
            BASH,
            "Run a command in the workspace root. Lists (&&, ||, ;, newlines) and pipes are "
            "judged part by part; redirections to files inside the workspace, globs, a leading "
            "'cd DIR &&' and quoted here-documents work; $VAR, substitutions other than "
            "\"$(cat <<'EOF' ... EOF)\", subshells, '&' and control flow do not. Output keeps the "
            "head and the last 2000 lines. Use the file tools, not bash, to read or change files.",
            BashArgs,
            _bash_is_read_only,
            writes=True,
            activity=ActivityProfile(own_timeout_margin_s=30, retry="after-capture", may_run_locally=False),
            review=review_command,
            lost_worker_text=(
                "The worker running this command was lost or the activity timed out before it "
                "reported back, so the command may or may not have run (fully or partly). Check "
                "the workspace (for example with read_file or git status) before running it again."
            ),
        ),
    ]
}


def tool_definitions(style: str) -> list[dict[str, Any]]:
    """Definitions for a model API: style is "openai" or "anthropic"."""
    if style == "openai":
        return [spec.openai_definition() for spec in TOOLS.values()]
    if style == "anthropic":
        return [spec.anthropic_definition() for spec in TOOLS.values()]
    raise ValueError(f"unknown tool definition style {style!r}: use 'openai' or 'anthropic'")


def describe_pending_call(pending: PendingCall, validate: Callable[[str], Any]) -> str:
    """What a reviewer needs to see before approving one call: a header with
    the reason it asks, then the tool's own view (``ToolSpec.review``: the
    edit as a diff, the write's content, the command and its verdict)."""
    spec = TOOLS.get(pending.name)
    review = spec.review if spec is not None else review_arguments
    header = "\n".join(folded(f"#{pending.index + 1} {pending.name} ({pending.tool_call_id}) — asks because: {pending.reason}", ""))
    lines = review(pending.arguments, validate)
    if pending.review:  # the whole file's diff, read when the turn was planned
        lines = [lines[0], *("  " + shown(line, keep="\t") for line in pending.review.split("\n"))]
    if pending.preview:  # what a previewed bash call would do
        lines += ["  " + shown(line, keep="\t") for line in pending.preview.split("\n")]
    return "\n".join([header, *lines])
