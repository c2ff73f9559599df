"""The connection core: one transport, one reader, the state fold, reply futures.

Everything here runs on the engine loop. The reader never awaits a reply (that
would deadlock it): reactions to events are spawned as tasks. Listeners get each
message with the changes its fold made (``cdpnb.state.changes``) and act on those.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable, Coroutine
from typing import Any

from cdpnb.errors import (
    CDPError,
    CommandTimeout,
    ConnectionLost,
    SupervisorStopped,
    TargetGone,
)
from cdpnb.protocol import (
    CDPConnection,
    ErrorReply,
    Fault,
    Message,
    Note,
    Reply,
    error_of,
)
from cdpnb.state import BrowserState, Change, fold
from cdpnb.transport import Connector, Transport, connect_websocket, redact

__all__ = ["Core", "Listener"]

log = logging.getLogger("cdpnb.supervisor")

Listener = Callable[[Message, tuple[Change, ...]], None]

#: What a crashed renderer's session still takes: the commands that reload it.
REVIVING_METHODS = frozenset({"Page.navigate", "Page.reload"})


class Core:
    """Connection, protocol and state of one supervisor."""

    def __init__(self, url: str, *, command_timeout_s: float, connect_timeout_s: float,
                 connector: Connector | None = None) -> None:
        self.url = url
        self.ws_url: str | None = None
        self.connector: Connector = connector or connect_websocket
        self.state = BrowserState()
        self.command_timeout_s = command_timeout_s
        self.connect_timeout_s = connect_timeout_s
        self.stats: Counter[str] = Counter()
        self.stopping = False
        self.last_disconnect_reason: str | None = None
        self._conn = CDPConnection()
        self._transport: Transport | None = None
        self._reader: asyncio.Task[None] | None = None
        self._replies: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._listeners: list[Listener] = []
        #: Futures of callers waiting on the stream; they end at once on stop or loss.
        self._waiters: set[asyncio.Future[Any]] = set()
        self._tasks: set[asyncio.Task[Any]] = set()
        self.on_lost: Callable[[str], None] | None = None
        #: Called with every message (and fault) before it is folded: the recorder.
        self.recorder: Callable[[Message | Fault], None] | None = None

    # -- connection ------------------------------------------------------------------

    async def connect(self) -> None:
        transport = await self.connector(self.url, self.connect_timeout_s)
        self.ws_url = str(getattr(transport, "url", self.url))
        self._conn = CDPConnection()
        self._transport = transport
        self.apply(Note("cdpnb.connected", {"url": redact(self.ws_url)}, None, *_now()))
        self._reader = asyncio.create_task(self._read(transport, self._conn),
                                           name="cdpnb-reader")

    @property
    def connected(self) -> bool:
        return self._transport is not None and self.state.connected

    async def close(self) -> None:
        self.stopping = True
        self._fail_waiters(self._stopped_error())
        for task in list(self._tasks):
            task.cancel()
        transport, self._transport = self._transport, None
        if transport is not None:
            await transport.close()
        if self._reader is not None:
            await asyncio.gather(self._reader, return_exceptions=True)
        self._lost("supervisor stopped")

    # -- sending ---------------------------------------------------------------------

    async def send(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        session_id: str | None = None,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """Send one command and await its result; errors become CDPError."""
        if self.stopping:
            raise SupervisorStopped(f"supervisor for {redact(self.url)} is stopped; "
                                    f"cannot send {method}")
        transport = self._transport
        if transport is None or not self.state.connected:
            reason = self.last_disconnect_reason or "not connected"
            raise ConnectionLost(f"cannot send {method}: CDP connection to "
                                 f"{redact(self.url)} is down ({reason})")
        if session_id in self.state.crashed_sessions and method not in REVIVING_METHODS:
            # A crashed renderer answers nothing until it is reloaded.
            raise TargetGone(f"{method}: the renderer behind session {session_id} crashed; "
                             "navigate (or Page.reload) to bring the page back")
        conn = self._conn
        cmd, text = conn.command(method, params, session_id, wall=time.time(),
                                 mono=time.monotonic())
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._replies[cmd.id] = future
        self.apply(cmd)
        limit = self.command_timeout_s if timeout is None else timeout
        try:
            try:
                await transport.send(text)
            except BaseException:
                # Nothing will answer a frame that was not written; nobody must be left
                # holding a future whose exception is never retrieved.
                self._replies.pop(cmd.id, None)
                future.cancel()
                raise
            return await asyncio.wait_for(future, limit)
        except TimeoutError:
            conn.abandon(cmd.id)
            self.stats["command-timeouts"] += 1
            where = f" on session {session_id}" if session_id else ""
            raise CommandTimeout(f"{method}{where} got no reply within {limit:g} s") from None
        except asyncio.CancelledError:
            conn.abandon(cmd.id)
            raise
        finally:
            self._replies.pop(cmd.id, None)

    def note(self, method: str, params: dict[str, Any], session_id: str | None = None) -> None:
        """Fold one of cdpnb's own decisions into the stream."""
        self.apply(Note(method, params, session_id, *_now()))

    # -- receiving -------------------------------------------------------------------

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    def waiter(self) -> asyncio.Future[Any]:
        """A future for a caller waiting on the stream. It fails at once with
        SupervisorStopped or ConnectionLost when the supervisor stops or the
        connection is lost; ``forget`` it when done."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if self.stopping:
            future.set_exception(self._stopped_error())
        elif not self.state.connected:
            future.set_exception(self._lost_error(self.last_disconnect_reason or "not connected"))
        self._waiters.add(future)
        return future

    def forget(self, future: asyncio.Future[Any]) -> None:
        self._waiters.discard(future)
        if future.done() and not future.cancelled():
            future.exception()  # retrieved: an ended wait is not an unhandled error

    def _fail_waiters(self, error: Exception) -> None:
        for future in list(self._waiters):
            if not future.done():
                future.set_exception(error)
                future.exception()  # the waiter raises it; nothing is left unretrieved

    def _stopped_error(self) -> SupervisorStopped:
        return SupervisorStopped(f"supervisor for {redact(self.url)} stopped while waiting")

    def _lost_error(self, reason: str) -> ConnectionLost:
        return ConnectionLost(f"CDP connection to {redact(self.url)} lost while waiting "
                              f"({reason})")

    async def wait_until(self, predicate: Callable[[BrowserState], bool],
                         timeout: float) -> BrowserState:
        """The first state (now or after a message) for which ``predicate`` holds; ends
        at once with SupervisorStopped / ConnectionLost if the supervisor stops or the
        connection is lost first."""
        if predicate(self.state):
            return self.state
        future = self.waiter()

        def check(_: Message, __: tuple[Change, ...]) -> None:
            if not future.done() and predicate(self.state):
                future.set_result(self.state)

        unsubscribe = self.subscribe(check)
        try:
            result: BrowserState = await asyncio.wait_for(future, timeout)
            return result
        finally:
            unsubscribe()
            self.forget(future)

    def apply(self, message: Message) -> tuple[Change, ...]:
        """Record ``message``, fold it into state, then tell the listeners what changed
        (they must not block). Recording comes first so a failing reducer cannot lose
        it. Returns the changes."""
        if self.recorder is not None:
            self.recorder(message)
        self.state, changes = fold(self.state, message)
        for listener in list(self._listeners):
            try:
                listener(message, changes)
            except Exception:
                self.stats["listener-errors"] += 1
                log.exception("cdpnb listener failed on %s", getattr(message, "method", message))
        return changes

    async def _read(self, transport: Transport, conn: CDPConnection) -> None:
        try:
            async for frame in transport.frames():
                self._on_frame(conn, frame)
        finally:
            if self._transport is transport:
                self._transport = None
                try:
                    reason = transport.close_reason
                except Exception:  # the reason is a nicety; losing it must not lose the loss
                    reason = "connection dropped"
                self._lost(reason)

    def _on_frame(self, conn: CDPConnection, frame: str | bytes) -> None:
        received = conn.receive(frame, wall=time.time(), mono=time.monotonic())
        if isinstance(received, Fault):
            if self.recorder is not None:
                self.recorder(received)
            log.warning("cdpnb: ignored a bad CDP frame (%s): %s", received.kind, received.detail)
            return
        self.apply(received)
        for command, why in conn.take_orphans():
            future = self._replies.pop(command.id, None)
            if future is not None and not future.done():
                self.stats["commands-orphaned"] += 1
                future.set_exception(TargetGone(
                    f"{command.method} on session {command.session_id} will get no reply: "
                    f"{why}"))
        if isinstance(received, Reply | ErrorReply):
            future = self._replies.pop(received.id, None)
            if future is not None and not future.done():
                if isinstance(received, Reply):
                    future.set_result(received.result)
                else:
                    future.set_exception(error_of(received))

    def _lost(self, reason: str) -> None:
        self._fail_waiters(self._stopped_error() if self.stopping else self._lost_error(reason))
        if not self.state.connected and not self._replies:
            return
        self.last_disconnect_reason = reason
        self.apply(Note("cdpnb.disconnected", {"reason": reason}, None, *_now()))
        pending = self._conn.fail_all()
        methods = {c.id: c.method for c in pending}
        for cid, future in list(self._replies.items()):
            if not future.done():
                future.set_exception(ConnectionLost(
                    f"{methods.get(cid, 'command')} failed: CDP connection to "
                    f"{redact(self.url)} lost ({reason})"))
        self._replies.clear()
        if not self.stopping and self.on_lost is not None:
            self.on_lost(reason)

    # -- background work -------------------------------------------------------------

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        """Run ``coro`` off the reader; failures are logged and counted, never lost."""
        task = asyncio.create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None and not isinstance(exc, ConnectionLost | SupervisorStopped):
            self.stats["background-errors"] += 1
            # A CDP error or a target that went meanwhile (an OOPIF removed during its
            # own set-up) is the browser's ordinary life, not something to warn about.
            expected = isinstance(exc, CDPError | TargetGone | CommandTimeout)
            level = logging.INFO if expected else logging.WARNING
            log.log(level, "cdpnb background task %s failed: %r", task.get_name(), exc)

    def counters(self) -> dict[str, int]:
        out = dict(self.stats)
        out["sent"] = self._conn.sent
        out["received"] = self._conn.received
        out["in_flight"] = self._conn.pending
        for kind, n in self._conn.faults.items():
            out[f"fault:{kind}"] = n
        for key, n in self.state.counters.items():
            out[key] = n
        return out

    @property
    def unsupported(self) -> dict[str, str]:
        """Commands the endpoint said it does not have (method -> its error)."""
        return dict(self.state.unsupported)


def _now() -> tuple[float, float]:
    return time.time(), time.monotonic()

