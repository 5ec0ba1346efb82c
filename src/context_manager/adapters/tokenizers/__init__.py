"""Exact token counts for OpenAI model families (opt-in with the `estimator: auto` config key)."""

from __future__ import annotations

import threading

from context_manager.adapters.tokenizers.cache import TokenCountCache
from context_manager.adapters.tokenizers.encodings import encoding_name_for_model, load_encoding
from context_manager.adapters.tokenizers.estimator import FRAMING_TOKENS_PER_MESSAGE, TokenizerEstimator

__all__ = [
    "FRAMING_TOKENS_PER_MESSAGE",
    "SHARED_CACHE",
    "TokenizerEstimator",
    "encoding_name_for_model",
    "tokenizer_for_model",
    "tokenizer_for_encoding",
]

# One cache for every encoding (keys carry the encoding name), shared by all calls of a process.
SHARED_CACHE = TokenCountCache()

_estimators: dict[str, TokenizerEstimator | None] = {}
_lock = threading.Lock()


def tokenizer_for_encoding(name: str) -> TokenizerEstimator | None:
    """The process-wide estimator of encoding ``name``; None when its file is unusable."""
    try:
        return _estimators[name]
    except KeyError:
        pass
    encoding = load_encoding(name)
    with _lock:
        if name not in _estimators:
            _estimators[name] = None if encoding is None else TokenizerEstimator(encoding, SHARED_CACHE)
        return _estimators[name]


def tokenizer_for_model(model_id: str) -> TokenizerEstimator | None:
    """The tokenizer estimator of an OpenAI-family model id, None for any other model."""
    name = encoding_name_for_model(model_id)
    return None if name is None else tokenizer_for_encoding(name)


def forget_estimators() -> None:
    """Drop the estimators built so far (tests that swap the data files use it)."""
    with _lock:
        _estimators.clear()
