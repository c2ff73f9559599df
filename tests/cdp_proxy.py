"""A WebSocket proxy in front of a real browser that can inject faults.

The browser stays real; the proxy only adds what a browser cannot be made to do
on demand: drop the connection, send garbage frames, fail one method.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.asyncio.server import Server, ServerConnection, serve


class CDPProxy:
    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.fail_methods: dict[str, dict[str, Any]] = {}
        self.mute = False
        self.connections: list[tuple[ServerConnection, ClientConnection]] = []
        self.opened = 0  # connections made to the browser so far
        self._server: Server | None = None
        self.port = 0

    @property
    def url(self) -> str:
        path = self.upstream.split("/", 3)[3]
        return f"ws://127.0.0.1:{self.port}/{path}"

    async def start(self) -> CDPProxy:
        self._server = await serve(self._handle, "127.0.0.1", 0, max_size=None,
                                   compression=None, ping_interval=None)
        self.port = next(iter(self._server.sockets)).getsockname()[1]
        return self

    async def close(self) -> None:
        await self.drop()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def drop(self) -> None:
        """Close every client connection, as an idle-dropping proxy would."""
        for client, upstream in list(self.connections):
            await client.close()
            await upstream.close()
        self.connections.clear()

    async def inject(self, frame: str | bytes) -> None:
        """Send ``frame`` to every connected client as if the browser had."""
        for client, _ in self.connections:
            await client.send(frame)

    async def _handle(self, client: ServerConnection) -> None:
        async with connect(self.upstream, max_size=None, compression=None,
                           ping_interval=None) as upstream:
            pair = (client, upstream)
            self.opened += 1
            self.connections.append(pair)

            async def down() -> None:
                async for message in upstream:
                    await client.send(message)

            async def up() -> None:
                async for message in client:
                    if self.mute:
                        continue
                    msg = json.loads(message)
                    failure = self.fail_methods.get(msg.get("method", ""))
                    if failure is not None:
                        reply = {"id": msg["id"], "error": failure}
                        if "sessionId" in msg:
                            reply["sessionId"] = msg["sessionId"]
                        await client.send(json.dumps(reply))
                        continue
                    await upstream.send(message)

            tasks = [asyncio.create_task(down()), asyncio.create_task(up())]
            with contextlib.suppress(Exception):
                await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in tasks:
                task.cancel()
            if pair in self.connections:
                self.connections.remove(pair)
            await client.close()
