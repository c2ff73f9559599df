"""The connection's life as a table machine (``cdpnb.state.connection``): folded from
cdpnb's notes, so news of an older connection cannot change a newer one's phase, and
giving up is a phase of its own; the supervisor's core reads its generation, why it is
down and when to reconnect from it (a scripted peer makes the races exact)."""

from __future__ import annotations

import asyncio
import collections
import time
from typing import Any, get_args

import pytest

import cdpnb
from cdpnb.protocol import Note
from cdpnb.state import BrowserState, fold
from cdpnb.state.changes import Counted, PhaseChanged
from cdpnb.state.connection import COUNTED_MOVES, MOVES
from cdpnb.state.models import ConnectionPhase, Phase
from cdpnb.testing import ScriptedBrowser, ScriptedCommand, ScriptedError

T0 = 1_700_000_000.0


def note(method: str, **params: Any) -> Note:
    return Note(f"cdpnb.{method}", params, None, T0, 0.0)


def life(state: BrowserState) -> tuple[str, int, str | None]:
    c = state.connection
    return c.phase, c.generation, c.reason


#: A drop, an attempt whose own connection is lost, a second attempt made good, and the
#: late news of the first attempt's connection: (note, the phase after it).
RECONNECT_WALK: list[tuple[Note, tuple[str, int, str | None]]] = [
    (note("connected", url="ws://x", generation=1), ("connecting", 1, None)),
    (note("connectionReady", generation=1), ("up", 1, None)),
    (note("disconnected", reason="connection dropped", generation=1),
     ("lost", 1, "connection dropped")),
    (note("connected", url="ws://x", generation=2), ("reconnecting", 2, "connection dropped")),
    # The attempt's own connection ends: its business; the reason stays the drop.
    (note("disconnected", reason="attempt failed", generation=2),
     ("reconnecting", 2, "connection dropped")),
    (note("connected", url="ws://x", generation=3), ("reconnecting", 3, "connection dropped")),
    (note("connectionReady", generation=3), ("up", 3, "connection dropped")),
]


def test_a_reconnect_walks_the_table_and_counts_once() -> None:
    state = BrowserState()
    assert state.connection == ConnectionPhase()  # down, none opened
    for message, expected in RECONNECT_WALK:
        before = state.connection
        state, changes = fold(state, message)
        assert life(state) == expected, message
        moved = [c.connection for c in changes if isinstance(c, PhaseChanged)]
        assert moved == ([state.connection] if state.connection != before else []), message
    assert state.connected and state.counters == {"reconnects": 1}


@pytest.mark.parametrize("late", [
    note("disconnected", reason="late news", generation=2),
    note("disconnected", reason="late news", generation=1),
    note("connectionReady", generation=2),
    note("connected", url="ws://x", generation=2),
])
def test_news_of_an_older_connection_changes_nothing(late: Note) -> None:
    state = BrowserState()
    for message, _ in RECONNECT_WALK:
        state = fold(state, message).state
    after = fold(state, late)
    assert after.state is state and after.changes == ()


def test_news_of_an_older_connection_while_reconnecting_changes_nothing() -> None:
    state = BrowserState()
    for message, _ in RECONNECT_WALK[:-1]:  # the third connection open, not set up yet
        state = fold(state, message).state
    for late in (note("disconnected", reason="late", generation=2),
                 note("connectionReady", generation=2)):
        assert fold(state, late).state is state
    assert life(state) == ("reconnecting", 3, "connection dropped") and state.connected


def test_a_connection_lost_as_its_set_up_finished_is_not_made_ready() -> None:
    state = BrowserState()
    for message, _ in RECONNECT_WALK[:4]:
        state = fold(state, message).state
    state = fold(state, note("disconnected", reason="gone again", generation=2)).state
    assert fold(state, note("connectionReady", generation=2)).state is state
    assert life(state) == ("reconnecting", 2, "connection dropped")


def test_giving_up_is_a_phase_and_later_news_does_not_change_why() -> None:
    state = BrowserState()
    for message, _ in RECONNECT_WALK[:5]:
        state = fold(state, message).state
    why = "connection dropped; gave up after 1 reconnect attempts"
    state, changes = fold(state, note("reconnectGaveUp", reason=why))
    assert life(state) == ("gave_up", 2, why)
    assert Counted("reconnect-gave-up", 1) in changes
    assert state.counters == {"reconnect-gave-up": 1}
    for late in (note("disconnected", reason="the attempt's link", generation=2),
                 note("connectionReady", generation=2)):
        state = fold(state, late).state
        assert life(state) == ("gave_up", 2, why)


def test_the_first_connection_lost_before_it_was_set_up_is_lost() -> None:
    state = fold(BrowserState(), note("connected", url="ws://x", generation=1)).state
    state = fold(state, note("disconnected", reason="refused", generation=1)).state
    assert life(state) == ("lost", 1, "refused") and not state.connected


def test_notes_without_generations_count_from_the_previous_connection() -> None:
    """Traces from before the generations: each connection is the next."""
    state = BrowserState()
    for message, expected in [(note("connected", url="ws://x"), ("connecting", 1, None)),
                              (note("disconnected", reason="gone"), ("lost", 1, "gone")),
                              (note("connected", url="ws://x"), ("reconnecting", 2, "gone"))]:
        state = fold(state, message).state
        assert life(state) == expected


def test_the_tables_agree() -> None:
    phases = set(get_args(Phase))
    assert set(MOVES.values()) <= phases
    assert {frm for frm, _ in MOVES} <= phases
    made = {(frm, to) for (frm, _), to in MOVES.items()}
    assert set(COUNTED_MOVES) <= made  # every counted move is one the table makes


# -- the supervisor's core reads its connection from the state (a scripted peer) ----------


async def _until(condition: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "never came"
        await asyncio.sleep(0.01)


async def test_a_late_loss_of_an_old_connection_leaves_the_current_one_up() -> None:
    b = ScriptedBrowser()
    sup = await cdpnb.Supervisor.start(b, reconnect_attempts=2)
    core = sup._core
    try:
        first = b._transport
        assert core.generation == 1 and sup.connected
        await b.drop()
        await _until(lambda: sup.stats().get("reconnects") == 1 and sup.connected)
        assert (core.connection.phase, core.generation) == ("up", 2)
        assert core.last_disconnect_reason == "connection dropped"  # (the last loss)
        # The first connection's end, told again and late: by the core (whose guard
        # stops it), and as a note straight into the fold (which ignores it).
        core._lost("late news of the first connection", first, 1)
        changes = core.apply(Note("cdpnb.disconnected",
                                  {"reason": "late news", "generation": 1}, None,
                                  time.time(), time.monotonic()))
        assert changes == ()
        await asyncio.sleep(0.3)  # (a reconnect it wrongly started would show by now)
        assert (core.connection.phase, core.generation, b.connections) == ("up", 2, 2)
        assert sup.alive and sup.stats()["reconnects"] == 1
        assert await sup.cdp("Runtime.evaluate", {"expression": "1"}) == {}
    finally:
        await sup.stop()
    assert core.connection.phase == "lost" and not sup.connected


async def test_giving_up_is_a_phase_the_core_reads_why_from() -> None:
    b = ScriptedBrowser()

    @b.on("Target.getTargets")
    def targets(command: ScriptedCommand) -> Any:
        if b.connections > 1:  # every reconnect attempt fails to set up
            raise ScriptedError(-32000, "not today")
        return {"targetInfos": [{"targetId": b.page_target_id, "type": "page"}]}

    sup = await cdpnb.Supervisor.start(b, reconnect_attempts=1)
    core = sup._core
    try:
        await b.drop()
        await _until(lambda: core.connection.phase == "gave_up")
        why = core.connection.reason
        assert why == "connection dropped; gave up after 1 reconnect attempts"
        assert core.last_disconnect_reason == why and core.generation == 2
        stats = sup.stats()
        assert stats["reconnect-gave-up"] == 1 and "reconnects" not in stats
        assert not sup.alive
        # The attempt's connection's end, told late: the phase and why stay.
        core.apply(Note("cdpnb.disconnected", {"reason": "late", "generation": 2}, None,
                        time.time(), time.monotonic()))
        assert (core.connection.phase, core.last_disconnect_reason) == ("gave_up", why)
        # Said once, as on every protocol: which connection ended, and why.
        with pytest.warns(cdpnb.CdpnbWarning, match=r"CDP connection to .* ended for good: "
                          r"connection dropped; gave up .*not today"), \
                pytest.raises(cdpnb.ConnectionLost, match="gave up after 1 reconnect"):
            await sup.cdp("Runtime.evaluate", {"expression": "1"})
    finally:
        await sup.stop()
    assert core.connection.phase == "gave_up"


def test_the_subscriptions_a_message_wants_are_its_own_in_order_after_each_change() -> None:
    """``Core`` looks up the subscriptions a message wants by its method and kinds of
    change (remembered): the same ones, in the order they subscribed, as asking each;
    one that subscribes or leaves counts from the next message on."""
    from cdpnb.session.core import Core

    core = Core("ws://127.0.0.1:9/x", command_timeout_s=1, connect_timeout_s=1)
    heard: list[str] = []

    def listener(name: str) -> Any:
        return lambda message, changes: heard.append(f"{name}:{message.method}")

    core.subscribe(listener("a"), methods=["cdpnb.clicked"], now=True)
    leave_b = core.subscribe(listener("b"), changes=[Counted], now=True)
    core.subscribe(listener("c"), now=True)

    def note(method: str) -> None:
        heard.clear()
        core.apply(Note(method, {}, None, time.time(), time.monotonic()))

    note("cdpnb.clicked")  # (counted: a, b and c)
    assert heard == ["a:cdpnb.clicked", "b:cdpnb.clicked", "c:cdpnb.clicked"]
    note("cdpnb.somethingElse")  # (no change: c only)
    assert heard == ["c:cdpnb.somethingElse"]
    leave_b()
    note("cdpnb.clicked")
    assert heard == ["a:cdpnb.clicked", "c:cdpnb.clicked"]
    core.subscribe(listener("d"), changes=[Counted], now=True)
    note("cdpnb.clicked")
    assert heard == ["a:cdpnb.clicked", "c:cdpnb.clicked", "d:cdpnb.clicked"]


class _Written:
    """A recorder's seat: the methods as they were written, in order."""

    def __init__(self) -> None:
        self.methods: list[str] = []
        self.messages: list[Any] = []

    def __call__(self, message: Any, wire: bytes | None) -> None:
        self.methods.append(message.method)
        self.messages.append(message)

    def flush(self) -> None:
        return None


async def test_a_note_folded_soon_is_in_the_state_and_the_trace_where_it_was_made() -> None:
    """``note_soon`` (the ``cdpnb.evaluated`` of every evaluate) folds when the caller's
    loop next turns, but nothing can tell: the next message comes after it in the trace,
    and a read of the state has it, as if it had been folded at once."""
    from cdpnb.session.core import Core

    core = Core("ws://127.0.0.1:9/x", command_timeout_s=1, connect_timeout_s=1)
    written = _Written()
    core.recorder = written
    core.note_soon("cdpnb.evaluated", {"ms": 3})
    assert written.methods == []  # (not yet: the caller has its value first)
    await asyncio.sleep(0)  # the loop turns: folded
    assert written.methods == ["cdpnb.evaluated"]
    core.note_soon("cdpnb.evaluated", {"ms": 12})
    core.note("cdpnb.clicked", {})  # the next message: the note before it
    assert written.methods == ["cdpnb.evaluated", "cdpnb.evaluated", "cdpnb.clicked"]
    core.note_soon("cdpnb.evaluated", {"ms": 0})
    counters = core.state.counters  # a read: folded first
    assert counters["evaluate-calls"] == 3 and counters["evaluate-ms-total"] == 15
    assert counters["evaluate-ms-max"] == 12 and counters["clicks"] == 1
    assert written.methods[-1] == "cdpnb.evaluated"
    await asyncio.sleep(0)
    assert len(written.methods) == 4  # (folded once, not again by the loop's turn)
    assert core.counters()["evaluate-calls"] == 3
    with pytest.raises(ValueError, match="only count, not 'cdpnb.pageTarget'"):
        core.note_soon("cdpnb.pageTarget", {"target_id": "T", "session_id": "S"})


async def test_notes_held_together_fold_in_the_order_they_were_made() -> None:
    """Two notes held at once (two evaluates ending before the loop turns) are folded
    and recorded in the order they were stamped, each alone: the first must not fold
    the second before itself (a trace's clock would run backwards)."""
    from cdpnb.session.core import Core

    core = Core("ws://127.0.0.1:9/x", command_timeout_s=1, connect_timeout_s=1)
    written = _Written()
    core.recorder = written
    for ms in (1, 2, 3):
        core.note_soon("cdpnb.evaluated", {"ms": ms})
    core.note("cdpnb.clicked", {})
    assert [m.params.get("ms") for m in written.messages] == [1, 2, 3, None]
    monos = [m.mono for m in written.messages]
    assert monos == sorted(monos)


def test_a_note_folded_soon_without_a_running_loop_is_folded_at_once() -> None:
    from cdpnb.session.core import Core

    core = Core("ws://127.0.0.1:9/x", command_timeout_s=1, connect_timeout_s=1)
    core.note_soon("cdpnb.evaluated", {"ms": 1})
    assert core._soon == collections.deque()
    assert core.state.counters["evaluate-calls"] == 1


async def test_a_read_of_the_state_never_waits_for_a_fold_under_way() -> None:
    """While another thread folds (it holds the fold lock), ``state`` is the state as it
    stands, at once, and the held note comes with the next read after; what ``stop()``
    keeps, ``settled_state()``, waits for it."""
    import threading

    from cdpnb.session.core import Core

    core = Core("ws://127.0.0.1:9/x", command_timeout_s=1, connect_timeout_s=1)
    holding, release = threading.Event(), threading.Event()

    def fold_under_way() -> None:
        with core._lock:
            holding.set()
            release.wait(10)

    other = threading.Thread(target=fold_under_way)
    other.start()
    try:
        assert holding.wait(10)
        core.note_soon("cdpnb.evaluated", {"ms": 5})
        started = time.monotonic()
        assert "evaluate-calls" not in core.state.counters  # (as it stands)
        assert time.monotonic() - started < 0.5
    finally:
        release.set()
        other.join(10)
    assert core.settled_state().counters["evaluate-calls"] == 1
