"""A recorded trace served as a real CDP (or WebDriver BiDi) WebSocket endpoint on
loopback: a BiDi recording is served as BiDi, at ``/session``, with no ``/json``; a WIP
recording (Bun) as WIP, with ``/json/version`` only, and a command of a domain the
recording never used refused as WebKit refuses it (so a client finds it speaks WIP).

Each WebSocket connection plays one recorded connection (a recording with
reconnects plays its next one on the next connection, and closes the socket
where the recorded one was lost). See ``cdpnb.playback.script`` for how commands are
matched; a command the recording cannot answer gets a CDP error saying so.

Memory is bounded whatever the clients send: a message larger than
:data:`MAX_MESSAGE_BYTES` (or the recording's largest command) closes its connection
with 1009 before its payload is buffered, each connection buffers at most
:data:`MAX_QUEUED_FRAMES` received frames and :data:`WRITE_LIMIT_BYTES` of unread
replies before it stops reading, and the commands nothing answered are kept as a count,
a bounded count by method and the first :data:`UNMATCHED_KEPT` errors.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from cdpnb.playback.divergence import Divergence, learn_substitutions
from cdpnb.playback.script import STATE_READS, MatchMode, ReplayScript, Step
from cdpnb.protocol import (
    PROTOCOL_SPECS,
    Command,
    InvalidCommand,
    Message,
    ProtocolSpec,
    parse_command,
    protocol_spec,
    wire_text,
)
from cdpnb.protocol.specs import CDP
from cdpnb.runtime.waits import wait_for

__all__ = ["MAX_MESSAGE_BYTES", "MAX_QUEUED_FRAMES", "NO_RECORDED_REPLY", "OTHER_METHODS",
           "UNMATCHED_KEPT", "WRITE_LIMIT_BYTES", "ReplayServer", "UnmatchedCommands"]

log = logging.getLogger("cdpnb.replay")

#: The CDP error code for a command the recording has no reply for.
NO_RECORDED_REPLY = -32000


#: How long a gate waits for its command when the client already sent a later one:
#: commands sent microseconds apart by two tasks reach the player in either order.
#: Measured replaying the fourteen probe recordings side by side in one process: quiet,
#: the command that came second came within 14 ms; beside two CPU-bound processes it
#: took up to 686 ms (2 of 11 runs over 100 ms), and the 50 ms this was before let the
#: player go on without it, so one run in three gave a check another verdict than its
#: recording's. In those replays no client ever skipped such a command, so the wait
#: costs nothing unless a client does (then the gate waits this long, or stall_s if less).
REORDER_GRACE_S = 2.0

#: The largest message a client may send, unless the recording holds a larger command
#: (then twice that: see ``ReplayServer.max_message_bytes``). A replay answers only
#: recorded commands, and recorded commands are small: the largest in the probe
#: recordings of every backend (datasets/probes) is cdpnb's dialog bridge script, 2.9 KB;
#: Puppeteer 25.16's injected script is 10.8 KB. A command larger than every recorded one
#: can match none of them, so a limit above the recording only decides whether its
#: client gets an error reply or a closed connection, and it costs memory: websockets
#: holds a message being received plus the frames queued for the player, so 8 clients
#: sending messages just under the limit peak the server at about 2.8 x 8 x the limit
#: (measured on CPython 3.11, websockets 17.4: +91 MiB at 4 MiB, +177 MiB at 8 MiB,
#: +353 MiB at 16 MiB; the 256 MiB limit this replaced let 8 clients sending 200 MB
#: take it to 2.2-2.9 GB). websockets reads a frame's length from its header and closes a
#: larger one with 1009 "frame with N bytes exceeds limit of 4194304 bytes" before
#: buffering its payload (a message sent in fragments, at the fragment that passes the
#: limit); the server goes on serving its other clients.
MAX_MESSAGE_BYTES = 4 * 1024 * 1024

#: Received frames a connection queues for its player before it stops reading its
#: socket (websockets' ``max_queue`` high-water mark; reading resumes at 1). Frames queue
#: while the player is busy (another client's command, or a reply waiting for a client
#: that is not reading), so this bounds a connection to about 7 x the message limit
#: (5 queued, one being received, one being answered); websockets' default, 16, would
#: let one slow client hold 19 x. Lower costs a client that pipelines thousands of
#: small commands (the pauses and resumes of reading): 100k took 3.8 s at 4, 5.0 s at 1
#: and 2.7 s at 16.
MAX_QUEUED_FRAMES = 4

#: Bytes of replies and events a connection buffers for a client that is not reading
#: before the player waits for it (asyncio's write high-water mark; websockets' default,
#: set here so the bound is visible). A recorded reply larger than this still goes out
#: whole: its size is the recording's.
WRITE_LIMIT_BYTES = 32 * 1024

#: The unmatched commands kept in full (their error messages); the rest are counted.
UNMATCHED_KEPT = 100
#: Distinct methods counted one by one in ``UnmatchedCommands.by_method``; commands of
#: further methods are counted under :data:`OTHER_METHODS`.
UNMATCHED_METHODS_KEPT = 1000
OTHER_METHODS = "(other methods)"
#: How much of a client's method name, session id and params an error message repeats.
_NAME_CHARS = 200
_PARAMS_CHARS = 300
#: The most of a divergence (the recorded command and the params that differ) the first
#: unmatched command's error reply carries; ``divergence`` keeps it whole.
_DIVERGENCE_CHARS = 400


@dataclass(frozen=True, slots=True)
class UnmatchedCommands:
    """The commands a replay's clients sent that the recording had no reply for.

    ``len()`` is their number (``count``); ``by_method`` counts them by method (the
    first :data:`UNMATCHED_METHODS_KEPT` distinct methods, the rest under
    :data:`OTHER_METHODS`); ``first`` holds the error messages of the first
    :data:`UNMATCHED_KEPT`, as the client got them. Bounded, however many come.
    """

    count: int = 0
    by_method: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    first: tuple[str, ...] = ()

    def __len__(self) -> int:
        return self.count

    def __repr__(self) -> str:
        if not self.count:
            return "<UnmatchedCommands: none>"
        top = Counter(self.by_method).most_common(3)
        methods = ", ".join(f"{method} x{n}" for method, n in top)
        more = len(self.by_method) - len(top)
        return (f"<UnmatchedCommands {self.count}: {methods}"
                f"{f' and {more} more methods' if more > 0 else ''}>")


class _UnmatchedLog:
    """The server's running record behind :class:`UnmatchedCommands` (bounded)."""

    def __init__(self) -> None:
        self.count = 0
        self.by_method: Counter[str] = Counter()
        self.first: list[str] = []

    def add(self, method: str, text: str) -> None:
        self.count += 1
        if method not in self.by_method and len(self.by_method) >= UNMATCHED_METHODS_KEPT:
            method = OTHER_METHODS
        self.by_method[method] += 1
        if len(self.first) < UNMATCHED_KEPT:
            self.first.append(text)

    def snapshot(self) -> UnmatchedCommands:
        return UnmatchedCommands(self.count, MappingProxyType(dict(self.by_method)),
                                 tuple(self.first))


class ReplayServer:
    """Serves ``messages`` (one recorded run) to CDP clients on 127.0.0.1.

    ``speed=None`` plays events as fast as the client takes them; ``speed=1.0`` at
    the recorded pace (2.0 twice as fast). ``stall_s`` is how long the script waits
    for a command the client has not sent before moving past its reply.
    """

    def __init__(self, messages: list[Message] | tuple[Message, ...], *,
                 browser: dict[str, Any] | None = None, speed: float | None = None,
                 stall_s: float = 3.0, protocol: str | ProtocolSpec = CDP,
                 match: MatchMode = "strict") -> None:
        try:
            #: The recording's protocol: how the replay faces its clients (its
            #: ``replay`` face: path, /json endpoints) and frames its messages.
            self.protocol_spec = protocol_spec(protocol)
        except ValueError:
            names = [repr(spec.name) for spec in PROTOCOL_SPECS]
            raise ValueError(f"protocol must be {', '.join(names[:-1])} or {names[-1]}, got "
                             f"{protocol!r}") from None
        self.protocol = self.protocol_spec.name
        #: The domains the recording's commands used (a WIP replay refuses the others
        #: as WebKit does: "'session' domain was not found").
        self.domains = frozenset(m.method.partition(".")[0] for m in messages
                                 if isinstance(m, Command))
        if speed is not None and (isinstance(speed, bool) or not isinstance(speed, int | float)
                                  or speed <= 0):
            raise ValueError(f"speed must be None (as fast as possible) or a positive factor, "
                             f"got {speed!r}")
        if match not in ("strict", "loose"):
            raise ValueError(f"match must be 'strict' or 'loose', got {match!r}")
        self.match: MatchMode = match
        #: The first command a client sent that the recording had no answer for (with the
        #: recorded command it came in place of): None while every command matched.
        self.divergence: Divergence | None = None
        self.scripts = ReplayScript.connections(list(messages))
        self.browser = dict(browser or {})
        self.speed = speed
        self.stall_s = stall_s
        self.connections = 0
        #: The largest message a client may send: MAX_MESSAGE_BYTES, or twice the
        #: recording's largest command (room for a client's whitespace and escapes)
        #: when that is more, so whatever was recorded can be replayed.
        largest = max((script.largest_command for script in self.scripts), default=0)
        self.max_message_bytes = max(MAX_MESSAGE_BYTES, 2 * largest)
        self._unmatched = _UnmatchedLog()
        self._server: Server | None = None
        self._players: set[asyncio.Task[None]] = set()
        self.port = 0

    @property
    def unmatched(self) -> UnmatchedCommands:
        """The commands clients sent that the recording had no reply for (bounded)."""
        return self._unmatched.snapshot()

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def cdp_url(self) -> str:
        """The WebSocket to connect to (a BiDi one for a BiDi recording)."""
        return f"ws://127.0.0.1:{self.port}{self.protocol_spec.replay.path}"

    async def start(self) -> ReplayServer:
        self._server = await serve(self._serve, "127.0.0.1", 0, process_request=self._http,
                                   max_size=self.max_message_bytes,
                                   max_queue=MAX_QUEUED_FRAMES, write_limit=WRITE_LIMIT_BYTES,
                                   compression=None, ping_interval=None)
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
        json_endpoints = self.protocol_spec.replay.json
        if not json_endpoints:
            # As Firefox: a WebDriver BiDi endpoint has no DevTools HTTP endpoints (nor
            # a WebDriver classic one, whose recording is served in CDP's framing).
            return connection.respond(404, f"a WebDriver {self.protocol} replay has no /json "
                                      "endpoints\n")
        if request.path.startswith("/json/version") and "version" in json_endpoints:
            body: Any = {**self.browser, "Browser": self.browser.get("Browser", "cdpnb-replay"),
                         "webSocketDebuggerUrl": self.cdp_url}
        elif "list" not in json_endpoints:
            # As Bun 1.4.5: /json/version, and no list of targets.
            return connection.respond(404, "")
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
        player = _Player(self, self.scripts[index], ws, self._unmatched,
                         close_at_end=not last, connection=index + 1)
        task = asyncio.current_task()
        assert task is not None
        self._players.add(task)
        try:
            await player.run()
        finally:
            self._players.discard(task)


class _Player:
    def __init__(self, server: ReplayServer, script: ReplayScript, ws: ServerConnection,
                 unmatched: _UnmatchedLog, *, close_at_end: bool, connection: int = 1) -> None:
        self.server = server
        self.unmatched = unmatched
        self.script = script
        self.connection = connection
        self.matcher = script.matcher(server.match)
        self._loose_seen = 0
        #: Recorded string -> the client's own (JSON-escaped), learnt from loose matches.
        self.substitutions: dict[str, str] = {}
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
            answer = self._answer(frame)
            # Not held while the send waits for a client that does not read its replies:
            # eight such clients would each keep a command of up to the message limit.
            del frame
            if answer is not None:
                await self.ws.send(answer)

    def _answer(self, frame: str | bytes) -> str | None:
        """The reply to send at once to the client's ``frame``, or None when the
        script sends it in its turn."""
        protocol = self.server.protocol_spec
        bidi = protocol.bidi_messages
        command = parse_command(frame)
        if isinstance(command, InvalidCommand):
            # What a browser does with a frame that is no command: an error reply (with
            # the id when there was one), and the connection stays up.
            reply = command.reply()
            if bidi:
                reply = {"type": "error", "id": command.id, "error": "invalid argument",
                         "message": command.message}
            return wire_text(reply)
        cid, method, params, session = (command.id, command.method, command.params,
                                        command.session_id)
        if method in STATE_READS:
            read = self.script.read_answer(method, session, params, self.cursor)
            if read is not None:
                return Step(read.mono, reply=read).frame(cid, protocol)
        number = self.matcher.match(method, session, params)
        if number is None and protocol.replay.refuses_unknown_domains \
                and method.partition(".")[0] not in self.server.domains:
            # What the recorded WebKit inspector answers for a domain it lacks.
            domain = _cut(method.partition(".")[0], _NAME_CHARS)
            return wire_text({"id": cid, "error": {
                "code": -32601, "message": f"'{domain}' domain was not found"}})
        if number is None:
            name = _cut(method, _NAME_CHARS)
            where = f" on session {_cut(session, _NAME_CHARS)}" if session else ""
            text = (f"cdpnb replay: the recording has no (further) reply for {name}{where} "
                    f"with params {_excerpt(params, len(frame))}")
            self.unmatched.add(name, text)
            if self.server.divergence is None:
                # The first one: the reply says where the client left its recording.
                self.server.divergence = Divergence(
                    name, session, params if len(frame) <= _PARAMS_CHARS * 64 else {},
                    self.script.expected(self.matcher.used, self.cursor), self.connection)
                text = f"{text}; {_cut(str(self.server.divergence), _DIVERGENCE_CHARS)}"
            answer: dict[str, Any] = {"id": cid, "error": {"code": NO_RECORDED_REPLY,
                                                           "message": text}}
            if bidi:
                answer = {"type": "error", "id": cid, "error": "unknown error", "message": text}
            elif session is not None:
                answer["sessionId"] = session
            return wire_text(answer)
        if self.matcher.loose != self._loose_seen:
            # Matched loosely: the client put fresh values where the recorded client put
            # others (Playwright's utility world is named after a random page guid). What
            # the browser said back names the recorded ones; the client must read its own.
            self._loose_seen = self.matcher.loose
            self.substitutions.update(learn_substitutions(
                self.script.commands[number].params, params))
        if number in self.deferred:
            self.deferred.discard(number)
            step = self.script.steps[self.script.reply_of[number]]
            return self._substituted(step.frame(cid, protocol))
        self.arrived[number] = cid
        self.wake.set()
        return None

    async def _play(self) -> None:
        steps = self.script.steps
        protocol = self.server.protocol_spec
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
                        budget = (min(REORDER_GRACE_S, self.server.stall_s) if ahead
                                  else self.server.stall_s)
                        self._gate_deadline = time.monotonic() + budget
                    left = self._gate_deadline - time.monotonic()
                    if left > 0 and await self._stall(left):
                        continue  # a command came in; look again
            elif step.event is not None:
                await self._pace(step.mono)
                await self.ws.send(self._substituted(step.frame(protocol=protocol)))
            elif step.command in self.arrived:
                await self._pace(step.mono)
                await self.ws.send(self._substituted(step.frame(
                    self.arrived.pop(step.command), protocol)))
            else:
                # Its command has not come (the client skipped it, or sent later ones
                # first): answer it the moment it does.
                self.deferred.add(step.command)
            self.cursor += 1

    def _substituted(self, text: str) -> str:
        for recorded, own in self.substitutions.items():
            if recorded in text:
                text = text.replace(recorded, own)
        return text

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


#: No circular check: params parsed from JSON cannot hold a cycle, and its record of the
#: containers being written would keep a big command alive (until a garbage collection)
#: when the excerpt stops part way.
_EXCERPT_ENCODER = json.JSONEncoder(sort_keys=True, check_circular=False)
#: Commands up to this size are written out whole by the C encoder (fast: a client may
#: send hundreds of thousands); larger ones piece by piece, only as far as the excerpt.
_SMALL_COMMAND = 64 * 1024


def _excerpt(params: dict[str, Any], size: int, limit: int = _PARAMS_CHARS) -> str:
    """The first ``limit`` characters of ``params`` as JSON, writing out no more of a
    command of ``size`` bytes than that when it is large."""
    try:
        if size <= _SMALL_COMMAND:
            return json.dumps(params, sort_keys=True)[:limit]
        pieces: list[str] = []
        length = 0
        for piece in _EXCERPT_ENCODER.iterencode(params):
            pieces.append(piece)
            length += len(piece)
            if length >= limit:
                break
        return "".join(pieces)[:limit]
    except (RecursionError, ValueError):
        # Nested deeper than this stack can write back: say so rather than fail the reply.
        return "(nested too deep to show)"


def _cut(name: str, limit: int) -> str:
    """A client's method name or session id as an error message repeats it: whole when
    it is of a sane length (CDP's are under 60 characters), else its start."""
    return name if len(name) <= limit else f"{name[:limit]}…"
