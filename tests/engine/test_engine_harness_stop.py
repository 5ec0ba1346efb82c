"""The test engine stops at once even while a channel end waits on its queue: the server's close
waits for every connection handler, and a parked channel end is not reading its socket."""

from __future__ import annotations

import time

import anyio
import pytest

from context_manager.engine.channels import Channel, ChannelReader, channel_url, create_channel, write_channel
from context_manager.engine.client import Backoff, EngineClient, worker_metadata
from testengine import TestEngine

pytestmark = pytest.mark.anyio


async def new_channel(engine: TestEngine, buffer_size: int | None = None) -> Channel:
    client = EngineClient(engine.url, worker_metadata("stop-test", "0.1.0"), backoff=Backoff(50, 2.0, 400, 0.0))
    async with anyio.create_task_group() as tg:
        tg.start_soon(client.run)
        await client.wait_connected()
        try:
            return await create_channel(client.invoke, buffer_size=buffer_size)
        finally:
            await client.close()


async def seconds_to_stop(engine: TestEngine) -> float:
    # On a worker thread, so this loop can still answer the server's closing handshake.
    started = time.monotonic()
    await anyio.to_thread.run_sync(engine.stop)
    return time.monotonic() - started


async def test_stop_wakes_a_reader_waiting_on_a_channel_nobody_writes(engine: TestEngine) -> None:
    with anyio.fail_after(20):
        channel = await new_channel(engine)
        reader = ChannelReader(channel_url(engine.url, channel.reader, "read"))
        await reader.open()
        await anyio.sleep(0.1)  # the reader's handler is now waiting on the empty queue
        assert await seconds_to_stop(engine) < 2
        await reader.read_all()
    assert reader.texts == []
    assert reader.finished.is_set()


async def test_stop_wakes_a_writer_waiting_on_a_full_channel_nobody_reads(engine: TestEngine) -> None:
    with anyio.fail_after(20):
        channel = await new_channel(engine, buffer_size=1)
        # One message fills the queue; the handler then waits to queue the second.
        await write_channel(channel_url(engine.url, channel.writer, "write"), ["one", "two", "three"])
        await anyio.sleep(0.1)
        assert await seconds_to_stop(engine) < 2
    [chan] = engine.channels.values()
    assert chan.queue.qsize() == 1
    assert chan.queue.get_nowait() == "one"
