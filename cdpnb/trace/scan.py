"""The columnar scan: a whole trace file read into columns, no message objects built.

It vouches only for what it can check whole: a header, message lines, then the
footer or nothing (a crash: the last line cut short, or no footer), with the
integrity the object reader checks (the rules of ``integrity.py``, there in both forms:
lines numbered 1, 2, ... with none repeated, command ids unique per connection, footer
counts that add up). Its bytes are decompressed as the object reader's are
(``compressed.decompressed``, through ``sources``). Anything else, damage
or merely unusual, raises ``Refused``, and ``Trace.load`` reads the file with the
object reader instead, which names every problem as it always has: the scan never
decides what is damage, it only recognises what is certainly not.
"""

from __future__ import annotations

import json
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cdpnb.trace.blocks import (
    COMMAND,
    ERROR,
    EVENT,
    NOTE,
    REPLY,
    Block,
    Vocabulary,
    read_block,
)
from cdpnb.trace.columns import Columns
from cdpnb.trace.format import TraceFooter, TraceHeader, check_fields
from cdpnb.trace.integrity import (
    NO_FOOTER,
    count_mismatch,
    cut_short_problem,
    directions_of,
    header_of,
    ids_problem,
    sequence_problem,
)
from cdpnb.trace.reader import TraceTruncatedWarning
from cdpnb.trace.sources import LineBlocks, Refused, compression

__all__ = ["Refused", "Scan", "match_replies", "scan"]

_FOOTER_START = b'{"cdpnb_trace_end"'


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
        problems.append(NO_FOOTER)
    elif count_mismatch(reader.footer, directions_of(columns.kind)) is not None:
        raise Refused("footer counts")
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
    problem = sequence_problem(columns.seq, columns.mono, columns.wall, columns.kind,
                               lambda row: columns.payload(row) == columns.payload(row + 1))
    if problem is not None:
        raise Refused(problem)
    match_replies(columns, methods)
    return columns


def match_replies(columns: Columns, methods: Vocabulary) -> None:
    """Each reply's command (``Columns.match_replies``), its method for a reply that
    does not name one; ``Refused`` for what ``integrity.ids_problem`` finds: a command
    id sent twice, or answered twice, in one connection, a connection note right after
    another."""
    kind = columns.kind
    problem = ids_problem(kind, columns.ids, columns.opens())
    if problem is not None:
        raise Refused(problem)
    columns.match_replies()
    replies = np.flatnonzero(((kind == REPLY) | (kind == ERROR)) & (columns.method < 0))
    if len(replies):
        matched = columns.cmd_row[replies]
        columns.method[replies] = np.where(
            matched >= 0, columns.method[np.maximum(matched, 0)], methods.code(""))
