"""A channel writer for the fake router that can hold its socket open after the last frame."""

from __future__ import annotations

from collections.abc import Iterable

import anyio
from websockets.asyncio.client import connect

from context_manager.engine.protocol import MAX_MESSAGE_BYTES


async def write_channel(
    url: str,
    messages: Iterable[str | bytes],
    hold_open_s: float = 0.0,
    sent: anyio.Event | None = None,
) -> None:
    async with connect(url, max_size=MAX_MESSAGE_BYTES, ping_interval=None, compression=None) as ws:
        for message in messages:
            await ws.send(message)
        if sent is not None:
            sent.set()
        if hold_open_s:
            await anyio.sleep(hold_open_s)
