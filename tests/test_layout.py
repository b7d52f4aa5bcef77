"""The layout keeps the architecture visible: no import circles, nothing
importing upward, small folders and files, comments in the code's own terms,
and a wheel that ships every source folder. Static: it parses the sources."""

from __future__ import annotations

import ast
import fnmatch
import io
import re
import tokenize
import tomllib
from collections import defaultdict
from pathlib import Path

import pytest

from tests.layout_support import ROOT, SOURCE_PACKAGES, module_name, source_modules

MAX_MODULES_PER_FOLDER = 16
MAX_LINES = 600
# Lower layers never import higher ones.
LAYERS = {"core": 0, "activities": 1, "workflows": 2, "runtime": 3, "frontends": 4, "cli": 5}
OUTSIDE_WORDS = re.compile(r"issue \d+|# wire|session hook|DESIGN\.md", re.IGNORECASE)
NOT_IN_WHEEL = {"bench"}  # measures a checkout, run from one


def _resolve(name: str, known: set[str]) -> str | None:
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def _passed_through(tree: ast.AST) -> set[int]:
    """Line numbers of the imports inside ``workflow.unsafe.imports_passed_through()``."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.With) and any("imports_passed_through" in ast.unparse(i.context_expr) for i in node.items):
            lines |= {n.lineno for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom))}
    return lines


def import_graph(paths: list[Path], root: Path = ROOT) -> tuple[dict[str, set[str]], dict[tuple[str, str], bool]]:
    """Module -> the project modules it imports (anywhere in the file, lazy
    and type-checking imports included), and for each edge whether every
    import making it sits in an ``imports_passed_through`` block."""
    known = {module_name(p, root): p for p in paths}
    edges: dict[str, set[str]] = defaultdict(set)
    passed: dict[tuple[str, str], bool] = {}
    for mod, path in known.items():
        tree = ast.parse(path.read_text(), str(path))
        through = _passed_through(tree)
        package = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [_resolve(a.name, set(known)) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = package[: len(package) - node.level + 1] if node.level else []
                prefix = ".".join(base + ([node.module] if node.module else []))
                # "from pkg import mod" imports the module; "from mod import name", the module.
                targets = [f"{prefix}.{a.name}" if f"{prefix}.{a.name}" in known else _resolve(prefix, set(known))
                           for a in node.names]
            else:
                continue
            for target in targets:
                if target is None or target == mod:
                    continue
                edges[mod].add(target)
                passed[(mod, target)] = passed.get((mod, target), True) and node.lineno in through
    return edges, passed


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in list(edges):
        if v not in index:
            visit(v)
    return found


def upward(edges: dict[str, set[str]], passed: dict[tuple[str, str], bool]) -> list[str]:
    wrong = []
    for mod, targets in edges.items():
        here = LAYERS.get(mod.split(".")[0])
        if here is None:
            continue  # the entry points, the demo and the benchmarks may use anything
        for target in targets:
            there = LAYERS.get(target.split(".")[0])
            if there is None:
                wrong.append(f"{mod} -> {target} (not a layer)")
            elif there > here:
                wrong.append(f"{mod} -> {target}")
            elif mod.startswith("workflows.") and target.startswith("activities.") and not passed[(mod, target)]:
                # A workflow may use an activity's data types, passed through the sandbox.
                wrong.append(f"{mod} -> {target} (outside imports_passed_through)")
    return sorted(wrong)


@pytest.fixture(scope="module")
def graph() -> tuple[dict[str, set[str]], dict[tuple[str, str], bool]]:
    return import_graph(source_modules())


def test_no_import_cycles(graph) -> None:
    assert cycles(graph[0]) == []


def test_nothing_imports_upward(graph) -> None:
    assert upward(*graph) == []


def test_the_core_is_free_of_temporal_and_io_frameworks() -> None:
    offenders = []
    for path in source_modules():
        if module_name(path).split(".")[0] != "core":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            offenders += [f"{path.relative_to(ROOT)}: {n}" for n in names if n.split(".")[0] in ("temporalio", "subprocess", "openai", "anthropic")]
    assert offenders == []


def test_the_packages_the_sandbox_passes_through_rebind_no_module_state() -> None:
    """runtime.plugin passes these packages into the workflow sandbox from
    the host, so workflow runs share their modules: no function there may
    rebind a module global (a ``global`` statement)."""
    from runtime.plugin import SANDBOX_PASSTHROUGH

    offenders = []
    for path in source_modules():
        if module_name(path).split(".")[0] not in SANDBOX_PASSTHROUGH:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Global):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}: global {', '.join(node.names)}")
    assert offenders == []


def test_the_checks_see_a_cycle_and_an_upward_import(tmp_path: Path) -> None:
    for rel, text in {
        "core/__init__.py": "", "core/a.py": "from core import b\n", "core/b.py": "import core.a\nfrom runtime import x\n",
        "runtime/__init__.py": "", "runtime/x.py": "", "workflows/__init__.py": "",
        "workflows/w.py": "from activities.t import T\n", "activities/__init__.py": "", "activities/t.py": "T = 1\n",
    }.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    edges, passed = import_graph(sorted(tmp_path.rglob("*.py")), tmp_path)
    assert cycles(edges) == [["core.a", "core.b"]]
    assert upward(edges, passed) == [
        "core.b -> runtime.x", "workflows.w -> activities.t (outside imports_passed_through)",
    ]


def test_no_folder_holds_more_than_16_modules() -> None:
    per_folder: dict[Path, int] = defaultdict(int)
    for path in source_modules():
        if path.name != "__init__.py":
            per_folder[path.parent] += 1
    for path in (ROOT / "tests").rglob("*.py"):
        if path.name not in ("__init__.py", "conftest.py"):
            per_folder[path.parent] += 1
    crowded = {str(folder.relative_to(ROOT)): n for folder, n in per_folder.items() if n > MAX_MODULES_PER_FOLDER}
    assert crowded == {}


def test_no_source_or_test_file_over_600_lines() -> None:
    paths = [*source_modules(), *(p for p in (ROOT / "tests").rglob("*.py") if "__pycache__" not in p.parts)]
    long = {str(p.relative_to(ROOT)): n for p in paths if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}


def _comments_and_docstrings(path: Path) -> list[tuple[int, str]]:
    text = path.read_text()
    found = [
        (tok.start[0], tok.string)
        for tok in tokenize.generate_tokens(io.StringIO(text).readline)
        if tok.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                found.append((node.body[0].lineno, doc))
    return found


def test_comments_speak_in_the_code_s_own_terms() -> None:
    outside = [
        f"{path.relative_to(ROOT)}:{line}: {OUTSIDE_WORDS.search(text).group(0)!r}"  # type: ignore[union-attr]
        for path in source_modules()
        for line, text in _comments_and_docstrings(path)
        if OUTSIDE_WORDS.search(text)
    ]
    assert outside == []


def test_the_wheel_ships_every_source_folder() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    patterns = config["packages"]["find"]["include"]
    packages = {module_name(p.parent / "__init__.py") for p in source_modules() if p.name == "__init__.py"}
    missing = sorted(
        pkg for pkg in packages
        if pkg.split(".")[0] not in NOT_IN_WHEEL and not any(fnmatch.fnmatchcase(pkg, pat) for pat in patterns)
    )
    assert missing == []
    folders = {p.parent for p in source_modules() if p.parent != ROOT}
    assert sorted(str(f.relative_to(ROOT)) for f in folders if not (f / "__init__.py").exists()) == []
    # client.py and worker.py serve a checkout only: installed, the console
    # scripts replace them, and top-level modules with such generic names
    # would shadow a user's own.
    assert "py-modules" not in config
    assert set(SOURCE_PACKAGES) - NOT_IN_WHEEL == {pat.rstrip("*") for pat in patterns}


def test_tool_activities_are_built_only_where_the_worker_builds_them() -> None:
    """A module-level ``tool_activity(...)`` is a second wiring the worker
    does not register (tests would exercise it instead of the real one)."""
    twins = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path in source_modules()
        for node in ast.parse(path.read_text()).body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
        and getattr(node.value.func, "id", None) == "tool_activity"
    ]
    assert twins == []
