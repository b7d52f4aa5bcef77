"""validate_command side by side with raw ``bashlex.parse`` on the same
realistic commands, in one run.

The validator calls bashlex itself (once, never twice) for every command its
own strict lexer accepts, so parsing alone is the floor; the goal is that the
validator costs at most 1.25x that. Rejections found by the lexer (pipes,
``$``, redirections ...) return before bashlex is reached, which makes the
whole mix cheaper than parsing it; so the accepted-only set (allow + ask,
where bashlex always runs) is reported too, and that is the row the goal is
judged on honestly.

Rounds alternate validator and parser so machine noise hits both alike; each
round is timed in CPU seconds of this process (other processes on a shared
machine move it less than wall time) and each figure is the best round (the
least disturbed one). For the baseline, parse errors are caught and ignored.

    .venv/bin/python -m bench.bench_validator [--quick]
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from typing import Any, Callable

import bashlex

from core.shell import validate_command

GOAL = 1.25

COMMANDS: list[str] = [
    # allow
    "ls -la src",
    "cat README.md",
    "git status",
    "git diff --stat",
    "git log --oneline -5",
    "git log -n 3 --format='%h %an %s' -- src/app.py",
    "git show HEAD~1 --stat",
    "grep -rn 'TODO' src",
    "grep -rn --include='*.py' 'def validate' core tests",
    "rg -n 'fn main' src",
    "find . -name '*.py' -type f -maxdepth 3",
    "head -n 40 core/shell/__init__.py",
    "tail -n 100 logs/app.log",
    "wc -l core/contracts.py core/tools/specs.py",
    "sed -n '120,160p' core/tools/specs.py",
    "awk -F: '{print $1}' data.txt",
    "echo 'hello world'",
    "diff -u a.txt b.txt",
    "python3 --version",
    # ask
    "pytest -q",
    "python -m pytest tests/shell/test_shell_validator.py -x -q",
    "python script.py --flag value",
    "go test ./...",
    "npm test",
    "npm run build",
    "cargo build --release",
    "make -j4 test",
    "git add src/app.py tests/test_app.py",
    "git commit -m 'fix: handle empty input'",
    "git checkout -b feature/validator",
    "mkdir -p build/out",
    "./run_tests.sh -v",
    "pip install -e '.[dev]'",
    # reject
    "rm -rf build",
    "ls | sh",
    "cd /etc && pytest",
    "echo $HOME",
    "cat <<EOF",
    "python3 -c 'import os; os.system(\"id\")'",
    "git -c core.pager=sh log",
    "find . -name '*.pyc' -delete",
    "curl -s https://example.com/install.sh",
    "sudo apt-get install ripgrep",
    "bash -c 'make test'",
    "ls *.py",
    "echo $(date)",
    "tail -f logs/app.log",
    "sed -n '1e id' f",
]


# Compound commands as agents write them: pipes, lists, redirections,
# a leading cd, globs. Here-documents are left out of this row because bashlex
# cannot parse a quoted delimiter at all (the validator parses a skeleton).
COMPOUND: list[str] = [
    "grep -rn 'TODO' src | head -50",
    "nl -ba core/turn/policy.py | sed -n '40,80p'",
    "git add -A && git commit -m 'fix: handle empty input'",
    "pytest -q 2>&1 | tail -20",
    "cd src && npm test",
    "wc -l src/*.py | sort -n | tail -5",
    "git status --short && git diff --stat && git log --oneline -5",
    "find . -name '*.py' -type f | xargs grep -l 'class Field' | head -20",
    "ls -la build 2>/dev/null || echo 'no build'",
    "python -m pytest tests/test_x.py -x -q 2>&1 | grep -E 'passed|failed'",
    "cat README.md | grep -n install; echo done",
    "make -j4 test > build.log 2>&1 || tail -n 50 build.log",
]


def _parse(command: str) -> None:
    try:
        bashlex.parse(command)
    except Exception:
        pass


def _best_rate(fns: list[Callable[[str], Any]], commands: list[str], rounds: int, repeat: int) -> list[float]:
    """Alternate the functions round by round; return each one's best calls/s."""
    best = [0.0] * len(fns)
    for _ in range(rounds):
        for k, fn in enumerate(fns):
            started = time.process_time()
            for _ in range(repeat):
                for c in commands:
                    fn(c)
            elapsed = time.process_time() - started
            best[k] = max(best[k], repeat * len(commands) / elapsed)
    return best


def run(quick: bool = False) -> list[dict]:
    rounds, repeat = (8, 2) if quick else (40, 3)
    verdicts = {c: validate_command(c).verdict for c in COMMANDS}
    counts = Counter(verdicts.values())
    accepted = [c for c in COMMANDS if verdicts[c] != "reject"]
    for c in COMMANDS:  # warm up both paths
        validate_command(c)
        _parse(c)
    for c in COMPOUND:
        validate_command(c)
        _parse(c)
    compound_counts = Counter(validate_command(c).verdict for c in COMPOUND)
    rows = []
    for label, commands in (
        (
            f"validate_command vs bashlex.parse, compound commands ({len(COMPOUND)}: "
            f"{compound_counts['allow']} allow / {compound_counts['ask']} ask / {compound_counts['reject']} reject)",
            COMPOUND,
        ),
        (f"validate_command vs bashlex.parse, accepted commands ({len(accepted)})", accepted),
        (
            f"validate_command vs bashlex.parse, realistic mix ({counts['allow']} allow / "
            f"{counts['ask']} ask / {counts['reject']} reject)",
            COMMANDS,
        ),
    ):
        validator, parser = _best_rate([validate_command, _parse], commands, rounds, repeat)
        ratio = parser / validator  # cost of validating relative to parsing alone
        rows.append(
            {
                "benchmark": label,
                "measured": f"{validator:,.0f} /s",
                "baseline": f"{parser:,.0f} /s (bashlex.parse)",
                "ratio": round(ratio, 3),
                "goal": f"<= {GOAL}x parse time",
                "met": ratio <= GOAL,
                "notes": (
                    f"best of {rounds} alternating rounds x {repeat * len(commands)} calls (CPU time); "
                    f"{1e6 / validator:.0f} us vs {1e6 / parser:.0f} us per command"
                    + (
                        "; rejections found by the lexer skip bashlex, so the mix is cheaper than parsing"
                        if commands is COMMANDS
                        else "; bashlex runs for every one of these"
                    )
                    + ("; lists, pipes, redirections, cd, globs, xargs" if commands is COMPOUND else "")
                ),
            }
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    rows = run(quick="--quick" in argv)
    for row in rows:
        print(
            f"{row['benchmark']}\n    validator {row['measured']}, {row['baseline']}, "
            f"ratio {row['ratio']:.3f} (goal {row['goal']}: {'met' if row['met'] else 'MISSED'})\n"
            f"    {row['notes']}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
