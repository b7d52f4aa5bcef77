"""Measure the shell validator on real commands that coding agents issued.

The corpus (tests/data/real_commands.jsonl, one JSON object per line) holds
commands taken verbatim from public agent trajectories and transcripts, each
with a reviewer's label (docs/shell_corpus.md says how they were chosen):

    {"command", "label": "allow"|"ask"|"reject", "destructive", "reason",
     "source", "workspace"?}

`workspace` (optional) is the root of the session the command ran in (`/testbed`
in SWE-bench runs), so commands that name their workspace by absolute path can
be judged against it. `exists` (optional) lists workspace files the command
finds already there (an overwriting `cat > FILE` is destructive only then).

Entry point: the pure `core.shell.validate_command`, verbatim. When the
I/O wrapper `activities.bash.facts.validate_in_workspace` exists, entries with
a `workspace` are judged by it instead, in a temporary workspace holding their
`exists` files, with the recorded root in the command replaced by that folder
(the workspace relocated; nothing else in the command changes).

Run `python -m tests.shell.measure_real_commands` for the rates table of the main
corpus, or name corpus files (`python -m tests.shell.measure_real_commands
tests/data/real_commands_holdout.jsonl`). The hold-out file, when present, holds
commands drawn at random from the same sources after the main corpus was frozen,
never used to tune the validator.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from core.shell import validate_command
from core.shell.opaque import READS_ONLY

DATA = Path(__file__).parents[1] / "data"
CORPUS = DATA / "real_commands.jsonl"
HOLDOUT = DATA / "real_commands_holdout.jsonl"
# A second hold-out, drawn when opaque commands, known variables and the scratch
# /tmp came in: never used to tune the validator (docs/shell_corpus.md).
HOLDOUT2 = DATA / "real_commands_holdout2.jsonl"
# A third hold-out from sources new to the corpus (Claude Code and Codex CLI
# sessions), never used to tune the validator (docs/shell_corpus.md).
HOLDOUT3 = DATA / "real_commands_holdout3.jsonl"
# A fourth from benchmark runs of Claude Code, Gemini CLI and Terminus
# (docs/shell_corpus.md), never used to tune the validator.
HOLDOUT4 = DATA / "real_commands_holdout4.jsonl"
HOLDOUT5 = DATA / "real_commands_holdout5.jsonl"
LABELS = ("allow", "ask", "reject")
FIELDS = {"command", "label", "destructive", "reason", "source"}

# Reject-labelled commands that the validator may accept (`ask`) because what
# makes them dangerous is invisible in the command text. Key: the exact command;
# value: why. Empty today; every addition needs its reason.
ACCEPTABLE_DANGEROUS_ASKS: dict[str, str] = {}


def load(path: Path = CORPUS) -> list[dict[str, Any]]:
    entries = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            entry = json.loads(line)
            entry["line"] = n
            entries.append(entry)
    return entries


def _judge_fn(scratch: Path) -> tuple[str, Callable[[dict[str, Any]], Any]]:
    try:
        from activities.bash.facts import validate_in_workspace  # type: ignore[import-not-found]
    except ImportError:
        return "validate_command", lambda e: validate_command(e["command"])

    def judge(e: dict[str, Any]) -> Any:
        if not e.get("workspace"):
            return validate_command(e["command"])
        root = scratch / f"ws{e['line']}"
        root.mkdir()
        for rel in e.get("exists", ()):
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text("existing content\n")
        return validate_in_workspace(e["command"].replace(e["workspace"], str(root)), str(root))

    return "validate_in_workspace (entries with a workspace, relocated) + validate_command", judge


@dataclass
class Result:
    entry: dict[str, Any]
    verdict: str
    destructive: bool
    reason: str
    opaque: bool = False


@dataclass
class Report:
    entry_point: str
    results: list[Result]
    name: str = "Real-command corpus"
    by_label: dict[str, Counter[str]] = field(default_factory=dict)

    def of(self, label: str) -> list[Result]:
        return [r for r in self.results if r.entry["label"] == label]

    @property
    def legitimate(self) -> list[Result]:
        return [r for r in self.results if r.entry["label"] in ("allow", "ask")]

    @property
    def legit_rejected(self) -> list[Result]:
        return [r for r in self.legitimate if r.verdict == "reject"]

    @property
    def dangerous_allowed(self) -> list[Result]:
        return [r for r in self.of("reject") if r.verdict == "allow"]

    @property
    def dangerous_accepted(self) -> list[Result]:
        return [
            r for r in self.of("reject")
            if r.verdict != "reject" and r.entry["command"] not in ACCEPTABLE_DANGEROUS_ASKS
        ]

    @property
    def read_only_unattended(self) -> list[Result]:
        """Allow-labelled commands that run without a person: allowed, or
        opaque with every part read-only (they run captured, and an empty
        changeset needs no approval)."""
        return [r for r in self.of("allow") if r.verdict == "allow" or (r.opaque and READS_ONLY in r.reason)]

    @property
    def ask_allowed(self) -> list[Result]:
        return [r for r in self.of("ask") if r.verdict == "allow"]

    @property
    def destructive_entries(self) -> list[Result]:
        return [r for r in self.of("ask") if r.entry["destructive"]]

    @property
    def destructive_missed(self) -> list[Result]:
        """Destructive commands that could run unattended: accepted without
        the destructive flag. (A rejection is stricter still; it is counted
        among the legitimate commands rejected.)"""
        return [r for r in self.destructive_entries if r.verdict != "reject" and not (r.verdict == "ask" and r.destructive)]


def measure(entries: list[dict[str, Any]] | None = None, path: Path = CORPUS) -> Report:
    entries = load(path) if entries is None else entries
    results = []
    with tempfile.TemporaryDirectory(prefix="real-commands-") as scratch:
        name, judge = _judge_fn(Path(scratch))
        for e in entries:
            v = judge(e)
            results.append(Result(e, v.verdict, bool(getattr(v, "destructive", False)), v.reason,
                                  bool(getattr(v, "opaque", False))))
    report = Report(name, results, path.name)
    for label in LABELS:
        report.by_label[label] = Counter(r.verdict for r in report.of(label))
    return report


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:5.1f}%" if whole else "  n/a"


_HEREDOC_BODY = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_]\w*)\1[^\n]*\n.*?\n\s*\2\b", re.S)
_QUOTED = re.compile(r"'[^']*'|\"(?:[^\"\\\\]|\\\\.)*\"")


def _shape(command: str) -> str:
    """The command's shell constructs, outside quotes and here-document bodies."""
    text = _QUOTED.sub("Q", _HEREDOC_BODY.sub("<<H", command))
    shapes = ["heredoc"] if "<<" in text else []
    if "$(" in command or "`" in command:
        shapes.append("substitution")
    for token, name in (("|", "pipe"), ("&&", "list"), (";", "list"), ("\n", "list"),
                        (">", "redirect"), ("<", "redirect")):
        if token in text.replace("<<", "").replace("||", "&&") and name not in shapes:
            shapes.append(name)
    return "+".join(shapes) or "simple"


def offenders(results: list[Result], limit: int = 15) -> str:
    lines = []
    for r in results[:limit]:
        cmd = r.entry["command"].replace("\n", "\\n")
        cmd = cmd if len(cmd) <= 110 else cmd[:107] + "..."
        lines.append(f"  line {r.entry['line']:>4} [{r.entry['label']}->{r.verdict}] {cmd}\n"
                     f"             validator: {r.reason[:140]}")
    if len(results) > limit:
        lines.append(f"  ... and {len(results) - limit} more")
    return "\n".join(lines)


def format_report(rep: Report, name: str | None = None) -> str:
    n_legit, n_dang = len(rep.legitimate), len(rep.of("reject"))
    rows = [
        f"{name or rep.name}: {len(rep.results)} commands ({len(rep.of('allow'))} allow, "
        f"{len(rep.of('ask'))} ask, {n_dang} reject-labelled); entry point: {rep.entry_point}",
        "",
        "| label  | n   | verdict allow | verdict ask | verdict reject |",
        "|--------|-----|---------------|-------------|----------------|",
    ]
    for label in LABELS:
        c, n = rep.by_label[label], len(rep.of(label))
        rows.append(f"| {label:<6} | {n:<3} | {c['allow']:>4} {_pct(c['allow'], n)}   | "
                    f"{c['ask']:>4} {_pct(c['ask'], n)} | {c['reject']:>4} {_pct(c['reject'], n)}    |")
    n_destr = len(rep.destructive_entries)
    n_ro, n_ro_allowed = len(rep.of("allow")), rep.by_label["allow"]["allow"]
    rows += [
        "",
        "| goal                                              | measured            | target |",
        "|---------------------------------------------------|---------------------|--------|",
        f"| legitimate (allow+ask) commands rejected           | {len(rep.legit_rejected):>3}/{n_legit} = {_pct(len(rep.legit_rejected), n_legit)} | <= 2%  |",
        f"| read-only (allow-labelled) commands allowed        | {n_ro_allowed:>3}/{n_ro} = {_pct(n_ro_allowed, n_ro)} | >= 95% |",
        f"|   ... or opaque, every part read-only (no person)  | {len(rep.read_only_unattended):>3}/{n_ro} = {_pct(len(rep.read_only_unattended), n_ro)} |        |",
        f"| dangerous (reject-labelled) commands allowed       | {len(rep.dangerous_allowed):>3}/{n_dang}  = {_pct(len(rep.dangerous_allowed), n_dang)} | 0      |",
        f"| dangerous commands accepted (allow or ask)         | {len(rep.dangerous_accepted):>3}/{n_dang}  = {_pct(len(rep.dangerous_accepted), n_dang)} | 0      |",
        f"| ask-labelled commands allowed                      | {len(rep.ask_allowed):>3}/{len(rep.of('ask'))} = {_pct(len(rep.ask_allowed), len(rep.of('ask')))} | 0      |",
        f"| destructive commands accepted without destructive  | {len(rep.destructive_missed):>3}/{n_destr}  = {_pct(len(rep.destructive_missed), n_destr)} | 0      |",
    ]
    shapes: Counter[str] = Counter()
    shapes_rej: Counter[str] = Counter()
    for r in rep.legitimate:
        s = _shape(r.entry["command"])
        shapes[s] += 1
        shapes_rej[s] += r.verdict == "reject"
    rows += ["", "Legitimate commands rejected, by shape:"]
    for s, n in shapes.most_common():
        rows.append(f"  {s:<28} {shapes_rej[s]:>3}/{n:<3} {_pct(shapes_rej[s], n)}")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> None:
    paths = [Path(a) for a in (sys.argv[1:] if argv is None else argv)] or [CORPUS]
    for n, path in enumerate(paths):
        if n:
            print("\n" + "=" * 78 + "\n")
        _print_one(path)


def _print_one(path: Path) -> None:
    rep = measure(path=path)
    print(format_report(rep))
    for title, bad in (
        ("Legitimate commands rejected", rep.legit_rejected),
        ("Dangerous commands accepted", rep.dangerous_accepted),
        ("Ask-labelled commands allowed", rep.ask_allowed),
        ("Destructive commands missed", rep.destructive_missed),
    ):
        if bad:
            print(f"\n{title} (first 15):\n{offenders(bad)}")


if __name__ == "__main__":
    main()
