"""The connection's life, as a table machine fed by cdpnb's notes.

``down`` → ``connecting`` (the first connection, being set up) → ``up`` → ``lost`` →
``reconnecting`` → ``up`` again, or ``gave_up``. Each piece of news names the
connection it is about (its generation: 1 for the first, then 2, ...):

* ``cdpnb.connected {url, protocol, generation}``: a connection opened. A new
  connection starts from fresh live state (nothing stale carried across); history
  (closed dialogs, console errors, counters), the supervisor's choices (the bridge)
  and the connection's life are kept.
* ``cdpnb.connectionReady {generation}``: the supervisor set it up: it is the one in use.
* ``cdpnb.disconnected {reason, generation}``: it ended.
* ``cdpnb.reconnectGaveUp {reason}``: reconnecting gave up.

News of an older connection than the newest changes nothing (a loss that comes late, a
set-up finished after the next attempt began), and the loss of a connection a reconnect
attempt opened and has not set up leaves ``reconnecting`` as it is: that attempt fails,
tries again or gives up, and the reason stays the drop it is recovering from (and is
still there once up again, until the next loss). A reconnect made good and a giving up
are counted (``COUNTED_MOVES``). Notes of traces from before the generations count
from the previous connection.
"""

from __future__ import annotations

from typing import Literal

from cdpnb.protocol import Note, recorded_protocol
from cdpnb.state.changes import Change, ConnectionChanged, PhaseChanged
from cdpnb.state.counting import count
from cdpnb.state.dialogs import close_all_pending
from cdpnb.state.models import BrowserState, Phase

__all__ = ["COUNTED_MOVES", "MOVES", "News", "connected", "disconnected", "gave_up", "ready"]

Out = list[Change]
News = Literal["connected", "ready", "lost", "gave_up"]

#: Where each piece of news takes the connection from each phase (the way h11's
#: ``_state.py`` writes its machines). A pair missing here leaves the phase as it is.
MOVES: dict[tuple[Phase, News], Phase] = {
    ("down", "connected"): "connecting",
    ("connecting", "ready"): "up",
    ("connecting", "lost"): "lost",        # the first connection, before it was set up
    ("up", "lost"): "lost",
    ("lost", "connected"): "reconnecting",
    ("reconnecting", "connected"): "reconnecting",  # the next attempt's connection
    ("reconnecting", "lost"): "reconnecting",  # an attempt's own: that attempt's business
    ("reconnecting", "ready"): "up",
    ("lost", "gave_up"): "gave_up",
    ("reconnecting", "gave_up"): "gave_up",
}

#: Moves that count in ``stats()``: (from, to) -> counter.
COUNTED_MOVES: dict[tuple[Phase, Phase], str] = {
    ("reconnecting", "up"): "reconnects",
    ("lost", "gave_up"): "reconnect-gave-up",
    ("reconnecting", "gave_up"): "reconnect-gave-up",
}


def _move(state: BrowserState, news: News, out: Out, *, generation: int | None = None,
          reason: str | None = None) -> BrowserState:
    """``state`` after ``news`` (of connection ``generation``, with ``reason``)."""
    life = state.connection
    phase = MOVES.get((life.phase, news), life.phase)
    update: dict[str, object] = {}
    if generation is not None and generation != life.generation:
        update["generation"] = generation
    if phase != life.phase:
        update["phase"] = phase
        if phase in ("lost", "gave_up"):  # (kept while reconnecting, and once back up)
            update["reason"] = reason
    if not update:
        return state
    moved = life.evolve(**update)
    out.append(PhaseChanged(moved))
    state = state.evolve(connection=moved)
    counter = COUNTED_MOVES.get((life.phase, moved.phase))
    return state if counter is None else count(state, counter, out)


def _generation(msg: Note, default: int) -> int:
    value = msg.params.get("generation", default)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{msg.method}: generation must be a whole number >= 1, "
                         f"got {value!r}")
    return value


def connected(state: BrowserState, msg: Note, out: Out) -> BrowserState:
    generation = _generation(msg, state.connection.generation + 1)
    if generation <= state.connection.generation:
        return state  # an older connection's, come late: the newer one is not reset
    state = close_all_pending(state, msg.wall, "disconnected", out)
    out.append(ConnectionChanged(True, str(msg.params.get("url", ""))))
    fresh = BrowserState(
        connected=True,
        connection=state.connection,
        recent_dialogs=state.recent_dialogs,
        console_errors=state.console_errors,
        dialog_seq=state.dialog_seq,
        dialogs_closed_total=state.dialogs_closed_total,
        console_errors_total=state.console_errors_total,
        counters=state.counters,
        bridge_enabled=state.bridge_enabled,
        protocol=recorded_protocol(msg.params.get("protocol")).name,
    )
    return _move(fresh, "connected", out, generation=generation)


def ready(state: BrowserState, msg: Note, out: Out) -> BrowserState:
    """``cdpnb.connectionReady``: taken only for the newest connection, still open."""
    generation = _generation(msg, state.connection.generation)
    if generation != state.connection.generation or not state.connected:
        return state
    return _move(state, "ready", out)


def disconnected(state: BrowserState, msg: Note, out: Out) -> BrowserState:
    generation = _generation(msg, max(state.connection.generation, 1))
    if generation < state.connection.generation:
        return state  # an older connection's end, come late: the newer one stays
    reason = str(msg.params.get("reason", ""))
    # A dialog cannot outlive the connection that could answer it.
    state = close_all_pending(state, msg.wall, "disconnected", out)
    out.append(ConnectionChanged(False, reason))
    return _move(state.evolve(connected=False), "lost", out, reason=reason)


def gave_up(state: BrowserState, msg: Note, out: Out) -> BrowserState:
    return _move(state, "gave_up", out, reason=str(msg.params["reason"]))
