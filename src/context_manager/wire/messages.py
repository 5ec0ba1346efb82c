"""What a function result contains and who produced it.

Shared by the cap, prune and emergency passes and by media normalization:
the text and image count of a result's content,
the "real user turn" test, and the resolution of an inline result's function
id from the calls that precede it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

Message = dict[str, Any]
Block = dict[str, Any]
# (message index, top-level block index) of an inline result block.
InlineLocation = tuple[int, int]


def text_of(blocks: list[Block]) -> str:
    """Top-level text blocks joined with a newline; every other block adds nothing."""
    return "\n".join(block["text"] for block in blocks if block["type"] == "text")


def images_in(blocks: list[Block]) -> Iterator[Block]:
    """Image blocks at the top level and, recursively, inside nested function_result blocks."""
    for block in blocks:
        if block["type"] == "image":
            yield block
        elif block["type"] == "function_result":
            yield from images_in(block["content"])


def has_inline_result(message: Message) -> bool:
    return any(block["type"] == "function_result" for block in message["content"])


def is_real_user_turn(message: Message) -> bool:
    """A user message that does not wrap function results starts a real user turn."""
    return message["role"] == "user" and not has_inline_result(message)


def resolve_inline_function_ids(messages: list[Message]) -> dict[InlineLocation, str]:
    """Map each inline result block to the function id of the latest preceding call with its id.

    Calls are read from top-level function_call blocks of any role, oldest first; a call that
    only appears after the result does not resolve it. Unresolved blocks are absent from the map.
    """
    calls: dict[str, str] = {}
    resolved: dict[InlineLocation, str] = {}
    for message_index, message in enumerate(messages):
        for block_index, block in enumerate(message["content"]):
            kind = block["type"]
            if kind == "function_call":
                calls[block["id"]] = block["function_id"]
            elif kind == "function_result":
                function_id = calls.get(block["function_call_id"])
                if function_id is not None:
                    resolved[(message_index, block_index)] = function_id
    return resolved


def with_content(message_or_block: dict[str, Any], content: list[Block]) -> dict[str, Any]:
    """A copy whose `content` is replaced; the key order is unchanged."""
    return {**message_or_block, "content": content}


def with_block(message: Message, block_index: int, block: Block) -> Message:
    """A copy of `message` whose top-level block `block_index` is replaced."""
    content = list(message["content"])
    content[block_index] = block
    return with_content(message, content)


def text_block(text: str) -> Block:
    return {"type": "text", "text": text}


def calls_made(message: Message) -> list[str]:
    """The ids of the function calls an assistant message makes (none for any other role)."""
    if message["role"] != "assistant":
        return []
    return [block["id"] for block in message["content"] if block["type"] == "function_call"]


def calls_answered(message: Message) -> list[str]:
    """The call ids a message answers: a function_result message's own, or its inline results'."""
    if message["role"] == "function_result":
        return [message["function_call_id"]]
    if message["role"] == "custom":
        return []
    return [
        block["function_call_id"]
        for block in message["content"]
        if block["type"] == "function_result"
    ]
