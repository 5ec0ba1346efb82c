"""The exact tokenizers that ship with the package, offered to the core as a TokenizerSource.

This module stays outside ``adapters.tokenizers`` so that importing it loads nothing: tiktoken
and the encoding files load on the first ``estimator_for`` call, which the core makes only for
``estimator: auto``.
"""

from __future__ import annotations

from context_manager.ports import Estimator


class PackagedTokenizers:
    """Tokenizers of the OpenAI model families whose encodings ship with the package."""

    def estimator_for(self, model_id: str) -> Estimator | None:
        from context_manager.adapters.tokenizers import tokenizer_for_model  # loads tiktoken

        return tokenizer_for_model(model_id)


PACKAGED_TOKENIZERS = PackagedTokenizers()
