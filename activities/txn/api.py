"""Transactional bash: the small API the bash activity calls.

    started = txn.start(root, request.turn_id, request.call_id)
    if started.mode in ("resume", "done"):      # a retry: never run the command again
        return txn.resume(root, turn_id, call_id)   # -> TxnResult (.stored = first attempt's result)
    if started.mode == "previewed":             # approved after a preview
        return txn.approve_preview(root, turn_id, call_id)
    argv = started.wrap(bwrap_argv(...))        # unchanged when mode == "direct"
    ... run argv (execute) ...
    done = txn.finish(started, verdict=verdict.verdict, completed=not (timed_out or killed),
                      result={"exit_code": ..., "output": ...}, preview=False)
    # done.text: append to the result text; done.metadata: merge into the result's
    # metadata; done.is_error: make the result an error (conflict, read-only violation...)

Modes of ``start``: ``capture`` (run on an overlay), ``direct`` (capture
unavailable: run as before; "may or may not have run" remains, metadata says
``capture=unavailable`` with the reason), ``resume`` (a journal exists: finish
applying it), ``done`` (already applied), ``previewed`` (a preview waits for
approval), ``busy`` (another attempt of this call is running its command
right now: raise a retryable error and let Temporal try again later).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from typing import Sequence

from activities.txn import journal
from activities.txn import overlay
from activities.settings import current as current_settings
from activities.txn.changeset import read_only_refusal, summary
from activities.txn.effects import judge
from core.contracts import EffectGate
from core.turn.effects import Effects
from activities.txn.preview import Preview, apply_preview, make_preview
from activities.txn.rollback import RollbackReport, rollback_turn
from activities.txn.apply import ApplyReport
from activities.txn.store import call_dir
from activities.workspace.paths import WorkspaceError

log = logging.getLogger(__name__)

# One command's changeset: what journaling, previewing and applying it may cost (0: no bound).

__all__ = ["TxnStart", "TxnResult", "start", "finish", "resume", "approve_preview", "apply_recorded",
           "forget_unrecorded", "rollback", "RollbackReport"]


@dataclass
class TxnStart:
    mode: str  # "capture" | "direct" | "resume" | "done" | "previewed" | "busy"
    root: str
    turn_id: str
    call_id: str
    capture: overlay.Capture | None = None
    reason: str = ""  # direct: why there is no capture

    def wrap(self, argv: Sequence[str]) -> list[str]:
        return self.capture.wrap(argv) if self.capture is not None else list(argv)


@dataclass
class TxnResult:
    capture: str  # metadata "capture": applied | no-changes | discarded | conflict | refused |
    #               read-only-violation | too-large | previewed | stale | unavailable | failed
    text: str = ""
    is_error: bool = False
    metadata: dict[str, str] = field(default_factory=dict)
    stored: dict = field(default_factory=dict)  # resume/approve: the result the command produced
    preview: Preview | None = None
    changed: list[str] = field(default_factory=list)

    def notes(self) -> str:
        """What the capture adds to the command's own output: nothing when its
        changes were simply applied (the output stays what bash printed; the
        metadata says capture=applied, changed_files=N), otherwise why not,
        and any notice (a pre-image not kept, a path not applied)."""
        if self.capture != "applied":
            return self.text
        cut = self.text.find("]\n[")  # after the "[Changes applied ...]" headline
        return self.text[cut + 2:] if cut >= 0 else ""


def start(root: str, turn_id: str, call_id: str) -> TxnStart:
    root = os.path.realpath(root)
    try:
        state = journal.journal_state(root, turn_id, call_id)
    except WorkspaceError as exc:  # .agent-artifacts replaced by a symlink, say
        log.warning("bash call %s runs without capture: %s", call_id, exc)
        return TxnStart("direct", root, turn_id, call_id, reason=str(exc))
    if state == journal.STATE_APPLIED:
        return TxnStart("done", root, turn_id, call_id)
    if state in (journal.JOURNALED, journal.INVALID):  # resume reports an invalid record; never re-run
        return TxnStart("resume", root, turn_id, call_id)
    if state == journal.PREVIEWED:
        return TxnStart("previewed", root, turn_id, call_id)
    ok, reason = overlay.overlay_status(root)
    if ok:
        try:
            return TxnStart("capture", root, turn_id, call_id, overlay.begin(root, turn_id, call_id))
        except overlay.CaptureBusy as exc:
            return TxnStart("busy", root, turn_id, call_id, reason=str(exc))
        except FileExistsError:
            return start(root, turn_id, call_id)  # journaled just now by an overlapping attempt
        except (overlay.CaptureUnavailable, WorkspaceError, OSError) as exc:
            reason = str(exc)
    log.warning("bash call %s runs without capture (may or may not have run if lost): %s", call_id, reason)
    return TxnStart("direct", root, turn_id, call_id, reason=reason)


def _meta(capture: str, **extra: str) -> dict[str, str]:
    return {"capture": capture, **{k: v for k, v in extra.items() if v}}


def _from_report(report: ApplyReport, stored: dict | None = None, headline: str = "") -> TxnResult:
    if report.ok:
        changed = report.applied + report.already
        text = f"[{headline or report.text()}]" + "".join(f"\n[{n}]" for n in report.notices)
        return TxnResult("applied", text, False, _meta("applied", changed_files=str(len(changed))),
                         stored or {}, changed=changed)
    return TxnResult(report.status, f"[{report.text()}]", True, _meta(report.status), stored or {})


def finish(started: TxnStart, *, verdict: str, completed: bool, result: dict, preview: bool = False,
           gate: EffectGate | None = None, journal_only: bool = False) -> TxnResult:
    """After the command ran: capture, check, journal and apply its changes.

    ``completed`` is False for a timed-out, killed or cancelled command (or
    one that could not start): nothing it changed is applied. ``result`` is
    what the tool returns (kept in the journal so a retry returns it again).
    ``gate``: a changeset the effect gate stops is kept like a preview
    (status ``gated``, nothing applied) for a person to approve exactly it.
    ``journal_only``: journal the changeset and stop (status ``journaled``,
    its digest in ``txn_digest``): the turn records the digest in its history
    and applies the journal next (``apply_recorded``)."""
    if started.mode == "direct" or started.capture is None:
        return TxnResult("unavailable", "", False, _meta("unavailable", capture_reason=started.reason))
    cap = started.capture
    if not cap.mounted():
        cap.discard()
        return TxnResult("failed", "[The copy-on-write view could not be set up; the command did not run.]",
                         True, _meta("failed"))
    if not completed:
        cap.discard()
        return TxnResult("discarded", "[The command did not finish: nothing it changed was applied to the workspace.]",
                         False, _meta("discarded"))
    settings = current_settings()
    scan = overlay.scan(cap, settings.changeset_bytes, settings.changeset_files)
    if scan.too_large:  # before anything else: the changeset it holds is incomplete
        cap.discard()
        return TxnResult("too-large", f"[{scan.too_large}]", True, _meta("too-large"))
    skipped = "".join(f"\n[Not applied: {p}: {why}]" for p, why in scan.changeset.skipped)
    if not scan.changeset:
        cap.discard()
        return TxnResult("no-changes", skipped.lstrip("\n"), False, _meta("no-changes"))
    refusal = read_only_refusal(verdict, scan.changeset)
    if refusal is not None:
        cap.discard()
        return TxnResult("read-only-violation", f"[{refusal}]", True, _meta("read-only-violation"),
                         changed=scan.changeset.paths())
    if gate is not None and not preview:
        effects = judge(cap, scan.changeset, gate)
        if effects.pauses(gate.mode):
            return _gated(cap, scan, result, effects, gate, skipped)
    if preview:
        p = make_preview(cap, scan, result=result)
        status = "conflict" if p.conflicts else "previewed"
        return TxnResult(status, p.text() + skipped, bool(p.conflicts), _meta(status, txn_digest=p.digest), preview=p)
    out = journal.write_journal(cap, scan, result=result, deferred=journal_only)
    if out.journal is None:
        text = "[Not applied: files changed in the workspace while the command ran:\n" + "\n".join(
            f"  {c}" for c in out.conflicts) + "]"
        return TxnResult("conflict", text, True, _meta("conflict"))
    if journal_only:
        changes = out.journal.changeset
        meta = _meta("journaled", txn_digest=changes.digest(), changed_files=str(len(changes.changes)))
        return TxnResult("journaled", skipped.lstrip("\n"), False, meta, result, changed=changes.paths())
    report = journal.apply_journal(started.root, started.turn_id, started.call_id, out.journal, fresh=True)
    done = _from_report(report, result, f"Changes applied to the workspace:\n{summary(scan.changeset)}")
    done.text += skipped
    return done


def _gated(cap: overlay.Capture, scan: overlay.Scan, result: dict, effects: Effects, gate: EffectGate,
           skipped: str) -> TxnResult:
    kept = scan.changeset.digest()  # what the person approves, and what an approval applies
    meta = _meta("gated", gate_reason=effects.reason(gate.mode), gate_digest=kept, txn_digest=kept,
                 changed_files=str(len(scan.changeset.changes)),
                 gate_destructive="true" if effects.destructive else "")
    # Kept with the command's result, so a retry shows the same pause.
    p = make_preview(cap, scan, result={**result, GATE_KEY: meta}, first=[p for p, _ in effects.worst_first()])
    if p.conflicts:
        return TxnResult("conflict", p.text() + skipped, True, _meta("conflict"), preview=p)
    return TxnResult("gated", p.text() + skipped, False, meta, preview=p, changed=scan.changeset.paths())


GATE_KEY = "gate_metadata"


def gated_again(root: str, turn_id: str, call_id: str) -> TxnResult | None:
    """A retry of a gated run whose changeset is already kept: the same pause
    again (never applied without a person); None when nothing is kept."""
    j = journal.load(root, turn_id, call_id)
    if j is None or j.state != journal.PREVIEWED or j.applied or GATE_KEY not in j.result:
        return None
    return TxnResult("gated", "", False, dict(j.result[GATE_KEY]), j.result, changed=j.changeset.paths())


def resume(root: str, turn_id: str, call_id: str) -> TxnResult:
    """A retry found a journal: finish (or confirm) the apply; never re-run.
    ``.stored`` holds the result the command produced the first time."""
    try:
        j = journal.load(root, turn_id, call_id)
    except journal.BadJournal as exc:
        return _invalid(exc)
    report = journal.apply_journal(root, turn_id, call_id, j)
    return _from_report(report, j.result if j else {})


def apply_recorded(root: str, turn_id: str, call_id: str, expected_digest: str) -> TxnResult:
    """Apply (or finish applying) the journal of a journal-only run, only if
    its changeset is the one whose digest the turn's history recorded; every
    content is re-hashed against that changeset while it is copied in.
    ``.stored`` stays empty: the command's result is the one in the history."""
    try:
        j = journal.load(root, turn_id, call_id)
    except journal.BadJournal as exc:
        return _invalid(exc)
    if j is None or j.state != journal.JOURNALED:
        return _invalid(ValueError(f"no journal for call {call_id!r} of turn {turn_id!r}"))
    found = j.changeset.digest()
    if not expected_digest or found != expected_digest:
        return _invalid(ValueError(
            f"the journal kept for call {call_id!r} is not the changeset the turn recorded "
            f"(sha256 {found[:12]}, recorded {expected_digest[:12] or 'none'})"))
    report = journal.apply_journal(root, turn_id, call_id, j)
    return _from_report(report, headline=f"Changes applied to the workspace:\n{summary(j.changeset)}")


def forget_unrecorded(root: str, turn_id: str, call_id: str) -> str:
    """A journal-only attempt found what an earlier attempt of the call left.
    Its history holds no digest of it, so it is not trusted: an unapplied
    record (a journal or a kept changeset) is discarded and the command runs
    again (it never touched the workspace). Returns '' when that is done, or
    why the call must not run again (a record already applied, or one that
    does not validate: the workspace may hold part of it)."""
    try:
        j = journal.load(root, turn_id, call_id)
    except journal.BadJournal as exc:
        return str(exc)
    if j is not None and j.applied:
        return "an earlier attempt of this call already applied changes that this turn's history does not record"
    if j is not None and j.state == journal.JOURNALED and not j.deferred:
        return "an earlier attempt of this call (an older build) journaled changes and may have applied part of them"
    overlay.remove_tree(call_dir(os.path.realpath(root), turn_id, call_id))
    return ""


def _invalid(exc: Exception) -> TxnResult:
    return TxnResult("refused", f"[Not applied, and the command was not run again: {exc}]", True, _meta("refused"))


def approve_preview(root: str, turn_id: str, call_id: str, expected_digest: str = "") -> TxnResult:
    """Approval of a previewed call: apply exactly the previewed changeset
    (the one whose digest the history recorded, when given), or ``stale``
    (ask again) when the workspace changed since."""
    try:
        j = journal.load(root, turn_id, call_id)
        return _from_report(apply_preview(root, turn_id, call_id, expected_digest), j.result if j else {})
    except journal.BadJournal as exc:
        return _invalid(exc)


def rollback(root: str, turn_id: str) -> RollbackReport:
    """``client.py rollback TURN_ID``: restore what the turn changed."""
    return rollback_turn(root, turn_id)
