"""The `configuration` worker as this worker sees it: retried ``configuration::get`` and
``configuration::register`` calls over the engine (spec 04 §2.5–§2.7)."""

from __future__ import annotations

import logging
from typing import Any

import anyio

from context_manager.config.parse import config_to_json, defaults_object, parse_config_value
from context_manager.config.schema import config_schema
from context_manager.core.settings import DEFAULT_CONFIG, WorkerConfig
from context_manager.engine.client import EngineClient, RemoteError
from context_manager.wire.errors import Error

CONFIG_NAME = "Context Manager"
CONFIG_DESCRIPTION = (
    "Tunes context-manager: output reserves, prune thresholds, the verbatim compaction tail, "
    "the compaction lease TTL and directory, and the summariser timeout."
)
UI_FORM = "context-manager"

CONFIG_ATTEMPTS = 3
CONFIG_ATTEMPT_TIMEOUT_MS = 5000
CONFIG_NAMESPACE = "default"
# The wait before retry n is n times this step (0.25 s, then 0.5 s).
CONFIG_RETRY_STEP_S = 0.25

# The worker's logger: these lines belong to its boot and reload story.
log = logging.getLogger("context_manager.worker")


class ConfigCallError(Error):
    """A configuration call that failed all its attempts; ``code`` is the last error's code."""

    def __init__(self, function_id: str, last: RemoteError) -> None:
        super().__init__(f"{function_id} failed after {CONFIG_ATTEMPTS} attempts: {last}")
        self.code = last.code


class ConfigurationSource:
    """The `configuration` worker as this worker sees it: retried get/register calls.

    Only an error whose code is exactly ``NOT_FOUND`` means "nothing stored"; every other
    failure, after its retries, is a :class:`ConfigCallError`.
    """

    def __init__(
        self, client: EngineClient, config_id: str, *, retry_step_s: float = CONFIG_RETRY_STEP_S
    ) -> None:
        self._client = client
        self.config_id = config_id
        self._retry_step_s = retry_step_s

    async def _call(self, function_id: str, payload: dict[str, Any]) -> Any:
        last: RemoteError | None = None
        for attempt in range(1, CONFIG_ATTEMPTS + 1):
            try:
                return await self._client.invoke(
                    function_id,
                    payload,
                    timeout_ms=CONFIG_ATTEMPT_TIMEOUT_MS,
                    namespace=CONFIG_NAMESPACE,
                )
            except RemoteError as exc:
                last = exc
                if attempt < CONFIG_ATTEMPTS:
                    log.warning(
                        "configuration call failed, retrying (function_id=%s attempt=%d error=%s)",
                        function_id,
                        attempt,
                        exc,
                    )
                    await anyio.sleep(self._retry_step_s * attempt)
        assert last is not None
        raise ConfigCallError(function_id, last)

    async def try_get(self) -> tuple[bool, Any]:
        """``(False, None)`` when nothing is stored; ``(True, reply)`` otherwise."""
        try:
            return True, await self._call("configuration::get", {"id": self.config_id})
        except ConfigCallError as exc:
            if exc.code == "NOT_FOUND":
                return False, None
            raise

    async def register(self, seed: WorkerConfig | None) -> None:
        payload: dict[str, Any] = {
            "id": self.config_id,
            "name": CONFIG_NAME,
            "description": CONFIG_DESCRIPTION,
            "schema": config_schema(),
            "metadata": {"ui_form": UI_FORM},
        }
        found, reply = await self.try_get()
        stored = reply.get("value") if found and isinstance(reply, dict) else None
        # register replaces the stored value whenever initial_value is present: seed only an
        # entry that holds nothing usable.
        if stored is None:
            payload["initial_value"] = config_to_json(seed) if seed is not None else defaults_object()
        await self._call("configuration::register", payload)

    async def fetch(self) -> WorkerConfig:
        found, reply = await self.try_get()
        if not found or not isinstance(reply, dict) or "value" not in reply:
            raise LookupError(f"configuration `{self.config_id}` not found")
        value = reply["value"]
        if value is None:
            log.info("stored configuration is null; using the built-in defaults")
            return DEFAULT_CONFIG
        return parse_config_value(value)
