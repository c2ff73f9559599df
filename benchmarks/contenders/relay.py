"""The floors under ``cdpnb proxy`` in bench_proxy.py: a relay that does nothing but relay.

    <python> benchmarks/contenders/relay.py ws|tcp BROWSER_WS_URL

Prints, as ``cdpnb proxy`` does, its ``http://127.0.0.1:PORT`` and then the browser's
WebSocket on its own port, and serves until SIGTERM:

- ``ws``: each client WebSocket relayed to the same path on the browser, frame by
  frame, by two ``websockets`` pumps (``recv(decode=False)`` → ``send(text=True)``),
  as the proxy's ``_Connection`` pumps them, with no parse, fold, record or lock;
- ``tcp``: each TCP connection's bytes written on to the other socket in the read
  callback itself (``asyncio.Protocol``, no task woken; the HTTP upgrade included): one
  more loopback hop through a Python process, and nothing else.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from urllib.parse import urlsplit

from websockets.asyncio.client import ClientConnection, connect
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed


async def ws_relay(browser: str, stop: asyncio.Event) -> None:
    upstream = f"ws://{urlsplit(browser).netloc}"

    async def pump(source: ServerConnection | ClientConnection,
                   target: ServerConnection | ClientConnection) -> None:
        with contextlib.suppress(ConnectionClosed):
            while True:
                data = await source.recv(decode=False)
                await target.send(data, text=True)

    async def handle(client: ServerConnection) -> None:
        path = client.request.path if client.request is not None else "/"
        async with connect(upstream + path, max_size=None, compression=None,
                           ping_interval=None) as up:
            pumps = [asyncio.create_task(pump(client, up)),
                     asyncio.create_task(pump(up, client))]
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
            for task in pumps:
                task.cancel()

    async with serve(handle, "127.0.0.1", 0, max_size=None, compression=None,
                     ping_interval=None) as server:
        announce(server.sockets[0].getsockname()[1], browser)
        await stop.wait()


class _Pipe(asyncio.Protocol):
    """One side of a TCP relay: what it reads is written to its peer in the same
    callback (no task woken), reading paused while the peer cannot take more."""

    def __init__(self, peer: _Pipe | None = None) -> None:
        self.peer = peer
        self.transport: asyncio.Transport | None = None
        self.held: list[bytes] = []  # read before the peer's socket was open

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if self.peer is None or self.peer.transport is None:
            self.held.append(data)
        else:
            self.peer.transport.write(data)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.close()

    def pause_writing(self) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.resume_reading()


async def tcp_relay(browser: str, stop: asyncio.Event) -> None:
    address = urlsplit(browser)
    host, port = address.hostname or "127.0.0.1", address.port or 80
    loop = asyncio.get_running_loop()
    opening: set[asyncio.Task[None]] = set()

    def accepted() -> _Pipe:
        client = _Pipe()

        async def open_upstream() -> None:
            try:
                transport, up = await loop.create_connection(lambda: _Pipe(client),
                                                             host, port)
            except OSError:
                if client.transport is not None:
                    client.transport.close()
                return
            for data in client.held:  # (the client's opening request, as a rule)
                transport.write(data)
            client.peer, client.held = up, []

        task = loop.create_task(open_upstream())
        opening.add(task)
        task.add_done_callback(opening.discard)
        return client

    server = await loop.create_server(accepted, "127.0.0.1", 0)
    async with server:
        announce(server.sockets[0].getsockname()[1], browser)
        await stop.wait()


def announce(port: int, browser: str) -> None:
    print(f"http://127.0.0.1:{port}")
    print(f"ws://127.0.0.1:{port}{urlsplit(browser).path}", flush=True)


async def main() -> None:
    kind, browser = sys.argv[1:3]
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await (ws_relay if kind == "ws" else tcp_relay)(browser, stop)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("ws", "tcp"):
        sys.exit("usage: relay.py ws|tcp BROWSER_WS_URL")
    asyncio.run(main())
