"""How ``settings`` and ``retention`` policy documents are checked and applied: with the
configuration parser's own decoders, so a document accepts exactly what the configuration
accepts for the same keys."""

from __future__ import annotations

from typing import Any

from context_manager.config.parse import KEY_DECODERS, WORKER_CONFIG
from context_manager.config.retention import parse_retention
from context_manager.core.policies.namespace import invalid
from context_manager.core.retention_policy import RetentionPolicy
from context_manager.core.settings import WorkerConfig
from context_manager.wire.errors import INVALID_REQUEST, DecodeError, HandlerError

# Keys a `settings` document may not set: where the worker keeps its state, how long it waits,
# who may write policies, and `retention`, which is a surface of its own.
STRUCTURAL_KEYS = frozenset({
    "lease_dir", "lease_store", "lease_ttl_secs", "session_store", "session_ttl_secs",
    "summarizer_timeout_ms", "policy_write_token", "retention",
})
SETTINGS_KEYS = tuple(name for name in KEY_DECODERS if name not in STRUCTURAL_KEYS)
_DEFAULTS = WORKER_CONFIG.to_json(WORKER_CONFIG.defaults)


class ConfigPolicyCodec:
    """Implements ``core.policies.room.SettingsCodec``."""

    def check_settings(self, document: Any, path: str) -> None:
        for key in sorted(document):
            if key not in SETTINGS_KEYS:
                expected = ", ".join(f"`{k}`" for k in SETTINGS_KEYS)
                raise invalid(path, f"unknown or structural key `{key}`, expected one of {expected}")
            try:
                KEY_DECODERS[key](document[key])
            except DecodeError as exc:
                raise invalid(f"{path}.{key}", exc.detail) from None

    def check_retention(self, document: Any, path: str) -> RetentionPolicy:
        try:
            policy = parse_retention(document, path)
        except DecodeError as exc:
            # The parser's faults already read ``<path>: <reason>``.
            raise HandlerError(INVALID_REQUEST, exc.detail) from None
        return policy if policy is not None else RetentionPolicy()

    def apply_settings(self, config: WorkerConfig, document: dict[str, Any]) -> WorkerConfig:
        """``config`` with the document's keys; a document that names ``profile`` also changes
        the keys the configuration leaves at their default to what that profile implies."""
        base = WORKER_CONFIG.to_json(config)
        if "profile" in document:
            base = {key: value for key, value in base.items() if _DEFAULTS.get(key, ...) != value}
        return WORKER_CONFIG.parse_value({**base, **document}, "policy settings")

