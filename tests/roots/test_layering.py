"""Rooms import only what lies below them, seen in fresh interpreters.

The package root imports the library entry (``call``) and with it every room, so the first two
checks load modules under a bare package root: what they find in ``sys.modules`` is what those
modules import themselves.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import context_manager

PACKAGE_DIR = Path(context_manager.__file__).resolve().parent
# What the pure core must never load (the rooms above it and the composition roots).
ABOVE_CORE = ("adapters", "engine", "handlers", "config", "api", "cli", "worker", "manifest", "ui")


def loaded_after(statements: str, bare_root: bool = True) -> set[str]:
    """Every module loaded by ``statements`` in a fresh interpreter."""
    prelude = ""
    if bare_root:
        prelude = (
            "import types\n"
            "root = types.ModuleType('context_manager')\n"
            f"root.__path__ = [{str(PACKAGE_DIR)!r}]\n"
            "sys.modules['context_manager'] = root\n"
        )
    code = f"import sys\n{prelude}{statements}\nprint('\\n'.join(sorted(sys.modules)))\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return set(done.stdout.split())


def rooms(modules: set[str]) -> set[str]:
    """The package's rooms (first component below the root) among ``modules``."""
    return {name.split(".")[1] for name in modules if name.startswith("context_manager.")}


def test_the_wire_decoders_import_nothing_above_the_wire() -> None:
    modules = loaded_after("import context_manager.wire.decode")
    assert "context_manager.wire.decode" in modules
    assert not any(name.startswith("context_manager.core") for name in modules)
    assert rooms(modules) == {"wire"}


def test_the_core_never_imports_adapters_or_anything_above_it() -> None:
    modules = loaded_after(
        "import importlib, pkgutil\n"
        "import context_manager.core as core\n"
        "names = [m.name for m in pkgutil.walk_packages(core.__path__, 'context_manager.core.')]\n"
        "for name in names:\n"
        "    importlib.import_module(name)\n"
    )
    for expected in ("context_manager.core.assemble", "context_manager.core.intake",
                     "context_manager.core.compaction.compact", "context_manager.core.counting.estimate"):
        assert expected in modules
    assert not any(name.startswith("context_manager.adapters") for name in modules)
    assert rooms(modules) & set(ABOVE_CORE) == set()
    assert "tiktoken" not in modules


COUNT = (
    "from context_manager import call\n"
    "call('context::count-tokens', {'messages': [{'role': 'user', 'timestamp': 1,\n"
    "     'content': [{'type': 'text', 'text': 'hi'}]}], 'model': {'id': 'gpt-4o'}}, config=CONFIG)\n"
)


def test_heuristic_counting_never_loads_the_tokenizers() -> None:
    modules = loaded_after("CONFIG = {'estimator': 'heuristic'}\n" + COUNT, bare_root=False)
    assert "context_manager.adapters.tokenizer_source" in modules  # the root wires the port in
    assert "context_manager.adapters.tokenizers" not in modules
    assert "tiktoken" not in modules


def test_auto_loads_the_tokenizers_when_a_model_needs_them() -> None:
    modules = loaded_after("CONFIG = {'estimator': 'auto'}\n" + COUNT, bare_root=False)
    assert "context_manager.adapters.tokenizers" in modules
    assert "tiktoken" in modules
