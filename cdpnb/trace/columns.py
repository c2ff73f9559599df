"""A scanned trace held as columns, and the message objects made from them on demand.

Row ``i`` is the ``i``-th message line. Times, kinds, ids and the codes of methods and
sessions are numpy arrays; payloads stay the bytes they were recorded as, block by
block, until something asks: the tables for their text (recorded text where it is
already what Python writes, see ``canonical``), the reducers and ``Trace.records`` for
their parsed values (built like ``LineDecoder`` builds them, a reply with its
command's method and params).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cdpnb.protocol import Command, ErrorReply, Event, Fault, Note, Reply
from cdpnb.state.reducer import EVENT_RULES, NOTE_RULES, REPLY_RULES
from cdpnb.trace.blocks import COMMAND, ERROR, EVENT, FAULT, NOTE, REPLY, Block, Vocabulary
from cdpnb.trace.nogc import gc_paused

__all__ = ["Columns"]

Array = np.ndarray[Any, Any]


_CLASS_NAMES = ("Command", "Reply", "ErrorReply", "Event", "Note", "Fault")


@dataclass
class Columns:
    """One array per column, a row per message line; methods and sessions as codes
    into their vocabularies (-1: none); payloads in the blocks they were read in."""

    mono: Array
    wall: Array
    seq: Array
    kind: Array
    ids: Array
    has_id: Array
    method: Array
    session: Array
    methods: Vocabulary
    sessions: Vocabulary
    blocks: list[Block]
    starts: Array  # the first row of each block
    #: for a reply or error reply, the row of its command (-1: none recorded)
    cmd_row: Array

    @classmethod
    def from_blocks(cls, blocks: list[Block], methods: Vocabulary,
                    sessions: Vocabulary) -> Columns:
        def joined(name: str, dtype: Any) -> Array:
            parts = [getattr(block, name) for block in blocks]
            return np.concatenate(parts).astype(dtype, copy=False) if parts \
                else np.zeros(0, dtype)

        sizes = [len(block) for block in blocks]
        starts = np.zeros(len(blocks) + 1, np.int64)
        np.cumsum(sizes, out=starts[1:])
        kind = joined("kind", np.int8)
        return cls(joined("mono", np.float64), joined("wall", np.float64),
                   joined("seq", np.int64), kind, joined("ids", np.int64),
                   joined("has_id", np.bool_), joined("method_codes", np.int32),
                   joined("session_codes", np.int32), methods, sessions, blocks, starts,
                   np.full(len(kind), -1, np.int64))

    def __len__(self) -> int:
        return len(self.kind)

    # -- payloads ----------------------------------------------------------------------

    def _at(self, row: int) -> tuple[Block, int]:
        b = int(np.searchsorted(self.starts, row, side="right")) - 1
        return self.blocks[b], row - int(self.starts[b])

    def payload(self, row: int) -> bytes:
        block, i = self._at(row)
        return block.payload(i)

    def value(self, row: int) -> Any:
        """Row ``row``'s payload as the object reader parses it."""
        block, i = self._at(row)
        return block.value(i)

    def error(self, row: int) -> tuple[int, str, Any]:
        """An error reply's (code, message, data), as ErrorReply holds them."""
        block, i = self._at(row)
        return block.errors[i]

    def payload_texts(self, rows: Array | None = None) -> Any:
        """Every row's payload text (or those of ``rows``, ascending), as one Arrow
        large_string ChunkedArray (a chunk per block): the recorded bytes where they are
        already what Python writes."""
        import pyarrow as pa

        if rows is None:
            chunks = [block.texts_array() for block in self.blocks]
        else:
            which = np.searchsorted(self.starts, rows, side="right") - 1
            bounds = np.searchsorted(which, np.arange(len(self.blocks) + 1))
            chunks = [block.texts_of((rows[a:b] - start).tolist()) for block, start, a, b in
                      zip(self.blocks, self.starts.tolist(), bounds[:-1].tolist(),
                          bounds[1:].tolist(), strict=False) if b > a]
        return pa.chunked_array(chunks, pa.large_string())

    # -- messages ----------------------------------------------------------------------

    def kind_counts(self) -> dict[str, int]:
        """How many rows of each kind, by record class name (``Trace.summary``)."""
        counts = np.bincount(self.kind, minlength=len(_CLASS_NAMES))
        return {name: int(n) for name, n in zip(_CLASS_NAMES, counts.tolist(), strict=True)
                if n}

    def rows_of(self, what: str, methods: Sequence[str]) -> Array:
        """The rows of events (``what="event"``) or replies and error replies
        (``"reply"``) with one of ``methods``."""
        codes = [self.methods[name] for name in methods if name in self.methods]
        kind = self.kind
        of_kind = (kind == EVENT) if what == "event" else (kind == REPLY) | (kind == ERROR)
        return np.flatnonzero(of_kind & np.isin(self.method, codes))

    def ruled(self, without: Collection[str] = ()) -> Array:
        """The rows a reducer rule acts on: only these can change the folded state
        (less the events with a method in ``without``)."""
        names = self.methods.names
        size = len(names) + 1  # code -1 (no method) looks up the last entry: False
        event, note, reply = (np.zeros(size, np.bool_) for _ in range(3))
        for table, rules in ((event, EVENT_RULES), (note, NOTE_RULES), (reply, REPLY_RULES)):
            table[[self.methods[name] for name in rules if name in self.methods]] = True
        event[[self.methods[name] for name in without if name in self.methods]] = False
        kind, method = self.kind, self.method
        return np.flatnonzero((kind == ERROR) | ((kind == EVENT) & event[method])
                              | ((kind == NOTE) & note[method]) | ((kind == REPLY) & reply[method]))

    def messages(self, rows: Array) -> Iterator[Any]:
        """The records of ``rows`` (ascending), equal to the object reader's."""
        which = np.searchsorted(self.starts, rows, side="right") - 1
        local = rows - self.starts[which]
        names, sessions = self.methods.names, self.sessions.names
        for row, b, i, k, cid, code, scode, t, w in zip(
                rows.tolist(), which.tolist(), local.tolist(), self.kind[rows].tolist(),
                self.ids[rows].tolist(), self.method[rows].tolist(),
                self.session[rows].tolist(), self.mono[rows].tolist(),
                self.wall[rows].tolist(), strict=True):
            block = self.blocks[b]
            session = sessions[scode] if scode >= 0 else None
            if k == FAULT:
                value = block.value(i)
                yield Fault(value["kind"], value["detail"], value["raw"], w, t)
            elif k == EVENT:
                yield Event(names[code], block.value(i), session, w, t)
            elif k == NOTE:
                yield Note(names[code], block.value(i), session, w, t)
            elif k == COMMAND:
                yield Command(cid, names[code], block.value(i), session, w, t)
            else:
                command = int(self.cmd_row[row])
                params = self.value(command) if command >= 0 else {}
                if k == REPLY:
                    yield Reply(cid, names[code], block.value(i), session, params, w, t)
                else:
                    error, message, data = block.errors[i]
                    yield ErrorReply(cid, names[code], error, message, data, session, params,
                                     w, t)

    def records(self) -> tuple[Any, ...]:
        with gc_paused():
            return tuple(self.messages(np.arange(len(self))))
