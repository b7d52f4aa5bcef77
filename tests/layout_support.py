"""The project's source modules, for the tests that check the layout."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE_PACKAGES = ("core", "activities", "workflows", "runtime", "cli", "demo", "bench")
TOP_MODULES = ("worker.py", "client.py")


def source_modules() -> list[Path]:
    paths = [p for pkg in SOURCE_PACKAGES for p in sorted((ROOT / pkg).rglob("*.py")) if "__pycache__" not in p.parts]
    return paths + [ROOT / name for name in TOP_MODULES]


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)
