"""The frame splitter against websockets' own parser, over generated frame streams.

What the reader thread takes from the bytes must be what websockets alone would have
taken: the same messages in the same order, the same pongs and close frames written
back, the same refusal for a frame it must refuse, wherever the stream is cut.
"""

from __future__ import annotations

import itertools
import struct
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from websockets.client import ClientProtocol
from websockets.exceptions import PayloadTooBig, ProtocolError
from websockets.frames import Frame, Opcode
from websockets.protocol import State
from websockets.server import ServerProtocol
from websockets.uri import parse_uri

from cdpnb.transport.frames import FrameSplitter

MAX_SIZE = 70_000


def opened() -> ClientProtocol:
    """A client protocol after a real opening handshake (as WireSocket.open leaves it)."""
    client = ClientProtocol(parse_uri("ws://127.0.0.1/devtools/page/x"), max_size=MAX_SIZE)
    client.send_request(client.connect())
    server = ServerProtocol()
    server.receive_data(b"".join(client.data_to_send()))
    request = server.events_received()[0]
    server.send_response(server.accept(request))  # type: ignore[arg-type]
    client.receive_data(b"".join(server.data_to_send()))
    assert client.state is State.OPEN
    client.events_received()
    return client


def frame(opcode: Opcode, data: bytes, fin: bool = True) -> bytes:
    return Frame(opcode, data, fin).serialize(mask=False, extensions=[])


def masked_text(data: bytes) -> bytes:
    head = bytes([0x81, 0x80 | len(data)]) if len(data) < 126 else \
        bytes([0x81, 0x80 | 126]) + struct.pack("!H", len(data))
    return head + b"\0\0\0\0" + data  # a zero mask leaves the data as it is


def oversized_header() -> bytes:
    return bytes([0x81, 127]) + struct.pack("!Q", MAX_SIZE + 1)


TEXT = st.binary(max_size=200) | st.sampled_from([b"x" * 125, b"y" * 126, b"z" * 65_535,
                                                  b"w" * 65_536, b"{}"])


@st.composite
def streams(draw: Any) -> bytes:
    """Text messages (now and then fragmented, with control frames between the
    fragments), pings, pongs, binary messages; ending, maybe, with a close frame or a
    frame websockets must refuse."""
    parts: list[bytes] = []
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["text", "text", "text", "fragmented", "ping", "pong",
                                     "binary"]))
        data = draw(TEXT)
        if kind == "text":
            parts.append(frame(Opcode.TEXT, data))
        elif kind == "fragmented":
            cut = draw(st.integers(0, len(data)))
            parts.append(frame(Opcode.TEXT, data[:cut], fin=False))
            if draw(st.booleans()):
                parts.append(frame(Opcode.PING, b"mid"))
            parts.append(frame(Opcode.CONT, data[cut:]))
        elif kind == "ping":
            parts.append(frame(Opcode.PING, data[:100]))
        elif kind == "pong":
            parts.append(frame(Opcode.PONG, data[:100]))
        else:
            parts.append(frame(Opcode.BINARY, data))
    ending = draw(st.sampled_from(["none", "close", "masked", "rsv", "oversized",
                                   "stray-continuation", "text-inside-fragments"]))
    if ending == "close":
        parts.append(frame(Opcode.CLOSE, struct.pack("!H", 1000) + b"bye"))
        parts.append(frame(Opcode.TEXT, b"after close"))  # discarded by both
    elif ending == "masked":
        parts.append(masked_text(b"masked"))
    elif ending == "rsv":
        with_rsv1 = bytearray(frame(Opcode.TEXT, b"rsv"))
        with_rsv1[0] |= 0x40  # no extension was agreed: websockets must refuse it
        parts.append(bytes(with_rsv1))
    elif ending == "oversized":
        parts.append(oversized_header() + b"x" * 100)
    elif ending == "stray-continuation":
        parts.append(frame(Opcode.CONT, b"alone"))
    elif ending == "text-inside-fragments":
        parts.append(frame(Opcode.TEXT, b"first", fin=False))
        parts.append(frame(Opcode.TEXT, b"second"))
    return b"".join(parts)


def cuts(stream: bytes, points: list[int]) -> list[bytes]:
    edges = sorted({0, len(stream), *(p % (len(stream) + 1) for p in points)})
    return [stream[a:b] for a, b in itertools.pairwise(edges)]


def normal(items: list[Any]) -> list[tuple[Any, ...]]:
    """Frames as (opcode, data, fin); the splitter's own messages are whole text."""
    return [(Opcode.TEXT, bytes(i), True) if type(i) is bytes
            else (i.opcode, bytes(i.data), i.fin) for i in items]


def websockets_alone(chunks: list[bytes]) -> tuple[list[tuple[Any, ...]], ClientProtocol,
                                                     bytes]:
    protocol = opened()
    frames: list[Any] = []
    for chunk in chunks:
        protocol.receive_data(chunk)
        frames += [e for e in protocol.events_received() if isinstance(e, Frame)]
        if protocol.parser_exc is not None:
            break
    return normal(frames), protocol, b"".join(protocol.data_to_send())


def split(chunks: list[bytes]) -> tuple[list[tuple[Any, ...]], ClientProtocol, bytes]:
    protocol = opened()

    def feed(data: bytes) -> list[Any]:
        protocol.receive_data(data)
        return [e for e in protocol.events_received() if isinstance(e, Frame)]

    splitter = FrameSplitter(protocol, feed, MAX_SIZE)
    items: list[Any] = []
    for chunk in chunks:
        items += splitter.receive(chunk)
        if protocol.parser_exc is not None:
            break
    return normal(items), protocol, b"".join(protocol.data_to_send())


@settings(max_examples=300, deadline=None)
@given(streams(), st.lists(st.integers(min_value=0), max_size=8))
def test_the_splitter_takes_what_websockets_alone_takes(stream: bytes,
                                                        points: list[int]) -> None:
    chunks = cuts(stream, points)
    expected, alone, alone_wrote = websockets_alone(chunks)
    got, protocol, wrote = split(chunks)
    assert got == expected
    assert protocol.state is alone.state
    assert type(protocol.parser_exc) is type(alone.parser_exc)
    assert protocol.close_rcvd == alone.close_rcvd
    # Pongs and the closing handshake are masked with a random key: compare lengths.
    assert len(wrote) == len(alone_wrote)


def test_a_whole_text_frame_is_cut_out_without_websockets() -> None:
    protocol = opened()
    fed: list[bytes] = []

    def feed(data: bytes) -> list[Any]:
        fed.append(data)
        protocol.receive_data(data)
        return [e for e in protocol.events_received() if isinstance(e, Frame)]

    splitter = FrameSplitter(protocol, feed, MAX_SIZE)
    big = b"{" + b"x" * 66_000 + b"}"
    stream = frame(Opcode.TEXT, b'{"a":1}') + frame(Opcode.PING, b"p") + frame(Opcode.TEXT, big)
    got = [*splitter.receive(stream[:5]), *splitter.receive(stream[5:20])]
    assert got == [b'{"a":1}', Frame(Opcode.PING, b"p")]
    assert fed == [frame(Opcode.PING, b"p")]  # only the ping went to websockets, whole
    rest = stream[20:]
    assert splitter.receive(rest[:1000]) == [] and splitter.buffered > 0
    assert splitter.receive(rest[1000:]) == [big] and splitter.buffered == 0


def test_a_frame_over_the_limit_is_refused_from_its_header() -> None:
    protocol = opened()

    def feed(data: bytes) -> list[Any]:
        protocol.receive_data(data)
        return [e for e in protocol.events_received() if isinstance(e, Frame)]

    splitter = FrameSplitter(protocol, feed, MAX_SIZE)
    assert splitter.receive(frame(Opcode.TEXT, b"ok") + oversized_header()) == [b"ok"]
    assert isinstance(protocol.parser_exc, PayloadTooBig)
    assert splitter.buffered == 0  # nothing waits for the 70 kB that will never count
    assert protocol.state is State.CLOSING


def test_a_masked_frame_from_the_server_is_websockets_to_refuse() -> None:
    protocol = opened()

    def feed(data: bytes) -> list[Any]:
        protocol.receive_data(data)
        return [e for e in protocol.events_received() if isinstance(e, Frame)]

    assert FrameSplitter(protocol, feed, MAX_SIZE).receive(masked_text(b"m")) == []
    assert isinstance(protocol.parser_exc, ProtocolError)
