"""Messages between the worker and its serving processes: whole, in order, large ones included,
and a pipe whose reader is gone drops what it holds instead of raising."""

from __future__ import annotations

import asyncio
import os

import anyio

from context_manager.processes import pipe


async def _reader_of(fd: int) -> asyncio.StreamReader:
    reader = asyncio.StreamReader(limit=pipe.PIPE_BYTES)
    await asyncio.get_running_loop().connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(fd, "rb", 0))
    return reader


def test_messages_arrive_whole_and_in_order_across_a_full_pipe() -> None:
    big = bytes(range(256)) * (12 * 1024)  # 3 MiB: several pipe-fulls
    sent = [(pipe.CALL, 1, big), (pipe.CONFIG, 0, b""), (pipe.ANSWER, 2**40, b"reply"), (pipe.CALL, 3, big[::-1])]

    async def main() -> list[tuple[bytes, int, bytes] | None]:
        out, into = os.pipe()
        writer = pipe.PipeWriter(into)
        reader = await _reader_of(out)
        for kind, tag, body in sent:
            writer.send(kind, tag, body)
        received = [await pipe.receive(reader) for _ in sent]
        await writer.drained()
        writer.close()
        received.append(await pipe.receive(reader))  # the end of the pipe
        return received

    assert anyio.run(main) == [*sent, None]


def test_a_pipe_without_a_reader_drops_what_it_holds() -> None:
    async def main() -> bool:
        out, into = os.pipe()
        writer = pipe.PipeWriter(into)
        os.close(out)
        writer.send(pipe.CALL, 1, b"x" * 10)
        writer.send(pipe.CALL, 2, b"y")  # ignored: the pipe is gone
        await writer.drained()
        writer.close()
        return writer.closed

    assert anyio.run(main) is True
