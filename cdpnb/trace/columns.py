"""A trace's messages held as columns, and the message objects made from them on demand.

Row ``i`` is the ``i``-th message line. Times, kinds, ids and the codes of methods and
sessions are numpy arrays; payloads stay the bytes they were recorded as, block by
block, until something asks: the tables for their text (recorded text where it is
already what Python writes, see ``canonical``), the reducers and ``Trace.records`` for
their parsed values (built like ``LineDecoder`` builds them, a reply with its
command's method and params).

Every trace is held so: a scanned file or a Parquet file as read, and a trace of
message objects (made in memory, or read line by line) by ``Columns.of_records``,
which keeps the objects themselves (``held``: their payloads are theirs, written as
text only for the rows a table asks for). The tables and the fold read columns only,
one way for every trace.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from cdpnb.protocol import CONNECTED, Command, ErrorReply, Event, Fault, Note, Reply
from cdpnb.state import BrowserState, Change, fold
from cdpnb.state.reducer import EVENT_RULES, NOTE_RULES, REPLY_RULES
from cdpnb.trace.blocks import (
    COMMAND,
    ERROR,
    EVENT,
    FAULT,
    NOTE,
    REPLY,
    Block,
    Vocabulary,
    block_of_records,
    payload_of,
)
from cdpnb.trace.canonical import encode_json, escape_surrogates
from cdpnb.trace.format import Record
from cdpnb.trace.replies import ReplyMatcher
from cdpnb.trace.without_gc import gc_paused

__all__ = ["Columns"]

Array = np.ndarray[Any, Any]


def _large_strings(texts: list[str]) -> Any:
    """``texts`` as an Arrow large_string array, lone surrogates (JS strings may hold
    them; UTF-8 cannot) as ``\\udXXX`` escapes, as the recorded payloads' are."""
    import pyarrow as pa

    try:
        return pa.array(texts, pa.large_string())
    except UnicodeEncodeError:
        return pa.array([escape_surrogates(text) for text in texts], pa.large_string())


_CLASS_NAMES = ("Command", "Reply", "ErrorReply", "Event", "Note", "Fault")


def _each_block(work: Callable[[Block], Any], blocks: list[Block]) -> list[Any]:
    """``work`` of each block, in order, on as many threads as there are cores (up to
    four): finding and writing a block's payload texts is numpy and RE2, which let go
    of the GIL. Each block is one thread's. Measured on a million real messages, two
    cores: 1.26-1.39 s against 1.95-1.99 s on one thread (0.1 CPU s more)."""
    workers = min(len(blocks), os.cpu_count() or 1, 4)
    if workers < 2:
        return [work(block) for block in blocks]
    with ThreadPoolExecutor(workers, thread_name_prefix="cdpnb-texts") as pool:
        return list(pool.map(work, blocks))


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
    #: the message objects the rows were made of (``of_records``), else None: their
    #: payloads are read from them, not from the blocks
    held: tuple[Record, ...] | None = None
    #: the held records' payload texts, once all were asked for
    _held_texts: Any = None

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

    @classmethod
    def of_records(cls, records: Sequence[Record]) -> Columns:
        """Message objects as columns, each row with its record's own method (so a hand-
        made record keeps what it holds), replies paired with their commands."""
        methods, sessions = Vocabulary(), Vocabulary()
        with gc_paused():
            block = block_of_records(records)
            block.method_codes = methods.codes(block.methods)
            block.session_codes = sessions.codes(block.sessions)
        columns = cls.from_blocks([block] if len(block) else [], methods, sessions)
        columns.held = tuple(records)
        columns.match_replies()
        return columns

    def __len__(self) -> int:
        return len(self.kind)

    # -- replies -------------------------------------------------------------------------

    def opens(self) -> Array:
        """The rows that start a connection (a ``cdpnb.connected`` note)."""
        connected = self.methods.code_of(CONNECTED)
        opens: Array = (self.kind == NOTE) & (self.method == connected) if connected >= 0 \
            else np.zeros(len(self), np.bool_)
        return opens

    def match_replies(self) -> None:
        """``cmd_row``: each reply's command, by ``ReplyMatcher``'s rule."""
        kind = self.kind
        rows = np.flatnonzero((kind == COMMAND) | (kind == REPLY) | (kind == ERROR)
                              | self.opens())
        waiting: ReplyMatcher[int] = ReplyMatcher()
        cmd_row = self.cmd_row
        for row, k, cid in zip(rows.tolist(), kind[rows].tolist(), self.ids[rows].tolist(),
                               strict=True):
            if k == COMMAND:
                waiting.sent(cid, row)
            elif k == NOTE:
                waiting.connected()
            else:
                command = waiting.answered(cid)
                cmd_row[row] = -1 if command is None else command

    def reply_params(self, rows: Array) -> Any:
        """The params of the replies ``rows`` (ascending), as Arrow large_string text:
        their commands' ("{}" for a reply to no recorded command), or the held
        records' own (a record made by hand may hold others)."""
        import pyarrow as pa

        if self.held is not None:
            replies = [self.held[row] for row in rows.tolist()]
            texts = [encode_json(r.params if isinstance(r, Reply | ErrorReply) else {})
                     for r in replies]
            return _large_strings(texts)
        commands = self.cmd_row[rows]
        sent, which = np.unique(commands[commands >= 0], return_inverse=True)
        # The texts of the commands answered, then "{}": each reply takes its command's.
        texts = pa.concat_arrays([*self.payload_texts(sent).chunks,
                                  pa.array(["{}"], pa.large_string())])
        pick = np.full(len(commands), len(sent), np.int64)
        pick[commands >= 0] = which
        return texts.take(pa.array(pick))

    # -- payloads ----------------------------------------------------------------------

    def _at(self, row: int) -> tuple[Block, int]:
        b = int(np.searchsorted(self.starts, row, side="right")) - 1
        return self.blocks[b], row - int(self.starts[b])

    def payload(self, row: int) -> bytes:
        if self.held is not None:
            return encode_json(payload_of(self.held[row])).encode("utf-8", "surrogatepass")
        block, i = self._at(row)
        return block.payload(i)

    def value(self, row: int) -> Any:
        """Row ``row``'s payload as the object reader parses it."""
        if self.held is not None:
            return payload_of(self.held[row])
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

        if self.held is not None:
            return pa.chunked_array([self._texts_of_held(rows)], pa.large_string())
        if rows is None:
            chunks = _each_block(Block.texts_array, self.blocks)
        else:
            which = np.searchsorted(self.starts, rows, side="right") - 1
            bounds = np.searchsorted(which, np.arange(len(self.blocks) + 1))
            chunks = [block.texts_of((rows[a:b] - start).tolist()) for block, start, a, b in
                      zip(self.blocks, self.starts.tolist(), bounds[:-1].tolist(),
                          bounds[1:].tolist(), strict=False) if b > a]
        return pa.chunked_array(chunks, pa.large_string())

    def _texts_of_held(self, rows: Array | None) -> Any:
        """``payload_texts`` of held records: written from their payloads (all of them
        kept, once all were asked for)."""
        import pyarrow as pa

        assert self.held is not None
        if self._held_texts is not None:
            return self._held_texts if rows is None \
                else self._held_texts.take(pa.array(rows, pa.int64()))
        held = self.held
        chosen = held if rows is None else [held[row] for row in rows.tolist()]
        with gc_paused():
            texts = [encode_json(payload_of(record)) for record in chosen]
        array = _large_strings(texts)
        if rows is None:
            self._held_texts = array
        return array

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
        (less the events and notes with a method in ``without``)."""
        names = self.methods.names
        size = len(names) + 1  # code -1 (no method) looks up the last entry: False
        event, note, reply = (np.zeros(size, np.bool_) for _ in range(3))
        for table, rules in ((event, EVENT_RULES), (note, NOTE_RULES), (reply, REPLY_RULES)):
            table[[self.methods[name] for name in rules if name in self.methods]] = True
        left_out = [self.methods[name] for name in without if name in self.methods]
        event[left_out] = note[left_out] = False
        kind, method = self.kind, self.method
        return np.flatnonzero((kind == ERROR) | ((kind == EVENT) & event[method])
                              | ((kind == NOTE) & note[method]) | ((kind == REPLY) & reply[method]))

    def messages(self, rows: Array) -> Iterator[Any]:
        """The records of ``rows`` (ascending), equal to the object reader's."""
        if self.held is not None:
            held = self.held
            yield from (held[row] for row in rows.tolist())
            return
        # One block's rows at a time: their payloads read together (``values_of``),
        # and no more of them held at once than one block has.
        for part, b in self._by_block(rows):
            yield from self._messages_of(part, b)

    def _by_block(self, rows: Array) -> Iterator[tuple[Array, int]]:
        """``rows`` (in any order) cut into runs of one block's rows, with the block."""
        if not len(rows):
            return
        which = np.searchsorted(self.starts, rows, side="right") - 1
        cuts = np.flatnonzero(np.diff(which)) + 1
        yield from zip(np.split(rows, cuts), which[np.r_[0, cuts]].tolist(), strict=True)

    def _messages_of(self, rows: Array, b: int) -> Iterator[Any]:
        """The records of ``rows``, all of block ``b``."""
        block = self.blocks[b]
        local = rows - self.starts[b]
        kinds = self.kind[rows]
        read = iter(block.values_of(local[kinds != ERROR]))
        command_rows = self.cmd_row[rows]
        answered = command_rows[((kinds == REPLY) | (kinds == ERROR)) & (command_rows >= 0)]
        asked = dict(zip(answered.tolist(), self._values_of(answered), strict=True))
        names, sessions = self.methods.names, self.sessions.names
        for i, k, command, cid, code, scode, t, w in zip(
                local.tolist(), kinds.tolist(), command_rows.tolist(),
                self.ids[rows].tolist(), self.method[rows].tolist(),
                self.session[rows].tolist(), self.mono[rows].tolist(),
                self.wall[rows].tolist(), strict=True):
            session = sessions[scode] if scode >= 0 else None
            if k == EVENT:
                yield Event(names[code], next(read), session, w, t)
            elif k == NOTE:
                yield Note(names[code], next(read), session, w, t)
            elif k == REPLY:
                yield Reply(cid, names[code], next(read), session,
                            asked[command] if command >= 0 else {}, w, t)
            elif k == COMMAND:
                yield Command(cid, names[code], next(read), session, w, t)
            elif k == FAULT:
                value = next(read)
                yield Fault(value["kind"], value["detail"], value["raw"], w, t)
            else:
                error, message, data = block.errors[i]
                yield ErrorReply(cid, names[code], error, message, data, session,
                                 asked[command] if command >= 0 else {}, w, t)

    def _values_of(self, rows: Array) -> list[Any]:
        """The payloads of ``rows`` (in any order), each run of one block's rows read
        together."""
        values: list[Any] = []
        for part, b in self._by_block(rows):
            values.extend(self.blocks[b].values_of(part - self.starts[b]))
        return values

    def records(self) -> tuple[Any, ...]:
        if self.held is not None:
            return self.held
        with gc_paused():
            return tuple(self.messages(np.arange(len(self))))

    def folded(self, without: Collection[str] = ()) -> Iterator[
            tuple[Record, BrowserState, BrowserState, tuple[Change, ...]]]:
        """Each message a reducer rule acts on (``ruled``), with the state before and
        after it and the changes it made: the reducers' own fold, of every message that
        can change the state (no other does). ``without``: events and notes whose rules the
        question does not need (``tables.NOT_FOLDED``)."""
        before = BrowserState()
        with gc_paused():  # (consumed whole by the tables and final_state, not by users)
            for message in self.messages(self.ruled(without)):
                after, changes = fold(before, message)
                yield message, before, after, changes
                before = after
