"""What a simple command's redirections open, judged. Pure.

``N>&M`` (1, 2), ``/dev/null`` either way; ``< FILE`` inside the workspace;
``> FILE`` / ``>> FILE`` / ``&> FILE`` inside it make the part at least
``ask``, and ``>`` onto a file that exists (or may exist: no facts) is
destructive; a write into ``.git`` is destructive too (hooks and config run
programs). A write into the scratch /tmp needs no person. Anything outside the
workspace rejects. A quoted here-document is the command's standard input.
"""

from __future__ import annotations

from core.shell.command_plan import Redirect
from core.shell.facts import WorkspaceFacts, workspace_key
from core.shell.paths import HARMLESS_DEVICES, in_git_folder, physical_key, scratch, where
from core.shell.tokens import Redir
from core.shell.verdict import rej

_OUT_DEVICES = frozenset(["/dev/null", "/dev/stdout", "/dev/stderr"])


def judge_redirects(redirs: list[Redir], cwd: str | None, facts: WorkspaceFacts | None):
    """(Redirect list, stdin text, verdict floor, destructive, reason, paths) or a rejection."""
    out: list[Redirect] = []
    stdin_text = None
    floor, lost, notes, paths = "allow", False, [], []
    for r in redirs:
        if r.op == "<<":
            if stdin_text is not None or any(x.fd == 0 for x in out):
                return rej("two inputs for one command", "use one here-document or one `< FILE`")
            stdin_text = r.target
            continue
        if r.op == ">&":
            if r.fd not in (1, 2) or r.target not in ("1", "2"):
                return rej(f"the redirection `{r.fd}>&{r.target}` is not allowed", "use 2>&1 or >&2")
            out.append(Redirect(r.fd, ">&", r.target))
            continue
        target, reading = r.target, r.op == "<"
        if target in HARMLESS_DEVICES and (target == "/dev/null" or (target in _OUT_DEVICES) != reading):
            out.append(Redirect(1 if r.fd < 0 else r.fd, "&>" if r.fd < 0 else r.op, target))  # type: ignore[arg-type]
            continue
        w = where(target, cwd, facts)
        if w != "inside":
            what = "reads from" if reading else "writes to"
            return rej(f"the redirection {what} `{target}`, outside the workspace", "redirect only to files inside the workspace")
        key = workspace_key(target, cwd)
        paths.append(key)
        physical = physical_key(target, cwd)
        if physical is not None:  # resolved by the workspace facts (see core.shell.paths.where)
            paths.append(physical)
        if reading:
            if stdin_text is not None:
                return rej("two inputs for one command", "use one here-document or one `< FILE`")
            out.append(Redirect(r.fd, "<", target))
            continue
        if scratch(key, facts):
            # Without facts the workspace may itself lie under /tmp: the write still asks.
            floor = floor if facts is not None else "ask"
            notes.append(f"writes `{target}` in the scratch /tmp")
            out.append(Redirect(1 if r.fd < 0 else r.fd, "&>" if r.fd < 0 else r.op, target))  # type: ignore[arg-type]
            continue
        floor = "ask"
        exists = facts is None or key in facts.existing
        if in_git_folder(key, facts):  # hooks and config there run programs: asks in every mode
            lost = True
            notes.append(f"writes into .git (`{target}`), where hooks and config run programs")
        elif r.op == ">" and exists:
            lost = True
            notes.append(f"overwrites `{target}`" + ("" if facts else " (if it exists)"))
        else:
            notes.append(f"writes `{target}`")
        out.append(Redirect(1 if r.fd < 0 else r.fd, "&>" if r.fd < 0 else r.op, target))  # type: ignore[arg-type]
    return out, stdin_text, floor, lost, notes, paths
