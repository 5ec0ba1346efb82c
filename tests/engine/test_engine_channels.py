"""Channels: creation through the engine, the reader and writer side sockets, URL rules."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from websockets.exceptions import InvalidStatus

from context_manager.engine.channels import (
    ChannelError,
    ChannelReader,
    ChannelRef,
    channel_url,
    create_channel,
    write_channel,
)
from context_manager.engine.client import Backoff, EngineClient, worker_metadata
from testengine import TestEngine

pytestmark = pytest.mark.anyio


async def with_client(engine: TestEngine, body: Any) -> Any:
    client = EngineClient(engine.url, worker_metadata("chan", "0.1.0"), backoff=Backoff(50, 2.0, 400, 0.0))
    async with anyio.create_task_group() as tg:
        tg.start_soon(client.run)
        await client.wait_connected()
        try:
            return await body(client)
        finally:
            await client.close()


def test_channel_url_is_derived_from_the_engine_address() -> None:
    ref = ChannelRef("c1", "k/1", "read")
    assert channel_url("ws://127.0.0.1:49134", ref, "read") == "ws://127.0.0.1:49134/ws/channels/c1?key=k%2F1&dir=read"
    assert channel_url("ws://h:1/", ref, "write") == "ws://h:1/ws/channels/c1?key=k%2F1&dir=write"
    assert channel_url("ws://h:1?token=x", ref, "read") == "ws://h:1/ws/channels/c1?token=x&key=k%2F1&dir=read"


def test_refs_are_validated() -> None:
    assert ChannelRef.from_value({"channel_id": "a", "access_key": "b", "direction": "write", "x": 1}) == ChannelRef("a", "b", "write")
    for bad in (None, {"channel_id": "a", "access_key": "b", "direction": "both"}, {"channel_id": 1, "access_key": "b", "direction": "read"}):
        with pytest.raises(ChannelError):
            ChannelRef.from_value(bad)


async def test_text_and_binary_messages_keep_their_type_and_order(engine: TestEngine) -> None:
    async def body(client: EngineClient) -> Any:
        channel = await create_channel(client.invoke)
        assert channel.writer.channel_id == channel.reader.channel_id
        assert channel.writer.access_key == channel.reader.access_key
        assert (channel.writer.direction, channel.reader.direction) == ("write", "read")
        # Items written before the reader connects are kept.
        await write_channel(channel_url(engine.url, channel.writer, "write"), ["one", b"\x00\x01", "two", b"\x02"])
        reader = ChannelReader(channel_url(engine.url, channel.reader, "read"))
        await reader.open()
        await reader.read_all()
        return reader

    with anyio.fail_after(10):
        reader = await with_client(engine, body)
    assert reader.texts == ["one", "two"]
    assert bytes(reader.binary) == b"\x00\x01\x02"
    assert reader.finished.is_set()
    assert [data for fid, data in engine.calls if fid == "engine::channels::create"] == [{"buffer_size": None}]


async def test_wrong_key_is_a_404_and_a_bad_direction_a_400(engine: TestEngine) -> None:
    async def body(client: EngineClient) -> Any:
        channel = await create_channel(client.invoke, buffer_size=4)
        wrong = ChannelRef(channel.reader.channel_id, "nope", "read")
        with pytest.raises(InvalidStatus) as not_found:
            await ChannelReader(channel_url(engine.url, wrong, "read")).open()
        with pytest.raises(InvalidStatus) as bad:
            await ChannelReader(channel_url(engine.url, channel.reader, "sideways")).open()
        return not_found.value.response.status_code, bad.value.response.status_code

    with anyio.fail_after(10):
        assert await with_client(engine, body) == (404, 400)


async def test_each_end_is_taken_once(engine: TestEngine) -> None:
    async def body(client: EngineClient) -> Any:
        channel = await create_channel(client.invoke)
        url = channel_url(engine.url, channel.reader, "read")
        first, second = ChannelReader(url), ChannelReader(url)
        await first.open()
        await anyio.sleep(0.05)
        await second.open()
        await second.read_all()  # closed at once, empty
        await write_channel(channel_url(engine.url, channel.writer, "write"), ["only"])
        await first.read_all()
        return first.texts, second.texts

    with anyio.fail_after(10):
        assert await with_client(engine, body) == (["only"], [])
