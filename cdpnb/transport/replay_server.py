"""A recorded trace served as a real CDP (or WebDriver BiDi) WebSocket endpoint on
loopback: a BiDi recording is served as BiDi, at ``/session``, with no ``/json``.

Each WebSocket connection plays one recorded connection (a recording with
reconnects plays its next one on the next connection, and closes the socket
where the recorded one was lost). See ``replay_script`` for how commands are
matched; a command the recording cannot answer gets a CDP error saying so.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from typing import Any

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from cdpnb.protocol import InvalidCommand, Message, parse_command, wire_text
from cdpnb.transport.replay_script import BIDI_REPLAY_PATH, REPLAY_PATH, ReplayScript
from cdpnb.transport.waits import wait_for

__all__ = ["NO_RECORDED_REPLY", "ReplayServer"]

log = logging.getLogger("cdpnb.replay")

#: The CDP error code for a command the recording has no reply for.
NO_RECORDED_REPLY = -32000


#: How long a gate waits for its command when the client already sent a later one:
#: commands sent microseconds apart by two tasks reach the player in either order.
REORDER_GRACE_S = 0.05

class ReplayServer:
    """Serves ``messages`` (one recorded run) to CDP clients on 127.0.0.1.

    ``speed=None`` plays events as fast as the client takes them; ``speed=1.0`` at
    the recorded pace (2.0 twice as fast). ``stall_s`` is how long the script waits
    for a command the client has not sent before moving past its reply.
    """

    def __init__(self, messages: list[Message] | tuple[Message, ...], *,
                 browser: dict[str, Any] | None = None, speed: float | None = None,
                 stall_s: float = 3.0, protocol: str = "cdp") -> None:
        if protocol not in ("cdp", "bidi"):
            raise ValueError(f"protocol must be 'cdp' or 'bidi', got {protocol!r}")
        self.protocol = protocol
        if speed is not None and (isinstance(speed, bool) or not isinstance(speed, int | float)
                                  or speed <= 0):
            raise ValueError(f"speed must be None (as fast as possible) or a positive factor, "
                             f"got {speed!r}")
        self.scripts = ReplayScript.connections(list(messages))
        self.browser = dict(browser or {})
        self.speed = speed
        self.stall_s = stall_s
        self.connections = 0
        self.unmatched: list[str] = []
        self._server: Server | None = None
        self._players: set[asyncio.Task[None]] = set()
        self.port = 0

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def cdp_url(self) -> str:
        """The WebSocket to connect to (a BiDi one for a BiDi recording)."""
        path = BIDI_REPLAY_PATH if self.protocol == "bidi" else REPLAY_PATH
        return f"ws://127.0.0.1:{self.port}{path}"

    async def start(self) -> ReplayServer:
        self._server = await serve(self._serve, "127.0.0.1", 0, process_request=self._http,
                                   max_size=256 * 1024 * 1024, compression=None,
                                   ping_interval=None)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def close(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
        # Players first: one waiting at a gate for its client (up to stall_s) would hold
        # up wait_closed, which waits for every connection's handler to return.
        for task in list(self._players):
            task.cancel()
        await asyncio.gather(*self._players, return_exceptions=True)
        if server is not None:
            await server.wait_closed()

    def _http(self, connection: ServerConnection, request: Request) -> Response | None:
        if not request.path.startswith("/json"):
            return None
        if self.protocol == "bidi":
            # As Firefox: a WebDriver BiDi endpoint has no DevTools HTTP endpoints.
            return connection.respond(404, "a WebDriver BiDi replay has no /json endpoints\n")
        if request.path.startswith("/json/version"):
            body: Any = {**self.browser, "Browser": self.browser.get("Browser", "cdpnb-replay"),
                         "webSocketDebuggerUrl": self.cdp_url}
        elif request.path.startswith("/json/list") or request.path.rstrip("/") == "/json":
            body = []
        else:
            return connection.respond(404, f"the replay endpoint has no {request.path}\n")
        data = json.dumps(body).encode()
        headers = Headers([("Content-Type", "application/json"),
                           ("Content-Length", str(len(data)))])
        return Response(200, "OK", headers, data)

    async def _serve(self, ws: ServerConnection) -> None:
        index = min(self.connections, len(self.scripts) - 1)
        self.connections += 1
        last = index == len(self.scripts) - 1
        player = _Player(self, self.scripts[index], ws, close_at_end=not last)
        task = asyncio.current_task()
        assert task is not None
        self._players.add(task)
        try:
            await player.run()
        finally:
            self._players.discard(task)


class _Player:
    def __init__(self, server: ReplayServer, script: ReplayScript, ws: ServerConnection,
                 *, close_at_end: bool) -> None:
        self.server = server
        self.script = script
        self.matcher = script.matcher()
        self.ws = ws
        self.close_at_end = close_at_end
        self.cursor = 0
        self.arrived: dict[int, int] = {}  # recorded command -> the client's id for it
        self.deferred: set[int] = set()  # recorded commands whose reply step went by early
        self.wake = asyncio.Event()
        #: The gate waited at (cursor, client ahead) and until when.
        self._gate: tuple[int, bool] | None = None
        self._gate_deadline = 0.0
        self._last_real = time.monotonic()
        self._last_mono: float | None = None

    async def run(self) -> None:
        reader = asyncio.create_task(self._read())
        try:
            await self._play()
            if self.close_at_end:
                await self.ws.close(1011, "the recorded connection was lost here")
                return
            await reader
        except ConnectionClosed:
            pass
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, ConnectionClosed):
                await reader

    async def _read(self) -> None:
        async for frame in self.ws:
            await self._on_command(frame)

    async def _on_command(self, frame: str | bytes) -> None:
        bidi = self.server.protocol == "bidi"
        command = parse_command(frame)
        if isinstance(command, InvalidCommand):
            # What a browser does with a frame that is no command: an error reply (with
            # the id when there was one), and the connection stays up.
            reply = command.reply()
            if bidi:
                reply = {"type": "error", "id": command.id, "error": "invalid argument",
                         "message": command.message}
            await self.ws.send(wire_text(reply))
            return
        cid, method, params, session = (command.id, command.method, command.params,
                                        command.session_id)
        number = self.matcher.match(method, session, params)
        if number is None:
            where = f" on session {session}" if session else ""
            text = (f"cdpnb replay: the recording has no (further) reply for {method}{where} "
                    f"with params {_excerpt(params)}")
            self.server.unmatched.append(text)
            answer: dict[str, Any] = {"id": cid, "error": {"code": NO_RECORDED_REPLY,
                                                           "message": text}}
            if bidi:
                answer = {"type": "error", "id": cid, "error": "unknown error", "message": text}
            elif session is not None:
                answer["sessionId"] = session
            await self.ws.send(wire_text(answer))
            return
        if number in self.deferred:
            self.deferred.discard(number)
            step = self.script.steps[self.script.reply_of[number]]
            await self.ws.send(step.frame(cid, self.server.protocol))
            return
        self.arrived[number] = cid
        self.wake.set()

    async def _play(self) -> None:
        steps = self.script.steps
        while self.cursor < len(steps):
            step = steps[self.cursor]
            if step.gate:
                if step.command not in self.arrived:
                    # The client sent a later command first: it may have skipped this one,
                    # or sent the two in the other order (a supervisor's background
                    # Runtime.releaseObject and the caller's next Page.navigate race). Wait
                    # a moment for it rather than play its events before it is sent.
                    # One budget per gate: commands arriving meanwhile (not this one)
                    # do not start it again.
                    ahead = self._client_is_ahead()
                    if self._gate != (self.cursor, ahead):
                        self._gate = (self.cursor, ahead)
                        budget = REORDER_GRACE_S if ahead else self.server.stall_s
                        self._gate_deadline = time.monotonic() + budget
                    left = self._gate_deadline - time.monotonic()
                    if left > 0 and await self._stall(left):
                        continue  # a command came in; look again
            elif step.event is not None:
                await self._pace(step.mono)
                await self.ws.send(step.frame(protocol=self.server.protocol))
            elif step.command in self.arrived:
                await self._pace(step.mono)
                await self.ws.send(step.frame(self.arrived.pop(step.command),
                                              self.server.protocol))
            else:
                # Its command has not come (the client skipped it, or sent later ones
                # first): answer it the moment it does.
                self.deferred.add(step.command)
            self.cursor += 1

    def _client_is_ahead(self) -> bool:
        gates = self.script.gate_of
        return any(gates[number] > self.cursor for number in self.arrived)

    async def _stall(self, timeout: float) -> bool:
        """Wait up to ``timeout`` for the client's next command; False when none came."""
        self.wake.clear()
        try:
            await wait_for(self.wake.wait(), timeout)
        except TimeoutError:
            return False
        # Waiting for the client is not part of the recorded pace.
        self._last_real = time.monotonic()
        return True

    async def _pace(self, mono: float) -> None:
        speed = self.server.speed
        if speed is not None and self._last_mono is not None:
            due = self._last_real + (mono - self._last_mono) / speed
            delay = due - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
        self._last_mono = mono
        self._last_real = time.monotonic()


def _excerpt(params: dict[str, Any], limit: int = 300) -> str:
    try:
        return json.dumps(params, sort_keys=True)[:limit]
    except (RecursionError, ValueError):
        # Nested deeper than this stack can write back: say so rather than fail the reply.
        return "(nested too deep to show)"
