"""``cdpnb.replay(trace)``: a recorded trace as a backend, served on loopback."""

from __future__ import annotations

import os
import re
from collections.abc import Awaitable, Callable, Generator
from functools import cached_property
from types import TracebackType
from typing import TYPE_CHECKING, Any

from cdpnb.playback.server import ReplayServer, UnmatchedCommands
from cdpnb.protocol import Command, Note
from cdpnb.protocol.specs import BIDI, CLASSIC
from cdpnb.runtime.closing import Closing
from cdpnb.runtime.engine import engine

if TYPE_CHECKING:
    from cdpnb.trace import Trace

__all__ = ["ReplayBackend", "replay"]

_BRIDGE_KEY = re.compile(r'const key = "([A-Za-z0-9_-]+)"')
#: Where a recording installed the bridge script, by protocol: CDP's new-document
#: script, BiDi's preload script.
_SCRIPT_FIELD = {"Page.addScriptToEvaluateOnNewDocument": "source",
                 "script.addPreloadScript": "functionDeclaration"}


class RecordedSession:
    """A WebDriver session made over HTTP in the recording (chromedriver's BiDi), as a
    replayed supervisor adopts it: its id and browser; ending it asks no server."""

    def __init__(self, session_id: str, capabilities: dict[str, Any]) -> None:
        self.session_id = session_id
        self.capabilities = capabilities
        self.deleted = False

    def delete(self, timeout: float) -> None:
        self.deleted = True


async def _open_socket(url: str, timeout: float) -> Any:
    from cdpnb.runtime.threads import in_own_thread
    from cdpnb.transport.wire import WireSocket

    return await in_own_thread(lambda: WireSocket.open(url, timeout),
                               orphan=WireSocket.close)


class ReplayBackend(Closing):
    """A replay endpoint: same surface as a launched backend (``cdp_url``, ``describe``)."""

    kind = "replay"

    def __init__(self, trace: Trace, server: ReplayServer) -> None:
        self.trace = trace
        self._server = server

    @property
    def cdp_url(self) -> str:
        return self._server.cdp_url

    @property
    def http_url(self) -> str:
        return self._server.http_url

    @property
    def version(self) -> str:
        return str(self.trace.browser.get("Browser") or self.trace.backend.get("version") or "")

    @property
    def version_info(self) -> dict[str, Any]:
        return dict(self.trace.browser)

    @property
    def recorded_backend(self) -> dict[str, Any]:
        return dict(self.trace.backend)

    @cached_property
    def _recorded_bridge(self) -> tuple[str, str] | None:
        for record in self.trace.records:
            if type(record) is not Command:
                continue
            field = _SCRIPT_FIELD.get(record.method)
            if field is not None:
                source = str(record.params.get(field, ""))
                found = _BRIDGE_KEY.search(source)
                if found:
                    if record.method == "script.addPreloadScript":
                        source = source.removeprefix("() => { ").removesuffix(" }")
                    return found.group(1), source
        return None

    @property
    def bridge_key(self) -> str | None:
        """The dialog bridge's key in the recording: a supervisor on this replay uses it,
        so it accepts the recorded bridge calls."""
        return None if self._recorded_bridge is None else self._recorded_bridge[0]

    @property
    def bridge_script(self) -> str | None:
        """The bridge's page script as the recording installed it: a supervisor on this
        replay sends that one (so the recorded commands match, whatever the script of
        this cdpnb version says)."""
        return None if self._recorded_bridge is None else self._recorded_bridge[1]

    @cached_property
    def recorded_engine(self) -> str | None:
        """The engine whose dialogs do not block, if the recording said so (its
        ``cdpnb.dialogsNonBlocking`` note): a supervisor on this replay knows it too,
        launched or recorded on a URL. (Both scans read the whole recording: once each.)"""
        for record in self.trace.records:
            if type(record) is Note and record.method == "cdpnb.dialogsNonBlocking":
                return str(record.params.get("engine", "")) or None
        return None

    @property
    def connect_transport(self) -> Callable[[str, float], Awaitable[Any]] | None:
        """How a supervisor connects to a recording whose session was not made on its
        socket (None for the others: their URL says what they speak, and their session
        is made there as it was recorded):

        - WebDriver classic: its messages have CDP's shape, so the replay serves them on
          its WebSocket; the transport says it speaks classic and carries the recorded
          session (its id and browser), as a live one does;
        - WebDriver BiDi on a session made over HTTP (chromedriver: no ``session.new``
          in the recording): the transport carries the recorded session, which the
          supervisor adopts, and whose end is no request (there is no server to ask).
        """
        protocol = self.trace.protocol_spec
        if not protocol.own_socket:
            return self._connect_classic
        made = protocol.session_command
        if made is not None and not any(
                type(r) is Command and r.method == made for r in self.trace.records):
            return self._connect_made_bidi
        return None

    def _recorded_session(self, note: str) -> tuple[str, dict[str, Any]]:
        """The recorded session's id and its browser as capabilities, from ``note``."""
        said = next((r.params for r in self.trace.records
                     if type(r) is Note and r.method == note), {})
        name, _, version = str(said.get("browser", "")).partition("/")
        return str(said.get("session_id", "")), {"browserName": name,
                                                  "browserVersion": version}

    async def _connect_classic(self, url: str, timeout: float) -> Any:
        from cdpnb.transport.webdriver_http import NewSession

        sock = await _open_socket(url, timeout)
        sock.protocol = CLASSIC.name
        sock.session = NewSession(*self._recorded_session("cdpnb.classicSession"))
        return sock

    async def _connect_made_bidi(self, url: str, timeout: float) -> Any:
        sock = await _open_socket(url, timeout)
        sock.protocol = BIDI.name
        sock.webdriver_session = RecordedSession(*self._recorded_session("cdpnb.bidiSession"))
        return sock

    @property
    def connections(self) -> int:
        """How many CDP clients have connected so far."""
        return self._server.connections

    @property
    def unmatched(self) -> UnmatchedCommands:
        """Commands clients sent that the recording had no reply for: ``len()`` of it
        is how many, ``by_method`` how many of each, ``first`` the first 100 errors
        (bounded however many come)."""
        return self._server.unmatched

    @property
    def max_message_bytes(self) -> int:
        """The largest message a client may send (4 MiB, or twice the recording's
        largest command when that is more); a larger one closes its connection with
        1009 "message too big"."""
        return self._server.max_message_bytes

    def describe(self) -> dict[str, Any]:
        return {"kind": "replay", "version": self.version,
                "recorded_kind": self.trace.backend.get("kind"),
                "recorded_engine": self.recorded_engine,
                "trace": str(self.trace.path) if self.trace.path else None,
                "recorded_at": self.trace.started_at, "speed": self._server.speed,
                "cdp_url": self.cdp_url}

    def close(self) -> None:
        """Stop serving (blocking). Idempotent."""
        engine.run_sync(self._server.close())

    async def aclose(self) -> None:
        """Stop serving."""
        await engine.run(self._server.close())

    def __repr__(self) -> str:
        return f"<ReplayBackend {self.trace.label!r} at {self.cdp_url}>"


class replay:
    """Serve a recorded trace as a CDP endpoint on loopback.

    ``async with cdpnb.replay(trace) as backend:`` (or plain ``with``) serves it for
    the block; ``backend = await cdpnb.replay(trace)`` (or ``cdpnb.sync.replay``)
    until ``backend.close()``. A Supervisor starts on the backend (or its
    ``cdp_url``). ``trace`` is a Trace or a path; ``speed=None`` replays as fast as
    possible, ``1.0`` at recorded pace. Its memory is bounded whatever clients send: a
    message over ``backend.max_message_bytes`` (4 MiB, more if the recording holds a
    larger command) closes its connection with 1009, and ``backend.unmatched`` counts
    the commands it could not answer rather than keeping them.
    """

    def __init__(self, trace: Trace | str | os.PathLike[str], *, speed: float | None = None,
                 stall_s: float = 3.0) -> None:
        from cdpnb.trace import Trace

        if isinstance(trace, str | os.PathLike):
            trace = Trace.load(trace)
        if not isinstance(trace, Trace):
            raise TypeError(f"replay() takes a Trace or a path to one, got {trace!r}")
        self.trace = trace
        self.server = ReplayServer(trace.messages, browser=trace.browser or None, speed=speed,
                                   stall_s=stall_s, protocol=trace.protocol_spec)
        self.backend: ReplayBackend | None = None

    async def _open(self) -> ReplayBackend:
        # On cdpnb's engine loop, so it keeps serving while the caller's thread
        # blocks (a notebook cell in time.sleep, a cdpnb.sync call).
        await self.server.start()
        self.backend = ReplayBackend(self.trace, self.server)
        return self.backend

    async def start(self) -> ReplayBackend:
        """Start serving, and return the backend."""
        backend: ReplayBackend = await engine.run(self._open())
        return backend

    def __await__(self) -> Generator[Any, None, ReplayBackend]:
        return self.start().__await__()

    async def __aenter__(self) -> ReplayBackend:
        return await self.start()

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await engine.run(self.server.close())

    def __enter__(self) -> ReplayBackend:
        backend: ReplayBackend = engine.run_sync(self._open())
        return backend

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        engine.run_sync(self.server.close())
