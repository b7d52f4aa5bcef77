"""Run the benchmarks and print one table.

    .venv/bin/python -m bench.run [--quick] [--only NAME ...] [--json PATH]

NAME is a module without its ``bench_`` prefix: turns, history, validator,
search, read, bash, capture, streaming. Each module's ``run(quick)`` returns rows (benchmark, measured,
baseline, ratio, goal, met, notes). A module that fails to import is skipped
with a note. The exit code is 0 even when goals are missed (this is a
report); it is 1 only if a benchmark crashed (raised, or returned a row
marked ``"error": True``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import json
import os
import platform
import sys
import time
import traceback
from typing import Any

BENCHES = ["turns", "history", "validator", "search", "read", "bash", "capture", "streaming", "gate"]
COLUMNS = ["benchmark", "measured", "baseline", "ratio", "goal", "met", "notes"]


def _out(text: str = "") -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def machine() -> dict[str, str]:
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = "unknown"
    try:
        with open("/proc/meminfo") as f:
            info = dict(line.split(":", 1) for line in f if ":" in line)
        total = int(info["MemTotal"].split()[0]) / 1024 / 1024
        avail = int(info["MemAvailable"].split()[0]) / 1024 / 1024
        mem = f"{total:.1f} GiB ({avail:.1f} GiB available)"
    except (OSError, KeyError, ValueError):
        pass
    try:
        load = "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    except OSError:
        load = "unknown"
    try:
        from importlib.metadata import version

        temporalio = version("temporalio")
    except Exception:
        temporalio = "not installed"
    # The workflow sandbox re-imports workflows/turn.py for every run: without
    # its .pyc (PYTHONDONTWRITEBYTECODE, no scripts/setup) each turn compiles it.
    import importlib.util

    turn_source = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "workflows", "turn.py")
    bytecode = "cached" if os.path.exists(importlib.util.cache_from_source(turn_source)) else (
        "MISSING (each turn compiles workflows/turn.py: run scripts/setup or python -m compileall workflows)"
    )
    return {
        "bytecode": bytecode,
        "nproc": str(os.cpu_count()),
        "cpu": cpu,
        "memory": mem,
        "load_average": load,
        "python": platform.python_version(),
        "temporalio": temporalio,
        "date": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
    }


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "met" if value else "MISSED"  # only the goal column is a bool
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:.0f}"
    return str(value).replace("|", "/").replace("\n", " ")


def render_table(rows: list[dict[str, Any]]) -> str:
    """A Markdown table (readable as plain text too)."""
    cells = [[_cell(r.get(c)) for c in COLUMNS] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(COLUMNS)]
    # Notes can be long: do not pad the last column.
    widths[-1] = len(COLUMNS[-1])

    def line(values: list[str]) -> str:
        return "| " + " | ".join(v.ljust(w) for v, w in zip(values, widths)) + " |"

    out = [line(COLUMNS), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += [line(row) for row in cells]
    return "\n".join(out)


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.run", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="smaller sizes (turns: well under a minute)")
    parser.add_argument("--only", nargs="+", metavar="NAME", choices=BENCHES, help="run only these benchmarks")
    parser.add_argument("--json", metavar="PATH", help="also write the rows (and the machine) as JSON here")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    names = args.only or BENCHES
    info = machine()
    _out(f"# Benchmarks{' (quick)' if args.quick else ''}: {', '.join(names)}")
    _out(
        f"machine: {info['nproc']} CPU ({info['cpu']}), memory {info['memory']}, "
        f"load average {info['load_average']}"
    )
    _out(f"python {info['python']}, temporalio {info['temporalio']}, {info['date']}")
    _out(f"workflow bytecode: {info['bytecode']}")
    _out()

    rows: list[dict[str, Any]] = []
    skipped: dict[str, str] = {}
    crashed: dict[str, str] = {}
    timings: dict[str, float] = {}
    for name in names:
        try:
            module = importlib.import_module(f"bench.bench_{name}")
            bench = module.run
        except Exception as exc:  # a missing or broken module: say so, go on
            skipped[name] = f"{type(exc).__name__}: {exc}"
            _out(f"note: skipped bench_{name}: could not import it ({skipped[name]})")
            continue
        _out(f"running bench_{name} ...")
        started = time.perf_counter()
        try:
            got = bench(quick=args.quick)
        except Exception as exc:
            crashed[name] = f"{type(exc).__name__}: {exc}"
            traceback.print_exc()
            sys.stderr.flush()
            _out(f"error: bench_{name} crashed: {crashed[name]}")
            continue
        finally:
            timings[name] = time.perf_counter() - started
        failed = [r for r in got if r.get("error")]
        if failed:  # a bench may keep its other rows and mark the one that raised
            crashed[name] = f"{len(failed)} measurement(s) raised: " + "; ".join(str(r["benchmark"]) for r in failed)
            _out(f"error: bench_{name}: {crashed[name]}")
        _out(f"    bench_{name}: {len(got)} rows in {timings[name]:.1f} s")
        rows += [{**row, "module": name} for row in got]

    _out()
    _out(render_table(rows) if rows else "(no rows)")
    _out()
    met = sum(1 for r in rows if r.get("met") is True)
    missed = sum(1 for r in rows if r.get("met") is False)
    _out(
        f"{len(rows)} rows: {met} goals met, {missed} missed; "
        + ", ".join(f"{n} {t:.1f} s" for n, t in timings.items())
        + (f"; skipped: {', '.join(skipped)}" if skipped else "")
        + (f"; CRASHED: {', '.join(crashed)}" if crashed else "")
    )
    if args.json:
        document = {
            "machine": info,
            "quick": args.quick,
            "seconds": timings,
            "skipped": skipped,
            "crashed": crashed,
            "rows": rows,
        }
        with open(args.json, "w") as f:
            json.dump(document, f, indent=2, default=str)
            f.write("\n")
        _out(f"rows written to {args.json}")
    return 1 if crashed else 0


if __name__ == "__main__":
    try:
        code = main()
    except SystemExit as exc:  # argparse errors and --help
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    sys.stdout.flush()
    sys.stderr.flush()
    # temporalio's native runtime can crash at interpreter exit (sdk-python#300).
    os._exit(code)
