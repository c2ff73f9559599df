"""``check_transport``: the conformance suite of the transport seam.

Every ``Transport`` the supervisor can be given (``cdpnb.transport.base``) must pass
it: cdpnb's WebSocket (``cdpnb.transport.wire.WireSocket``) against a loopback server,
the scripted browsers' in-memory transport (``cdpnb.testing``), and any other a user
brings. It is modelled on trio's ``check_two_way_stream``: each case opens a fresh
pair with the caller's ``open_pair``, drives one side of the contract, and says which
contract broke in its assertion. The contract is what ``cdpnb/session/core.py``
relies on:

- ``on_frames`` gets every message the far end sent, whole and in order (a burst, a
  1 MiB one, any Unicode), including those that came before ``start``, as ``str`` or
  UTF-8 ``bytes``, one call at a time and never after ``on_closed``;
- ``on_closed`` is told exactly once, after the last ``on_frames`` returned (never from
  inside it: the supervisor calls ``fail`` from ``on_frames``), with the reason in
  words, which ``close_reason`` says too; an end that came before ``start`` is told
  after it (after the messages that came before the end);
- ``close()`` ends the connection, which is then told to ``on_closed`` like any end
  (``Core.end_connection`` relies on it); it is harmless twice, and before ``start``;
  its reason starts "closed by cdpnb" (a far end's end never does);
- ``fail(code, reason)`` ends it with ``code`` (seen by a far end that sees codes) and
  a reason naming ``reason`` and the code;
- ``send`` is safe from several threads at once (each message whole, each thread's in
  its order) and raises ``ConnectionLost`` once the end was told.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from cdpnb.errors import ConnectionLost
from cdpnb.runtime.threads import in_own_thread
from cdpnb.transport.base import Transport

__all__ = ["FarEnd", "OpenPair", "check_transport"]


class FarEnd(Protocol):
    """The browser's side of a transport under ``check_transport``."""

    #: Whether ``close_code`` can see the code of a close the transport sends (a
    #: WebSocket peer can; a pipe cannot).
    sees_close_codes: bool

    async def send(self, text: str) -> None:
        """Send one text message to the transport (returns once it has gone out)."""

    def received(self) -> list[str]:
        """Every message the transport has sent so far, in the order they arrived."""

    async def drop(self) -> None:
        """End the connection abruptly, as a crashed browser does (no closing
        handshake), once what ``send`` sent has gone out."""

    def close_code(self) -> int | None:
        """The code of the close the transport sent (None until one came)."""

    async def aclose(self) -> None:
        """Let go of what the far end holds (called after each case)."""


#: ``await open_pair()`` opens a fresh transport (not started) and its far end.
OpenPair = Callable[[], Awaitable[tuple[Transport, FarEnd]]]

#: The code and reason ``fail`` is checked with (what the supervisor sends on a frame
#: that is not UTF-8).
FAIL_CODE = 1007
FAIL_REASON = "frame 1 is not UTF-8"
BAD_FRAME = "(a frame the supervisor refuses)"


class _Recorder:
    """The callbacks given to ``start``: records what they get and what breaks the
    contract on the transport's threads, for the check's own thread to assert."""

    def __init__(self) -> None:
        self.frames: list[str] = []
        self.reasons: list[str] = []
        self.broken: list[str] = []
        self.on_frame: Callable[[str], None] | None = None
        self._inside = 0
        self._lock = threading.Lock()

    def on_frames(self, frames: Sequence[str | bytes]) -> None:
        with self._lock:
            self._inside += 1
            if self._inside > 1:
                self.broken.append("on_frames was called while another on_frames call ran "
                                   "(one delivery at a time, or the fold sees them out of order)")
        try:
            if self.reasons:
                self.broken.append(f"on_frames was called after on_closed ({self.reasons[0]!r})")
            if isinstance(frames, str | bytes) or not isinstance(frames, Sequence):
                self.broken.append(f"on_frames must get a sequence of messages, not "
                                   f"{type(frames).__name__}")
                return
            for frame in frames:
                if type(frame) is bytes:
                    try:
                        text = frame.decode()
                    except UnicodeDecodeError:
                        self.broken.append(f"a message came as bytes that are not UTF-8: "
                                           f"{frame[:40]!r}")
                        continue
                elif type(frame) is str:
                    text = frame
                else:
                    self.broken.append(f"a message must be str or bytes, not "
                                       f"{type(frame).__name__}")
                    continue
                self.frames.append(text)
                if self.on_frame is not None:
                    self.on_frame(text)
        finally:
            with self._lock:
                self._inside -= 1

    def on_closed(self, reason: str) -> None:
        with self._lock:
            if self._inside:
                self.broken.append("on_closed was called while on_frames ran (it must come "
                                   "after the last on_frames returned; the supervisor calls "
                                   "fail() from inside on_frames)")
        self.reasons.append(reason)


class _Case:
    """One case's pair, recorder and deadline helpers."""

    def __init__(self, name: str, transport: Transport, far: FarEnd, timeout: float) -> None:
        self.name = name
        self.transport = transport
        self.far = far
        self.timeout = timeout
        self.rec = _Recorder()

    def fail_with(self, contract: str, detail: str) -> AssertionError:
        return AssertionError(f"check_transport [{self.name}]: {contract}: {detail}")

    def expect(self, condition: bool, contract: str, detail: str) -> None:
        if not condition:
            raise self.fail_with(contract, detail)

    def start(self) -> None:
        self.transport.start(self.rec.on_frames, self.rec.on_closed)

    async def until(self, done: Callable[[], bool], contract: str,
                    detail: Callable[[], str]) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        while not done():
            self.sound()
            if loop.time() > deadline:
                raise self.fail_with(contract, f"{detail()} (after {self.timeout:g} s)")
            await asyncio.sleep(0.005)
        self.sound()

    def sound(self) -> None:
        """What the callbacks saw break, raised on the check's thread."""
        if self.rec.broken:
            raise self.fail_with("the callbacks' contract", "; ".join(self.rec.broken))

    async def frames(self, expected: list[str], contract: str) -> None:
        """Wait for ``expected`` on on_frames and compare, message by message."""
        got = self.rec.frames
        await self.until(lambda: len(got) >= len(expected), contract,
                         lambda: f"{len(got)} of {len(expected)} messages reached on_frames")
        for i, (want, have) in enumerate(zip(expected, got, strict=False)):
            self.expect(want == have, contract,
                        f"message {i} of {len(expected)} differs: sent {_shown(want)}, "
                        f"on_frames got {_shown(have)}")
        self.expect(len(got) == len(expected), contract,
                    f"{len(got)} messages reached on_frames, {len(expected)} were sent; the "
                    f"extra: {[_shown(t) for t in got[len(expected):]][:3]}")

    async def closed_once(self, contract: str) -> str:
        """Wait for on_closed, then a moment more: told once, in words, as close_reason."""
        reasons = self.rec.reasons
        await self.until(lambda: bool(reasons), contract, lambda: "on_closed was not called")
        await asyncio.sleep(0.1)  # a second call, if one comes, comes now
        self.sound()
        self.expect(len(reasons) == 1, "on_closed is called exactly once",
                    f"it was called {len(reasons)} times: {reasons}")
        reason = reasons[0]
        self.expect(isinstance(reason, str) and bool(reason.strip()),
                    "on_closed gets the reason in words", f"it got {reason!r}")
        self.expect(self.transport.close_reason == reason,
                    "close_reason says what on_closed was told",
                    f"on_closed got {reason!r}, close_reason is "
                    f"{self.transport.close_reason!r}")
        return reason

    async def send_fails(self, when: str) -> None:
        try:
            await in_own_thread(lambda: self.transport.send(b'{"after": "the end"}'))
        except ConnectionLost:
            return
        except Exception as exc:
            raise self.fail_with("send after the end raises cdpnb.errors.ConnectionLost",
                                 f"{when}, it raised {type(exc).__name__}: {exc}") from exc
        raise self.fail_with("send after the end raises cdpnb.errors.ConnectionLost",
                             f"{when}, it returned")

    async def harmless(self, what: str, call: Callable[[], None]) -> None:
        before = self.transport.close_reason
        try:
            await in_own_thread(call)
        except Exception as exc:
            raise self.fail_with(f"{what} after the end is harmless",
                                 f"it raised {type(exc).__name__}: {exc}") from exc
        self.expect(self.transport.close_reason == before,
                    f"{what} after the end leaves close_reason alone",
                    f"it was {before!r}, then {self.transport.close_reason!r}")


def _shown(text: str) -> str:
    if len(text) <= 60:
        return repr(text)
    return f"{text[:40]!r}… ({len(text)} characters)"


# -- the cases ---------------------------------------------------------------------------

UNICODE = ["ascii", "é à ü ß — “quotes” …", "日本語のテキスト", "emoji 🎉👩‍💻 and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
           "line\u2028separator, NUL \x00 and \ufeff BOM", "", '{"id": 1, "result": {}}']


async def _frames_arrive_in_order_and_intact(case: _Case) -> None:
    contract = "messages reach on_frames in order and intact"
    big = ("0123456789abcdef" * 32768) + "é🎉" + ("fedcba9876543210" * 32768)  # ~1 MiB
    burst = [f'{{"method": "burst", "params": {{"n": {i}}}}}' for i in range(1000)]
    sent = [*UNICODE, big, *burst, "the last"]
    case.start()
    for text in sent:
        await case.far.send(text)
    await case.frames(sent, contract)


async def _messages_before_start_are_kept(case: _Case) -> None:
    contract = "messages that arrive before start() reach on_frames after it"
    await case.far.send("before start 1")
    await case.far.send("before start 2 ✓")
    await asyncio.sleep(0.05)  # (let them arrive, for a transport with its own reader)
    case.start()
    await case.far.send("after start")
    await case.frames(["before start 1", "before start 2 ✓", "after start"], contract)


async def _an_end_before_start_is_told_after_it(case: _Case) -> None:
    await case.far.send("last words")
    await case.far.drop()
    await asyncio.sleep(0.05)
    case.start()
    await case.frames(["last words"], "messages that came before an end reach on_frames")
    reason = await case.closed_once("an end that came before start() is told to on_closed "
                                    "after it")
    case.expect(not reason.startswith("closed by cdpnb"),
                "close_reason says who closed", f"the far end dropped it, yet {reason!r}")
    await case.send_fails("after the far end dropped the connection")


async def _a_dropped_connection_is_told_once(case: _Case) -> None:
    case.start()
    await case.far.send("hello")
    await case.frames(["hello"], "messages reach on_frames in order and intact")
    await case.far.drop()
    reason = await case.closed_once("on_closed is called when the far end drops")
    case.expect(not reason.startswith("closed by cdpnb"), "close_reason says who closed",
                f"the far end dropped it, yet the reason is {reason!r}")
    await case.send_fails("after on_closed said the far end dropped the connection")
    await case.harmless("close()", case.transport.close)
    await case.harmless("close() again", case.transport.close)
    await case.harmless("fail()", lambda: case.transport.fail(FAIL_CODE, FAIL_REASON))
    case.expect(len(case.rec.reasons) == 1, "on_closed is called exactly once",
                f"close()/fail() after a drop called it again: {case.rec.reasons}")


async def _close_ends_it_and_says_so(case: _Case) -> None:
    case.start()
    await case.far.send("hello")
    await case.frames(["hello"], "messages reach on_frames in order and intact")
    try:
        await in_own_thread(case.transport.close)
        await in_own_thread(case.transport.close)
    except Exception as exc:
        raise case.fail_with("close() twice is harmless",
                             f"it raised {type(exc).__name__}: {exc}") from exc
    reason = await case.closed_once("after close(), on_closed is told (the supervisor's "
                                    "end_connection relies on it)")
    case.expect(reason.startswith("closed by cdpnb"), "close_reason says who closed",
                f"cdpnb closed it, yet the reason is {reason!r} (want 'closed by cdpnb…')")
    await case.send_fails("after close()")
    if case.far.sees_close_codes:
        await case.until(lambda: case.far.close_code() is not None,
                         "close() sends a normal closure (code 1000)",
                         lambda: "the far end saw no close code")
        case.expect(case.far.close_code() == 1000, "close() sends a normal closure (code 1000)",
                    f"the far end saw code {case.far.close_code()}")


async def _fail_from_on_frames_sends_its_code(case: _Case) -> None:
    failed: list[BaseException] = []

    def refuse(text: str) -> None:  # as the supervisor does, on the receiving thread
        if text == BAD_FRAME:
            try:
                case.transport.fail(FAIL_CODE, FAIL_REASON)
            except BaseException as exc:
                failed.append(exc)

    case.rec.on_frame = refuse
    case.start()
    await case.far.send(BAD_FRAME)
    reason = await case.closed_once("fail() from inside on_frames ends the connection")
    case.expect(not failed, "fail() can be called from inside on_frames",
                f"it raised {failed[0]!r}" if failed else "")
    case.expect(reason.startswith("closed by cdpnb") and FAIL_REASON in reason
                and str(FAIL_CODE) in reason,
                "close_reason names fail()'s reason and code",
                f"fail({FAIL_CODE}, {FAIL_REASON!r}) ended it with {reason!r}")
    if case.far.sees_close_codes:
        await case.until(lambda: case.far.close_code() is not None,
                         f"fail({FAIL_CODE}, …) ends it with code {FAIL_CODE}",
                         lambda: "the far end saw no close code")
        case.expect(case.far.close_code() == FAIL_CODE,
                    f"fail({FAIL_CODE}, …) ends it with code {FAIL_CODE}",
                    f"the far end saw code {case.far.close_code()}")
    await case.send_fails("after fail()")
    await case.harmless("fail() again", lambda: case.transport.fail(1011, "again"))
    await case.harmless("close()", case.transport.close)
    case.expect(len(case.rec.reasons) == 1, "on_closed is called exactly once",
                f"fail()/close() after fail() called it again: {case.rec.reasons}")


async def _sends_from_many_threads_arrive_whole(case: _Case) -> None:
    contract = "send from several threads at once: every message arrives whole, each " \
               "thread's in its order"
    threads, each = 8, 40
    filler = "ü" * 32768  # every eighth message 64 KiB of UTF-8: big enough to interleave

    def message(t: int, i: int) -> str:
        return f"thread {t} message {i} " + (filler if i % 8 == 0 else "")

    case.start()
    barrier = threading.Barrier(threads)
    errors: list[BaseException] = []

    def sender(t: int) -> None:
        try:
            barrier.wait(case.timeout)
            for i in range(each):
                case.transport.send(message(t, i).encode())
        except BaseException as exc:
            errors.append(exc)

    def send_all() -> None:
        workers = [threading.Thread(target=sender, args=(t,), name=f"check-sender-{t}")
                   for t in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(case.timeout * 2)

    await in_own_thread(send_all)
    case.expect(not errors, contract, f"send raised {errors[0]!r}" if errors else "")
    total = threads * each
    await case.until(lambda: len(case.far.received()) >= total, contract,
                     lambda: f"the far end got {len(case.far.received())} of {total} messages")
    got = case.far.received()
    expected = {message(t, i) for t in range(threads) for i in range(each)}
    torn = [text for text in got if text not in expected]
    example = _shown(torn[0]) if torn else ""
    case.expect(not torn, contract, f"{len(torn)} messages arrived torn or mixed, e.g. {example}")
    case.expect(len(got) == total and set(got) == expected, contract,
                f"{len(got)} arrived for {total} sent, {len(expected - set(got))} missing")
    for t in range(threads):
        mine = [text for text in got if text.startswith(f"thread {t} ")]
        case.expect(mine == [message(t, i) for i in range(each)], contract,
                    f"thread {t}'s messages arrived out of its order")


async def _close_before_start_is_harmless(case: _Case) -> None:
    try:
        await in_own_thread(case.transport.close)
    except Exception as exc:
        raise case.fail_with("close() before start() is harmless (the supervisor closes a "
                             "transport whose protocol it does not speak)",
                             f"it raised {type(exc).__name__}: {exc}") from exc
    await case.send_fails("after close() before start()")


CASES: tuple[Callable[[_Case], Awaitable[None]], ...] = (
    _frames_arrive_in_order_and_intact,
    _messages_before_start_are_kept,
    _an_end_before_start_is_told_after_it,
    _a_dropped_connection_is_told_once,
    _close_ends_it_and_says_so,
    _fail_from_on_frames_sends_its_code,
    _sends_from_many_threads_arrive_whole,
    _close_before_start_is_harmless,
)


async def check_transport(open_pair: OpenPair, *, timeout: float = 10.0) -> None:
    """Check a Transport implementation against the contract the supervisor relies on
    (``cdpnb.transport.base.Transport``'s docs list it): messages in order and whole,
    those before ``start`` kept, ``send`` from many threads, one ``on_closed`` after the
    last ``on_frames`` for every kind of end, ``ConnectionLost`` after it, ``close`` and
    ``fail`` harmless twice and saying who closed. An AssertionError names the case and
    the contract broken.

    ``open_pair`` is an async callable returning a fresh ``(transport, far_end)`` each
    call: the transport open but not started, ``far_end`` a :class:`FarEnd` (the
    browser's side). ``timeout`` bounds each wait (generous: a loaded machine is slow,
    not wrong). Each case closes its transport and ``far_end.aclose()``-s after it."""
    if not callable(open_pair):
        raise TypeError(f"open_pair must be an async callable returning (transport, "
                        f"far_end), not {type(open_pair).__name__}")
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        raise ValueError(f"timeout must be a positive number of seconds, not {timeout!r}")
    for run in CASES:
        name = run.__name__.strip("_").replace("_", " ")
        pair = await open_pair()
        if not (isinstance(pair, tuple) and len(pair) == 2):
            raise TypeError(f"open_pair() must return (transport, far_end), not {pair!r}")
        transport, far = pair
        missing = [n for n in ("start", "send", "fail", "close", "close_reason", "url")
                   if not hasattr(transport, n)]
        if missing:
            raise TypeError(f"open_pair() returned {type(transport).__name__}, which is no "
                            f"Transport: it lacks {', '.join(missing)}")
        case = _Case(name, transport, far, float(timeout))
        try:
            await run(case)
            case.sound()
        finally:
            # (a case that checks close() says so itself; here it only lets go)
            with contextlib.suppress(Exception):
                await in_own_thread(transport.close)
            await far.aclose()
