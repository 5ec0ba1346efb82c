"""The runtime dependencies are exactly the third-party packages src/ imports (the optional
OpenTelemetry packages are the `otel` extra's)."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# import name -> distribution name, where they differ
DISTRIBUTIONS = {"yaml": "pyyaml"}


def _imported_packages(extra_free: bool) -> set[str]:
    found: set[str] = set()
    for path in (ROOT / "src").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module.split(".")[0])
    third_party = {name for name in found if name not in sys.stdlib_module_names and name != "context_manager"}
    return {DISTRIBUTIONS.get(name, name) for name in third_party if not (extra_free and name == "opentelemetry")}


def _requirement_names(requirements: list[str]) -> set[str]:
    return {re.split(r"[<>=\[; ]", requirement, maxsplit=1)[0].lower() for requirement in requirements}


def test_runtime_dependencies_are_what_src_imports():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert _requirement_names(project["dependencies"]) == _imported_packages(extra_free=True)
    assert _requirement_names(project["dependencies"]) == {"websockets", "tiktoken", "orjson", "anyio", "pyyaml"}


def test_the_only_optional_import_is_the_otel_extra():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    optional = _imported_packages(extra_free=False) - _imported_packages(extra_free=True)
    assert optional == {"opentelemetry"}
    assert all(name.startswith("opentelemetry") for name in _requirement_names(project["optional-dependencies"]["otel"]))
