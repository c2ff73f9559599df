"""Whose turn it is to read a socket: the reader thread's, or a waiting caller's.

A reply that the reader thread reads and hands to the caller wakes two threads in a row
(the reader on the socket, then the caller on a lock or its loop's self-pipe); a bare
client's wakes one. On a busy machine each wake waits for a core, and that second wait
was most of what cdpnb's round trip cost over a bare client's (issue 27: 1.13-1.17×).
So while a caller waits for a reply and nobody else is reading, the caller reads:

- a thread blocked on its reply (``cdpnb.sync``) polls the socket itself
  (``read_while``) until its reply is in;
- a loop awaiting one watches the socket (``lead_from``: ``loop.add_reader``) until
  every command it awaits is answered.

Meanwhile the reader thread's epoll does not hold the socket, so the reply wakes the
caller alone. Every read is one non-blocking read made holding ``baton``, so whoever
reads, frames are taken whole and in order and folded once; the epoll only decides who
is woken. The reader thread keeps watch while a loop leads: a loop that does not read
what has waited a check or two (``CHECK_S``: blocked by other work, or stopped) loses
the socket back to the reader thread, so a page is never left unread.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import select
import threading
import time
from collections.abc import Callable
from functools import partial

__all__ = ["CHECK_S", "Read", "ReadTurns"]

#: How often the reader thread looks at a loop's turn (and wakes when idle: to notice
#: a turn that began while it slept).
CHECK_S = 0.05
IDLE_CHECK_S = 0.25
#: How long a waiting thread waits for the baton held by one read (of the reader
#: thread, or a loop's) before it leaves the reading to them.
ONE_READ_S = 0.005


class Read(enum.Enum):
    """What one read did."""

    NOTHING = "nothing"  # nothing to read yet (someone read it first)
    READ = "read"  # bytes read and handed on
    END = "end"  # the connection's end is there: for the reader thread to take
    OVER = "over"  # reading is over (the end taken, a refused message, closed)


class _LoopTurn:
    __slots__ = ("checked_reads", "loop", "reads", "unread_at_check", "waiters")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.waiters = 1
        self.reads = 0
        self.checked_reads = -1
        self.unread_at_check = False


class ReadTurns:
    """The turns of one socket's reads. ``read_once(by_reader)`` makes one
    non-blocking read and hands on what it brought; it is only called holding
    ``baton``. ``run_reader`` is the reader thread's loop."""

    def __init__(self, fd: int, read_once: Callable[[bool], Read]) -> None:
        self._fd = fd
        self._read_once = read_once
        #: Held by whoever reads (one read, or a waiting thread's whole turn).
        self.baton = threading.Lock()
        self._epoll = select.epoll()  # the reader thread's
        self._epoll.register(fd, select.EPOLLIN)
        self._thread_poll = select.poll()  # a waiting thread's (it holds the baton)
        self._thread_poll.register(fd, select.POLLIN)
        self._turn_lock = threading.Lock()
        self._loop_turn: _LoopTurn | None = None
        #: A waiting thread's turn is on (it holds the baton until its reply is in).
        self._thread_turn = False
        self.over = False

    # -- the reader thread ---------------------------------------------------------------

    def run_reader(self) -> None:
        """Read until reading is over, whenever it is the reader thread's turn."""
        try:
            while True:
                turn = self._loop_turn
                if not self._epoll.poll(CHECK_S if turn is not None else IDLE_CHECK_S):
                    if turn is not None:
                        self._check(turn)
                    continue
                with self.baton:
                    if self.over:
                        return
                    if self._read_once(True) is Read.OVER:
                        self.over = True
                        return
        finally:
            with self._turn_lock:
                turn, self._loop_turn = self._loop_turn, None
                self._epoll.close()
            if turn is not None:
                with contextlib.suppress(RuntimeError):  # (its loop closed: nothing to drop)
                    turn.loop.call_soon_threadsafe(self._drop_reader, turn)

    def _check(self, turn: _LoopTurn) -> None:
        """A loop's turn: taken back when the socket has had bytes waiting since the
        last check with no read by the loop."""
        unread = bool(select.select([self._fd], [], [], 0)[0])
        stale = unread and turn.unread_at_check and turn.reads == turn.checked_reads
        turn.unread_at_check, turn.checked_reads = unread, turn.reads
        if not stale:
            return
        with self._turn_lock:
            if self._loop_turn is not turn:
                return
            self._loop_turn = None
            self._remember()
        with contextlib.suppress(RuntimeError):  # (its loop closed: nothing to drop)
            turn.loop.call_soon_threadsafe(self._drop_reader, turn)

    # -- a waiting thread ----------------------------------------------------------------

    def read_while(self, waiting: Callable[[], bool], deadline: float) -> None:
        """Read on the calling thread while ``waiting()`` and before ``deadline`` (a
        ``time.monotonic()``), unless another caller's turn is on (then return at
        once); return at the connection's end too (left for the reader thread)."""
        # Not during another thread's turn (held as long as its wait); else the baton
        # is held for one read at most, and a read longer than that leaves this thread
        # waiting for its reply as before.
        if self._thread_turn or not self.baton.acquire(timeout=ONE_READ_S):
            return
        try:
            if self.over or not self._forget():
                return
            self._thread_turn = True
            try:
                while waiting():
                    left = deadline - time.monotonic()
                    if left <= 0 or not self._thread_poll.poll(left * 1000):
                        return
                    read = self._read_once(False)
                    if read is Read.OVER:
                        self.over = True
                    if read is Read.OVER or read is Read.END:
                        return
            finally:
                self._thread_turn = False
                self._remember()
        finally:
            self.baton.release()

    # -- a waiting loop ------------------------------------------------------------------

    def lead_from(self, loop: asyncio.AbstractEventLoop) -> Callable[[], None] | None:
        """Let ``loop`` (running here) read while a command it awaits is unanswered;
        call what this returns when the wait ends. None: someone else reads."""
        with self._turn_lock:
            turn = self._loop_turn
            if turn is not None:
                if turn.loop is not loop:
                    return None
                turn.waiters += 1
                return partial(self._end_wait, turn)
            if self.over or not self._forget():
                return None
            turn = _LoopTurn(loop)
            try:
                loop.add_reader(self._fd, self._read_on_loop, turn)
            except (NotImplementedError, RuntimeError, ValueError):
                self._remember()
                return None
            self._loop_turn = turn
        return partial(self._end_wait, turn)

    def _read_on_loop(self, turn: _LoopTurn) -> None:
        if self._loop_turn is not turn:  # taken back by the reader thread meanwhile
            self._drop_reader(turn)
            return
        with self.baton:  # (blocking: the reader thread holds it for one read at most)
            if self.over:
                read = Read.OVER
            else:
                read = self._read_once(False)
                if read is Read.OVER:
                    self.over = True
        turn.reads += 1
        if read is Read.OVER or read is Read.END:
            self._end_turn(turn)

    def _end_wait(self, turn: _LoopTurn) -> None:
        with self._turn_lock:
            turn.waiters -= 1
            if turn.waiters:
                return
        # The turn ends once this loop has gone round: the caller's next command, sent
        # as soon as this one is answered, keeps it (no epoll and selector changes, four
        # system calls, between calls in a row).
        turn.loop.call_soon(self._end_if_unused, turn)

    def _end_if_unused(self, turn: _LoopTurn) -> None:
        if not turn.waiters:
            self._end_turn(turn)

    def _end_turn(self, turn: _LoopTurn) -> None:
        with self._turn_lock:
            if self._loop_turn is not turn:
                return
            self._loop_turn = None
            with contextlib.suppress(RuntimeError, ValueError, OSError):
                turn.loop.remove_reader(self._fd)
            self._remember()

    def _drop_reader(self, turn: _LoopTurn) -> None:
        """On ``turn``'s loop: stop watching, unless a new turn of this loop watches."""
        current = self._loop_turn
        if current is not None and current.loop is turn.loop:
            return
        with contextlib.suppress(RuntimeError, ValueError, OSError):
            turn.loop.remove_reader(self._fd)

    # -- the reader thread's epoll -------------------------------------------------------

    def _forget(self) -> bool:
        """Take the socket out of the reader thread's epoll; False if it was not there
        (someone else has it) or reading is over."""
        try:
            self._epoll.unregister(self._fd)
        except (OSError, ValueError):
            return False
        return True

    def _remember(self) -> None:
        with contextlib.suppress(OSError, ValueError):  # (closed: reading is over)
            self._epoll.register(self._fd, select.EPOLLIN)
