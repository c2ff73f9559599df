"""The recording proxy's I/O: a loopback endpoint that a client takes for the browser.

HTTP: the DevTools discovery endpoints (``/json/version``, ``/json/list``, ``/json``,
``/json/protocol``, ``/json/new``, ...) are asked of the browser and answered with
every URL that named the browser's host and port naming the proxy's instead, so a
client that discovers (Playwright's ``connect_over_cdp``, Puppeteer's ``browserURL``,
chrome-devtools-mcp's ``--browserUrl``) connects through the proxy without knowing.
WebSocket: each client connection (a browser or page socket, BiDi's ``/session``) is
relayed to the same path on the browser, frame by frame, by its own
:class:`~cdpnb.proxy.relay.Relay`, and recorded to a trace of its own (connection 1 to
``record``, connection N to ``record`` with ``.N`` before its suffixes).

Safety: bound to 127.0.0.1 only; a request whose ``Host`` is not a loopback name, or
whose ``Origin`` is not the proxy's own, is refused 403 (a web page the user opens
cannot drive the browser through it, nor can a DNS-rebound name); each client gets
its own browser socket, so its sessions are its own; messages are relayed without a
size limit (as a browser's are), and held frames are bounded by their rules.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from websockets.asyncio.client import ClientConnection, connect
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed, WebSocketException
from websockets.http11 import Request, Response

from cdpnb.protocol import Fault, ProtocolSpec, protocol_spec
from cdpnb.protocol.specs import BIDI, CDP
from cdpnb.proxy.faults import FaultRule
from cdpnb.proxy.relay import Action, Close, ClosedBy, Later, Record, Relay, Send, Sink
from cdpnb.proxy.webdriver import Forwarder, WebDriverFront, webdriver_path
from cdpnb.trace.recorder import Recorder

__all__ = ["MAX_RECORD_BYTES", "ProxyServer", "connection_path", "refused_for"]

log = logging.getLogger("cdpnb.proxy")

#: The most one connection's recording may hold: a client or browser that floods the
#: proxy stops being recorded there (said in the file), it does not fill the disk.
MAX_RECORD_BYTES = 4 << 30

#: How long the proxy waits for the browser: its discovery answer, its socket opening.
UPSTREAM_TIMEOUT_S = 10.0
_LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "[::1]"})


def connection_path(record: Path, number: int) -> Path:
    """Where connection ``number`` is recorded: ``record`` itself for the first,
    ``run.2.jsonl`` (``run.2.jsonl.gz``) for the second, and so on."""
    if number == 1:
        return record
    name = record.name
    stem, dot, suffixes = name.partition(".")
    return record.with_name(f"{stem}.{number}{dot}{suffixes}" if dot else f"{name}.{number}")


def refused_for(host: str, origin: str | None, port: int | None) -> str | None:
    """Why a request with this ``Host`` and ``Origin`` is refused; None: served. The
    Host must be a loopback name (a DNS-rebound name is not), and an Origin, if any, the
    endpoint's own: what Chromium does without --remote-allow-origins (a web page the
    user opens may not drive the browser)."""
    name = host.rsplit(":", 1)[0] if not host.startswith("[") else host.split("]")[0] + "]"
    if name not in _LOOPBACK_HOSTS:
        return "cdpnb proxy: Host must be a loopback name\n"
    own = {f"http://{host}"}
    if port is not None:
        own |= {f"http://127.0.0.1:{port}", f"http://localhost:{port}"}
    if origin is not None and origin.rstrip("/") not in own:
        return "cdpnb proxy: requests from a web page (an Origin header) are refused\n"
    return None


def _now() -> tuple[float, float]:
    return time.time(), time.monotonic()


class ProxyServer:
    """Serves one browser endpoint to any number of clients, recording each.

    ``upstream`` is the browser's endpoint: a CDP browser WebSocket
    (``ws://HOST:PORT/devtools/browser/ID``), its ``http://HOST:PORT``, or a WebDriver
    BiDi WebSocket (``ws://HOST:PORT/session``); ``protocol`` says which it speaks.
    """

    def __init__(self, upstream: str, *, protocol: str | ProtocolSpec = CDP,
                 record: Path | None = None,
                 faults: Sequence[FaultRule] = (), seed: int | None = None,
                 redact: bool | Sequence[str] = False, backend: dict[str, Any] | None = None,
                 browser: dict[str, Any] | None = None, cdpnb_version: str = "",
                 webdriver: bool = False, max_record_bytes: int = MAX_RECORD_BYTES) -> None:
        parts = urlsplit(upstream)
        if parts.scheme not in ("ws", "wss", "http", "https") or not parts.hostname:
            raise ValueError(f"the proxy needs the browser's ws:// or http:// endpoint, got "
                             f"{upstream!r}")
        self.upstream = upstream
        #: What the browser speaks, and its facts (a WebDriver server found behind an
        #: http:// URL makes it WebDriver BiDi).
        self.protocol_spec = protocol_spec(protocol)
        self._up_host = parts.netloc
        self._up_http = f"http://{parts.netloc}"
        self._up_ws = f"ws://{parts.netloc}"
        #: The path a client gets when it connects to ``ws_url``.
        self._up_path = parts.path if parts.scheme.startswith("ws") and parts.path else ""
        self.record = record
        if isinstance(max_record_bytes, bool) or not isinstance(max_record_bytes, int) \
                or max_record_bytes < 1:
            raise ValueError(f"max_record_bytes must be a whole number of bytes >= 1, got "
                             f"{max_record_bytes!r}")
        self.max_record_bytes = max_record_bytes
        self.faults = tuple(faults)
        self.seed = seed
        self.redact = redact
        self.backend = backend
        self.browser = browser
        self.cdpnb_version = cdpnb_version
        self.port = 0
        self.connections = 0
        #: Each connection's recording, in the order they came.
        self.recordings: list[Path] = []
        #: Each connection's relay (its folded state: ``relay.state``).
        self.relays: list[Relay] = []
        self.refused = 0
        self._server: Server | None = None
        self._handlers: set[asyncio.Task[None]] = set()
        self._timers: set[asyncio.TimerHandle] = set()
        #: A WebDriver server upstream: its HTTP side, forwarded (``webdriver.py``).
        self._front: WebDriverFront | None = None
        self.webdriver = webdriver
        #: In front of a WebDriver server: where its HTTP exchanges are recorded.
        self.http_recording: Path | None = None

    @property
    def protocol(self) -> str:
        """What the browser speaks: ``cdp`` or ``bidi``."""
        return self.protocol_spec.name

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``: where a client discovers (CDP), or the WebDriver
        server's HTTP side (Selenium's ``command_executor``) in front of one."""
        if self._front is not None:
            return f"http://127.0.0.1:{self._front.port}"
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        """The WebSocket a client connects to: the browser's path on the proxy's port."""
        path = self._up_path or self.protocol_spec.ws_path
        return f"ws://127.0.0.1:{self.port}{path}"

    async def start(self) -> ProxyServer:
        if "version" in self.protocol_spec.json_endpoints and not self._up_path \
                and not self.webdriver:
            await asyncio.to_thread(self._discover)
        self._server = await serve(self._serve, "127.0.0.1", 0, process_request=self._http,
                                   max_size=None, compression=None, ping_interval=None)
        self.port = self._server.sockets[0].getsockname()[1]
        if self.webdriver:
            forwarder = Forwarder(self._up_http, self._relay_url, None)
            self._front = await WebDriverFront(forwarder, self._refused_for).start()
            if self.record is not None:
                # (set before the loop runs again: no request can come before it)
                self.http_recording = webdriver_path(self.record)
                forwarder.recorder = Recorder(
                    self.http_recording, redact=self.redact, endpoint=self._up_http,
                    backend=self.backend, browser=self.browser,
                    cdpnb_version=self.cdpnb_version,
                    # The proxy's own URL: a client writes it into its requests (Selenium's
                    # se:remoteUrl), and a replay on another port reads it back as this.
                    meta={"proxy": {"webdriver_http": True, "upstream": self.upstream,
                                    "url": self._front.url}})
        return self

    def _discover(self) -> None:
        """An http:// endpoint: the browser socket that /json/version names, or, where
        there is none and ``/status`` answers as WebDriver does, a WebDriver server
        (its BiDi sockets come from the sessions made over HTTP)."""
        try:
            found = json.loads(self._fetch("/json/version")).get("webSocketDebuggerUrl", "")
        except (OSError, ValueError):
            found = ""
        if found:
            self._up_path = urlsplit(found).path
            return
        try:
            status = json.loads(self._fetch("/status"))
        except (OSError, ValueError) as exc:
            raise ValueError(f"{self.upstream} answers neither /json/version (a CDP "
                             f"browser) nor /status (a WebDriver server): {exc}") from exc
        if not isinstance(status, dict) or "value" not in status:
            raise ValueError(f"{self.upstream}/status is not a WebDriver server's answer")
        self.webdriver, self.protocol_spec = True, BIDI

    def _relay_url(self, server_url: str) -> str:
        """The server's ``webSocketUrl`` made to point at the relay (same path)."""
        return f"ws://127.0.0.1:{self.port}{urlsplit(server_url).path}"

    async def close(self) -> None:
        if self._front is not None:
            await self._front.close()
        server, self._server = self._server, None
        if server is not None:
            server.close()
        for timer in list(self._timers):
            timer.cancel()
        for task in list(self._handlers):
            task.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)
        if server is not None:
            await server.wait_closed()

    # -- HTTP: discovery ------------------------------------------------------------

    def _refused_for(self, host: str, origin: str | None) -> str | None:
        """Why a request with this ``Host`` and ``Origin`` is refused (counted)."""
        why = refused_for(host, origin, self.port)
        if why is not None:
            self.refused += 1
        return why

    def _refusal(self, connection: ServerConnection, request: Request) -> Response | None:
        why = self._refused_for(request.headers.get("Host", ""),
                                request.headers.get("Origin"))
        return None if why is None else connection.respond(403, why)

    async def _http(self, connection: ServerConnection, request: Request) -> Response | None:
        refused = self._refusal(connection, request)
        if refused is not None:
            return refused
        if request.headers.get("Upgrade", "").lower() == "websocket":
            return None
        if not request.path.startswith("/json"):
            return connection.respond(404, f"cdpnb proxy: no {request.path[:80]}\n")
        if not self.protocol_spec.json_endpoints:
            return connection.respond(404, "a WebDriver BiDi endpoint has no /json\n")
        try:
            body = await asyncio.to_thread(self._fetch, request.path)
        except urllib.error.HTTPError as exc:
            return connection.respond(exc.code, exc.read().decode("utf-8", "replace"))
        except (OSError, ValueError) as exc:
            return connection.respond(502, f"cdpnb proxy: the browser did not answer "
                                      f"{request.path[:80]}: {exc}\n")
        here = f"127.0.0.1:{self.port}".encode()
        port = self._up_host.rpartition(":")[2]
        for name in {self._up_host, f"localhost:{port}", f"127.0.0.1:{port}"}:
            body = body.replace(name.encode(), here)
        headers = Headers([("Content-Type", "application/json; charset=UTF-8"),
                           ("Content-Length", str(len(body)))])
        return Response(200, "OK", headers, body)

    def _fetch(self, path: str) -> bytes:
        request = urllib.request.Request(self._up_http + path, method="GET")
        with urllib.request.urlopen(request, timeout=UPSTREAM_TIMEOUT_S) as response:
            data: bytes = response.read()
        return data

    # -- WebSocket: relay --------------------------------------------------------------

    def _sink(self, recorder: Recorder | None) -> Sink | None:
        """The relay's recording sink: the recorder, until its file holds
        ``max_record_bytes`` (a peer that floods cannot fill the disk); then one fault
        line says where and why it stopped, and nothing more is written."""
        if recorder is None:
            return None
        limit = self.max_record_bytes
        stopped = False

        def sink(message: Record, wire: bytes | None) -> None:
            nonlocal stopped
            if stopped:
                return
            if recorder.size >= limit:
                stopped = True
                recorder(Fault("record-limit", f"the recording reached {limit} bytes "
                               "(max_record_bytes); nothing after this line is recorded",
                               "", message.wall, message.mono))
                recorder.flush()
                return
            recorder(message, wire)

        return sink

    def _recorder(self, number: int, path: str) -> Recorder | None:
        if self.record is None:
            return None
        file = connection_path(self.record, number)
        meta = {"proxy": {"connection": number, "path": path, "upstream": self.upstream,
                          "faults": [str(rule) for rule in self.faults], "seed": self.seed}}
        recorder = Recorder(file, redact=self.redact, endpoint=self._up_ws + path,
                            backend=self.backend, browser=self.browser, meta=meta,
                            cdpnb_version=self.cdpnb_version)
        if not self.protocol_spec.implied:
            recorder.set_protocol(self.protocol)
        self.recordings.append(file)
        return recorder

    async def _serve(self, client: ServerConnection) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        self.connections += 1
        number = self.connections
        path = client.request.path if client.request is not None else "/"
        try:
            try:
                browser = await connect(self._up_ws + path, max_size=None, compression=None,
                                        ping_interval=None, open_timeout=UPSTREAM_TIMEOUT_S)
            except (OSError, WebSocketException, TimeoutError) as exc:
                await client.close(1011, f"cdpnb proxy: the browser refused: {exc}"[:120])
                return
            recorder = self._recorder(number, path)
            relay = Relay(self.protocol_spec, faults=self.faults, seed=self.seed,
                          sink=self._sink(recorder))
            self.relays.append(relay)
            relay.start(self._up_ws + path, *_now())
            try:
                await _Connection(self, relay, client, browser).run()
            finally:
                if recorder is not None:
                    recorder.close()
        finally:
            self._handlers.discard(task)


class _Connection:
    """One client socket and its browser socket, pumped through a relay."""

    def __init__(self, server: ProxyServer, relay: Relay, client: ServerConnection,
                 browser: ClientConnection) -> None:
        self.server = server
        self.relay = relay
        self.client = client
        self.browser = browser
        self.closing: ClosedBy | None = None
        self.done = asyncio.Event()
        # One relay step at a time, with its sends: a rule's timer that fires while a
        # client frame is being relayed must not put its command between the relay's
        # decision and the client's frame (the recording would name the wrong answer).
        self.turn = asyncio.Lock()

    async def run(self) -> None:
        pumps = [asyncio.create_task(self._pump(self.client, "client")),
                 asyncio.create_task(self._pump(self.browser, "browser"))]
        ended = asyncio.create_task(self.done.wait())
        try:
            await asyncio.wait([*pumps, ended], return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (*pumps, ended):
                task.cancel()
            closed_by = self.closing or "client"
            self.relay.closed(closed_by, self._reason(closed_by), *_now())
            with contextlib.suppress(Exception):
                await self.browser.close()
            with contextlib.suppress(Exception):
                await self.client.close(1000 if closed_by != "fault" else 1011,
                                        "cdpnb proxy: " + self._reason(closed_by)[:100])
            await asyncio.gather(*pumps, return_exceptions=True)

    def _reason(self, closed_by: ClosedBy) -> str:
        if closed_by == "fault":
            return "closed by a fault rule"
        side = self.client if closed_by == "client" else self.browser
        code = side.close_code
        return f"the {closed_by} closed its socket" + (f" ({code})" if code else "")

    async def _pump(self, source: ServerConnection | ClientConnection, side: str) -> None:
        feed = self.relay.from_client if side == "client" else self.relay.from_browser
        try:
            while True:
                data = await source.recv(decode=False)
                async with self.turn:
                    wall, mono = _now()
                    await self._carry_out(feed(bytes(data), wall, mono))
        except ConnectionClosed:
            if self.closing is None:
                self.closing = "client" if side == "client" else "browser"
            self.done.set()

    async def _carry_out(self, actions: list[Action]) -> None:
        for action in actions:
            if isinstance(action, Send):
                target = self.client if action.to == "client" else self.browser
                with contextlib.suppress(ConnectionClosed):
                    await target.send(action.data, text=True)
            elif isinstance(action, Later):
                self._later(action)
            elif isinstance(action, Close):
                self.closing = action.closed_by
                self.done.set()
                return

    def _later(self, action: Later) -> None:
        loop = asyncio.get_running_loop()
        timers = self.server._timers

        async def take_turn() -> None:
            async with self.turn:
                if not self.done.is_set():
                    await self._carry_out(action.then(*_now()))

        def fire() -> None:
            timers.discard(handle)
            if self.done.is_set():
                return
            task = loop.create_task(take_turn())
            self.server._handlers.add(task)
            task.add_done_callback(self.server._handlers.discard)

        handle = loop.call_later(action.delay_s, fire)
        timers.add(handle)
