"""Connection notes: connected / disconnected. A new connection starts from fresh
live state (nothing stale carried across); history (closed dialogs, console
errors, counters) is kept."""

from __future__ import annotations

from cdpnb.protocol import Note
from cdpnb.state.dialogs import close_all_pending
from cdpnb.state.models import BrowserState


def connected(state: BrowserState, msg: Note) -> BrowserState:
    state = close_all_pending(state, msg.wall)
    return BrowserState(
        connected=True,
        recent_dialogs=state.recent_dialogs,
        console_errors=state.console_errors,
        dialog_seq=state.dialog_seq,
        dialogs_closed_total=state.dialogs_closed_total,
        console_errors_total=state.console_errors_total,
        counters=state.counters,
    )


def disconnected(state: BrowserState, msg: Note) -> BrowserState:
    # A dialog cannot outlive the connection that could answer it.
    return close_all_pending(state, msg.wall).evolve(connected=False)
