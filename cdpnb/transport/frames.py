"""Whole messages cut out of the bytes a WebSocket client reads (sans-I/O).

Nearly every frame a browser sends is a whole text message in one unmasked frame
with no extension bits (header ``0x81``). :class:`FrameSplitter` cuts those out of the
bytes itself; every other frame (pings, pongs, close, fragments, binary, anything
malformed or too big) goes to websockets' parser *whole*, so the protocol's state
(the closing handshake, pongs, continuation and size limits, errors) stays
websockets' own. While websockets is mid-message (a fragmented one) or the
connection is no longer open, every byte goes to websockets.

Why not websockets alone: its generator-based parser costs ≈2.4 µs per frame on the
development VM against ≈0.3 µs here (a console event of 150 bytes,
``benchmarks/bench_cdp.py``'s ingest), and the reader thread pays that for every
event a browser sends. ``tests/test_wire_frames.py`` checks, over generated frame
streams cut at random places, that the messages and the protocol's state are
websockets' own.
"""

from __future__ import annotations

from collections.abc import Callable

from websockets.client import ClientProtocol
from websockets.frames import Frame
from websockets.protocol import State

__all__ = ["FrameSplitter", "Received"]

#: FIN, no RSV bits, opcode 1 (text): a whole text message in one frame.
_WHOLE_TEXT = 0x81
_MASKED = 0x80

#: What comes out: a whole text message's bytes, or a frame websockets parsed.
Received = bytes | Frame
#: Gives websockets' protocol some bytes and returns the events it then had.
Feed = Callable[[bytes], list[Received]]


class FrameSplitter:
    """``receive(data)`` returns, in order, the messages and frames the bytes complete.

    ``feed`` hands bytes to the websockets protocol (under the caller's lock) and
    returns the frames of its ``events_received()``; the splitter only ever feeds it whole frames
    while the connection is open, so its parser is always at a frame boundary when
    the splitter reads a header itself."""

    def __init__(self, protocol: ClientProtocol, feed: Feed, max_size: int,
                 pending: bytes = b"") -> None:
        self._protocol = protocol
        self._feed = feed
        self.max_size = max_size
        self._buf = bytearray(pending)
        #: How many buffered bytes complete the frame in progress (0: unknown).
        self._need = 0

    @property
    def buffered(self) -> int:
        """Bytes held back: the start of a frame not yet complete."""
        return len(self._buf)

    def receive(self, data: bytes) -> list[Received]:
        if self._buf:
            self._buf += data
            if len(self._buf) < self._need:
                return []  # a big frame still coming: no copy until it is whole
            data = bytes(self._buf)
            self._buf.clear()
        self._need = 0
        protocol = self._protocol
        out: list[Received] = []
        pos, size = 0, len(data)
        while pos < size:
            if protocol.state is not State.OPEN:
                # Closing (a close frame came, or websockets refused a frame): the rest
                # is websockets' to take or discard.
                out.extend(self._feed(data[pos:]))
                return out
            if size - pos < 2:
                break
            first, second = data[pos], data[pos + 1]
            length, head = second & 0x7F, 2
            if length == 126:
                if size - pos < 4:
                    break
                length, head = int.from_bytes(data[pos + 2:pos + 4], "big"), 4
            elif length == 127:
                if size - pos < 10:
                    break
                length, head = int.from_bytes(data[pos + 2:pos + 10], "big"), 10
            if second & _MASKED:
                head += 4  # a server must not mask: websockets refuses it, whole
            end = pos + head + length
            if length > self.max_size:
                # websockets refuses it from its header (1009): no need to wait for it.
                out.extend(self._feed(data[pos:]))
                return out
            if end > size:
                self._need = end - pos
                break
            if (first == _WHOLE_TEXT and not second & _MASKED
                    and protocol.current_size is None):
                out.append(data[pos + head:end])
            else:
                out.extend(self._feed(data[pos:end]))
            pos = end
        if pos < size:
            self._buf += data[pos:]
        return out
