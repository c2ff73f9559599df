"""What a trace file must be, in one place, for both of its readers.

A header line, message lines, then a footer whose counts are the lines', or nothing (a
crash: the last line cut short, or no footer); and none of what a recorder never
writes: a line that repeats the one before it, a line lost or out of order (version
2 numbers them), a command id sent twice or answered twice in one connection (ids
restart only after a ``cdpnb.connected`` note), a ``cdpnb.connected`` note right after
another, anything after the footer.

The line-by-line reader (``reader.py``) checks each line as it reads it
(``LineIntegrity``) and names the line; the columnar scan (``scan.py``) checks whole
columns at once (``sequence_problem``, ``ids_problem``) and only refuses, handing the
file to the reader. Each rule is here in both forms, side by side; the header's reading
and the footer's counts (``count_mismatch``) are one function for both.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from cdpnb.protocol import Command, ErrorReply, Event, Fault, Note, Reply, opens_connection
from cdpnb.trace.format import READABLE_VERSIONS, TRACE_VERSION, Record, TraceFormatError

__all__ = ["NO_FOOTER", "LineIntegrity", "count_mismatch", "cut_short_problem",
           "directions_of", "header_of", "ids_problem", "sequence_problem"]

Array = np.ndarray[Any, Any]

NO_FOOTER = ("no footer: the recording did not close cleanly (a crash, or still being "
             "written)")

#: The footer's count key for each kind of record (the recorder counts the same way).
_DIRECTION = {Command: "send", Reply: "recv", ErrorReply: "recv", Event: "recv",
              Note: "note", Fault: "fault"}


def header_of(first: bytes | bytearray, path: Path, gz: bool) -> dict[str, Any]:
    """Line 1 read as a header (its version checked, not yet its fields)."""
    excerpt = first[:60].decode("utf-8", "replace")
    try:
        head = json.loads(first)
    except (ValueError, RecursionError):
        if path.name.endswith(".gz") and not gz:
            raise TraceFormatError(
                f"{path} is named .gz but does not start with the gzip magic bytes 1f 8b "
                f"(it starts {first[:4].hex(' ')}): damaged at byte 0, or not gzip") from None
        raise TraceFormatError(f"{path} is not a cdpnb trace: line 1 is not JSON "
                               f"(it starts {excerpt!r})") from None
    if not isinstance(head, dict) or "cdpnb_trace" not in head:
        raise TraceFormatError(f"{path} is not a cdpnb trace: line 1 has no 'cdpnb_trace' "
                               f"header (it starts {excerpt!r})")
    version = head["cdpnb_trace"]
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise TraceFormatError(f"{path}: line 1 has a bad trace version {version!r}")
    if version not in READABLE_VERSIONS:
        raise TraceFormatError(f"{path} is trace format version {version}; this cdpnb reads "
                               f"up to version {TRACE_VERSION} (upgrade cdpnb)")
    return head


def cut_short_problem(number: int, length: int) -> str:
    return (f"line {number} is cut short ({length} bytes): the recording stopped mid-line; "
            "everything before it loaded")


def count_mismatch(footer: Mapping[str, Any], found: Mapping[str, int]) -> str | None:
    """Whether the footer's counts are not the lines ``found`` (per direction)."""
    counts = footer.get("counts") or {}
    if counts.get("write_errors"):
        return None  # lines the recorder counted but could not write: expected
    said = {k: v for k, v in counts.items() if k in ("send", "recv", "note", "fault") and v}
    held = {k: v for k, v in found.items() if v}
    if said == held:
        return None
    return (f"the footer counts {_counts(said)} but the file holds {_counts(held)}: "
            "lines were added or lost after recording")


def _counts(counts: Mapping[str, int]) -> str:
    return "{" + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())) + "}"


# -- line by line: the reader --------------------------------------------------------------


#: Bytes past which the copy check remembers a line by its digest.
LONG_LINE = 1 << 20


class _Digest(NamedTuple):
    """A long line as the copy check remembers it (never equal to a line's bytes)."""

    blake2b: bytes


def _digest(text: bytes | bytearray) -> _Digest:
    return _Digest(hashlib.blake2b(text, digest_size=16).digest())


class LineIntegrity:
    """The rules above, checked one line at a time (each says what is wrong, or None)."""

    def __init__(self) -> None:
        #: The last line, or for a long one its digest (see ``copy_of_previous``).
        self.previous: bytes | bytearray | _Digest = b""
        self.sent: dict[int, int] = {}  # command id -> its line, this connection
        self.answered: dict[int, int] = {}
        #: line of the cdpnb.connected note just read (None once anything follows it)
        self.connected_at: int | None = None
        self.footer_at: int | None = None
        self.counts: Counter[str] = Counter()
        self.seq: int | None = None  # the last line's number (version 2)

    def copy_of_previous(self, text: bytes | bytearray, number: int) -> str | None:
        # A long line is remembered by its digest: kept whole, a 300 MiB line stayed
        # alive while the next one was parsed (and a copy is as sure by 128 bits).
        seen = _digest(text) if len(text) > LONG_LINE else text
        same = seen == self.previous
        self.previous = seen
        return f"repeats line {number - 1} byte for byte" if same else None

    def sequence(self, text: bytes | bytearray) -> str | None:
        """Version 2 numbers its lines from 1: a gap or a step back is a line lost or
        repeated (read cheaply from the line's start, ``{"seq":N,``)."""
        if not text.startswith(b'{"seq":'):
            return None
        end = text.find(b",", 7)
        try:
            seq = int(text[7:end])
        except ValueError:
            return None
        expected = 1 if self.seq is None else self.seq + 1
        self.seq = seq
        if seq == expected:
            return None
        if seq > expected:
            return f"is message {seq}, but {expected} came next: {seq - expected} lost"
        return f"is message {seq} again (or out of order): {expected} came next"

    def after_footer(self) -> str | None:
        if self.footer_at is None:
            return None
        return f"comes after the footer (line {self.footer_at}), which ends a recording"

    def check(self, record: Record, number: int) -> str | None:
        self.counts[_DIRECTION[type(record)]] += 1
        kind = type(record)
        just_connected, self.connected_at = self.connected_at, None
        if kind is Command:
            assert isinstance(record, Command)
            first = self.sent.setdefault(record.id, number)
            if first != number:
                return (f"command id {record.id} was already sent at line {first} in this "
                        "connection (ids restart only after a cdpnb.connected note)")
        elif kind is Reply or kind is ErrorReply:
            assert isinstance(record, Reply | ErrorReply)
            first = self.answered.setdefault(record.id, number)
            if first != number:
                return f"a second reply to command id {record.id} (the first is line {first})"
        elif opens_connection(record):
            self.connected_at = number
            self.sent.clear()
            self.answered.clear()
            if just_connected is not None:
                # A connection with nothing in it: the recorder never writes one (the
                # disconnect is noted first), and a replay would drop it at once.
                return (f"repeats the cdpnb.connected note of line {just_connected} with "
                        "nothing between")
        return None


# -- column by column: the scan --------------------------------------------------------------
# (``blocks`` is imported where it is used: the reader, which imports this module, has no
# use for it.)


def sequence_problem(seq: Array, mono: Array, wall: Array, kind: Array,
                     same_payload: Any) -> str | None:
    """``LineIntegrity.sequence`` and ``copy_of_previous`` over whole columns: version 2's
    numbers are 1, 2, ...; unnumbered lines (version 1) that agree on their times, kind
    and payload (``same_payload(row)``: row's and the next one's) may be one line
    repeated, which only the reader, comparing the bytes, can tell."""
    from cdpnb.trace.blocks import NO_SEQ

    numbered = seq != NO_SEQ
    if numbered.all():
        if (seq != np.arange(1, len(seq) + 1)).any():
            return "a line lost, repeated or out of order"
    elif numbered.any():
        return "some lines numbered, some not"
    elif len(seq) > 1:
        same = (mono[1:] == mono[:-1]) & (wall[1:] == wall[:-1]) & (kind[1:] == kind[:-1])
        for row in np.flatnonzero(same).tolist():
            if same_payload(row):
                return "a line may repeat the one before"
    return None


def ids_problem(kind: Array, ids: Array, opens: Array) -> str | None:
    """``LineIntegrity.check`` over whole columns (``opens``: the rows that open a
    connection): a connection note right after another, a command id sent twice, or
    answered twice, in one connection."""
    from cdpnb.trace.blocks import COMMAND, ERROR, REPLY

    if (opens[1:] & opens[:-1]).any():
        return "a connection note repeated with nothing between"
    connection = np.cumsum(opens)
    if _repeated(connection, ids, kind == COMMAND):
        return "a command id sent twice in one connection"
    if _repeated(connection, ids, (kind == REPLY) | (kind == ERROR)):
        return "a command answered twice"
    return None


def _repeated(connection: Array, ids: Array, which: Array) -> bool:
    """Whether two of the rows ``which`` (a mask) have one id in one connection."""
    pairs = np.stack([connection[which], ids[which]])
    return bool(np.unique(pairs, axis=1).shape[1] < pairs.shape[1])


def directions_of(kind: Array) -> dict[str, int]:
    """How many rows of each direction (the footer's count keys) the ``kind`` column
    holds."""
    from cdpnb.trace.blocks import DIRECTION_OF_KIND, DIRECTIONS

    found: Counter[str] = Counter()
    for k, n in zip(*np.unique(kind, return_counts=True), strict=True):
        found[DIRECTIONS[DIRECTION_OF_KIND[int(k)]]] += int(n)
    return dict(found)
