"""Media normalization of assemble's model-facing view.

Depending on the resolved model's vision capability, image blocks are swapped for fixed text
markers: every image for a text-only model; for a vision model, tool images once the model has
answered after them and user images once the user has moved on to a new request.
"""

from __future__ import annotations

from typing import Literal

from context_manager.wire.messages import Block, Message, is_real_user_turn, text_block, with_content

Capability = Literal["vision", "text_only", "unknown"]

TEXT_ONLY_MARKER = "[image omitted: model does not support vision]"
TOOL_IMAGE_MARKER = "[tool image omitted after use; re-call the function if visual details are needed]"
USER_IMAGE_MARKER = (
    "[user image omitted after use; ask the user to resend it if visual details are needed]"
)


def normalize_media(view: list[Message], capability: Capability) -> list[Message]:
    """Return the view with images replaced per `capability`; the input list is untouched.

    The scan runs newest to oldest so that the flags describe only what lies after the
    current message; a message's own role never ages its own images.
    """
    if capability == "unknown":
        return list(view)
    normalized = list(view)
    later_user = False
    later_assistant = False
    user_after_assistant = False
    for index in range(len(view) - 1, -1, -1):
        message = view[index]
        role = message["role"]
        if capability == "vision":
            if role == "user" and user_after_assistant:
                direct: str | None = USER_IMAGE_MARKER
            elif role == "function_result" and later_assistant:
                direct = TOOL_IMAGE_MARKER
            else:
                direct = None
            nested = TOOL_IMAGE_MARKER if later_assistant else None
        else:
            direct = nested = TEXT_ONLY_MARKER
        content = _replace_images(message["content"], direct, nested)
        if content is not None:
            normalized[index] = with_content(message, content)
        if is_real_user_turn(message):
            later_user = True
        elif role == "assistant":
            later_assistant = True
            if later_user:
                user_after_assistant = True
    return normalized


def _replace_images(blocks: list[Block], direct: str | None, nested: str | None) -> list[Block] | None:
    """New block list with images replaced, or None when nothing changed."""
    changed = False
    result: list[Block] = []
    for block in blocks:
        kind = block["type"]
        if kind == "image" and direct is not None:
            result.append(text_block(direct))
            changed = True
        elif kind == "function_result":
            # Images inside a result block are tool images, whoever hosts the block.
            inner = _replace_images(block["content"], nested, nested)
            if inner is None:
                result.append(block)
            else:
                result.append(with_content(block, inner))
                changed = True
        else:
            result.append(block)
    return result if changed else None
