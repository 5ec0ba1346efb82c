"""``router::count_tokens``: the provider's own count of a request, through llm-router.

Request ``{model, system_prompt?, tools?, messages}``, reply ``{tokens, estimator, model}``; the
router's provider counter never runs the model. Answers are cached by model and content (an
unchanged history is never counted twice); a router without the function, a slow one (over
``TIMEOUT_MS``) or a failing one gives ``None`` and one warning line, and the caller counts with
its local estimator.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from typing import Any

import orjson

from context_manager.ports import Invoke, InvokeError
from context_manager.wire.decode import FieldSpec, decode_struct, string, u64
from context_manager.wire.errors import DecodeError
from context_manager.wire.lru import ByteLRU

FUNCTION = "router::count_tokens"
TIMEOUT_MS = 2000
CACHE_ENTRIES = 1024

_REPLY = {
    "tokens": FieldSpec(u64, required=True),
    "estimator": FieldSpec(string),
    "model": FieldSpec(string),
}


class RouterTokenCounter:
    """Implements the ``TokenCounter`` port over an injected ``invoke`` callable."""

    def __init__(self, invoke: Invoke, log: logging.Logger, timeout_ms: int = TIMEOUT_MS) -> None:
        self._invoke = invoke
        self._log = log
        self._timeout_ms = timeout_ms
        self._cache: ByteLRU[bytes, int] = ByteLRU(CACHE_ENTRIES)  # each count costs 1
        self.calls = 0  # invocations sent (cache misses), for tests and diagnostics

    async def count(self, model_id: str, system_prompt: str | None, tools: list[dict[str, Any]] | None,
                    messages: list[dict[str, Any]]) -> int | None:
        payload: dict[str, Any] = {"model": model_id, "messages": messages}
        if system_prompt is not None:
            payload["system_prompt"] = system_prompt
        if tools:
            payload["tools"] = tools
        key = hashlib.blake2b(orjson.dumps(payload, option=orjson.OPT_SORT_KEYS), digest_size=16).digest()
        cached = self._cache.get(key)
        if cached is not None:
            self._cache.move_to_end(key)
            return cached
        self.calls += 1
        try:
            reply = await asyncio.wait_for(self._invoke(FUNCTION, payload, self._timeout_ms),
                                           self._timeout_ms / 1000)
            tokens = decode_struct(reply, "CountTokensReply", _REPLY)["tokens"]
        except (TimeoutError, InvokeError, DecodeError, OSError) as exc:
            reason = "timed out" if isinstance(exc, TimeoutError) else str(exc)
            self._log.warning("%s unavailable for %s, counting locally: %s", FUNCTION, model_id, reason)
            return None
        self._cache.put(key, tokens, 1)
        return tokens
