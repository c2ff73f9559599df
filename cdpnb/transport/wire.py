"""A CDP WebSocket with its own reader thread, on websockets' sans-I/O protocol.

The reader thread owns the socket's reads: it feeds ``ClientProtocol.receive_data``,
takes ``events_received()``, writes what ``data_to_send()`` holds (pongs, the closing
handshake) and hands each batch of whole text messages, as bytes, to ``on_frames``.
Any thread writes its own frames with ``send`` (under the protocol's lock), so a
caller's command goes out from the caller's thread and only the reply crosses a
thread. websockets' own ``sync`` client does the same with one more thread between
the socket and the consumer; here the consumer (the supervisor's fold) runs on the
reader thread itself.

While a caller waits for a reply and nobody else reads, the caller reads the socket
itself (``read_while`` for a blocked thread, ``lead_from`` for a loop): the reply then
wakes one thread, not two (``cdpnb.transport.turns``). Linux plain sockets only
(``MSG_DONTWAIT``, epoll; a TLS socket buffers bytes epoll cannot see): elsewhere the
reader thread reads alone, blocking.

Frames are cut out of the bytes by ``FrameSplitter`` (``cdpnb.transport.frames``): a
whole text message in one plain frame (nearly all a browser sends) directly, every
other frame through websockets' parser, whole.

A message the client must refuse (larger than ``max_size``; a binary frame) comes out
in order as a ``TransportFault``; the first one closes the connection (1009), the
second is only reported.
"""

from __future__ import annotations

import asyncio
import contextlib
import select
import socket
import ssl
import threading
import time
from collections.abc import Callable, Sequence
from typing import ClassVar

from websockets.client import ClientProtocol
from websockets.exceptions import InvalidHandshake, InvalidURI, PayloadTooBig
from websockets.frames import Frame, Opcode
from websockets.http11 import Response
from websockets.protocol import State
from websockets.uri import parse_uri

from cdpnb.errors import ConnectionLost, EndpointError
from cdpnb.protocol import TransportFault
from cdpnb.protocol.credentials import redact_url
from cdpnb.transport.frames import FrameSplitter, Received
from cdpnb.transport.turns import Read, ReadTurns

__all__ = ["FAR_END_GONE", "MAX_MESSAGE_BYTES", "WireSocket"]

#: The close code (one of RFC 6455's private 4000–4999) that says the browser behind the
#: server has died and will not come back; the close reason says which and how
#: (``WireSocket.gone``). cdpnb's chromium-bidi wrapper
#: (``cdpnb/backends/js/bidi_server.mjs``) sends it: chromium-bidi 17 itself keeps the
#: socket open and answers nothing once its browser is gone.
FAR_END_GONE = 4404

#: CDP replies can be large (screenshots, DOM snapshots, response bodies) but not
#: unbounded: a bigger message closes the connection (code 1009). Puppeteer's limit too.
MAX_MESSAGE_BYTES = 256 * 1024 * 1024
#: Reads that do not block and an epoll to watch the socket: a waiting caller can read.
_NON_BLOCKING_READS = hasattr(select, "epoll") and hasattr(socket, "MSG_DONTWAIT")
#: One read takes what the kernel has, up to this much (Chromium writes a burst of
#: events in one go; one read, one fold batch, one trace flush).
RECV_BYTES = 1 << 20

#: Linux's TCP_QUICKACK: what came is acknowledged now (and the next segment at once),
#: not when the delayed-ACK timer fires (up to 40 ms) or with our next write.
#:
#: Measured (2 cores, load ~1): with the Debugger domain on, node 20 and Deno 2.9.8
#: write a ``Debugger.scriptParsed`` event before each evaluate's reply, on a socket
#: without TCP_NODELAY: Nagle holds the reply until the event is acknowledged, and a
#: client that delays its ACK waits for its timer: 44.0 ms per evaluate (median of 90,
#: node and Deno alike; Bun 1.4.5 writes no such event first: 0.20 ms). Acknowledging
#: at once, 0.26-0.32 ms. Armed after every read it cost a browser's plain round trip
#: 2-5% (an ACK packet of its own per reply, sent before the caller had its value:
#: headless-shell 0.412 → 0.422 ms, chromium 0.44 → 0.463, 600 calls each, interleaved),
#: so it is armed only after a read that left a command still waiting for its reply
#: (an event came first): the read that brings the reply leaves the ACK to ride on the
#: next command, as before.
_QUICKACK = getattr(socket, "TCP_QUICKACK", None)

Frames = Sequence[bytes]
OnFrames = Callable[[Frames], None]
OnClosed = Callable[[str], None]


class WireSocket:
    """One WebSocket (CDP or WebDriver BiDi): ``send`` from any thread; frames arrive
    on the reader thread."""

    #: Acknowledge at once what came while a reply is awaited (TCP_QUICKACK, where
    #: there is one): see above. (A class switch, so a benchmark can measure both ways.)
    quickack: ClassVar[bool] = _QUICKACK is not None

    def __init__(self, sock: socket.socket, protocol: ClientProtocol, url: str,
                 early: bytes = b"") -> None:
        self._sock = sock
        self._protocol = protocol
        self.url = url
        self._mutex = threading.Lock()
        self._splitter = FrameSplitter(protocol, self._feed, MAX_MESSAGE_BYTES, early)
        #: What ``exchange`` read past the message it wanted, for the reader.
        self._early: list[Received] = []
        self._reader: threading.Thread | None = None
        self._closed = threading.Event()
        self._reason = "connection dropped"
        # The message being reassembled from continuation frames (reader thread only).
        self._parts: list[bytes] = []
        self._binary = False
        #: The protocol the endpoint speaks, ``cdp`` or ``bidi`` (set by the connector).
        self.protocol = "cdp"
        #: Whose turn it is to read (None: the reader thread reads alone, blocking).
        self._turns: ReadTurns | None = None
        self._on_frames: OnFrames | None = None
        # One buffer for every read (only the baton's holder uses it): a fresh 1 MiB
        # for each (sock.recv) costs more than the few frames a read usually brings.
        self._into = bytearray(RECV_BYTES)
        self._view = memoryview(self._into)
        #: Whether a command still waits for its reply (``tell_awaiting``).
        self._awaiting: Callable[[], bool] | None = None

    # -- opening ----------------------------------------------------------------------

    @classmethod
    def open(cls, url: str, timeout: float = 10.0) -> WireSocket:
        """Connect and do the opening handshake (blocking: run it off an event loop)."""
        try:
            uri = parse_uri(url)
        except InvalidURI as exc:
            raise EndpointError(f"not a WebSocket URL: {redact_url(url)!r}") from exc
        deadline = time.monotonic() + timeout
        try:
            sock = socket.create_connection((uri.host, uri.port), timeout=timeout)
        except OSError as exc:
            raise EndpointError(f"cannot open WebSocket {redact_url(url)}: "
                                f"{type(exc).__name__}: {exc}") from None
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if uri.secure:
                sock = ssl.create_default_context().wrap_socket(sock, server_hostname=uri.host)
            protocol = ClientProtocol(uri, max_size=MAX_MESSAGE_BYTES)
            protocol.send_request(protocol.connect())
            sock.sendall(b"".join(protocol.data_to_send()))
            # websockets gets the response's head and nothing after it: the frames that
            # came with it are the splitter's (which hands websockets whole frames only).
            raw = bytearray()
            response: Response | None = None
            while response is None:
                sock.settimeout(max(0.001, deadline - time.monotonic()))
                data = sock.recv(RECV_BYTES)
                raw += data
                end = raw.find(b"\r\n\r\n")
                if end >= 0 or not data:
                    cut = end + 4 if end >= 0 else len(raw)
                    protocol.receive_data(bytes(raw[:cut]))
                    del raw[:cut]
                    if not data:
                        protocol.receive_eof()
                    response = next((e for e in protocol.events_received()
                                     if isinstance(e, Response)), None)
                if protocol.handshake_exc is not None:
                    raise protocol.handshake_exc
                if not data and response is None:
                    raise EOFError("the endpoint closed the connection during the handshake")
            early = bytes(raw)
            sock.settimeout(None)
        except (OSError, InvalidHandshake, EOFError, ssl.SSLError) as exc:
            sock.close()
            raise EndpointError(f"cannot open WebSocket {redact_url(url)}: "
                                f"{type(exc).__name__}: {exc}") from None
        return cls(sock, protocol, url, early)

    def exchange(self, data: bytes, timeout: float) -> bytes | None:
        """Before ``start``: write one message and return the first whole message that
        comes back (None if none comes within ``timeout`` or the connection ends).
        Whatever arrives after it stays for the reader. Blocking: run it off a loop."""
        self.send(data)
        deadline = time.monotonic() + timeout
        received = self._splitter.receive(b"")
        while True:
            for i, item in enumerate(received):
                whole = self._messages([item])
                if whole and not isinstance(whole[0], TransportFault):
                    self._early = received[i + 1:]
                    return whole[0]
            received = []
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self._sock.settimeout(left)
            try:
                data = self._sock.recv(RECV_BYTES)
            except OSError:
                return None
            finally:
                with contextlib.suppress(OSError):
                    self._sock.settimeout(None)
            if not data:
                return None
            received = self._splitter.receive(data)

    def start(self, on_frames: OnFrames, on_closed: OnClosed) -> None:
        """Start the reader thread: ``on_frames`` gets each batch of messages read in
        one go, ``on_closed`` the reason once the connection has ended."""
        self._on_frames = on_frames
        if _NON_BLOCKING_READS and not isinstance(self._sock, ssl.SSLSocket):
            self._turns = ReadTurns(self._sock.fileno(), self._read_once)
        self._reader = threading.Thread(target=self._run, args=(on_frames, on_closed),
                                        name="cdpnb-reader", daemon=True)
        self._reader.start()

    def read_while(self, waiting: Callable[[], bool], deadline: float) -> None:
        """While ``waiting()`` and before ``deadline`` (``time.monotonic()``), read on
        this thread if nobody else reads (``ReadTurns.read_while``)."""
        if self._turns is not None:
            self._turns.read_while(waiting, deadline)

    def lead_from(self, loop: asyncio.AbstractEventLoop) -> Callable[[], None] | None:
        """Let ``loop`` read while it awaits a reply, if nobody else reads; call what
        this returns when the wait ends (``ReadTurns.lead_from``)."""
        return None if self._turns is None else self._turns.lead_from(loop)

    # -- writing (any thread) ----------------------------------------------------------

    def tell_awaiting(self, awaiting: Callable[[], bool]) -> None:
        """``awaiting()`` says whether a command still waits for its reply (the
        supervisor's core says so): after a read that leaves one waiting, what came is
        acknowledged at once."""
        self._awaiting = awaiting

    def _acknowledge(self) -> None:
        """After a read handed on: acknowledge it now if a reply is still awaited (one
        setsockopt, and then an ACK packet of its own: see ``_QUICKACK``)."""
        awaiting = self._awaiting
        if _QUICKACK is not None and self.quickack and awaiting is not None and awaiting():
            with contextlib.suppress(OSError):
                self._sock.setsockopt(socket.IPPROTO_TCP, _QUICKACK, 1)

    def send(self, data: bytes) -> None:
        """Write one text message (UTF-8 JSON)."""
        with self._mutex:
            if self._protocol.state is not State.OPEN:
                raise ConnectionLost(f"the WebSocket is closed ({self._reason})")
            self._protocol.send_text(data)
            try:
                self._sock.sendall(b"".join(self._protocol.data_to_send()))
            except OSError as exc:
                raise ConnectionLost(f"the WebSocket write failed: {exc}") from None

    def fail(self, code: int, reason: str) -> None:
        """End the connection over bad input (1007: not UTF-8), as RFC 6455 asks. Once
        it has ended (or is ending) it does nothing: the first end's reason stays, the
        one ``on_closed`` is told."""
        with self._mutex:
            if self._protocol.state is not State.OPEN:
                return
            self._protocol.fail(code, reason)
            self._flush_locked()
            self._reason = f"closed by cdpnb: {reason} (code {code})"
        self._shutdown()

    def close(self) -> None:
        """The closing handshake, then the socket; waits briefly for the reader."""
        with self._mutex:
            if self._protocol.state is State.OPEN:
                self._protocol.send_close(1000)
                self._flush_locked()
                # Ours, whatever comes back: the peer's echo of our close frame would
                # otherwise read as "closed (code 1000)", as if the browser had closed.
                self._reason = "closed by cdpnb"
        # Never started (the supervisor closes a transport whose protocol it does not
        # speak): no reader will see the end, so there is nothing to wait for.
        if self._reader is None or not self._closed.wait(2.0):
            self._shutdown()
        reader = self._reader
        if reader is not None and reader is not threading.current_thread():
            reader.join(2.0)
        with contextlib.suppress(OSError):
            self._sock.close()

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    @property
    def close_reason(self) -> str:
        return self._reason

    @property
    def gone(self) -> str | None:
        """What died behind the socket, when the far end closed it saying so (code
        ``FAR_END_GONE``, its reason in words); None for any other end."""
        received = self._protocol.close_rcvd
        if received is None or received.code != FAR_END_GONE:
            return None
        return received.reason or "the far end is gone"

    # -- the reader thread -------------------------------------------------------------

    def _run(self, on_frames: OnFrames, on_closed: OnClosed) -> None:
        try:
            turns = self._turns
            with turns.baton if turns is not None else contextlib.nullcontext():
                early, self._early = self._early, []
                batch = self._messages([*early, *self._splitter.receive(b"")])
                if batch:
                    on_frames(batch)
            if turns is not None:
                turns.run_reader()
            else:
                self._read_alone(on_frames)
        finally:
            self._reason = self._ending_reason()
            self._shutdown()
            self._closed.set()
            on_closed(self._reason)

    def _read_alone(self, on_frames: OnFrames) -> None:
        while True:
            try:
                size = self._sock.recv_into(self._into)
            except OSError:
                size = 0
            if not self._take(bytes(self._view[:size]), on_frames):
                return
            self._acknowledge()

    def _read_once(self, by_reader: bool) -> Read:
        """One read that does not block, handed on (holding the turns' baton). The
        connection's end is the reader thread's to take: a caller leaves it there."""
        on_frames = self._on_frames
        assert on_frames is not None
        try:
            size = self._sock.recv_into(self._into, 0, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return Read.NOTHING
        except OSError:
            size = 0
        if not size and not by_reader:
            return Read.END
        if self._take(bytes(self._view[:size]), on_frames):
            self._acknowledge()
            return Read.READ
        if not by_reader:
            self._shutdown()  # wakes the reader thread, to end it all
        return Read.OVER

    def _take(self, data: bytes, on_frames: OnFrames) -> bool:
        """Hand on what one read brought (``b""``: the end); False once reading is
        over (the end, a refused message, the connection closed)."""
        if data:
            events = self._splitter.receive(data)
        else:
            with self._mutex:
                self._protocol.receive_eof()
                events = [e for e in self._protocol.events_received()
                          if isinstance(e, Frame)]
                self._flush_locked()
        refused = self._protocol.parser_exc
        batch = self._messages(events)
        if isinstance(refused, PayloadTooBig):
            detail = f"{self._too_big()}; the connection was closed (code 1009)"
            batch.append(TransportFault("oversized-message", detail))
            self._reason = f"closed by cdpnb: {self._too_big()} (code 1009)"
        if batch:
            on_frames(batch)
        return bool(data) and refused is None and self._protocol.state is not State.CLOSED

    def _feed(self, data: bytes) -> list[Received]:
        """The splitter's way into websockets' protocol: its frames, its writes sent."""
        with self._mutex:
            self._protocol.receive_data(data)
            events = self._protocol.events_received()
            self._flush_locked()
        return [e for e in events if isinstance(e, Frame)]

    def _messages(self, events: Sequence[Received]) -> list[bytes]:
        """Whole messages from what the splitter gave (continuations joined); binary
        ones as faults."""
        out: list[bytes] = []
        for event in events:
            if type(event) is bytes:
                out.append(event)
                continue
            if not isinstance(event, Frame):
                continue
            if event.opcode is Opcode.TEXT or event.opcode is Opcode.BINARY:
                self._parts = [bytes(event.data)]
                self._binary = event.opcode is Opcode.BINARY
            elif event.opcode is Opcode.CONT and self._parts:
                self._parts.append(bytes(event.data))
            else:
                continue  # control frames: the protocol answers them
            if not event.fin:
                continue
            whole = b"".join(self._parts)
            self._parts = []
            if self._binary:
                out.append(TransportFault("binary-frame", f"{len(whole)} bytes", whole[:200]))
            else:
                out.append(whole)
        return out

    def _flush_locked(self) -> None:
        out = self._protocol.data_to_send()
        if out:
            with contextlib.suppress(OSError):
                self._sock.sendall(b"".join(d for d in out if d))

    def _shutdown(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)

    def _too_big(self) -> str:
        limit = self._splitter.max_size
        size = f"{limit / 2**20:g} MiB" if limit % 2**20 == 0 else f"{limit} bytes"
        return f"a message was larger than the {size} limit"

    def _ending_reason(self) -> str:
        if self._reason.startswith("closed by cdpnb"):
            return self._reason
        protocol = self._protocol
        received = protocol.close_rcvd
        if received is not None:
            why = f": {received.reason}" if received.reason else ""
            return f"closed (code {received.code}{why})"
        sent = protocol.close_sent
        if sent is not None and sent.code in (1000, 1001):
            return "closed by cdpnb"
        return "connection dropped"

