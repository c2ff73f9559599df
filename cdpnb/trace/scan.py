"""The columnar scan: a whole trace file read into columns, no message objects built.

It vouches only for what it can check whole: a header, message lines, then the
footer or nothing (a crash: the last line cut short, or no footer), with the
integrity the object reader checks (lines numbered 1, 2, ... with none repeated,
command ids unique per connection, footer counts that add up). Anything else, damage
or merely unusual, raises ``Refused``, and ``Trace.load`` reads the file with the
object reader instead, which names every problem as it always has: the scan never
decides what is damage, it only recognises what is certainly not.
"""

from __future__ import annotations

import json
import os
import warnings
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cdpnb.trace.blocks import (
    COMMAND,
    ERROR,
    EVENT,
    FAULT,
    NO_SEQ,
    NOTE,
    REPLY,
    Block,
    Vocabulary,
    read_block,
)
from cdpnb.trace.columns import Columns
from cdpnb.trace.format import TraceFooter, TraceHeader, check_fields
from cdpnb.trace.reader import TraceTruncatedWarning, cut_short_problem, header_of
from cdpnb.trace.sources import LineBlocks, Refused, compression

__all__ = ["Refused", "Scan", "match_replies", "scan"]

_FOOTER_START = b'{"cdpnb_trace_end"'
_NO_FOOTER = ("no footer: the recording did not close cleanly (a crash, or still being "
              "written)")


@dataclass
class Scan:
    header: dict[str, Any]
    footer: dict[str, Any] | None
    problems: list[str]
    columns: Columns


def scan(path: str | os.PathLike[str]) -> Scan:
    """Read ``path`` into columns; ``Refused`` when the object reader must judge it."""
    path = Path(path)
    kind = compression(path)
    reader = _Lines(path, kind)
    reader.read()
    columns = _assemble(reader.parts, reader.methods, reader.sessions)
    problems: list[str] = []
    if reader.cut is not None:
        problems.append(cut_short_problem(*reader.cut))
        warnings.warn(f"{path}: {problems[-1]}", TraceTruncatedWarning, stacklevel=3)
    elif reader.footer is None:
        problems.append(_NO_FOOTER)
    else:
        _check_counts(reader.footer, columns)
    return Scan(reader.header, reader.footer, problems, columns)


class _Lines:
    """Cuts the decompressed bytes into blocks of whole lines and reads each."""

    def __init__(self, path: Path, kind: str) -> None:
        self.path = path
        self.kind = kind
        self.header: dict[str, Any] = {}
        self.version = 0
        self.footer: dict[str, Any] | None = None
        self.cut: tuple[int, int] | None = None  # (line, length) of a last line cut short
        self.parts: list[Block] = []
        self.methods = Vocabulary()
        self.sessions = Vocabulary()
        self.rows = 0  # message lines read so far

    def read(self) -> None:
        source = LineBlocks(self.path, self.kind)
        for buffer, length in source:
            self.whole(buffer, length)
        if not self.version:
            raise Refused("no whole header line")  # empty, or one line cut short
        if source.tail.strip():
            self.last(source.tail)

    def whole(self, buffer: bytes | bytearray, length: int) -> None:
        start = 0
        if not self.version:
            start = buffer.index(b"\n") + 1
            self.first(bytes(buffer[:start - 1]))
        if self.footer is not None:
            if buffer[start:length].strip():
                raise Refused("lines after the footer")
            return
        if start == length:
            return
        end = length
        last = buffer.rfind(b"\n", start, length - 1) + 1 or start
        if buffer.startswith(_FOOTER_START, last):
            self.footer = self.checked_footer(bytes(buffer[last:length - 1]))
            end = last
        if end > start:
            # (Line numbers are for messages of the object reader, which reads the file
            # again when a block is refused: rows stand in for lines here.)
            self.add(read_block(memoryview(buffer)[start:end], buffer.isascii(), self.version,
                                (self.methods, self.sessions), self.path.name,
                                self.rows + 2))

    def first(self, line: bytes) -> None:
        if not line.strip():
            raise Refused("an empty first line")
        head = header_of(line, self.path, self.kind == "gzip")
        checked, bad = check_fields(TraceHeader, head, "header")
        if bad:
            raise Refused("header fields")
        self.header = checked
        self.version = int(head["cdpnb_trace"])

    def checked_footer(self, line: bytes) -> dict[str, Any]:
        try:
            end = json.loads(line)
        except ValueError:
            raise Refused("footer line is not JSON") from None
        if not isinstance(end, dict) or "cdpnb_trace" in end:
            raise Refused("footer")
        checked, bad = check_fields(TraceFooter, end, "footer")
        if bad:
            raise Refused("footer fields")
        return checked

    def add(self, block: Block) -> None:
        self.rows += len(block)
        if (((block.kind == COMMAND) | (block.kind == EVENT) | (block.kind == NOTE))
                & (block.method_codes < 0)).any():
            raise Refused("a message without its method")  # the blocks checked this
        self.parts.append(block)

    def last(self, text: bytes) -> None:
        """A last line without its newline: the recorder stopped mid-line (a crash), so
        the line is not JSON. One that is (cut just before its newline) is judged by the
        object reader, which keeps it."""
        try:
            json.loads(text)
        except (ValueError, RecursionError):
            if self.footer is not None:
                raise Refused("a line after the footer") from None
            # Its number counts blank lines too (the object reader's count).
            lines = sum(buffer.count(b"\n", 0, length)
                        for buffer, length in LineBlocks(self.path, self.kind))
            self.cut = (lines + 1, len(text))
            return
        raise Refused("a last line without its newline")


def _assemble(parts: list[Block], methods: Vocabulary, sessions: Vocabulary) -> Columns:
    columns = Columns.from_blocks(parts, methods, sessions)
    _check_seq(columns.seq, columns)
    match_replies(columns, methods)
    return columns


def _check_seq(seq: np.ndarray[Any, Any], columns: Columns) -> None:
    numbered = seq != NO_SEQ
    if numbered.all():
        if (seq != np.arange(1, len(seq) + 1)).any():
            raise Refused("a line lost, repeated or out of order")
    elif numbered.any():
        raise Refused("some lines numbered, some not")
    elif len(seq) > 1:
        _check_repeats(columns)


def _check_repeats(columns: Columns) -> None:
    """Unnumbered lines (version 1): a line repeated byte for byte repeats its times,
    kind and payload. Rows that agree on all of these go to the object reader, which
    compares the bytes."""
    same = ((columns.mono[1:] == columns.mono[:-1]) & (columns.wall[1:] == columns.wall[:-1])
            & (columns.kind[1:] == columns.kind[:-1]))
    for row in np.flatnonzero(same).tolist():
        if columns.payload(row) == columns.payload(row + 1):
            raise Refused("a line may repeat the one before")


def match_replies(columns: Columns, methods: Vocabulary) -> None:
    """Each reply's command (``Columns.match_replies``), its method for a reply that
    does not name one; ``Refused`` for what ``reader._Integrity`` names: a command id
    sent twice, or answered twice, in one connection, a connection note right after
    another."""
    kind = columns.kind
    opens = columns.opens()
    if (opens[1:] & opens[:-1]).any():
        raise Refused("a connection note repeated with nothing between")
    connection = np.cumsum(opens)
    if _repeated(connection, columns.ids, kind == COMMAND):
        raise Refused("a command id sent twice in one connection")
    if _repeated(connection, columns.ids, (kind == REPLY) | (kind == ERROR)):
        raise Refused("a command answered twice")
    columns.match_replies()
    replies = np.flatnonzero(((kind == REPLY) | (kind == ERROR)) & (columns.method < 0))
    if len(replies):
        matched = columns.cmd_row[replies]
        columns.method[replies] = np.where(
            matched >= 0, columns.method[np.maximum(matched, 0)], methods.code(""))


def _repeated(connection: np.ndarray[Any, Any], ids: np.ndarray[Any, Any],
              which: np.ndarray[Any, Any]) -> bool:
    """Whether two of the rows ``which`` (a mask) have one id in one connection."""
    pairs = np.stack([connection[which], ids[which]])
    return bool(np.unique(pairs, axis=1).shape[1] < pairs.shape[1])


_DIRECTION = {COMMAND: "send", REPLY: "recv", ERROR: "recv", EVENT: "recv", NOTE: "note",
              FAULT: "fault"}


def _check_counts(footer: dict[str, Any], columns: Columns) -> None:
    """What ``_Integrity.count_mismatch`` checks: the footer's counts are the lines'."""
    counts = footer.get("counts") or {}
    if counts.get("write_errors"):
        return
    found: Counter[str] = Counter()
    for k, n in zip(*np.unique(columns.kind, return_counts=True), strict=True):
        found[_DIRECTION[int(k)]] += int(n)
    said = {k: v for k, v in counts.items() if k in ("send", "recv", "note", "fault") and v}
    if said != {k: v for k, v in found.items() if v}:
        raise Refused("footer counts")
