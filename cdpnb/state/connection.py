"""Connection notes: connected / disconnected. A new connection starts from fresh
live state (nothing stale carried across); history (closed dialogs, console
errors, counters) and the supervisor's choices (the bridge) are kept."""

from __future__ import annotations

from cdpnb.protocol import Note
from cdpnb.state.changes import Change, ConnectionChanged
from cdpnb.state.dialogs import close_all_pending
from cdpnb.state.models import BrowserState

Out = list[Change]


def connected(state: BrowserState, msg: Note, out: Out) -> BrowserState:
    state = close_all_pending(state, msg.wall, "disconnected", out)
    out.append(ConnectionChanged(True, str(msg.params.get("url", ""))))
    return BrowserState(
        connected=True,
        recent_dialogs=state.recent_dialogs,
        console_errors=state.console_errors,
        dialog_seq=state.dialog_seq,
        dialogs_closed_total=state.dialogs_closed_total,
        console_errors_total=state.console_errors_total,
        counters=state.counters,
        bridge_enabled=state.bridge_enabled,
        protocol="bidi" if msg.params.get("protocol") == "bidi" else "cdp",
    )


def disconnected(state: BrowserState, msg: Note, out: Out) -> BrowserState:
    # A dialog cannot outlive the connection that could answer it.
    state = close_all_pending(state, msg.wall, "disconnected", out)
    out.append(ConnectionChanged(False, str(msg.params.get("reason", ""))))
    return state.evolve(connected=False)
