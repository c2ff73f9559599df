"""Events: ``sup.on(name, handler)`` and ``async for ev in sup.events(...)``.

Each event is one change the fold reported (``cdpnb.state.events`` names them), so a
replayed trace fires the same ones. They are taken on the receiving thread, in fold
order, and only handed on from there: a handler never runs on the reader's thread or
on cdpnb's engine loop, so a slow or blocking handler cannot stall the supervisor.

Where a handler runs: added from a thread whose event loop is running (a notebook
cell, a coroutine), on that loop, as Playwright's handlers run on the caller's loop;
otherwise (a script, and always through ``cdpnb.sync``, whose calls block the
caller's thread) on the supervisor's own event thread, one handler after the other.
A handler may answer a dialog event: ``ev.accept("text")`` / ``ev.dismiss()`` send
the answer at once and return a ``PendingAnswer`` that can be awaited (async code),
waited on with ``.result()`` (blocking code) or dropped.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import inspect
import logging
import threading
import weakref
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass, field
from typing import Any

from cdpnb.errors import DialogError, SupervisorStopped, WaitTimeout
from cdpnb.protocol import Message
from cdpnb.runtime.waits import wait_for
from cdpnb.session.core import Core
from cdpnb.session.options import check_timeout
from cdpnb.state import Change, DialogRecord, PendingDialog
from cdpnb.state.changes import (
    ConsoleError,
    DialogClosed,
    DialogOpened,
    FrameAdded,
    FrameNavigated,
    FrameRemoved,
    FrameSwapped,
    PageClosed,
    PageOpened,
)
from cdpnb.state.events import EVENT_NAMES, EVENT_OF, EventName, event_name
from cdpnb.state.models import ConsoleEntry, FrameInfo, PageInfo

__all__ = [
    "EVENT_NAMES",
    "HANDLERS_FINISH_S",
    "STREAM_BUFFER",
    "EventHub",
    "EventName",
    "EventStream",
    "Handler",
    "PendingAnswer",
    "SupervisorEvent",
    "answer_sender",
    "check_buffer",
    "check_event_names",
    "check_stream_timeout",
]

log = logging.getLogger("cdpnb.supervisor")

#: How many events a stream keeps that its reader has not taken yet (the oldest go,
#: counted in ``dropped``; the trace keeps every message).
STREAM_BUFFER = 10_000
#: How long stop() lets coroutine handlers already running finish.
HANDLERS_FINISH_S = 5.0

#: Sends an answer to a dialog (dialog id, accept, prompt text) on the engine loop.
AnswerSender = Callable[[str, bool, str | None], "concurrent.futures.Future[DialogRecord]"]


class PendingAnswer:
    """An answer on its way: ``await`` it (async code) or ``.result(timeout)``
    (blocking code) for the dialog's record; dropping it is fine too. An answer that
    fails after it was dropped unlooked-at is reported as a CdpnbWarning at the next
    call (as asyncio reports an exception never retrieved)."""

    def __init__(self, future: concurrent.futures.Future[DialogRecord],
                 unobserved_failure: Callable[[BaseException], None] | None = None) -> None:
        self._future = future
        self._observed = False
        self._unobserved_failure = unobserved_failure

    def __del__(self) -> None:
        report = self._unobserved_failure
        if self._observed or report is None:
            return

        def failed(future: concurrent.futures.Future[DialogRecord]) -> None:
            if not future.cancelled() and future.exception() is not None:
                error = future.exception()
                assert error is not None
                report(error)

        self._future.add_done_callback(failed)  # (at once if it is done already)

    def __await__(self) -> Generator[Any, None, DialogRecord]:
        self._observed = True
        return asyncio.wrap_future(self._future).__await__()

    def result(self, timeout: float | None = None) -> DialogRecord:
        self._observed = True
        return self._future.result(timeout)

    def done(self) -> bool:
        return self._future.done()

    def __repr__(self) -> str:
        state = "done" if self._future.done() else "pending"
        return f"<PendingAnswer {state}>"


@dataclass(frozen=True, eq=False)
class SupervisorEvent:
    """One event: ``name`` (see ``EVENT_NAMES``), the fold's ``change`` behind it and
    ``at``, the wall-clock time of the message it came with. The properties give its
    model: ``dialog`` (dialog), ``record`` (dialogclosed), ``frame`` (frame*),
    ``page`` (page, pageclosed), ``entry`` (console), ``reason`` (why a frame or page
    went, why a dialog closed). A dialog event reads like Playwright's Dialog:
    ``type`` (``"alert"``, ``"confirm"``, ``"prompt"``, ``"beforeunload"``;
    ``"unknown"`` over WebDriver classic until answered), ``message``,
    ``default_value`` (a prompt's default text), ``accept(prompt_text)``,
    ``dismiss()``; a dialogclosed event reads its record the same way."""

    name: EventName
    change: Change
    at: float
    _answer: AnswerSender | None = field(default=None, repr=False)
    _failed: Callable[[BaseException], None] | None = field(default=None, repr=False)

    @property
    def dialog(self) -> PendingDialog | None:
        return self.change.dialog if isinstance(self.change, DialogOpened) else None

    @property
    def record(self) -> DialogRecord | None:
        return self.change.record if isinstance(self.change, DialogClosed) else None

    @property
    def frame(self) -> FrameInfo | None:
        change = self.change
        if isinstance(change, FrameAdded | FrameNavigated | FrameRemoved | FrameSwapped):
            return change.frame
        return None

    @property
    def page(self) -> PageInfo | None:
        change = self.change
        return change.page if isinstance(change, PageOpened | PageClosed) else None

    @property
    def entry(self) -> ConsoleEntry | None:
        return self.change.entry if isinstance(self.change, ConsoleError) else None

    @property
    def type(self) -> str | None:
        """The dialog's type (dialog and dialogclosed events; None for others)."""
        about = self.dialog or self.record
        return about.type if about is not None else None

    @property
    def message(self) -> str | None:
        """The dialog's message (dialog and dialogclosed events; None for others)."""
        about = self.dialog or self.record
        return about.message if about is not None else None

    @property
    def default_value(self) -> str | None:
        """A prompt's default text, ``""`` for other dialogs (dialog and dialogclosed
        events; None for others), as Playwright's ``dialog.default_value``."""
        about = self.dialog or self.record
        return about.default_prompt if about is not None else None

    @property
    def reason(self) -> str | None:
        change = self.change
        if isinstance(change, FrameRemoved | PageClosed):
            return change.reason
        if isinstance(change, DialogClosed):
            return change.record.reason
        return None

    def accept(self, prompt_text: str | None = None) -> PendingAnswer:
        """Accept this event's dialog (``prompt_text`` for a prompt; without it a
        prompt gets its default, as pressing OK does). Sent at once."""
        return self._respond(True, prompt_text)

    def dismiss(self) -> PendingAnswer:
        """Dismiss this event's dialog (Cancel). Sent at once."""
        return self._respond(False, None)

    def _respond(self, accept: bool, prompt_text: str | None) -> PendingAnswer:
        dialog = self.dialog
        if dialog is None:
            raise DialogError(f"a {self.name!r} event has no dialog to answer "
                              "(only 'dialog' events do)")
        if prompt_text is not None and not isinstance(prompt_text, str):
            raise TypeError(f"prompt_text must be a str or None, got "
                            f"{type(prompt_text).__name__}")
        if self._answer is None:
            raise DialogError(f"{dialog.id} cannot be answered from here (an event "
                              "without its supervisor)")
        return PendingAnswer(self._answer(dialog.id, accept, prompt_text), self._failed)

    def __repr__(self) -> str:
        model = (self.dialog or self.record or self.frame or self.page or self.entry)
        why = f" reason={self.reason!r}" if self.reason else ""
        return f"<SupervisorEvent {self.name}{why} {model!r}>"


Handler = Callable[[SupervisorEvent], object]


def check_event_names(names: Iterable[object], what: str = "event") -> frozenset[EventName]:
    chosen: set[EventName] = set()
    for name in names:
        if name not in EVENT_OF.values():
            raise ValueError(f"{what} must be one of {', '.join(EVENT_NAMES)}; got {name!r}")
        assert isinstance(name, str)
        chosen.add(name)  # type: ignore[arg-type]  # (checked against EVENT_NAMES)
    return frozenset(chosen)


@dataclass(eq=False)
class _Listener:
    name: EventName
    handler: Handler
    loop: asyncio.AbstractEventLoop | None  # None: the supervisor's event thread
    once: bool
    #: The thread ``loop`` runs on (the one that called ``on``).
    thread: int = 0


class EventStream:
    """Events as they come: ``async for ev in stream`` or ``for ev in stream``.

    Collects from the moment it is made (``sup.events(...)``), so an action started
    after it cannot outrun it; ends (after what it holds) when closed or when the
    supervisor stops. With ``timeout``, an iteration also ends once no event came
    for that long (the stream stays open: iterate again for more); ``next_event``
    raises WaitTimeout instead.
    """

    def __init__(self, hub: EventHub, names: frozenset[EventName], timeout: float | None,
                 buffer: int) -> None:
        self.names = names
        self.timeout = timeout
        self.dropped = 0
        self._hub = hub
        self._items: collections.deque[SupervisorEvent] = collections.deque(maxlen=buffer)
        self._cond = threading.Condition()
        self._wakers: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._closed = False

    def put(self, event: SupervisorEvent) -> None:
        """Called on the receiving thread: keep it, wake whoever waits."""
        with self._cond:
            if self._closed:
                return
            if len(self._items) == self._items.maxlen:
                self.dropped += 1
            self._items.append(event)
            self._wake()

    def _wake(self) -> None:  # (under the condition's lock)
        self._cond.notify_all()
        for loop, future in self._wakers:
            with contextlib.suppress(RuntimeError):  # a loop closed meanwhile
                loop.call_soon_threadsafe(_settle, future)

    def close(self) -> None:
        """Stop collecting; the events held are still read out, then iteration ends."""
        self._hub.forget(self)
        with self._cond:
            self._closed = True
            self._wake()

    @property
    def closed(self) -> bool:
        return self._closed

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> SupervisorEvent:
        try:
            return await self.next_event()
        except WaitTimeout:
            raise StopAsyncIteration from None

    async def next_event(self, timeout: float | None = None) -> SupervisorEvent:
        """The next event, waiting up to ``timeout`` (default: the stream's) for it:
        WaitTimeout when none came, StopAsyncIteration when the stream has ended."""
        loop = asyncio.get_running_loop()
        limit = self.timeout if timeout is None else timeout
        deadline = None if limit is None else loop.time() + limit
        while True:
            with self._cond:
                if self._items:
                    return self._items.popleft()
                if self._closed:
                    raise StopAsyncIteration
                waker: asyncio.Future[None] = loop.create_future()
                self._wakers.append((loop, waker))
            try:
                left = None if deadline is None else max(0.0, deadline - loop.time())
                await wait_for(waker, left)
            except TimeoutError:
                raise self._timed_out(limit) from None
            finally:
                with self._cond:
                    self._wakers.remove((loop, waker))

    def __iter__(self) -> EventStream:
        return self

    def __next__(self) -> SupervisorEvent:
        with self._cond:
            if not self._cond.wait_for(lambda: self._items or self._closed, self.timeout):
                raise StopIteration  # (nothing came within the timeout)
            if self._items:
                return self._items.popleft()
            raise StopIteration

    def _timed_out(self, limit: float | None) -> WaitTimeout:
        which = ", ".join(sorted(self.names)) if self.names else "any"
        return WaitTimeout(f"no event ({which}) within {limit:g} s")

    async def __aenter__(self) -> EventStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    def __enter__(self) -> EventStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        which = ",".join(sorted(self.names)) if self.names else "all"
        state = "closed" if self._closed else "open"
        return f"<EventStream {which} {state} held={len(self._items)} dropped={self.dropped}>"


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class EventHub:
    """Turns the fold's changes into events for listeners and streams."""

    def __init__(self, core: Core, answer: AnswerSender,
                 failed: Callable[[BaseException], None]) -> None:
        self.core = core
        self._answer = answer
        self._failed = failed
        self._lock = threading.Lock()
        self._listeners: tuple[_Listener, ...] = ()
        self._streams: weakref.WeakSet[EventStream] = weakref.WeakSet()
        self._thread_loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        #: Coroutine handlers running (strong references, until each is done).
        self._tasks: set[asyncio.Future[Any]] = set()
        self._closed = False
        core.subscribe(self._on_changes, changes=list(EVENT_OF), now=True)

    # -- registering ------------------------------------------------------------------

    def listen(self, name: EventName, handler: Handler, *, once: bool,
               on_thread: bool) -> None:
        loop = None
        if not on_thread:
            with contextlib.suppress(RuntimeError):
                loop = asyncio.get_running_loop()
        with self._lock:
            self._listeners = (*self._listeners, _Listener(name, handler, loop, once,
                                                           threading.get_ident()))

    def unlisten(self, name: EventName, handler: Handler | None) -> int:
        with self._lock:
            kept = tuple(x for x in self._listeners
                         if not (x.name == name and (handler is None or x.handler == handler)))
            removed = len(self._listeners) - len(kept)
            self._listeners = kept
        return removed

    def stream(self, names: frozenset[EventName], timeout: float | None,
               buffer: int) -> EventStream:
        stream = EventStream(self, names, timeout, buffer)
        with self._lock:
            if self._closed:
                stream._closed = True
            else:
                self._streams.add(stream)
        return stream

    def forget(self, stream: EventStream) -> None:
        with self._lock:
            self._streams.discard(stream)

    def watching(self, name: EventName) -> bool:
        """Whether a handler or an open stream takes ``name`` events now."""
        with self._lock:
            return any(listener.name == name for listener in self._listeners) or any(
                not stream.closed and (not stream.names or name in stream.names)
                for stream in self._streams)

    # -- delivering (the receiving thread, under the fold lock: hand on only) ----------

    def _on_changes(self, message: Message, changes: tuple[Change, ...]) -> None:
        if not self._listeners and not self._streams:
            # Nobody to tell: no event made. This runs on an auto policy's answer's path
            # (the opening's fold, then the listeners, then the answer): making the
            # event cost ≈30 µs there (measured, after a 50 ms idle moment). A stream
            # opened meanwhile misses this change, as one opened just after it would.
            return
        for change in changes:
            name = event_name(change)
            if name is None:
                continue
            event = SupervisorEvent(name, change, message.wall, self._answer, self._failed)
            for listener in self._take(name):
                self._schedule(listener, event)
            with self._lock:  # (streams come and go on the users' threads)
                streams = list(self._streams)
            for stream in streams:
                if not stream.names or name in stream.names:
                    stream.put(event)

    def _take(self, name: EventName) -> list[_Listener]:
        chosen = [x for x in self._listeners if x.name == name]
        if any(x.once for x in chosen):
            with self._lock:
                self._listeners = tuple(x for x in self._listeners
                                        if not (x.once and x in chosen))
        return chosen

    def _schedule(self, listener: _Listener, event: SupervisorEvent) -> None:
        # The caller's loop while it runs; a loop stopped between two runs (a terminal
        # IPython between cells) would hold the handler until it ran again, and a
        # closed one (an asyncio.run that ended) refuses it: the event thread then.
        if listener.loop is not None and listener.loop.is_running():
            if threading.get_ident() == listener.thread:
                # Folded by that loop itself (it reads the socket while it waits): its
                # next turn, with no wake-up through its self-pipe (a write and a read,
                # cold after an idle moment, on a handler's answer's path).
                listener.loop.call_soon(self._run, listener, event)
                return
            with contextlib.suppress(RuntimeError):  # (closed meanwhile)
                listener.loop.call_soon_threadsafe(self._run, listener, event)
                return
        loop = self._event_loop()
        if loop is not None:
            with contextlib.suppress(RuntimeError):  # (closed by stop() meanwhile)
                loop.call_soon_threadsafe(self._run, listener, event)

    def _run(self, listener: _Listener, event: SupervisorEvent) -> None:
        try:
            result = listener.handler(event)
            if inspect.isawaitable(result):
                task = asyncio.ensure_future(result)
                self._tasks.add(task)  # (the loop keeps only a weak reference)
                task.add_done_callback(lambda t: self._handler_done(listener, event, t))
        except Exception as exc:
            self._handler_failed(listener, event, exc)

    def _handler_done(self, listener: _Listener, event: SupervisorEvent,
                      task: asyncio.Future[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            error = task.exception()
            assert isinstance(error, BaseException)
            self._handler_failed(listener, event, error)

    def _handler_failed(self, listener: _Listener, event: SupervisorEvent,
                        error: BaseException) -> None:
        self.core.note("cdpnb.handlerFailed", {"event": event.name})
        name = getattr(listener.handler, "__qualname__", repr(listener.handler))
        log.error("cdpnb: the %r handler %s raised on %r", event.name, name, event,
                  exc_info=error)

    # -- the event thread ---------------------------------------------------------------

    def _event_loop(self) -> asyncio.AbstractEventLoop | None:
        with self._lock:
            if self._thread_loop is None and not self._closed:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=_serve, args=(loop,), daemon=True,
                                          name="cdpnb-events")
                thread.start()
                self._thread_loop, self._thread = loop, thread
            return self._thread_loop

    def end_streams(self) -> None:
        """Nothing more will come (the connection is lost for good): streams end once
        read out, as every wait on the supervisor does; new ones end at once."""
        with self._lock:
            self._closed = True
            streams, self._streams = list(self._streams), weakref.WeakSet()
        for stream in streams:
            stream.close()

    def close(self, wait_s: float = HANDLERS_FINISH_S) -> None:
        """The supervisor stopped (or can no longer receive): streams end once read out;
        the event thread runs the handlers already handed to it (coroutine handlers get
        up to ``wait_s`` to finish), then ends; joined here unless called from it."""
        with self._lock:
            self._closed = True
            streams, self._streams = list(self._streams), weakref.WeakSet()
            loop, self._thread_loop = self._thread_loop, None
            thread, self._thread = self._thread, None
        for stream in streams:
            stream.close()
        if loop is None or thread is None:
            return
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(_finish, loop, self._tasks, wait_s)
        if threading.current_thread() is not thread:
            thread.join(wait_s + 1.0)


def _finish(loop: asyncio.AbstractEventLoop, tasks: set[asyncio.Future[Any]],
            wait_s: float) -> None:
    """On the event thread: stop once the running coroutine handlers are done (or
    after ``wait_s``)."""
    pending = [t for t in tasks if not t.done()]
    if not pending:
        loop.stop()
        return
    waiting = asyncio.ensure_future(asyncio.wait(pending, timeout=wait_s))
    waiting.add_done_callback(lambda _: loop.stop())


def _serve(loop: asyncio.AbstractEventLoop) -> None:
    asyncio.set_event_loop(loop)
    try:
        loop.run_forever()
    finally:
        pending = asyncio.all_tasks(loop)
        for task in pending:
            task.cancel()
        if pending:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.close()


def answer_sender(reply_now: AnswerSender, stopped: Callable[[], bool],
                  url: str) -> AnswerSender:
    """An AnswerSender that writes ``reply_now(dialog_id, accept, prompt_text)`` (the
    supervisor's ``DialogControl.reply_now``: at once, from the handler's thread),
    or says the supervisor is stopped."""

    def send(dialog_id: str, accept: bool, prompt_text: str | None
             ) -> concurrent.futures.Future[DialogRecord]:
        if stopped():
            future: concurrent.futures.Future[DialogRecord] = concurrent.futures.Future()
            future.set_exception(SupervisorStopped(f"supervisor for {url} is stopped"))
            return future
        return reply_now(dialog_id, accept, prompt_text)

    return send


def check_buffer(buffer: object) -> int:
    if isinstance(buffer, bool) or not isinstance(buffer, int) or buffer < 1:
        raise ValueError(f"buffer must be a positive int (events held), got {buffer!r}")
    return buffer


def check_stream_timeout(timeout: object) -> float | None:
    return check_timeout("timeout", timeout, allow_none=True)
