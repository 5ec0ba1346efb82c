"""The canonical layout of a valid message or block, for the few places that hash or show its
serialization.

Decoding builds dicts in the original's declaration order with sorted free-form values, but a
parsed message that already carries exactly its canonical members may stand for its decoded
form as it is (see ``core.intake``): every count and every written answer is the
same, since lengths do not depend on key order and answers are written with sorted keys. What
does depend on the order is a hash over the serialization (lease keys, emergency references)
and text built from it (previews, summariser prompts); those take these layouts.

Input is a message that has been decoded or checked already: nothing is validated here, and a
dict already in canonical layout comes back equal, byte for byte.
"""

from __future__ import annotations

from typing import Any

from context_manager.wire.codec import Fragment, canonical_free_form, float_fragment
from context_manager.wire.schema import BLOCK_LAYOUTS, MESSAGE_LAYOUTS, USAGE_LAYOUT


def canonical_message(message: dict[str, Any]) -> dict[str, Any]:
    out = {name: message[name] for name in MESSAGE_LAYOUTS[message["role"]] if name in message}
    out["content"] = [canonical_block(block) for block in message["content"]]
    details = out.get("details")
    if details is not None:
        out["details"] = canonical_free_form(details)
    usage = out.get("usage")
    if usage is not None:
        usage = {name: usage[name] for name in USAGE_LAYOUT if name in usage}
        cost = usage.get("cost_usd")
        if cost is not None and type(cost) is not Fragment:
            usage["cost_usd"] = float_fragment(float(cost))
        out["usage"] = usage
    return out


def canonical_block(block: dict[str, Any]) -> dict[str, Any]:
    out = {name: block[name] for name in BLOCK_LAYOUTS[block["type"]] if name in block}
    arguments = out.get("arguments")
    if arguments is not None:
        out["arguments"] = canonical_free_form(arguments)
    if out["type"] == "function_result":
        out["content"] = [canonical_block(inner) for inner in out["content"]]
    return out
