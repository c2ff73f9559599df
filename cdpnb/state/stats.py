"""``stats()``: a view of the folded counters and the wire tally, live or replayed.

The live supervisor's ``stats()`` and ``replay_stats`` of its trace read the same two
things, built by the same code from the same records: ``BrowserState.counters`` (the
fold, ``cdpnb.state.counting``) and ``WireTally`` (``cdpnb.state.wire``). They agree key
by key, except for what happened after the trace was closed (a handler that raised
after ``stop()``) or what the trace could not hold (a failed write, an
``unrecordable`` line): only the live supervisor saw those.
"""

from __future__ import annotations

from collections.abc import Iterable

from cdpnb.protocol import Fault, Message
from cdpnb.state.models import BrowserState
from cdpnb.state.reducer import fold
from cdpnb.state.wire import WireTally

__all__ = ["replay_stats", "stats_of"]


def stats_of(state: BrowserState, wire: WireTally) -> dict[str, int]:
    """The wire counts, then the folded counters by name."""
    return {**wire.counts(), **dict(sorted(state.counters.items()))}


def replay_stats(records: Iterable[Message | Fault]) -> dict[str, int]:
    """``stats()`` as a recording's records rebuild it (``Trace.records``: messages and
    fault lines, in order)."""
    state = BrowserState()
    wire = WireTally()
    for record in records:
        wire.add(record)
        if type(record) is not Fault:
            assert not isinstance(record, Fault)
            state = fold(state, record).state
    return stats_of(state, wire)
