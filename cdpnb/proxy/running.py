"""``cdpnb.proxy(...)``: a recording, fault-injecting proxy in front of a browser, or a
recording served back to an unmodified client (VCR replay), on both faces.

``async with cdpnb.proxy(backend_or_url, record=path, faults=[...]) as px:`` serves
for the block (``with`` too; ``px = await cdpnb.proxy(...)`` / ``cdpnb.sync.proxy``
until ``px.close()``). ``cdpnb.proxy(replay=trace_or_path)`` plays a recording with no
browser; leaving its block raises :class:`~cdpnb.errors.ReplayDiverged` when the client
sent a command the recording had no answer for.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Generator, Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from cdpnb._version import __version__
from cdpnb.errors import ReplayDiverged
from cdpnb.playback.divergence import Divergence
from cdpnb.playback.server import ReplayServer
from cdpnb.protocol import Message, ProtocolSpec, protocol_spec
from cdpnb.protocol.specs import BIDI, CDP
from cdpnb.proxy.faults import FaultRule, parse_faults
from cdpnb.proxy.relay import OWN_ID_BASE
from cdpnb.proxy.server import MAX_RECORD_BYTES, ProxyServer, refused_for
from cdpnb.proxy.webdriver import HTTPReplay, WebDriverFront, webdriver_path
from cdpnb.runtime.closing import Closing
from cdpnb.runtime.engine import engine
from cdpnb.trace.private_files import make_private_dirs
from cdpnb.views import VIEWS

if TYPE_CHECKING:
    from cdpnb.backends import Backend
    from cdpnb.state import BrowserState
    from cdpnb.trace import Trace

__all__ = ["Proxy", "proxy", "replay_messages"]

def _protocol_of_url(url: str) -> ProtocolSpec:
    parts = urlsplit(url)
    if parts.scheme not in ("ws", "wss", "http", "https"):
        raise ValueError(f"proxy() needs a ws:// or http:// endpoint, a backend, or a kind "
                         f"such as 'chromium'; got {url!r}")
    # (WebDriver BiDi endpoints live under /session.)
    bidi = BIDI.ws_path
    return BIDI if parts.path.rstrip("/").endswith(bidi) or f"{bidi}/" in parts.path else CDP


def _loopback_only(host: str, origin: str | None) -> str | None:
    return refused_for(host, origin, None)


def replay_messages(traces: Sequence[Trace]) -> list[Message]:
    """The messages a replay serves: each recorded connection in turn (each starts with
    its ``cdpnb.connected`` note), without the proxy's own commands and their replies
    (a fault rule's dismissal: a replayed client never sends them)."""
    messages: list[Message] = []
    for trace in traces:
        for message in trace.messages:
            if getattr(message, "id", 0) >= OWN_ID_BASE and \
                    type(message).__name__ in ("Command", "Reply", "ErrorReply"):
                continue
            messages.append(message)
    return messages


class Proxy(Closing):
    """A running proxy (or replay): where a client connects, and what it recorded.
    ``with`` / ``async with`` close it at the block's end, and then raise
    ReplayDiverged if a replayed client left its recording (unless the block raised)."""

    def __init__(self, server: ProxyServer | ReplayServer, *, owned: Backend | None = None,
                 workdir: tempfile.TemporaryDirectory[str] | None = None,
                 front: WebDriverFront | None = None) -> None:
        self._server = server
        self._owned = owned
        self._workdir = workdir
        #: A replayed WebDriver session's HTTP side.
        self._front = front
        self.closed = False

    @property
    def mode(self) -> Literal["record", "replay"]:
        return "replay" if isinstance(self._server, ReplayServer) else "record"

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``: give it to a client that discovers (Playwright's
        ``connect_over_cdp``, Puppeteer's ``browserURL``)."""
        if self._front is not None:
            return self._front.url
        return self._server.http_url if isinstance(self._server, ReplayServer) \
            else self._server.url

    @property
    def ws_url(self) -> str:
        """The WebSocket a client connects to (``ws://127.0.0.1:PORT/devtools/browser/…``
        for CDP, ``ws://127.0.0.1:PORT/session`` for WebDriver BiDi)."""
        return self._server.cdp_url if isinstance(self._server, ReplayServer) \
            else self._server.ws_url

    @property
    def protocol(self) -> str:
        return self._server.protocol

    @property
    def connections(self) -> int:
        """Client connections so far."""
        return self._server.connections

    @property
    def recordings(self) -> list[Path]:
        """Each client connection's recording, in order (none in replay mode)."""
        return [] if isinstance(self._server, ReplayServer) else list(self._server.recordings)

    @property
    def divergence(self) -> Divergence | None:
        """Replay: the first command the recording had no answer for, else None (a
        WebDriver session's HTTP side first, then its socket's)."""
        if not isinstance(self._server, ReplayServer):
            return None
        http = self._front.answer if self._front is not None else None
        if isinstance(http, HTTPReplay) and http.divergence is not None:
            return http.divergence
        return self._server.divergence

    @property
    def http_recording(self) -> Path | None:
        """In front of a WebDriver server: where its HTTP exchanges are recorded."""
        return None if isinstance(self._server, ReplayServer) else self._server.http_recording

    @property
    def refused(self) -> int:
        """Requests refused for their Host or Origin (record mode)."""
        return 0 if isinstance(self._server, ReplayServer) else self._server.refused

    def state(self, connection: int = 1) -> BrowserState:
        """The browser's state as connection ``connection`` (1 for the first) has seen
        it, folded live by the same reducers as a trace."""
        if isinstance(self._server, ReplayServer):
            raise ValueError("a replay keeps no live state; load a recording with "
                             "cdpnb.Trace.load and read its final_state()")
        relays = self._server.relays
        if not 1 <= connection <= len(relays):
            raise ValueError(f"connection must be 1..{len(relays)} (clients so far), "
                             f"got {connection!r}")
        return relays[connection - 1].state

    def fault_acts(self, connection: int = 1) -> dict[str, int]:
        """What the fault rules did on connection ``connection``, by action
        (``dismissed``, ``dropped``, ``delayed``, ...); each is a note in its recording."""
        if isinstance(self._server, ReplayServer):
            return {}
        relays = self._server.relays
        if not 1 <= connection <= len(relays):
            raise ValueError(f"connection must be 1..{len(relays)}, got {connection!r}")
        return dict(relays[connection - 1].fault_acts)

    @property
    def connections_recorded(self) -> int:
        """Client connections whose state is folded (record mode)."""
        return 0 if isinstance(self._server, ReplayServer) else len(self._server.relays)

    def view(self, refresh_s: float = 0.5) -> Any:
        """A live notebook view: each connection's dialogs (who closed them), frame tree
        and recording, redrawn as they change."""
        return VIEWS.make(self, refresh_s)  # cdpnb.notebook, loaded on use

    def trace(self, connection: int = 1) -> Trace:
        """Connection ``connection``'s recording as a Trace (so far, while it goes on)."""
        from cdpnb.trace import Trace

        recordings = self.recordings
        if not recordings:
            raise ValueError("no client has connected yet, so nothing is recorded"
                             if self.mode == "record" else "a replay records nothing")
        if not 1 <= connection <= len(recordings):
            raise ValueError(f"connection must be 1..{len(recordings)}, got {connection!r}")
        return Trace.load(recordings[connection - 1], strict=False)

    def traces(self) -> list[Trace]:
        return [self.trace(n) for n in range(1, len(self.recordings) + 1)]

    async def _close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self._front is not None:
            await self._front.close()
        await self._server.close()
        if self._owned is not None:
            await self._owned.aclose()

    def close(self) -> None:
        """Stop serving (and end a backend the proxy launched). Idempotent."""
        engine.run_sync(self._close())

    async def aclose(self) -> None:
        await engine.run(self._close())

    def check(self) -> None:
        """Raise ReplayDiverged if a replayed client left its recording."""
        if self.divergence is not None:
            raise ReplayDiverged(str(self.divergence))

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
        if exc_type is None:
            self.check()

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()
        if exc_type is None:
            self.check()

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"{self.connections} connections"
        return f"<Proxy {self.mode} {self.protocol} at {self.url} ({state})>"


class proxy:
    """Start a proxy in front of ``target`` (a launched backend, an endpoint URL, or a
    backend kind to launch, such as ``"chromium"``), or serve ``replay=`` (a Trace, a
    path, or several, one per recorded connection) with no browser.

    ``record``: where connection 1's trace goes (connection N's beside it, with ``.N``
    before the suffixes; files 0600); by default a private temporary folder. ``faults``:
    rules such as ``"dismiss-dialogs=10ms"`` (see ``cdpnb.proxy.faults``); ``seed`` makes
    their chances repeatable. ``match``: a replay's ``"strict"`` (same params) or
    ``"loose"`` (params that differ only in fresh random tokens) matching.
    ``max_record_bytes``: the most one connection's recording holds (4 GiB; a peer that
    floods the proxy is then no longer recorded, and the file says so).
    """

    def __init__(self, target: Backend | str | None = None, *,
                 record: str | os.PathLike[str] | None = None,
                 faults: Iterable[str | FaultRule] | str | None = None,
                 seed: int | None = None, redact: bool | Sequence[str] = False,
                 replay: Trace | str | os.PathLike[str] | Sequence[Any] | None = None,
                 match: Literal["strict", "loose"] = "strict",
                 max_record_bytes: int = MAX_RECORD_BYTES) -> None:
        if (target is None) == (replay is None):
            raise ValueError("proxy() takes a browser to stand in front of (a backend, a URL "
                             "or a kind) or replay= a recording, exactly one of them")
        self.target = target
        self.record = Path(record) if record is not None else None
        self.faults = parse_faults(faults)
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise TypeError(f"seed must be an int, got {seed!r}")
        self.seed = seed
        self.redact = redact
        self.replay = replay
        if match not in ("strict", "loose"):
            raise ValueError(f"match must be 'strict' or 'loose', got {match!r}")
        self.match = match
        self.max_record_bytes = max_record_bytes
        self.handle: Proxy | None = None

    async def _open(self) -> Proxy:
        if self.replay is not None:
            return await self._open_replay()
        owned: Backend | None = None
        target = self.target
        if isinstance(target, str) and "://" not in target:
            from cdpnb.backends import launch

            owned = await launch(target)
            target = owned
        try:
            return await self._open_record(target, owned)
        except BaseException:
            if owned is not None:
                await owned.aclose()
            raise

    async def _open_record(self, target: Backend | str | None, owned: Backend | None) -> Proxy:
        backend_info: dict[str, Any] | None = None
        browser_info: dict[str, Any] | None = None
        webdriver = False
        if isinstance(target, str):
            url, protocol = target, _protocol_of_url(target)
        else:
            url = str(getattr(target, "cdp_url", "") or "")
            said = protocol_spec(str(getattr(target, "protocol", CDP.name)))
            if getattr(target, "webdriver_capabilities", None) is not None:
                # A WebDriver server (chromedriver, WebKitWebDriver): its HTTP forwarded,
                # the BiDi socket a session asks for (webSocketUrl) relayed.
                webdriver, said = True, BIDI
            # The proxy relays CDP (and WIP, framed as CDP) and WebDriver BiDi sockets;
            # WebDriver classic is HTTP, not a socket to relay.
            relayed = said.relayed_as
            if relayed is None:
                raise ValueError(f"the proxy relays CDP and WebDriver BiDi sockets; this "
                                 f"backend speaks {said.name}")
            protocol = relayed
            describe = getattr(target, "describe", None)
            backend_info = describe() if callable(describe) else None
            info = getattr(target, "version_info", None)
            browser_info = dict(info) if isinstance(info, dict) else None
        workdir = None
        record = self.record
        if record is None:
            workdir = tempfile.TemporaryDirectory(prefix="cdpnb-proxy-")
            record = Path(workdir.name) / "proxy.jsonl"
        else:
            make_private_dirs(record.parent)
        server = ProxyServer(url, protocol=protocol, record=record, faults=self.faults,
                             seed=self.seed, redact=self.redact, backend=backend_info,
                             browser=browser_info, cdpnb_version=__version__,
                             webdriver=webdriver, max_record_bytes=self.max_record_bytes)
        await server.start()
        return Proxy(server, owned=owned, workdir=workdir)

    async def _open_replay(self) -> Proxy:
        from cdpnb.trace import Trace

        given = self.replay
        items = list(given) if isinstance(given, list | tuple) else [given]
        traces: list[Trace] = []
        for item in items:
            if isinstance(item, Trace):
                traces.append(item)
            elif isinstance(item, str | os.PathLike):
                traces.append(Trace.load(item))
            else:
                raise TypeError(f"replay= takes a Trace, a path, or a list of them (one per "
                                f"recorded connection); got {type(item).__name__}")
        if not traces:
            raise ValueError("replay= names no recording")
        # (A WebDriver classic recording is served as CDP's: its messages' framing.)
        server = ReplayServer(replay_messages(traces), browser=traces[0].browser or None,
                              protocol=traces[0].protocol_spec.replayed_as,
                              match=self.match)
        await server.start()
        front = None
        exchanges = webdriver_path(traces[0].path) if traces[0].path is not None else None
        if exchanges is not None and exchanges.exists():
            # A session made over WebDriver HTTP (Selenium): its exchanges answered from
            # their recording, webSocketUrl pointing at this replay.
            def to_replay(url: str) -> str:
                return f"ws://127.0.0.1:{server.port}{urlsplit(url).path}"

            recorded = Trace.load(exchanges)
            said = recorded.header.get("meta", {}).get("proxy", {})
            http = HTTPReplay(list(recorded.messages), to_replay, self.match,
                              recorded_url=str(said.get("url") or "") or None)
            front = await WebDriverFront(http, _loopback_only).start()
            http.own_url = front.url
        return Proxy(server, front=front)

    async def start(self) -> Proxy:
        handle: Proxy = await engine.run(self._open())
        self.handle = handle
        return handle

    def __await__(self) -> Generator[Any, None, Proxy]:
        return self.start().__await__()

    async def __aenter__(self) -> Proxy:
        return await self.start()

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        if self.handle is not None:
            await self.handle.__aexit__(exc_type, exc, tb)

    def __enter__(self) -> Proxy:
        handle: Proxy = engine.run_sync(self._open())
        self.handle = handle
        return handle

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self.handle is not None:
            self.handle.__exit__(exc_type, exc, tb)
