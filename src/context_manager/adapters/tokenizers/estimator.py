"""The tokenizer estimator: exact BPE counts of what the provider receives.

A message counts the tokens of each piece of text a provider is sent for it, each piece encoded
on its own (``encode_ordinary``: special-token text is plain text), plus a framing allowance:

* ``text`` and ``thinking`` blocks: their text;
* ``function_call`` blocks: the function id, and the arguments as compact JSON
  (``codec.dumps`` of the canonical value, so ``null`` when absent);
* ``function_result`` blocks (inline results): their content, recursively;
* ``file`` blocks: their compact JSON (the attachment reference is all the provider sees);
* ``image`` blocks: the fixed ``IMAGE_TOKEN_BUDGET`` each, at any depth;
* a ``function_result`` message's ``details`` only when it is a denial envelope (the one
  ``details`` shown to the model), as compact JSON;
* ``FRAMING_TOKENS_PER_MESSAGE`` (4) per message, for the role marker and delimiters that chat
  formats wrap around each message. Keys, timestamps, model names and usage records are
  bookkeeping that never reaches the provider and do not count.

``text(s)`` is the token count of ``s``; ``function(f)`` that of the tool's compact schema
(``codec.dumps`` of the canonical tool dict). Counts are cached across calls (see ``cache``).
"""

from __future__ import annotations

from typing import Any

import tiktoken

from context_manager.adapters.tokenizers.cache import TokenCountCache, content_key
from context_manager.core.counting.estimate import IMAGE_TOKEN_BUDGET, is_denied
from context_manager.wire.codec import dumps

FRAMING_TOKENS_PER_MESSAGE = 4
# Below this many characters hashing costs about as much as encoding, so texts are not cached.
MIN_CACHED_TEXT_CHARS = 256


def message_pieces(m: dict[str, Any]) -> tuple[list[str], int]:
    """(the texts the provider receives for ``m``, number of images in it)."""
    pieces: list[str] = []
    images = _collect(m["content"], pieces)
    if m["role"] == "function_result" and is_denied(m["details"]):
        pieces.append(dumps(m["details"]).decode())
    return pieces, images


def _collect(blocks: list[dict[str, Any]], pieces: list[str]) -> int:
    images = 0
    for block in blocks:
        kind = block["type"]
        if kind == "text" or kind == "thinking":
            pieces.append(block["text"])
        elif kind == "image":
            images += 1
        elif kind == "function_call":
            pieces.append(block["function_id"])
            pieces.append(dumps(block["arguments"]).decode())
        elif kind == "function_result":
            images += _collect(block["content"], pieces)
        else:  # file, and any block kind added later: its serialized form
            pieces.append(dumps(block).decode())
    return images


class TokenizerEstimator:
    kind = "tokenizer"

    def __init__(self, encoding: tiktoken.Encoding, cache: TokenCountCache) -> None:
        self.encoding = encoding
        self.cache = cache
        tag = encoding.name.encode()
        self._message_ns = tag + b"\x00m"
        self._text_ns = tag + b"\x00t"
        self._function_ns = tag + b"\x00f"

    def count(self, s: str) -> int:
        """Tokens of one piece of text, uncached."""
        return len(self.encoding.encode_ordinary(s)) if s else 0

    def message(self, m: dict[str, Any]) -> int:
        key = content_key(self._message_ns, dumps(m))
        cached = self.cache.get(key)
        if cached is not None:
            return cached
        pieces, images = message_pieces(m)
        tokens = FRAMING_TOKENS_PER_MESSAGE + IMAGE_TOKEN_BUDGET * images
        # Through text(): long pieces land in the text cache, where cap and prune find a result's
        # text again instead of encoding it a second time.
        tokens += sum(self.text(piece) for piece in pieces if piece)
        self.cache.put(key, tokens)
        return tokens

    def text(self, s: str) -> int:
        if len(s) < MIN_CACHED_TEXT_CHARS:
            return self.count(s)
        key = content_key(self._text_ns, s.encode("utf-8", "surrogatepass"))
        cached = self.cache.get(key)
        if cached is None:
            cached = self.count(s)
            self.cache.put(key, cached)
        return cached

    def function(self, f: dict[str, Any]) -> int:
        serialized = dumps(f)
        key = content_key(self._function_ns, serialized)
        cached = self.cache.get(key)
        if cached is None:
            cached = self.count(serialized.decode())
            self.cache.put(key, cached)
        return cached

    def image(self, block: dict[str, Any]) -> int:
        return IMAGE_TOKEN_BUDGET
