"""What an image costs at its provider (with ``estimator: auto``).

The width and height come from the image's own header (``wire.image_header``); an unknown
provider or an unreadable header keeps the flat ``IMAGE_TOKEN_BUDGET`` (4,096).

Sources of the formulas:

* OpenAI, ``detail: high`` (the default for large images): "Calculating costs" in the vision
  guide, https://platform.openai.com/docs/guides/images-vision#calculating-costs - the image is
  scaled to fit a 2048 x 2048 square, then so that its shortest side is 768 px (both only ever
  down), and costs 85 tokens plus 170 per 512 px tile.
* Anthropic: "Calculate image costs" in the vision guide,
  https://docs.anthropic.com/en/docs/build-with-claude/vision#calculate-image-costs - an image
  whose long edge exceeds 1568 px or that would cost more than about 1,600 tokens is scaled down
  (aspect ratio kept) until it fits; it then costs width x height / 750 tokens.
* Gemini: "Image understanding", https://ai.google.dev/gemini-api/docs/image-understanding
  (token counting: "each image is 258 tokens") - a flat 258 per image.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from context_manager.wire.image_header import image_size
from context_manager.wire.messages import images_in

# The flat allowance of the original: what an image costs when it cannot be priced.
IMAGE_TOKEN_BUDGET = 4096

ImageProvider = Literal["openai", "anthropic", "gemini"]

OPENAI_BASE, OPENAI_PER_TILE, OPENAI_TILE = 85, 170, 512
OPENAI_SQUARE, OPENAI_SHORT_SIDE = 2048, 768
ANTHROPIC_LONG_EDGE, ANTHROPIC_MAX_TOKENS, ANTHROPIC_PIXELS_PER_TOKEN = 1568, 1600, 750
GEMINI_PER_IMAGE = 258

_PROVIDER_NAMES: dict[str, ImageProvider] = {
    "openai": "openai", "azure": "openai", "azure-openai": "openai",
    "anthropic": "anthropic", "claude": "anthropic",
    "google": "gemini", "gemini": "gemini", "vertex": "gemini", "google-vertex": "gemini",
}
_MODEL_PREFIXES: tuple[tuple[str, ImageProvider], ...] = (
    ("gpt-", "openai"), ("chatgpt-", "openai"), ("o1", "openai"), ("o3", "openai"), ("o4", "openai"),
    ("claude", "anthropic"), ("gemini", "gemini"),
)


def image_provider(model_id: str, provider: str | None) -> ImageProvider | None:
    """The pricing family of a model: its declared provider, else its id (one leading
    ``provider/`` segment names the provider too)."""
    if provider is not None:
        known = _PROVIDER_NAMES.get(provider.lower())
        if known is not None:
            return known
    name = model_id.lower()
    if "/" in name:
        head, name = name.split("/", 1)
        known = _PROVIDER_NAMES.get(head)
        if known is not None:
            return known
    for prefix, family in _MODEL_PREFIXES:
        if name.startswith(prefix):
            return family
    return None


def openai_tokens(width: int, height: int) -> int:
    w, h = float(width), float(height)
    if max(w, h) > OPENAI_SQUARE:
        scale = OPENAI_SQUARE / max(w, h)
        w, h = w * scale, h * scale
    if min(w, h) > OPENAI_SHORT_SIDE:
        scale = OPENAI_SHORT_SIDE / min(w, h)
        w, h = w * scale, h * scale
    tiles = math.ceil(w / OPENAI_TILE) * math.ceil(h / OPENAI_TILE)
    return OPENAI_BASE + OPENAI_PER_TILE * tiles


def anthropic_tokens(width: int, height: int) -> int:
    scale = min(1.0, ANTHROPIC_LONG_EDGE / max(width, height),
                math.sqrt(ANTHROPIC_MAX_TOKENS * ANTHROPIC_PIXELS_PER_TOKEN / (width * height)))
    w, h = max(1, int(width * scale)), max(1, int(height * scale))
    return math.ceil(w * h / ANTHROPIC_PIXELS_PER_TOKEN)


def image_tokens(block: dict[str, Any], provider: ImageProvider | None) -> int:
    """The tokens of one image block at ``provider``; the flat budget when it cannot be priced."""
    if provider is None:
        return IMAGE_TOKEN_BUDGET
    if provider == "gemini":
        return GEMINI_PER_IMAGE
    size = image_size(block["data"])
    if size is None:
        return IMAGE_TOKEN_BUDGET
    return openai_tokens(*size) if provider == "openai" else anthropic_tokens(*size)


_NESTED_MEDIA = frozenset(("image", "function_result"))


class PricedImages:
    """An estimator whose images cost what ``provider`` charges instead of the flat budget;
    everything else is ``inner``'s count."""

    __slots__ = ("inner", "kind", "provider")

    def __init__(self, inner: Any, provider: ImageProvider) -> None:
        self.inner = inner
        self.provider = provider
        self.kind = inner.kind

    def message(self, m: dict[str, Any]) -> int:
        tokens = self.inner.message(m)
        content = m["content"]
        if not any(block["type"] in _NESTED_MEDIA for block in content):
            return tokens
        for block in images_in(content):
            tokens += image_tokens(block, self.provider) - IMAGE_TOKEN_BUDGET
        return tokens

    def text(self, s: str) -> int:
        return self.inner.text(s)

    def function(self, f: dict[str, Any]) -> int:
        return self.inner.function(f)

    def image(self, block: dict[str, Any]) -> int:
        return image_tokens(block, self.provider)


# One wrapper per (estimator, provider): memo entries are keyed by the estimator object.
_PRICED: dict[tuple[int, str], PricedImages] = {}


def priced(inner: Any, provider: ImageProvider) -> PricedImages:
    key = (id(inner), provider)
    wrapper = _PRICED.get(key)
    if wrapper is None or wrapper.inner is not inner:
        wrapper = _PRICED[key] = PricedImages(inner, provider)
    return wrapper
