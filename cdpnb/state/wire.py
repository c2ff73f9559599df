"""What went over the wire, counted from the recorded stream: ``sent``, ``received``,
``in_flight`` and ``fault:<kind>`` of ``stats()``.

These are not folded into ``BrowserState``: every message would then make a new state
(most make none), and a replay would see a change in each. ``WireTally`` counts them
beside the fold from the same records, so the live supervisor (its core feeds it every
message it records, and every refused frame) and a replay of its trace (fed the trace's
records) count alike, by the same code:

* ``sent``: commands; ``received``: replies, error replies, events and refused frames
  (``fault`` lines), over every connection of the run;
* ``in_flight``: commands of the current connection with no reply yet, less those cdpnb
  stopped waiting for (``cdpnb.commandTimedOut``, ``cdpnb.commandsOrphaned``); a
  connection's end ends them all;
* ``fault:<kind>``: refused frames by kind, and ``fault:late-reply``: replies to commands
  cdpnb had stopped waiting for.

A caller that gives up on its own (a cancelled await) is not in the stream: its command
stays in flight until its reply comes, as it does in the browser. A trace line that
stands in for a message it could not hold (an ``unrecordable`` fault) is not counted.
"""

from __future__ import annotations

from collections import Counter, OrderedDict

from cdpnb.protocol import Command, ErrorReply, Event, Fault, Message, Note, Reply
from cdpnb.protocol.codec import CONNECTED, DISCONNECTED

__all__ = ["ABANDONED_KEPT", "WireTally"]

#: Commands given up on whose late replies are still told apart (as the connection
#: keeps them, ``cdpnb.protocol.connection.ABANDONED_MEMORY``).
ABANDONED_KEPT = 1024
#: Notes by which cdpnb stops waiting for commands: note -> how it names them.
_GIVEN_UP = {"cdpnb.commandTimedOut": "id", "cdpnb.commandsOrphaned": "ids"}
#: A fault line the recorder wrote for a message it could not write (not a frame).
_NOT_A_FRAME = "unrecordable"


class WireTally:
    """A running count of one stream's records (mutable: fed one record at a time, by
    one thread at a time; the core feeds it under its fold lock)."""

    __slots__ = ("_abandoned", "_faults", "_pending", "received", "sent")

    def __init__(self) -> None:
        self.sent = 0
        self.received = 0
        self._pending: set[int] = set()
        self._abandoned: OrderedDict[int, None] = OrderedDict()
        self._faults: Counter[str] = Counter()

    @property
    def in_flight(self) -> int:
        return len(self._pending)

    def add(self, record: Message | Fault) -> None:
        kind = type(record)
        if kind is Event:
            self.received += 1
        elif kind is Command:
            assert isinstance(record, Command)
            self.sent += 1
            self._pending.add(record.id)
        elif kind is Reply or kind is ErrorReply:
            assert isinstance(record, Reply | ErrorReply)
            self.received += 1
            if record.id in self._pending:
                self._pending.discard(record.id)
            elif record.id in self._abandoned:
                del self._abandoned[record.id]
                self._faults["late-reply"] += 1
        elif kind is Fault:
            assert isinstance(record, Fault)
            if record.kind != _NOT_A_FRAME:
                self.received += 1
                self._faults[record.kind] += 1
        elif kind is Note:
            assert isinstance(record, Note)
            self._note(record)

    def _note(self, note: Note) -> None:
        if note.method in (CONNECTED, DISCONNECTED):
            # Ids start again with each connection, and nothing outlives its end.
            self._pending.clear()
            self._abandoned.clear()
            return
        key = _GIVEN_UP.get(note.method)
        if key is None:
            return
        value = note.params.get(key)
        for command_id in value if isinstance(value, list) else [value]:
            if isinstance(command_id, int) and command_id in self._pending:
                self._pending.discard(command_id)
                self._abandoned[command_id] = None
        while len(self._abandoned) > ABANDONED_KEPT:
            self._abandoned.popitem(last=False)

    def counts(self) -> dict[str, int]:
        """``sent``, ``received``, ``in_flight`` and each ``fault:<kind>`` seen."""
        out = {"sent": self.sent, "received": self.received, "in_flight": self.in_flight}
        out.update((f"fault:{kind}", n) for kind, n in sorted(self._faults.items()))
        return out
