"""Token estimation (spec 01 §5).

The heuristic counts ``floor(bytes / 4)`` of a message's compact serialization, as the provider
would receive it: image data does not count (each image costs a flat allowance instead) and the
``details`` of a function result never reach the provider unless they carry a denial.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from context_manager.core.counting.image_cost import IMAGE_TOKEN_BUDGET, image_provider, priced
from context_manager.core.memo import remembered
from context_manager.core.reuse import CallReuse
from context_manager.core.settings import WorkerConfig
from context_manager.ports import Estimator, TokenizerSource
from context_manager.wire.codec import utf8_len
from context_manager.wire.messages import Block, images_in, text_of

_NULL_LEN = 4  # len(b"null")


def is_denied(details: Any) -> bool:
    """A denial envelope is shown to the model, so it is the one `details` that counts."""
    return type(details) is dict and details.get("status") == "denied"


def _image_adjustment(blocks: list[dict[str, Any]]) -> tuple[int, int]:
    """(bytes of image data to discount, number of images) at any depth of inline results."""
    discount = 0
    images = 0
    for block in blocks:
        kind = block["type"]
        if kind == "image":
            images += 1
            discount += len(orjson.dumps(block["data"])) - 2
        elif kind == "function_result":
            d, n = _image_adjustment(block["content"])
            discount += d
            images += n
    return discount, images


_NESTED_MEDIA = frozenset(("image", "function_result"))


def message_view_bytes(m: dict[str, Any]) -> tuple[int, int]:
    """(serialized bytes of the estimator's view of ``m``, number of images in it)."""
    size = len(orjson.dumps(m))
    if m["role"] == "function_result":
        details = m["details"]
        if details is not None and not is_denied(details):
            size += _NULL_LEN - len(orjson.dumps(details))
    content = m["content"]
    for block in content:
        if block["type"] in _NESTED_MEDIA:  # rare: only then walk for images to discount
            discount, images = _image_adjustment(content)
            return size - discount, images
    return size, 0


class HeuristicEstimator:
    kind = "heuristic"

    def message(self, m: dict[str, Any]) -> int:
        size, images = message_view_bytes(m)
        return size // 4 + IMAGE_TOKEN_BUDGET * images

    def text(self, s: str) -> int:
        return utf8_len(s) // 4

    def function(self, f: dict[str, Any]) -> int:
        return len(orjson.dumps(f)) // 4

    def image(self, block: dict[str, Any]) -> int:
        return IMAGE_TOKEN_BUDGET


HEURISTIC = HeuristicEstimator()


def estimator_for_model(
    model_id: str, config: WorkerConfig | None, tokenizers: TokenizerSource | None
) -> Estimator:
    """The token estimator of a call on ``model_id``, images at the flat budget.

    The heuristic unless the configuration opts in (``estimator: auto``, or ``router``, whose
    local estimator this is) and ``tokenizers`` has an
    exact tokenizer for the model (the packaged source: OpenAI families whose encoding ships with
    the package). The source is asked only under ``auto``, so it may load its tokenizers lazily.
    """
    if config is None or config.estimator == "heuristic" or tokenizers is None:
        return HEURISTIC
    tokenizer = tokenizers.estimator_for(model_id)
    return HEURISTIC if tokenizer is None else tokenizer


def estimator_for_call(
    model_id: str, config: WorkerConfig | None, tokenizers: TokenizerSource | None,
    provider: str | None = None,
) -> Estimator:
    """The estimator used for every count of a call: ``estimator_for_model``'s, and under
    ``estimator: auto`` images cost what the model's provider charges (``image_cost``) when the
    provider (declared, else read from the model id) is one that prices them."""
    chosen = estimator_for_model(model_id, config, tokenizers)
    if config is None or config.estimator == "heuristic":
        return chosen
    family = image_provider(model_id, provider)
    return chosen if family is None else priced(chosen, family)


def message_sizes(messages: Iterable[dict[str, Any]], estimator: Estimator, reuse: CallReuse) -> list[int]:
    """``[estimator.message(m) for m in messages]``, remembered across calls for messages the
    call's memo holds (an estimate depends on the message and the estimator only)."""
    memo = reuse.memo
    # Heuristic estimates taken while the messages were checked (parsed messages used as is).
    known = reuse.as_is if estimator is HEURISTIC else None
    if memo is None:
        if not known:
            return [estimator.message(m) for m in messages]
        get = known.get
        return [size if (size := get(id(m))) is not None else estimator.message(m) for m in messages]
    entry_of = memo.entry_of
    sizes = []
    for m in messages:
        entry = entry_of(m)
        if entry is None:
            size = known.get(id(m)) if known else None
            sizes.append(size if size is not None else estimator.message(m))
            continue
        size = entry.derived.get(estimator)
        if size is None:
            size = known.get(id(m)) if known else None
            if size is None:
                size = estimator.message(m)
            entry.derived[estimator] = size
        sizes.append(size)
    return sizes


def tools_tokens(tools: list[dict[str, Any]], estimator: Estimator, reuse: CallReuse) -> int:
    """The estimate of a tools list, remembered when the call's memo holds that list."""
    return remembered(reuse.memo, tools, ("tools", estimator),
                      lambda: sum(estimator.function(tool) for tool in tools))


def empty_by_role() -> dict[str, int]:
    return {"user": 0, "assistant": 0, "function_result": 0, "custom": 0}


def by_role(messages: Iterable[dict[str, Any]], sizes: Iterable[int]) -> dict[str, int]:
    """Partition precomputed per-message estimates by role."""
    buckets = empty_by_role()
    for m, size in zip(messages, sizes):
        buckets[m["role"]] += size
    return buckets


def result_tokens(blocks: list[Block], estimator: Estimator) -> int:
    """Size of a result's content as the passes measure it (text plus image allowances)."""
    return estimator.text(text_of(blocks)) + sum(estimator.image(b) for b in images_in(blocks))
