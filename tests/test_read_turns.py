"""Whose turn it is to read (``cdpnb.transport.turns``), on a real WebSocket on loopback.

A caller waiting for a reply reads the socket itself when nobody else does; the frames
must still come whole, in order and once, whoever reads; the reader thread takes the
socket back from a loop that stops reading; the connection's end is the reader thread's
to report, once, whoever was reading when it came.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator, Sequence

import pytest
from websockets.frames import Frame, Opcode
from websockets.server import ServerProtocol

from cdpnb.transport.turns import CHECK_S
from cdpnb.transport.wire import WireSocket

pytestmark = pytest.mark.skipif(not hasattr(__import__("select"), "epoll"),
                                reason="turns need epoll (Linux)")


class LoopbackPeer:
    """A WebSocket server on 127.0.0.1 taking one connection: it writes the frames it
    is told to, and answers every text message with ``{"id": <its id>}``."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"ws://127.0.0.1:{self._listener.getsockname()[1]}/devtools/page/x"
        self._sock: socket.socket | None = None
        self._protocol = ServerProtocol()
        self._ready = threading.Event()
        self._lock = threading.Lock()
        #: While set, replies wait for ``release`` (so a test decides when one comes).
        self.holding = False
        self._held: list[bytes] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        sock, _ = self._listener.accept()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._sock = sock
        protocol = self._protocol
        with contextlib.suppress(OSError):
            while True:
                data = sock.recv(65536)
                if not data:
                    return
                with self._lock:
                    protocol.receive_data(data)
                    events = protocol.events_received()
                    for event in events:
                        if not self._ready.is_set():
                            protocol.send_response(protocol.accept(event))  # type: ignore[arg-type]
                            self._ready.set()
                        elif isinstance(event, Frame) and event.opcode is Opcode.TEXT:
                            reply = json.dumps({"id": json.loads(event.data)["id"]}).encode()
                            if self.holding:
                                self._held.append(reply)
                            else:
                                protocol.send_text(reply)
                    sock.sendall(b"".join(protocol.data_to_send()))

    def send(self, texts: Sequence[str]) -> None:
        """Write ``texts`` in one go (one write: one read, as a browser's burst)."""
        assert self._ready.wait(10) and self._sock is not None
        with self._lock:
            for text in texts:
                self._protocol.send_text(text.encode())
            self._sock.sendall(b"".join(self._protocol.data_to_send()))

    def release(self) -> None:
        """Send the replies held back, in one go, once there is one (waiting for the
        command to arrive if need be)."""
        deadline = time.monotonic() + 10
        while True:
            with self._lock:
                held, self._held = self._held, []
            if held or time.monotonic() > deadline:
                break
            time.sleep(0.001)
        self.send([reply.decode() for reply in held])

    def drop(self) -> None:
        """End the connection without a close frame (a crash): FIN at once."""
        assert self._sock is not None
        self._sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._listener.close()
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.close()


class Received:
    """What the transport handed on: each message, and the thread it came on."""

    def __init__(self) -> None:
        self.messages: list[dict[str, int]] = []
        self.threads: list[str] = []
        self.closed: list[str] = []
        self.changed = threading.Condition()

    def on_frames(self, frames: Sequence[str | bytes]) -> None:
        with self.changed:
            for frame in frames:
                self.messages.append(json.loads(frame))
                self.threads.append(threading.current_thread().name)
            self.changed.notify_all()

    def on_closed(self, reason: str) -> None:
        with self.changed:
            self.closed.append(reason)
            self.changed.notify_all()

    def has_reply(self, command_id: int) -> bool:
        with self.changed:
            return any(m.get("id") == command_id for m in self.messages)

    def wait(self, count: int, timeout: float = 10) -> None:
        with self.changed:
            assert self.changed.wait_for(lambda: len(self.messages) >= count, timeout), \
                self.messages


@pytest.fixture
def pair() -> Iterator[tuple[WireSocket, LoopbackPeer, Received]]:
    peer = LoopbackPeer()
    wire = WireSocket.open(peer.url)
    received = Received()
    wire.start(received.on_frames, received.on_closed)
    try:
        yield wire, peer, received
    finally:
        wire.close()
        peer.close()


def command(wire: WireSocket, command_id: int) -> None:
    wire.send(json.dumps({"id": command_id, "method": "Runtime.evaluate"}).encode())


def test_a_blocked_thread_reads_its_own_reply(
        pair: tuple[WireSocket, LoopbackPeer, Received]) -> None:
    wire, peer, received = pair
    peer.send(['{"method":"before"}'])
    received.wait(1)
    assert received.threads == ["cdpnb-reader"]
    here = threading.current_thread().name
    peer.holding = True  # each reply comes once this thread's turn has begun

    released: set[int] = set()

    def waiting(command_id: int) -> bool:
        if command_id not in released:  # first asked once the turn is taken
            released.add(command_id)
            peer.release()
        return not received.has_reply(command_id)

    for command_id in range(1, 21):
        command(wire, command_id)
        wire.read_while(lambda i=command_id: waiting(i),  # type: ignore[misc]
                        time.monotonic() + 10)
        assert received.has_reply(command_id)
    assert received.threads[1:] == [here] * 20  # every reply read here: one wake each
    peer.holding = False
    peer.send(['{"method":"after"}'])  # nobody waits: the reader thread reads again
    received.wait(22)
    assert received.threads[-1] == "cdpnb-reader"


def test_a_loop_reads_while_it_awaits_and_gives_the_socket_back(
        pair: tuple[WireSocket, LoopbackPeer, Received]) -> None:
    wire, peer, received = pair

    async def calls() -> str:
        loop = asyncio.get_running_loop()
        for command_id in range(1, 21):
            end = wire.lead_from(loop)
            assert end is not None
            other = asyncio.new_event_loop()
            assert wire.lead_from(other) is None  # one loop at a time
            other.close()
            command(wire, command_id)
            while not received.has_reply(command_id):  # noqa: ASYNC110 (what is polled)
                await asyncio.sleep(0)
            end()
        return threading.current_thread().name

    loop_thread = asyncio.run(calls())
    assert received.threads == [loop_thread] * 20
    peer.send(['{"method":"after"}'])
    received.wait(21)
    assert received.threads[-1] == "cdpnb-reader"


def test_frames_come_whole_in_order_and_once_whoever_reads(
        pair: tuple[WireSocket, LoopbackPeer, Received]) -> None:
    wire, peer, received = pair
    stop = threading.Event()

    def stream() -> None:
        n = 0
        while not stop.is_set():
            peer.send([json.dumps({"method": "e", "params": {"n": n + k}}) for k in range(7)])
            n += 7
            time.sleep(0.0005)

    writer = threading.Thread(target=stream, daemon=True)
    writer.start()
    try:
        async def on_a_loop(first: int) -> None:
            loop = asyncio.get_running_loop()
            for command_id in range(first, first + 50):
                end = wire.lead_from(loop)
                command(wire, command_id)
                while not received.has_reply(command_id):  # noqa: ASYNC110
                    await asyncio.sleep(0)
                if end is not None:
                    end()

        def blocked(first: int) -> None:
            for command_id in range(first, first + 50):
                command(wire, command_id)
                wire.read_while(lambda i=command_id: not received.has_reply(i),  # type: ignore[misc]
                                time.monotonic() + 10)
                with received.changed:
                    assert received.changed.wait_for(
                        lambda i=command_id: received.has_reply(i), 10)  # type: ignore[misc]

        threads = [threading.Thread(target=blocked, args=(1000,)),
                   threading.Thread(target=lambda: asyncio.run(on_a_loop(2000)))]
        for thread in threads:
            thread.start()
        blocked(3000)
        for thread in threads:
            thread.join(60)
    finally:
        stop.set()
        writer.join(10)
    events = [m["params"]["n"] for m in received.messages if "method" in m]
    assert events == list(range(len(events)))  # whole, in order, once
    replies = sorted(m["id"] for m in received.messages if "id" in m)
    assert replies == [*range(1000, 1050), *range(2000, 2050), *range(3000, 3050)]


@pytest.mark.timeout(60)
def test_the_reader_takes_the_socket_back_from_a_loop_that_stopped_reading(
        pair: tuple[WireSocket, LoopbackPeer, Received]) -> None:
    wire, peer, received = pair

    async def lead_then_block() -> float:
        end = wire.lead_from(asyncio.get_running_loop())
        assert end is not None
        peer.send(['{"method":"while blocked"}'])
        started = time.monotonic()
        time.sleep(20 * CHECK_S)  # noqa: ASYNC251 (the loop blocked by other work)
        blocked_for = time.monotonic() - started
        await asyncio.sleep(0)
        end()
        return blocked_for

    blocked_for = asyncio.run(lead_then_block())
    received.wait(1)
    # Read by the reader thread while the loop was blocked, not by the loop after.
    assert received.threads == ["cdpnb-reader"]
    assert blocked_for >= 20 * CHECK_S
    peer.send(['{"method":"later"}'])
    received.wait(2)
    assert received.threads[-1] == "cdpnb-reader"


def test_the_end_during_a_thread_turn_is_reported_once_by_the_reader(
        pair: tuple[WireSocket, LoopbackPeer, Received]) -> None:
    wire, peer, received = pair
    command(wire, 1)
    wire.read_while(lambda: not received.has_reply(1), time.monotonic() + 10)
    threading.Timer(0.2, peer.drop).start()
    started = time.monotonic()
    wire.read_while(lambda: True, time.monotonic() + 30)  # a reply that never comes
    assert time.monotonic() - started < 20  # it left at the end, not at the deadline
    with received.changed:
        assert received.changed.wait_for(lambda: received.closed, 10)
    assert received.closed == ["connection dropped"]
    assert wire.closed


def test_a_caller_arriving_during_another_turn_waits_without_reading(
        pair: tuple[WireSocket, LoopbackPeer, Received]) -> None:
    wire, peer, received = pair
    inside = threading.Event()
    release = threading.Event()

    def long_wait() -> None:
        def waiting() -> bool:
            inside.set()
            return not release.is_set()
        wire.read_while(waiting, time.monotonic() + 30)

    holder = threading.Thread(target=long_wait)
    holder.start()
    assert inside.wait(10)
    started = time.monotonic()
    wire.read_while(lambda: True, time.monotonic() + 30)  # returns at once: not its turn
    assert time.monotonic() - started < 5
    command(wire, 7)
    with received.changed:
        assert received.changed.wait_for(lambda: received.has_reply(7), 10)
    assert received.threads == [holder.name]  # the holder read it
    release.set()
    peer.send(['{"method":"wake"}'])  # the holder's poll wakes, sees it may go
    holder.join(10)
    received.wait(2)
