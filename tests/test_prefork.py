"""The listening socket of ``engram serve --workers N``: a worker's connections are TCP with
Nagle's algorithm off, as a single server's are. asyncio sets ``TCP_NODELAY`` only on a socket
whose protocol number says TCP; with Nagle on, an answer written in two parts (head, then body)
waits for the client's delayed ACK, about 40 ms a request."""

from __future__ import annotations

import asyncio
import socket

from engram.api.prefork import bind


async def _accepted_nodelay(sock: socket.socket) -> int:
    seen: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted: socket.socket = writer.get_extra_info("socket")
        seen.set_result(accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        writer.close()

    server = await asyncio.start_server(on_connect, sock=sock)
    async with server:
        host, port = sock.getsockname()[:2]
        _, writer = await asyncio.open_connection(host, port)
        try:
            return await asyncio.wait_for(seen, 10)
        finally:
            writer.close()


def test_a_workers_connections_are_sent_without_delay() -> None:
    sock = bind("127.0.0.1", 0)
    try:
        assert asyncio.run(_accepted_nodelay(sock)) != 0
    finally:
        sock.close()
