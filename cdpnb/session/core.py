"""The connection core: one transport, the state fold, reply futures — on any thread.

Threads. The transport's reader thread takes each batch of received frames, parses,
records and folds them under one lock, and resolves the futures of the callers
waiting for those replies (``call_soon_threadsafe`` on the caller's own loop: the one
thread wake-up of a round trip). A caller sends from its own thread and loop: it
allocates the id, folds and records the command, and writes the frame itself. Work
that reacts to the stream (child set-up, the dialog bridge, policies, the watchdog,
page adoption) runs on cdpnb's engine loop, so it goes on while the caller's thread
is busy (a notebook cell in ``time.sleep``).

Listeners. ``subscribe(listener, methods=..., changes=...)`` runs ``listener(message,
changes)`` on the engine loop, in stream order, for the messages it asked for (by
method, or by the change types their fold reported): the hot path wakes nobody who
did not ask. ``subscribe(..., now=True)`` runs it on the receiving thread under the
fold lock, for quick checks that resolve a waiter (``wait_until``); it must not block.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import threading
import time
import weakref
from collections.abc import Callable, Coroutine, Iterator, Sequence
from concurrent.futures import Future as ThreadFuture
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from cdpnb.errors import (
    CDPError,
    CommandTimeout,
    ConnectionLost,
    EndpointError,
    SupervisorStopped,
    TargetGone,
)
from cdpnb.protocol import (
    PROTOCOL_SPECS,
    CDPConnection,
    Command,
    Connection,
    ErrorReply,
    Fault,
    Message,
    Note,
    ProtocolSpec,
    Reply,
    error_of,
    protocol_spec,
)
from cdpnb.protocol.connection import ReplyReader
from cdpnb.protocol.credentials import redact_url
from cdpnb.protocol.specs import CDP
from cdpnb.runtime.engine import engine
from cdpnb.runtime.threads import in_own_thread
from cdpnb.runtime.waits import wait_for
from cdpnb.state import BrowserState, Change, fold
from cdpnb.state.changes import PhaseChanged
from cdpnb.state.models import ConnectionPhase
from cdpnb.state.reducer import COUNTS_ONLY
from cdpnb.state.stats import stats_of
from cdpnb.state.wire import WireTally
from cdpnb.transport import Connector, Transport, connect_websocket

__all__ = ["Core", "Listener", "settle"]

log = logging.getLogger("cdpnb.supervisor")

Listener = Callable[[Message, tuple[Change, ...]], None]
T = TypeVar("T")
C = TypeVar("C", bound=Change)


class Recording(Protocol):
    """What the core writes a trace with (``cdpnb.trace.Recorder``)."""

    def __call__(self, record: Message | Fault, wire: bytes | None = None) -> None: ...

    def flush(self) -> None: ...

#: What a crashed renderer's session still takes: the commands that reload it.
REVIVING_METHODS = frozenset({"Page.navigate", "Page.reload"})
#: Faults after which the connection is closed, as RFC 6455 asks (the code to close with).
CLOSING_FAULTS = {"invalid-utf8": 1007}


class BlockedReply:
    """The reply a thread waits for by blocking (``Core.send`` from ``cdpnb.sync`` on
    the thread's private loop): a lock held until the reply is set. Lighter than a
    ``concurrent.futures.Future`` (no condition variable), set from any thread."""

    __slots__ = ("_error", "_ready", "_set", "_value")

    def __init__(self) -> None:
        self._ready = threading.Lock()
        self._ready.acquire()
        self._set = threading.Lock()  # taken by the first setter, for good
        self._value: Any = None
        self._error: BaseException | None = None

    def done(self) -> bool:
        return self._set.locked()

    def set(self, value: Any = None, error: BaseException | None = None) -> None:
        if self._set.acquire(blocking=False):  # the first answer is the answer
            self._value, self._error = value, error
            self._ready.release()

    def result(self, timeout: float) -> Any:
        """The reply, or its error; ``_Expired`` after ``timeout`` seconds."""
        if not self._ready.acquire(timeout=max(0.0, timeout)):
            raise _Expired()
        if self._error is not None:
            raise self._error
        return self._value


class ReplyCallback:
    """A reply handed to a function on the thread that folds it (``Core.dispatch``):
    nobody waits, no loop wakes. Called once: with the result, or with the error."""

    __slots__ = ("__weakref__", "_set", "_then")

    def __init__(self, then: Callable[[Any, BaseException | None], None]) -> None:
        self._then = then
        self._set = threading.Lock()  # taken by the first setter, for good

    def done(self) -> bool:
        return self._set.locked()

    def set(self, value: Any = None, error: BaseException | None = None) -> None:
        if self._set.acquire(blocking=False):
            self._then(value, error)


def settle(future: asyncio.Future[T] | BlockedReply | ReplyCallback, value: T | None = None,
           *, error: BaseException | None = None) -> None:
    """Set ``future`` from any thread (an asyncio one on its own loop); a done future is
    left alone."""
    if type(future) is BlockedReply or type(future) is ReplyCallback:
        future.set(value, error)  # the blocked thread wakes / the function runs here
        return
    assert isinstance(future, asyncio.Future)

    def set_now() -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
            future.exception()  # its waiter raises it; never "exception not retrieved"
        else:
            future.set_result(value)  # type: ignore[arg-type]

    loop = future.get_loop()
    if loop.is_closed():
        return
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        set_now()
    else:
        loop.call_soon_threadsafe(set_now)


_NO_KINDS: frozenset[type] = frozenset()
#: How many (method, kinds of change) the subscriptions' lookup remembers.
_WANTED_MEMORY = 4096


@dataclass(slots=True)
class _Subscription:
    listener: Listener
    methods: frozenset[str] | None
    #: The kinds of change asked for (exact types: changes are plain classes, none a
    #: subclass of another).
    changes: frozenset[type] | None
    now: bool

    def wants(self, method: str | None, kinds: frozenset[type]) -> bool:
        """``kinds``: the types of the message's changes, made once for every listener
        (a note that moves four counters was otherwise looked through seven times)."""
        # Asked for every message by every subscription: most messages change nothing.
        if self.methods is None and self.changes is None:
            return True
        if self.methods is not None and method in self.methods:
            return True
        if self.changes is None or not kinds:
            return False
        return not kinds.isdisjoint(self.changes)


class Core:
    """Connection, protocol and state of one supervisor."""

    def __init__(self, url: str, *, command_timeout_s: float, connect_timeout_s: float,
                 connector: Connector | None = None) -> None:
        self.url = url
        self.ws_url: str | None = None
        self.connector: Connector = connector or connect_websocket
        self._state = BrowserState()
        #: Messages made but not folded yet, with their wire text: count-only notes
        #: (``note_soon``), and a command written first with the note of its decision
        #: (``_write_first``). Folded, in order, before the next message and before
        #: anyone reads ``state``.
        self._soon: collections.deque[tuple[Message, bytes | None]] = collections.deque()
        self.command_timeout_s = command_timeout_s
        self.connect_timeout_s = connect_timeout_s
        #: Until every counted occurrence is noted where it happens (issue 26), the
        #: ``stats[name] += 1`` left in the supervisor becomes its note.
        self.stopping = False
        #: What went over the wire, from the records as the trace holds them.
        self._wire = WireTally()
        self._conn: Connection = CDPConnection()
        #: The protocol the endpoint speaks and its facts, known once connected (until
        #: then the implied one, CDP). WIP and WebDriver classic are framed as CDP: the
        #: same sans-I/O connection parses them.
        self.protocol_spec: ProtocolSpec = CDP
        self._transport: Transport | None = None
        self._lock = threading.RLock()  # the fold: one message at a time, in order
        self._replies: dict[int, asyncio.Future[dict[str, Any]] | BlockedReply
                            | ReplyCallback] = {}
        #: What listeners asked to run after the message being folded (a fold's own).
        self._after: list[Callable[[], None]] | None = None
        self._subscriptions: list[_Subscription] = []
        #: The subscriptions that want a message, by its method and its kinds of change:
        #: each message asked every subscription (8 on a page's supervisor: 24 checks an
        #: evaluate), now one lookup. Emptied when the subscriptions change.
        self._wanted: dict[tuple[str | None, frozenset[type]], tuple[_Subscription, ...]] = {}
        #: Futures of callers waiting on the stream; they end at once on stop or loss.
        self._waiters: set[asyncio.Future[Any]] = set()
        self._tasks: set[ThreadFuture[Any]] = set()
        #: Told on the engine loop when the connection in use is lost (the state's
        #: connection moved to ``lost``): the reason, and which connection it was
        #: (``generation``: 1 for the first ``connect``, then 2, ...). The loss of a
        #: connection a reconnect attempt opened and has not set up is that attempt's
        #: business, and news of an older connection is no news: neither is told.
        self.on_lost: Callable[[str, int], None] | None = None
        #: Given every message (and fault) before it is folded, with its wire bytes when
        #: it has some; flushed after each batch of frames read in one go.
        self.recorder: Recording | None = None
        #: Messages the supervisor only takes in for another's sake, not recorded: given
        #: each with the state it meets (over BiDi, other tabs' unpaused requests).
        self.unrecorded: Callable[[Message, BrowserState], bool] | None = None
        self._in_batch = False
        #: What died behind the connection in use, once known (its transport's ``gone``,
        #: or ``end_for_good``): that loss is final.
        self._gone: str | None = None
        #: Why the connection in use answers nothing for now, when cdpnb knows: a script
        #: it could not end holds the target (``hold``; None once a reply from it comes).
        #: ``alive`` is False meanwhile.
        self.held: str | None = None
        self._held_session: str | None = None

    # -- connection ------------------------------------------------------------------

    async def connect(self, transport: Transport | None = None) -> int:
        """Open a connection (or take ``transport``, opened already) and start its
        reader; its generation (1 for the first, then 2, ...), which ``on_lost`` names
        when it ends."""
        if transport is None:
            transport = await self.connector(self.url, self.connect_timeout_s)
        self.ws_url = str(getattr(transport, "url", self.url))
        said = getattr(transport, "protocol", CDP.name)
        try:
            protocol = protocol_spec(said)
        except ValueError:
            await in_own_thread(transport.close)  # (of no use: never left open)
            names = " and ".join(spec.name for spec in PROTOCOL_SPECS)
            raise EndpointError(f"the transport for {redact_url(self.url)} says it speaks "
                                f"{said!r}; cdpnb speaks {names}") from None
        with self._lock:
            recorder = self.recorder
            set_protocol = getattr(recorder, "set_protocol", None)
            if callable(set_protocol):
                set_protocol(protocol.name)
            self.protocol_spec = protocol
            self._conn = protocol.connection()
            self._transport = transport
            self._gone = self.held = None
            generation = self.state.connection.generation + 1
            note = {"url": redact_url(self.ws_url), **({"protocol": protocol.name}
                                                   if not protocol.implied else {}),
                    "generation": generation}
            self._apply(Note("cdpnb.connected", note, None, *_now()))
        conn = self._conn
        tell_awaiting = getattr(transport, "tell_awaiting", None)
        if callable(tell_awaiting):
            tell_awaiting(self._awaiting_reply)
        transport.start(lambda frames: self._on_frames(transport, conn, frames),
                        lambda reason: self._on_closed(transport, reason, generation))
        return generation

    def _awaiting_reply(self) -> bool:
        """Whether a command sent still waits for its reply (read without the lock: a
        hint for the transport's acknowledgements, never a decision)."""
        return bool(self._replies)

    @property
    def connected(self) -> bool:
        return self._transport is not None and self.state.connected

    @property
    def transport(self) -> Transport | None:
        """The connection in use (None while down): what a driver may read of it, such
        as the WebDriver session a BiDi socket was opened for."""
        return self._transport

    @property
    def connection(self) -> ConnectionPhase:
        """The connection's life, as folded (``cdpnb.state.connection``)."""
        return self.state.connection

    @property
    def generation(self) -> int:
        """The newest connection: 1 for the first ``connect``, then 2, ... (0 before)."""
        return self.state.connection.generation

    @property
    def last_disconnect_reason(self) -> str | None:
        """Why the supervisor was last down: the loss of the connection in use (kept
        while reconnecting, and once up again), or why reconnecting gave up; None until
        the first loss."""
        return self.state.connection.reason

    def connection_ready(self, generation: int) -> bool:
        """Say that connection ``generation`` is set up and in use (``connecting`` or
        ``reconnecting`` → ``up``; a reconnect is counted). False, and nothing changes,
        when it is no longer the newest or is closed already: lost as its set-up
        finished, which is then the business of whoever set it up."""
        with self._lock:
            if generation != self.generation or self._transport is None:
                return False
            self._apply(Note("cdpnb.connectionReady", {"generation": generation}, None,
                             *_now()))
            return self.state.connection.phase == "up"

    @property
    def gone(self) -> str | None:
        """What died behind the last connection, in words, when its end is known to be
        final (the transport's ``gone``, or ``end_for_good``): no reconnect can mend it.
        None while connected, and for an end a reconnect may mend."""
        return self._gone

    def end_for_good(self, gone: str) -> None:
        """End the connection in use because what is behind it died for good (``gone``
        says what, in words): a driver's liveness word, as a transport's ``gone`` is
        the transport's. It ends as a lost one does, with ``gone`` as the reason, and
        is not reconnected. From any thread; never blocks."""
        with self._lock:
            transport = self._transport
            if transport is None:
                return
            self._gone = gone
        transport.fail(1001, "cdpnb: what is behind the connection is gone")

    def hold(self, session_id: str | None, why: str) -> bool:
        """Say that the target behind ``session_id`` answers nothing for now (``why``, in
        words): ``held`` until a reply from that session is read (a late one included).
        True when it was not held already."""
        with self._lock:
            if self.held is not None or self._transport is None:
                return False
            self.held, self._held_session = why, session_id
            self._apply(Note("cdpnb.scriptHeld", {}, session_id, *_now()))
        return True

    def give_up(self, reason: str) -> None:
        """Say that reconnecting gave up (``gave_up``, with ``reason``): nothing will
        bring the connection back, and later news of it does not change why."""
        self.note("cdpnb.reconnectGaveUp", {"reason": reason})

    async def end_connection(self) -> None:
        """Close the current connection, which then ends as a lost one does (one a
        reconnect attempt could not set up is of no use, and must not stay open)."""
        transport = self._transport
        if transport is not None:
            await in_own_thread(transport.close)

    async def close(self) -> None:
        self.stopping = True
        self.fail_waiters(self._stopped_error())
        for task in list(self._tasks):
            task.cancel()
        transport = self._transport
        if transport is not None:
            await in_own_thread(transport.close)
        self._lost("supervisor stopped", transport)

    # -- sending (any thread, any loop) ------------------------------------------------

    async def send(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        session_id: str | None = None,
        timeout: float | None = None,
        *,
        reply_reader: ReplyReader | None = None,
        why: Note | None = None,
    ) -> dict[str, Any]:
        """Send one command and await its result; errors become CDPError.
        ``reply_reader`` reads a large reply its own way (``CommandBook.command``);
        ``why``: cdpnb's note of the decision the command carries out (``stamped``),
        folded just before it but after it is written (see ``_write``)."""
        loop = asyncio.get_running_loop()
        # A blocking call on its thread's private loop (cdpnb.sync from a script) waits
        # for the reply by blocking that thread: nothing else runs on that loop, and a
        # woken thread is quicker than a woken loop (1.21× a bare client's round trip
        # through the loop, ≈1.0× blocked; benchmarks/README.md).
        limit = self.command_timeout_s if timeout is None else timeout
        if engine.blocks_here():
            blocked = BlockedReply()
            command_id, transport = self._write(method, params, session_id, blocked,
                                                reply_reader, why)
            return self._wait_blocked(blocked, transport, command_id, method, session_id, limit)
        future: asyncio.Future[dict[str, Any]] = loop.create_future()
        # This loop's turn to read is taken before the command goes out, so a quick
        # reply cannot wake the reader thread first (4% of replies did under load).
        end_turn = self._take_turn(self._transport, loop)
        try:
            command_id, _ = self._write(method, params, session_id, future, reply_reader,
                                        why)
        except BaseException:
            if end_turn is not None:
                end_turn()
            raise
        return await self._reply(future, command_id, method, session_id, limit, end_turn)

    def dispatch(self, method: str, params: dict[str, Any] | None, session_id: str | None,
                 then: Callable[[Any, BaseException | None], None], *,
                 why: Note | None = None) -> None:
        """Write one command now, from whatever thread calls (a listener called
        ``now``), and hand its result or error to ``then`` on the thread that folds the
        reply (under the fold lock: quick, thread-safe work only): for an answer that
        must neither wait for a loop to wake before it goes out nor wake one when its
        reply comes. ``then`` gets CommandTimeout after ``command_timeout_s`` without a
        reply, ConnectionLost if the connection goes first. Raises as ``send`` would if
        the command cannot be written. ``why`` as for ``send``."""
        callback = ReplyCallback(then)
        command_id, _ = self._write(method, params, session_id, callback, why=why)
        limit = self.command_timeout_s
        # The timer lives on the engine loop; it is armed while the browser works on
        # the command, so that wake-up is off the reply's path. It holds the callback
        # weakly: cancelling it at the reply would wake the engine, and holding it
        # kept every answer's callback, dialog and reply for the timeout's 30 s (+24 MB
        # over 10,000 auto-answered dialogs, measured).
        held = weakref.ref(callback)
        engine.loop.call_soon_threadsafe(
            lambda: engine.loop.call_later(limit, self._expire_dispatched, held,
                                           command_id, method, session_id, limit))

    def _expire_dispatched(self, held: weakref.ref[ReplyCallback], command_id: int,
                           method: str, session_id: str | None, limit: float) -> None:
        callback = held()
        if callback is None or callback.done():
            return
        with self._lock:
            self._replies.pop(command_id, None)
        callback.set(error=self._no_reply(command_id, method, session_id, limit))

    def report_failure(self, name: str, exc: BaseException) -> None:
        """A piece of background work ``name`` failed with ``exc``: noted and logged
        (ConnectionLost and SupervisorStopped are the connection's or the user's end,
        said elsewhere)."""
        if isinstance(exc, ConnectionLost | SupervisorStopped):
            return
        self.note("cdpnb.taskFailed", {"task": name, "error": type(exc).__name__})
        # A CDP error or a target that went meanwhile (an OOPIF removed during its
        # own set-up) is the browser's ordinary life, not something to warn about.
        expected = isinstance(exc, CDPError | TargetGone | CommandTimeout)
        level = logging.INFO if expected else logging.WARNING
        log.log(level, "cdpnb background task %s failed: %r", name, exc)

    def _write(self, method: str, params: dict[str, Any] | None, session_id: str | None,
               future: asyncio.Future[dict[str, Any]] | BlockedReply | ReplyCallback,
               reply_reader: ReplyReader | None = None, why: Note | None = None,
               ) -> tuple[int, Transport]:
        """Record, fold and write one command whose reply will settle ``future``; with
        ``why`` (the note of the decision it carries out), record and fold the note and
        then the command right after it is written."""
        try:
            transport = self._writable(method, session_id)
        except BaseException:
            if why is not None:
                self.apply(why)  # (the decision is on record, as if noted before this)
            raise
        conn = self._conn
        with self._lock:
            cmd, text = conn.command(method, params, session_id, wall=time.time(),
                                     mono=time.monotonic(), reply_reader=reply_reader)
            data = text.encode()
            self._replies[cmd.id] = future
            if why is not None:
                return self._write_first(why, cmd, data, transport, future)
            self._apply(cmd, data)
        try:
            transport.send(data)
        except BaseException:
            # Nothing will answer a frame that was not written; nobody must be left
            # holding a future whose exception is never retrieved.
            with self._lock:
                self._replies.pop(cmd.id, None)
                conn.abandon(cmd.id)
            if isinstance(future, asyncio.Future):
                future.cancel()
            raise
        return cmd.id, transport

    def _writable(self, method: str, session_id: str | None) -> Transport:
        """The transport to write ``method`` on; what to raise when it cannot be."""
        if self.stopping:
            raise SupervisorStopped(f"supervisor for {redact_url(self.url)} is stopped; "
                                    f"cannot send {method}")
        transport = self._transport
        if transport is None or not self.state.connected:
            raise self.down(f"send {method}")
        if session_id in self.state.crashed_sessions and method not in REVIVING_METHODS:
            # A crashed renderer answers nothing until it is reloaded.
            raise TargetGone(f"{method}: the renderer behind session {session_id} crashed; "
                             "navigate (or Page.reload) to bring the page back")
        return transport

    def _write_first(self, why: Note, cmd: Command, data: bytes, transport: Transport,
                     future: asyncio.Future[dict[str, Any]] | BlockedReply | ReplyCallback,
                     ) -> tuple[int, Transport]:
        """Write ``cmd``, then fold ``why`` and ``cmd``, all under the fold lock: the
        trace and every listener see the note, then the command, before anything the
        browser says after it (its reply, a dialog's closing), as if folded first; the
        browser has it sooner. The two wait in ``_soon`` while it is written, so that a
        transport that hands the reply over within ``send``, on this thread (a scripted
        peer), has them folded first too. Measured (an alert answered by ``auto_accept`` after a
        50 ms idle moment, headless-shell): folding the note cost 40 µs there, of the
        ≈300 µs from the opening's frame to the answer's write (everything is cold
        after the wait: the same fold costs a tenth of that in a tight loop). Only for
        a small command (a dialog's answer): a write under the fold lock holds up the
        reader's folds until it is done."""
        self._soon.extend(((why, None), (cmd, data)))
        try:
            transport.send(data)
        except BaseException:
            self._replies.pop(cmd.id, None)
            self._conn.abandon(cmd.id)
            if isinstance(future, asyncio.Future):
                future.cancel()
            raise
        finally:
            self._fold_held()  # (written or not, as when folded before the write)
        return cmd.id, transport

    def stamped(self, method: str, params: dict[str, Any],
                session_id: str | None = None) -> Note:
        """A note of ``method`` stamped now, for ``send``'s and ``dispatch``'s ``why``."""
        return Note(method, params, session_id, *_now())

    @staticmethod
    def _take_turn(transport: Transport | None,
                   loop: asyncio.AbstractEventLoop) -> Callable[[], None] | None:
        """This loop reads the socket while it waits, when nobody else reads: the reply
        wakes this loop alone, not the reader thread and then this loop
        (cdpnb.transport.turns). What to call when the wait ends, or None."""
        lead_from = getattr(transport, "lead_from", None)
        return None if lead_from is None else lead_from(loop)

    async def _reply(self, future: asyncio.Future[dict[str, Any]],
                     command_id: int, method: str, session_id: str | None,
                     limit: float, end_turn: Callable[[], None] | None) -> dict[str, Any]:
        timer = asyncio.get_running_loop().call_later(limit, _expire, future)
        try:
            return await future
        except _Expired:
            raise self._no_reply(command_id, method, session_id, limit) from None
        except asyncio.CancelledError:
            self._abandon(command_id)
            raise
        finally:
            if end_turn is not None:
                end_turn()
            timer.cancel()
            with self._lock:
                self._replies.pop(command_id, None)

    def post(self, method: str, params: dict[str, Any] | None = None,
             session_id: str | None = None) -> bool:
        """Send one command now, from whatever thread calls (a listener on the reader's
        own thread, say), and wait for nothing: its reply is folded and recorded like
        any other, and nobody awaits it. For what must reach the browser before the
        next message is read (letting go of a bridged call before its frame unloads).
        False when the connection is down (nothing was sent)."""
        transport = self._transport
        if self.stopping or transport is None or not self.state.connected:
            return False
        conn = self._conn
        with self._lock:
            cmd, text = conn.command(method, params, session_id, wall=time.time(),
                                     mono=time.monotonic())
            data = text.encode()
            self._apply(cmd, data)
        try:
            transport.send(data)
        except Exception as exc:  # the connection went as we wrote: its loss says so
            with self._lock:
                conn.abandon(cmd.id)
            log.info("cdpnb: posting %s failed: %s", method, exc)
            return False
        return True

    def _wait_blocked(self, future: BlockedReply, transport: Transport, command_id: int,
                      method: str, session_id: str | None, limit: float) -> dict[str, Any]:
        deadline = time.monotonic() + limit
        read_while = getattr(transport, "read_while", None)
        try:
            if read_while is not None:
                # The socket's reads on this thread while it waits, when nobody else
                # reads: the reply wakes this thread alone (cdpnb.transport.turns).
                read_while(lambda: not future.done(), deadline)
            reply: dict[str, Any] = future.result(deadline - time.monotonic())
            return reply
        except _Expired:
            raise self._no_reply(command_id, method, session_id, limit) from None
        except BaseException:
            if not future.done():  # KeyboardInterrupt: its reply, if it comes, is nobody's
                self._abandon(command_id)
            raise
        finally:
            with self._lock:
                self._replies.pop(command_id, None)

    def down(self, action: str) -> ConnectionLost:
        """The error for ``action`` (``"send Runtime.evaluate"``) while the connection is
        down, with the reason it went."""
        reason = self.last_disconnect_reason or "not connected"
        return ConnectionLost(f"cannot {action}: {self._link} is down ({reason})")

    def _abandon(self, command_id: int) -> None:
        with self._lock:
            self._conn.abandon(command_id)

    def _no_reply(self, command_id: int, method: str, session_id: str | None,
                  limit: float) -> CommandTimeout:
        """A command whose time ran out: abandoned (a late reply is nobody's), counted."""
        self._abandon(command_id)
        self.note("cdpnb.commandTimedOut", {"id": command_id, "method": method}, session_id)
        where = f" on session {session_id}" if session_id else ""
        return CommandTimeout(f"{method}{where} got no reply within {limit:g} s")

    def note(self, method: str, params: dict[str, Any], session_id: str | None = None) -> None:
        """Fold one of cdpnb's own decisions into the stream."""
        self.apply(Note(method, params, session_id, *_now()))

    def note_soon(self, method: str, params: dict[str, Any],
                  session_id: str | None = None) -> None:
        """``note`` for a note that only moves counters (``reducer.COUNTS_ONLY``), off
        the caller's path: stamped now, folded when the caller's loop next turns (after
        the call that made it has handed its caller the result), and in any case before
        the next message and before ``state`` is read, so the trace's order and every
        reading are as if folded now. Measured (headless-shell, one ``evaluate`` after a
        50 ms idle moment): the ``cdpnb.evaluated`` fold costs 60-70 µs there (25 µs
        in a row, 7 µs in a tight loop: the code is cold after the wait), ≈40% of
        ``sup.evaluate``'s own share of the round trip. A blocking call on its thread's
        private loop folds it now: that loop may not turn again."""
        if method not in COUNTS_ONLY:
            raise ValueError(f"note_soon is for notes that only count, not {method!r}")
        note = Note(method, params, session_id, *_now())
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is None or engine.blocks_here():
            self.apply(note)
            return
        self._soon.append((note, None))
        loop.call_soon(self._fold_soon)

    def _fold_soon(self, wait: bool = True) -> None:
        if self._soon and self._lock.acquire(blocking=wait):
            try:
                self._fold_held()
            finally:
                self._lock.release()

    @property
    def state(self) -> BrowserState:
        """The folded state (frozen), the notes ``note_soon`` holds folded first. Never
        waits: while another thread folds a message (which folds them first), the
        state as it stands."""
        if self._soon:
            self._fold_soon(wait=False)
        return self._state

    @state.setter
    def state(self, state: BrowserState) -> None:
        self._state = state

    def settled_state(self) -> BrowserState:
        """``state`` with every note ``note_soon`` holds folded, waiting for a fold under
        way on another thread if need be (what ``stop()`` keeps)."""
        with self._lock:
            return self.state

    # -- receiving -------------------------------------------------------------------

    def subscribe(self, listener: Listener, *, methods: Sequence[str] | None = None,
                  changes: Sequence[type] | None = None,
                  now: bool = False) -> Callable[[], None]:
        """Call ``listener(message, changes)`` for the messages asked for (all, if
        neither ``methods`` nor ``changes``): on the engine loop, or with ``now`` on the
        receiving thread, under the fold lock (quick, thread-safe work only)."""
        sub = _Subscription(listener, frozenset(methods) if methods is not None else None,
                            frozenset(changes) if changes is not None else None, now)
        with self._lock:
            self._subscriptions = [*self._subscriptions, sub]
            self._wanted = {}

        def unsubscribe() -> None:
            with self._lock:
                self._subscriptions = [s for s in self._subscriptions if s is not sub]
                self._wanted = {}

        return unsubscribe

    def waiter(self) -> asyncio.Future[Any]:
        """A future (on the running loop) for a caller waiting on the stream. It fails
        at once with SupervisorStopped or ConnectionLost when the supervisor stops or
        the connection is lost; ``forget`` it when done."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if self.stopping:
            future.set_exception(self._stopped_error())
        elif not self.state.connected:
            future.set_exception(self._lost_error(self.last_disconnect_reason or "not connected"))
        with self._lock:
            self._waiters.add(future)
        return future

    def forget(self, future: asyncio.Future[Any]) -> None:
        with self._lock:
            self._waiters.discard(future)
        if future.done() and not future.cancelled():
            future.exception()  # retrieved: an ended wait is not an unhandled error

    def fail_waiters(self, error: Exception) -> None:
        """End every wait on the stream at once with ``error``."""
        with self._lock:
            waiters = list(self._waiters)
        for future in waiters:
            settle(future, error=error)

    def _stopped_error(self) -> SupervisorStopped:
        return SupervisorStopped(f"supervisor for {redact_url(self.url)} stopped while waiting")

    @property
    def protocol(self) -> str:
        """The endpoint's protocol by name: ``cdp``, ``bidi``, ``wip`` or ``classic``."""
        return self.protocol_spec.name

    @property
    def link(self) -> str:
        """"CDP connection to <url>" (or WebDriver BiDi, WIP, WebDriver classic), for
        errors and hints."""
        return self._link

    @property
    def _link(self) -> str:
        """"CDP connection to <url>" (or WebDriver BiDi, WIP, WebDriver classic)."""
        return f"{self.protocol_spec.short} connection to {redact_url(self.url)}"

    def _lost_error(self, reason: str) -> ConnectionLost:
        return ConnectionLost(f"{self._link} lost while waiting ({reason})")

    @contextlib.contextmanager
    def first_change(self, kind: type[C], matching: Callable[[C], bool] | None = None
                     ) -> Iterator[asyncio.Future[C]]:
        """A waiter set to the first change of ``kind`` (for which ``matching`` holds)
        folded from now on: told on the receiving thread as the message is folded, never
        late from the engine loop (a wait begun after a change must not be given it).
        Ends at once with SupervisorStopped / ConnectionLost like every waiter."""
        future: asyncio.Future[C] = self.waiter()

        def on_change(_: Message, changes: tuple[Change, ...]) -> None:
            for change in changes:
                if isinstance(change, kind) and (matching is None or matching(change)):
                    settle(future, change)
                    return

        unsubscribe = self.subscribe(on_change, changes=[kind], now=True)
        try:
            yield future
        finally:
            unsubscribe()
            self.forget(future)

    async def wait_until(self, predicate: Callable[[BrowserState], bool],
                         timeout: float | None) -> BrowserState:
        """The first state (now or after a message) for which ``predicate`` holds; ends
        at once with SupervisorStopped / ConnectionLost if the supervisor stops or the
        connection is lost first. ``predicate`` runs on the receiving thread."""
        if predicate(self.state):
            return self.state
        future = self.waiter()

        def check(_: Message, __: tuple[Change, ...]) -> None:
            if not future.done() and predicate(self.state):
                settle(future, self.state)

        unsubscribe = self.subscribe(check, now=True)
        try:
            if predicate(self.state):  # what was folded while subscribing
                return self.state
            result: BrowserState = await wait_for(future, timeout)
            return result
        finally:
            unsubscribe()
            self.forget(future)

    def apply(self, message: Message) -> tuple[Change, ...]:
        """Record ``message``, fold it into state, then tell the listeners what changed.
        Thread-safe; returns the changes."""
        with self._lock:
            return self._apply(message)

    def _apply(self, message: Message, wire: bytes | None = None) -> tuple[Change, ...]:
        if self._soon:  # (what was noted before this message comes before it)
            self._fold_held()
        return self._apply_one(message, wire)

    def _fold_held(self) -> None:
        """Fold what ``_soon`` holds, in order (under the fold lock). Each is folded
        alone: through ``_apply`` the first would fold the rest before itself."""
        while self._soon:
            self._apply_one(*self._soon.popleft())

    def _apply_one(self, message: Message, wire: bytes | None) -> tuple[Change, ...]:
        # Recording comes first so a failing reducer cannot lose the message.
        skip = self.unrecorded
        if skip is None or not skip(message, self._state):
            # Counted as the trace holds it, so that a replay of the trace counts alike.
            self._wire.add(message)
            recorder = self.recorder
            if recorder is not None:
                recorder(message, wire)
                if not self._in_batch:  # a batch of received frames is flushed at its end
                    recorder.flush()
        self._state, changes = fold(self._state, message)
        later: list[_Subscription] = []
        method = getattr(message, "method", None)
        kinds = frozenset(map(type, changes)) if changes else _NO_KINDS
        outer, self._after = self._after, []
        try:
            for sub in self._wanting(method, kinds):
                if sub.now:
                    self._call(sub.listener, message, changes)
                else:
                    later.append(sub)
            if later:
                engine.loop.call_soon_threadsafe(self._dispatch, later, message, changes)
        finally:
            after, self._after = self._after, outer
        for then in after:
            try:
                then()
            except Exception:  # never into the read loop, never lost
                log.exception("cdpnb: work after %s failed", method)
                if method != "cdpnb.listenerFailed":
                    self.note("cdpnb.listenerFailed", {"method": method})
        return changes

    def _wanting(self, method: str | None, kinds: frozenset[type]
                 ) -> tuple[_Subscription, ...]:
        """The subscriptions that want a message of ``method`` with changes of ``kinds``,
        in the order they subscribed (under the fold lock)."""
        key = (method, kinds)
        wanted = self._wanted.get(key)
        if wanted is None:
            wanted = tuple(s for s in self._subscriptions if s.wants(method, kinds))
            if len(self._wanted) >= _WANTED_MEMORY:  # (methods a hostile endpoint makes up)
                self._wanted = {}
            self._wanted[key] = wanted
        return wanted

    def after_this_message(self, then: Callable[[], None]) -> None:
        """From a listener called ``now``: run ``then`` once every listener has been
        given the message being folded (and the engine's are on their way), so what
        ``then`` folds (a note, a command) comes after it for everyone; at once outside
        a fold."""
        with self._lock:  # (a fold on another thread ends first: then at once)
            if self._after is None:
                then()
            else:
                self._after.append(then)

    def _dispatch(self, subs: list[_Subscription], message: Message,
                  changes: tuple[Change, ...]) -> None:
        for sub in subs:
            if sub in self._subscriptions:
                self._call(sub.listener, message, changes)

    def _call(self, listener: Listener, message: Message, changes: tuple[Change, ...]) -> None:
        try:
            listener(message, changes)
        except Exception:
            method = message.method
            log.exception("cdpnb listener failed on %s", method)
            if method != "cdpnb.listenerFailed":  # (one failing on this note too: no loop)
                self.note("cdpnb.listenerFailed", {"method": method})

    # -- the reader thread -------------------------------------------------------------

    def _on_frames(self, transport: Transport, conn: Connection,
                   frames: Sequence[str | bytes]) -> None:
        with self._lock:
            if self._transport is not transport:
                return  # a connection we already left
            self._in_batch = True
            # One time for the batch: its frames came in one read, so that read is when
            # each was received (and the trace's lines share one time prefix).
            wall, mono = time.time(), time.monotonic()
            try:
                for frame in frames:
                    self._on_frame(transport, conn, frame, wall, mono)
            finally:
                self._in_batch = False
                if self.recorder is not None:
                    self.recorder.flush()

    def _on_frame(self, transport: Transport, conn: Connection, frame: str | bytes,
                  wall: float, mono: float) -> None:
        received = conn.receive(frame, wall=wall, mono=mono)
        if isinstance(received, Fault):
            self._wire.add(received)
            if self.recorder is not None:
                self.recorder(received, None)
            log.warning("cdpnb: ignored a bad CDP frame (%s): %s", received.kind, received.detail)
            code = CLOSING_FAULTS.get(received.kind)
            if code is not None:
                transport.fail(code, received.detail[:100])
            return
        self._apply(received, frame if type(frame) is bytes else None)
        orphans = conn.take_orphans()
        if orphans:
            self._orphaned(orphans, wall, mono)
        if isinstance(received, Reply | ErrorReply):
            if self.held is not None and received.session_id == self._held_session:
                self.held = None  # it answers again
                self._apply(Note("cdpnb.scriptFreed", {}, received.session_id, wall, mono))
            future = self._replies.pop(received.id, None)
            if future is not None:
                if isinstance(received, Reply):
                    settle(future, received.result)
                else:
                    settle(future, error=error_of(received))

    def _orphaned(self, orphans: list[tuple[Command, str]], wall: float, mono: float) -> None:
        """Commands that will get no reply, their session gone: noted (the fold counts
        them, a replay stops waiting for them too), their callers told."""
        ids: dict[str, list[int]] = {}
        for command, why in orphans:
            ids.setdefault(why, []).append(command.id)
        for why, of_why in ids.items():
            self._apply(Note("cdpnb.commandsOrphaned", {"ids": of_why, "why": why}, None,
                             wall, mono))
        for command, why in orphans:
            future = self._replies.pop(command.id, None)
            if future is not None:
                settle(future, error=TargetGone(
                    f"{command.method} on session {command.session_id} will get no reply: "
                    f"{why}"))

    def _on_closed(self, transport: Transport, reason: str, generation: int) -> None:
        gone = getattr(transport, "gone", None)
        with self._lock:
            if self._transport is not transport:
                return
            self._transport = None
            if isinstance(gone, str) and gone and self._gone is None:
                self._gone = gone
            if self._gone is not None:
                reason = self._gone  # (what died, not how the socket ended)
        self._lost(reason, transport, generation)

    def _lost(self, reason: str, transport: Transport | None, generation: int = 0) -> None:
        with self._lock:
            if self._transport is not None and self._transport is not transport:
                # A connection made since (a reconnect) is the one that counts: the news
                # of an older one's end, come late, must not touch it.
                return
        self.fail_waiters(self._stopped_error() if self.stopping else self._lost_error(reason))
        with self._lock:
            if self._transport is transport:
                self._transport = None
            if not self.state.connected and not self._replies:
                return
            generation = generation or self.generation  # (close(): the newest)
            said: dict[str, Any] = {"reason": reason, "generation": generation}
            if self._gone is not None and not self.stopping:
                said["gone"] = True  # (final: the trace says why nothing reconnected)
            changes = self._apply(Note("cdpnb.disconnected", said, None, *_now()))
            # News only when the connection in use was lost (not an attempt's own).
            news = any(type(c) is PhaseChanged and c.connection.phase == "lost"
                       for c in changes)
            pending = self._conn.fail_all()
            methods = {c.id: c.method for c in pending}
            replies, self._replies = self._replies, {}
        for cid, future in replies.items():
            settle(future, error=ConnectionLost(
                f"{methods.get(cid, 'command')} failed: {self._link} lost ({reason})"))
        if news and not self.stopping and self.on_lost is not None:
            engine.loop.call_soon_threadsafe(self.on_lost, reason, generation)

    # -- background work (the engine loop) ---------------------------------------------

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> ThreadFuture[Any]:
        """Run ``coro`` on the engine loop, from any thread; failures are logged and
        counted, never lost."""
        future = asyncio.run_coroutine_threadsafe(_named(coro, name), engine.loop)
        with self._lock:
            self._tasks.add(future)
        future.add_done_callback(lambda f: self._task_done(f, name))
        return future

    def _task_done(self, task: ThreadFuture[Any], name: str) -> None:
        with self._lock:
            self._tasks.discard(task)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            self.report_failure(name, exc)

    def counters(self) -> dict[str, int]:
        """``stats()``: the wire counts and the folded counters, as a replay of the
        trace rebuilds them (``cdpnb.state.stats``)."""
        with self._lock:
            return stats_of(self.state, self._wire)

    @property
    def unsupported(self) -> dict[str, str]:
        """Commands the endpoint said it does not have (method -> its error)."""
        return dict(self.state.unsupported)


class _Expired(Exception):
    """A command's own time ran out (distinct from a CommandTimeout of the reply)."""


def _expire(future: asyncio.Future[Any]) -> None:
    if not future.done():
        future.set_exception(_Expired())


async def _named(coro: Coroutine[Any, Any, T], name: str) -> T:
    task = asyncio.current_task()
    if task is not None:
        task.set_name(name)
    return await coro


def _now() -> tuple[float, float]:
    return time.time(), time.monotonic()
