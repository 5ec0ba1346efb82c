"""Streaming channels: creation through the engine and the reader/writer side sockets.

A channel is a one-way pipe relayed by the engine at ``/ws/channels/<id>?key=<key>&dir=<dir>``
on the worker socket's own host and port. Text messages stay text, binary stays binary.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import anyio
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from context_manager.engine import protocol
from context_manager.wire.errors import Error

Invoke = Callable[..., Awaitable[Any]]

log = logging.getLogger("context_manager.engine.channels")


class ChannelError(Error):
    """The engine's answer to ``engine::channels::create`` is not a pair of channel refs."""


@dataclass(frozen=True, slots=True)
class ChannelRef:
    channel_id: str
    access_key: str
    direction: str

    def to_dict(self) -> dict[str, str]:
        return {
            "channel_id": self.channel_id,
            "access_key": self.access_key,
            "direction": self.direction,
        }

    @classmethod
    def from_value(cls, value: Any) -> ChannelRef:
        if not isinstance(value, dict):
            raise ChannelError("channel ref is not an object")
        fields_ = (value.get("channel_id"), value.get("access_key"), value.get("direction"))
        if not all(isinstance(item, str) for item in fields_) or fields_[2] not in ("read", "write"):
            raise ChannelError("channel ref needs string channel_id, access_key and direction")
        return cls(*fields_)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class Channel:
    writer: ChannelRef
    reader: ChannelRef


async def create_channel(invoke: Invoke, buffer_size: int | None = None) -> Channel:
    """Ask the engine for a new channel; ``invoke`` is :meth:`EngineClient.invoke`."""
    reply = await invoke(protocol.CHANNELS_CREATE, {"buffer_size": buffer_size})
    if not isinstance(reply, dict):
        raise ChannelError("engine::channels::create returned no refs")
    return Channel(ChannelRef.from_value(reply.get("writer")), ChannelRef.from_value(reply.get("reader")))


def channel_url(engine_url: str, ref: ChannelRef, direction: str) -> str:
    """The side-socket URL for ``ref``, derived from the worker socket's address."""
    parts = urlsplit(engine_url)
    path = parts.path.rstrip("/") + f"/ws/channels/{quote(ref.channel_id, safe='')}"
    query = f"key={quote(ref.access_key, safe='')}&dir={direction}"
    if parts.query:
        query = f"{parts.query}&{query}"
    return urlunsplit((parts.scheme, parts.netloc, path, query, ""))


@dataclass(slots=True)
class ChannelReader:
    """Collects a channel's text messages (one string each) and binary bytes (concatenated).

    ``finished`` is set when the engine closes the stream, whatever the close code: success is
    for the application to read from the frames, never from "the stream ended".
    """

    url: str
    texts: list[str] = field(default_factory=list)
    binary: bytearray = field(default_factory=bytearray)
    finished: anyio.Event = field(default_factory=anyio.Event)
    _ws: ClientConnection | None = None

    async def open(self) -> None:
        # The engine never answers pings on reader sockets, so keepalive stays off.
        self._ws = await connect(
            self.url,
            max_size=protocol.MAX_MESSAGE_BYTES,
            ping_interval=None,
            compression=None,
            open_timeout=10,
        )

    async def read_all(self) -> None:
        ws = self._ws
        try:
            if ws is None:
                return
            async for message in ws:
                if isinstance(message, str):
                    self.texts.append(message)
                else:
                    self.binary.extend(message)
        except ConnectionClosed:
            pass
        finally:
            self.finished.set()

    async def close(self) -> None:
        if self._ws is not None:
            await self._ws.close()


async def write_channel(url: str, messages: Iterable[str | bytes]) -> None:
    """Open the writer end, send every message in order, then close normally."""
    async with connect(
        url, max_size=protocol.MAX_MESSAGE_BYTES, ping_interval=None, compression=None
    ) as ws:
        for message in messages:
            await ws.send(message)


__all__ = [
    "Channel",
    "ChannelError",
    "ChannelReader",
    "ChannelRef",
    "ConnectionClosed",
    "InvalidHandshake",
    "channel_url",
    "create_channel",
    "write_channel",
]
