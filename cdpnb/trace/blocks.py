"""One block of trace lines as columns: msgspec decodes each line into a small Struct,
the payload (``params`` / ``result`` / ``error``) left as the bytes it was
(``msgspec.Raw``), and the Structs become numpy columns and one bytes buffer at once.

Only the common shape takes this path: every line a message of its direction with
the one payload field that direction uses. A block holding anything else (a lone
surrogate escape, which msgspec refuses; a number out of range; a field of the wrong
type; a v2 line without ``msg``) is read line by line with the standard library
through the same checks as the object reader (``LineDecoder``), so it gives the same
values; a line that even that refuses is damage, and ``Refused`` hands the file to the
object reader, which names it.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Annotated, Any, Literal

import msgspec
import numpy as np

from cdpnb.protocol import Command, ErrorReply, Event, Fault, Note, Reply
from cdpnb.protocol.codec import loads
from cdpnb.trace.canonical import canonical_buffer, encode_json
from cdpnb.trace.format import (
    INT_MAX,
    INT_MIN,
    WALL_MAX,
    WALL_MIN,
    LineDecoder,
    TraceFormatError,
)
from cdpnb.trace.sources import Refused

__all__ = [
    "COMMAND",
    "DIRECTIONS",
    "DIRECTION_OF_KIND",
    "ERROR",
    "EVENT",
    "FAULT",
    "KIND_NAMES",
    "NOTE",
    "NO_SEQ",
    "REPLY",
    "Block",
    "Vocabulary",
    "block_of_records",
    "error_fields",
    "payload_of",
    "read_block",
]

#: Row kinds, by code.
KIND_NAMES = ("command", "reply", "error", "event", "note", "fault")
COMMAND, REPLY, ERROR, EVENT, NOTE, FAULT = range(6)
#: Line directions, by code; and each kind's.
DIRECTIONS = ("send", "recv", "note", "fault")
DIRECTION_OF_KIND = (0, 1, 1, 1, 2, 3)
_DIRS = {name: code for code, name in enumerate(DIRECTIONS)}

#: "No such field": INT_MIN, which the Structs below refuse as a value (a line that
#: holds it goes the standard library's way, which keeps it).
NO_ID = NO_SEQ = INT_MIN
_Int = Annotated[int, msgspec.Meta(ge=INT_MIN + 1, le=INT_MAX)]
_NO_RAW = msgspec.Raw(b"")


_Dir = Literal["send", "recv", "note", "fault"]  # (no new string per line)
# A line's own fields, and a message's: a v2 line holds the message in ``msg``, a v1
# line holds its fields itself. gc=False: a million of these would otherwise set off
# the cyclic collector again and again (it tripled the decoding time).
_Field = tuple[str, Any] | tuple[str, Any, Any]
_LINE: list[_Field] = [
    ("t", float), ("wall", float), ("dir", _Dir), ("seq", _Int, NO_SEQ),
    ("fault", str | None, None), ("detail", str, ""), ("raw", str, "")]
_MESSAGE: list[_Field] = [
    ("id", _Int, NO_ID), ("method", str | None, None), ("sessionId", str | None, None),
    ("params", msgspec.Raw, _NO_RAW), ("result", msgspec.Raw, _NO_RAW),
    ("error", msgspec.Raw, _NO_RAW)]
_Msg = msgspec.defstruct("_Msg", _MESSAGE, frozen=True, gc=False)
_V2Line = msgspec.defstruct("_V2Line", [*_LINE, ("msg", _Msg, _Msg())], gc=False)
# (a v2 line in a v1 file, with a msg, is read the other way)
_V1Line = msgspec.defstruct("_V1Line", [*_LINE, *_MESSAGE, ("msg", msgspec.Raw, _NO_RAW)],
                            gc=False)

_DECODERS: dict[int, msgspec.json.Decoder[Any]] = {1: msgspec.json.Decoder(_V1Line),
                                                   2: msgspec.json.Decoder(_V2Line)}


class _Unusual(Exception):
    """Not the common shape: read this block line by line."""


@dataclass
class Block:
    """Rows of one block, in line order. ``raw[offsets[i]:offsets[i + 1]]`` is row i's
    payload as recorded; rows in ``texts`` have their payload text here instead (it
    could not be taken from the line: a fault, an error reply, a missing payload, a
    line read the slow way), and rows in ``values`` their parsed payload."""

    mono: np.ndarray[Any, np.dtype[np.float64]]
    wall: np.ndarray[Any, np.dtype[np.float64]]
    seq: np.ndarray[Any, np.dtype[np.int64]]
    kind: np.ndarray[Any, np.dtype[np.int8]]
    ids: np.ndarray[Any, np.dtype[np.int64]]
    has_id: np.ndarray[Any, np.dtype[np.bool_]]
    methods: list[str | None]  # (slow blocks, until coded)
    sessions: list[str | None]
    raw: bytes | memoryview = b""  # (a view: a Parquet file's buffer, kept as read)
    offsets: np.ndarray[Any, np.dtype[np.int64]] = field(
        default_factory=lambda: np.zeros(1, np.int64))
    texts: dict[int, str] = field(default_factory=dict)
    values: dict[int, Any] = field(default_factory=dict)
    #: error reply rows: (code, message, data) as ErrorReply holds them
    errors: dict[int, tuple[int, str, Any]] = field(default_factory=dict)
    #: the methods' and sessions' codes (in the scan's vocabularies), -1 for none
    method_codes: np.ndarray[Any, np.dtype[np.int32]] = field(
        default_factory=lambda: np.zeros(0, np.int32))
    session_codes: np.ndarray[Any, np.dtype[np.int32]] = field(
        default_factory=lambda: np.zeros(0, np.int32))
    #: the payload texts (an Arrow LargeStringArray), once written
    text: Any = None

    def __len__(self) -> int:
        return len(self.kind)

    def __getstate__(self) -> dict[str, Any]:
        # A view of a Parquet file's buffer does not pickle: its bytes do.
        state = dict(self.__dict__)
        state["raw"] = bytes(self.raw)
        return state

    def texts_array(self) -> Any:
        """The payload texts the tables show, as one Arrow array: the recorded bytes
        where they are already that text. They replace the recorded bytes (rows parse
        from either alike)."""
        if self.text is None:
            import pyarrow as pa

            self.raw, self.offsets = canonical_buffer(bytes(self.raw), self.offsets,
                                                       self.texts)
            self.texts = {}
            self.text = pa.LargeStringArray.from_buffers(
                len(self), pa.py_buffer(self.offsets.tobytes()), pa.py_buffer(self.raw))
        return self.text

    def texts_of(self, rows: list[int]) -> Any:
        """``texts_array`` of some rows only (written for these alone, if the block's
        are not yet)."""
        import pyarrow as pa

        if self.text is not None:
            return self.text.take(pa.array(rows, pa.int64()))
        view, offsets = memoryview(self.raw), self.offsets
        raw = b"".join([view[offsets[i]:offsets[i + 1]] for i in rows])
        lengths = offsets[1:][rows] - offsets[:-1][rows]
        bounds = np.zeros(len(rows) + 1, np.int64)
        np.cumsum(lengths, out=bounds[1:])
        known = {k: self.texts[i] for k, i in enumerate(rows) if i in self.texts}
        data, bounds = canonical_buffer(raw, bounds, known)
        return pa.LargeStringArray.from_buffers(len(rows), pa.py_buffer(bounds.tobytes()),
                                                pa.py_buffer(data))

    def payload(self, i: int) -> bytes:
        """Row ``i``'s payload bytes (as recorded, or as written again)."""
        if i in self.texts:
            return self.texts[i].encode("utf-8", "surrogatepass")
        return bytes(self.raw[self.offsets[i]:self.offsets[i + 1]])

    def value(self, i: int) -> Any:
        """Row ``i``'s payload, parsed as the object reader parses it."""
        if i in self.values:
            return self.values[i]
        return loads(memoryview(self.raw)[self.offsets[i]:self.offsets[i + 1]])

    def values_of(self, rows: np.ndarray[Any, np.dtype[np.int64]]) -> list[Any]:
        """``value`` of each of ``rows``, read together: the offsets taken out in one
        numpy step and the buffer viewed once (row by row, a numpy scalar's index and a
        new memoryview were 2/3 of the 3.5 µs a payload cost the fold's messages)."""
        view, parsed = memoryview(self.raw), self.values
        starts = self.offsets[rows].tolist()
        ends = self.offsets[rows + 1].tolist()
        return [parsed[i] if i in parsed else loads(view[lo:hi])
                for i, lo, hi in zip(rows.tolist(), starts, ends, strict=True)]


def read_block(lines: memoryview, ascii: bool, version: int,
               codes: tuple[Vocabulary, Vocabulary], where: str, first_line: int) -> Block:
    """The rows of ``lines`` (whole lines, each ending in a newline; ``ascii`` when they
    are known to be), methods and sessions coded by ``codes``. ``where`` names the file
    and ``first_line`` the number of the first line, for messages."""
    try:
        if not ascii:
            codecs.utf_8_decode(lines, "strict", True)  # msgspec leaves payloads unchecked
        return _fast(lines, version, codes)
    except (msgspec.DecodeError, UnicodeDecodeError, _Unusual):
        block = _slow(bytes(lines), where, first_line)
        block.method_codes = codes[0].codes(block.methods)
        block.session_codes = codes[1].codes(block.sessions)
        return block


class Vocabulary(dict[str | None, int]):
    """Codes for the strings of one column (methods, sessions): None is -1."""

    def __init__(self) -> None:
        super().__init__({None: -1})
        self.names: list[str] = []

    def __missing__(self, name: str | None) -> int:
        assert name is not None
        code = self[name] = len(self.names)
        self.names.append(name)
        return code

    def codes(self, values: Iterable[str | None]) -> np.ndarray[Any, np.dtype[np.int32]]:
        return np.fromiter(map(self.__getitem__, values), np.int32)

    def code(self, name: str) -> int:
        return self[name]

    def code_of(self, name: str) -> int:
        """The code of ``name``, or -1 when no row holds it."""
        return self.get(name, -1)


def _fast(lines: memoryview, version: int, codes: tuple[Vocabulary, Vocabulary]) -> Block:
    rows: list[Any] = _DECODERS[version].decode_lines(lines)
    n = len(rows)
    mono = np.fromiter(map(attrgetter("t"), rows), np.float64, n)
    wall = np.fromiter(map(attrgetter("wall"), rows), np.float64, n)
    seq = np.fromiter(map(attrgetter("seq"), rows), np.int64, n)
    direction = np.fromiter(map(_DIRS.__getitem__, map(attrgetter("dir"), rows)), np.int8, n)
    if version == 1:
        if any(map(len, map(attrgetter("msg"), rows))):
            raise _Unusual
        msgs = rows
    else:
        msgs = list(map(attrgetter("msg"), rows))
    ids = np.fromiter(map(attrgetter("id"), msgs), np.int64, n)
    method_codes = codes[0].codes(map(attrgetter("method"), msgs))
    session_codes = codes[1].codes(map(attrgetter("sessionId"), msgs))
    params, result, error = (list(map(attrgetter(name), msgs))
                             for name in ("params", "result", "error"))
    lp, lr, le = (np.fromiter(map(len, raws), np.int64, n) for raws in (params, result, error))
    has_id = ids != NO_ID
    kind = _kinds(direction, has_id, le)
    is_fault = kind == FAULT
    uses = np.choose(kind, [lp, lr, le, lp, lp, np.zeros_like(lp)])
    # (A command, event or note without a method is refused once methods are coded.)
    if ((lp + lr + le != np.where(is_fault, 0, uses)).any()  # another payload field too
            or ((kind == COMMAND) & ~has_id).any()
            or (wall < WALL_MIN).any() or (wall > WALL_MAX).any()):
        raise _Unusual
    raw = b"".join(map(_either, params, result, error))
    lens = lp + lr + le
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lens, out=offsets[1:])
    block = Block(mono, wall, seq, kind, ids, has_id, [], [], raw, offsets,
                  method_codes=method_codes, session_codes=session_codes)
    first = np.frombuffer(raw, np.uint8)[offsets[:-1][lens > 0]] if raw else np.zeros(0)
    if (first != ord("{")).any():
        raise _Unusual  # a payload that is not an object: the slow way names it
    for row in np.flatnonzero((lens == 0) & ~is_fault).tolist():
        block.texts[row] = "{}"
        block.values[row] = {}
    for row in np.flatnonzero(kind == ERROR).tolist():
        _error_row(block, row, json.loads(raw[offsets[row]:offsets[row + 1]]))
    if is_fault.any():
        for row in np.flatnonzero(is_fault).tolist():
            line = rows[row]
            if line.fault is None:
                raise _Unusual
            _fault_row(block, row, line.fault, line.detail, line.raw)
            # A fault line's own fields only (a v2 fault may carry a msg: not read).
            has_id[row] = False
            method_codes[row] = session_codes[row] = -1
    return block


def _kinds(direction: np.ndarray[Any, Any], has_id: np.ndarray[Any, Any],
           error_len: np.ndarray[Any, Any]) -> np.ndarray[Any, np.dtype[np.int8]]:
    reply = np.where(error_len > 0, ERROR, REPLY)
    recv = np.where(has_id, reply, EVENT)
    return np.choose(direction, [COMMAND, recv, NOTE, FAULT]).astype(np.int8)


def _either(params: msgspec.Raw, result: msgspec.Raw, error: msgspec.Raw) -> msgspec.Raw:
    # At most one is not empty (checked): that one is the row's payload.
    return params or result or error


def error_fields(error: dict[str, Any]) -> tuple[int, str, Any]:
    """An error reply's ``error`` object as ErrorReply holds it: (code, message, data)."""
    code = error.get("code", -1)
    code = code if isinstance(code, int) and not isinstance(code, bool) \
        and INT_MIN <= code <= INT_MAX else -1
    record = ErrorReply(0, "", code, str(error.get("message", "")), error.get("data"))
    return record.code, record.message, record.data


def _error_row(block: Block, row: int, error: Any) -> None:
    if not isinstance(error, dict):
        raise _Unusual
    block.errors[row] = fields = error_fields(error)
    value = ErrorReply(0, "", *fields).error
    block.values[row] = value
    block.texts[row] = encode_json(value)


def _fault_row(block: Block, row: int, kind: str, detail: str, raw: str) -> None:
    value = {"kind": kind, "detail": detail, "raw": raw}
    block.values[row] = value
    block.texts[row] = encode_json(value)


# -- the slow way: the standard library, line by line ------------------------------------------

_MONO, _WALL = attrgetter("mono"), attrgetter("wall")
_KIND_OF = {Command: COMMAND, Reply: REPLY, ErrorReply: ERROR, Event: EVENT, Note: NOTE,
            Fault: FAULT}


def _slow(data: bytes, where: str, first_line: int) -> Block:
    decoder = LineDecoder()
    records: list[Any] = []
    methods: list[str | None] = []
    seqs: list[int] = []
    for number, text in enumerate(data.split(b"\n")[:-1], first_line):
        if not text.strip():
            continue
        line = _parse(text, f"{where} line {number}")
        record = _decoded(decoder, line, f"{where} line {number}")
        records.append(record)
        seqs.append(_seq(line))
        method = getattr(record, "method", None)
        if isinstance(record, Reply | ErrorReply):
            # The line's own method (version 1), else the command's (found later).
            message = line.get("msg", line)  # (a v2 line's msg is an object: decoded)
            method = message.get("method") if isinstance(message.get("method"), str) else None
        methods.append(method)
    block = block_of_records(records, methods, np.array(seqs, np.int64))
    for row, record in enumerate(records):
        value = block.values[row] = payload_of(record)
        block.texts[row] = encode_json(value)
    return block


def block_of_records(records: Sequence[Any], methods: list[str | None] | None = None,
                     seq: np.ndarray[Any, np.dtype[np.int64]] | None = None) -> Block:
    """The rows of message objects, in order, without their payloads (``payload_of``
    gives a record's). ``methods``: each row's, when not the record's own (a reply read
    from a line names its command's method only if the line did); ``seq``: the lines'
    numbers (else 1, 2, ...)."""
    n = len(records)
    try:
        kind = np.fromiter(map(_KIND_OF.__getitem__, map(type, records)), np.int8, n)
    except KeyError as exc:
        raise TypeError("a trace holds protocol messages and faults, got "
                        f"{exc.args[0].__name__}") from None
    with_id = np.flatnonzero(kind <= ERROR).tolist()  # (commands and replies)
    ids: list[Any] = [records[row].id for row in with_id]
    has_id = np.zeros(n, np.bool_)
    has_id[with_id] = [cid is not None for cid in ids]
    id_column = np.full(n, NO_ID, np.int64)
    id_column[with_id] = [NO_ID if cid is None else cid for cid in ids]
    faults = bool((kind == FAULT).any())  # (a fault has no method, no session)
    sessions = _field(records, "session_id", faults)
    if methods is None:
        methods = _field(records, "method", faults)
    block = Block(
        mono=np.fromiter(map(_MONO, records), np.float64, n),
        wall=np.fromiter(map(_WALL, records), np.float64, n),
        seq=np.arange(1, n + 1, dtype=np.int64) if seq is None else seq,
        kind=kind, ids=id_column, has_id=has_id, methods=methods, sessions=sessions,
        offsets=np.zeros(n + 1, np.int64))
    for row in np.flatnonzero(kind == ERROR).tolist():
        error = records[row]
        block.errors[row] = (error.code, error.message, error.data)
    return block


def _field(records: Sequence[Any], name: str, faults: bool) -> list[Any]:
    """Each record's ``name`` (None for a fault's)."""
    if faults:
        return [getattr(record, name, None) for record in records]
    return list(map(attrgetter(name), records))


def payload_of(record: Any) -> Any:
    """A record's payload, as its line holds it: a command's, event's or note's params,
    a reply's result, an error reply's error, a fault's kind, detail and raw excerpt."""
    kind = type(record)
    if kind is Reply:
        return record.result
    if kind is ErrorReply:
        return record.error
    if kind is Fault:
        return {"kind": record.kind, "detail": record.detail, "raw": record.raw}
    return record.params


def _parse(text: bytes, where: str) -> dict[str, Any]:
    try:
        line = json.loads(text.decode("utf-8"))
    except (ValueError, RecursionError):
        raise Refused(f"{where} is not JSON") from None
    if not isinstance(line, dict) or "cdpnb_trace_end" in line or "cdpnb_trace" in line:
        raise Refused(f"{where} is not a message")
    return line


def _decoded(decoder: LineDecoder, line: dict[str, Any], where: str) -> Any:
    try:
        return decoder.decode(line, where)
    except (TraceFormatError, TypeError, ValueError, OverflowError) as exc:
        raise Refused(str(exc)) from None


def _seq(line: dict[str, Any]) -> int:
    seq = line.get("seq", NO_SEQ)
    if isinstance(seq, bool) or not isinstance(seq, int) or not INT_MIN < seq <= INT_MAX:
        if "seq" in line:
            raise Refused("a line numbered oddly")  # the object reader judges it
        return NO_SEQ
    return seq


