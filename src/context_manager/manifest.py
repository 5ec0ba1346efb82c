"""The ``--manifest`` document (spec 04 §3.1): what the registry needs to know about this worker.

Printed as pretty JSON (2-space indent, non-ASCII kept raw, trailing newline) with the top-level
keys in a fixed order and ``default_config`` keys sorted.
"""

from __future__ import annotations

import json
from typing import Any

from context_manager._version import __version__
from context_manager.config.parse import WORKER_CONFIG, ConfigCodec

NAME = "context-manager"
DESCRIPTION = (
    "Turns a raw conversation history plus a target model into a model-ready context \u2014 "
    "token counting, function-result pruning, and history compaction."
)
# Pure Python: every platform the registry publishes context-manager for.
SUPPORTED_TARGETS = (
    "x86_64-unknown-linux-gnu",
    "aarch64-unknown-linux-gnu",
    "x86_64-unknown-linux-musl",
    "aarch64-apple-darwin",
    "armv7-unknown-linux-gnueabihf",
)


def manifest(codec: ConfigCodec[Any] = WORKER_CONFIG) -> dict[str, Any]:
    """The document; ``default_config`` and ``profiles`` come from the declared keys."""
    return {
        "name": NAME,
        "version": __version__,
        "description": DESCRIPTION,
        "default_config": codec.defaults_object(),
        "supported_targets": list(SUPPORTED_TARGETS),
        # What each value of the `profile` key implies for the keys a configuration leaves out.
        "profiles": {name: dict(sorted(keys.items())) for name, keys in codec.table.profiles.items()},
    }


def manifest_json() -> str:
    """The pretty document without its trailing newline."""
    return json.dumps(manifest(), indent=2, ensure_ascii=False)


def render_manifest() -> str:
    """Exactly what ``--manifest`` prints."""
    return manifest_json() + "\n"
