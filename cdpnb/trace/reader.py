"""Reading traces back: checked header and footer, a tolerated crash, damage named.

Three things can be wrong with a trace file, and each is told apart from the others:

- it was **cut short** (the recorder was killed): the last line is incomplete, or a
  gzip or zstd stream simply stops. Everything before loads, with a
  TraceTruncatedWarning.
- it is **damaged**: a gzip or zstd stream that does not decompress (named by its byte
  offset), bytes after the end of the compressed data, a line that is not a message, a
  header or footer field of the wrong type, lines after the footer, footer counts that
  do not match the lines, a line repeated, a command id used twice in one connection. With
  ``strict=True`` (the default) this raises TraceFormatError naming the line or byte;
  ``strict=False`` keeps every message it can read and lists the rest in ``problems``.
- it is **not a trace** at all: TraceFormatError whatever ``strict`` says.
"""

from __future__ import annotations

import os
import warnings
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from cdpnb.trace.compressed import Damaged
from cdpnb.trace.format import (
    LineDecoder,
    Record,
    TraceFooter,
    TraceFormatError,
    TraceHeader,
    check_fields,
    decode_record,
)
from cdpnb.trace.integrity import (
    NO_FOOTER,
    LineIntegrity,
    count_mismatch,
    cut_short_problem,
    header_of,
)
from cdpnb.trace.sources import blocks, compression

__all__ = ["TraceTruncatedWarning", "check_path", "read_trace"]

#: Problems listed one by one; past this many (a damaged gzip stream garbles every line
#: after the damage) they are counted in one last entry.
MAX_PROBLEMS = 100


class TraceTruncatedWarning(UserWarning):
    """The trace ends mid-line (the recorder was killed); everything before it loaded."""


def _lines(path: Path, kind: str) -> Iterator[tuple[bytes | bytearray, bool]]:
    """Lines of the file at ``path`` (decompressed as the scan decompresses it), and
    whether each ended with a newline.

    A stream that just stops is a crash: the recorder flushes each batch of lines to a
    boundary the decompressor can read up to, so every whole line before the cut comes
    out. A stream that does not decompress, or bytes after its end that are not another
    member, raise ``Damaged`` with its byte offset found, after every whole line that
    came out before the bad byte.
    """
    # A line is handed on with no name here holding it, so the reader can let its bytes
    # go before it parses them; one that spans blocks grows in one buffer (joining its
    # parts held two copies: a 300 MiB line peaked at 600 MiB here, now 300).
    pending = bytearray()
    try:
        for block in blocks(path, kind, locate=True):
            first_end = block.find(b"\n")
            if first_end < 0:
                pending += block
                continue
            lines: deque[bytes | bytearray] = deque(block.split(b"\n"))
            del block
            if pending:
                pending += lines.popleft()
                lines.appendleft(pending)  # (a bytearray: the reader reads it as bytes)
                pending = bytearray()
            pending += lines.pop()
            while lines:
                yield lines.popleft(), True
    except Damaged as damage:
        pending += damage.good
        yield from ((line, True) for line in bytes(pending).split(b"\n")[:-1])
        raise
    if pending:
        last = [pending]  # (handed on unheld, as every other line)
        del pending
        yield last.pop(), False


def check_path(path: Path) -> Path:
    """``path``, if it names a file; else the error saying what it names."""
    if not path.exists():
        raise FileNotFoundError(f"no trace at {path}")
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a directory, not a trace file")
    return path


def read_trace(
    path: str | os.PathLike[str], *, strict: bool = True
) -> tuple[dict[str, Any], list[Record], dict[str, Any] | None, list[str]]:
    """``(header, records, footer, problems)`` of the trace at ``path``.

    A last line cut short is reported in ``problems`` (and warned about); damage of
    any kind is a TraceFormatError naming the line or byte offset, unless
    ``strict=False``, which keeps what can be read and reports the rest.
    """
    path = check_path(Path(path))
    kind = compression(path)
    reader = _Reader(path, strict)
    # A zstd stream checks its content only at the end (its checksum): a flipped bit
    # garbles a line first, and the stream is to blame, as for gzip.
    reader.compressed = kind != "plain"
    try:
        reader.read(_lines(path, kind), kind == "gzip")
    except Damaged as damage:
        reader.damaged(damage)
    return reader.result()


class _Reader:
    def __init__(self, path: Path, strict: bool) -> None:
        self.path = path
        self.strict = strict
        self.head: dict[str, Any] | None = None
        self.records: list[Record] = []
        self.end: dict[str, Any] | None = None
        self.problems: list[str] = []
        self.number = 0  # the line being read
        self.unlisted = 0  # problems past MAX_PROBLEMS, counted
        self.integrity = LineIntegrity()

    def damage(self, message: str, lenient: str = "{}") -> None:
        """Damage found at one line: raised when strict, else reported as ``lenient``
        says (what was done about it)."""
        if self.strict:
            raise TraceFormatError(message)
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(lenient.format(message))
        else:
            self.unlisted += 1

    def damaged(self, damage: Damaged) -> None:
        size = self.path.stat().st_size
        where = f"{self.path} is damaged at byte {damage.offset} of {size}: {damage.detail}"
        if self.head is None:
            raise TraceFormatError(f"{where}; not even its header line could be read")
        if self.strict:
            lines = f"{self.number} line{'s' if self.number != 1 else ''}"
            raise TraceFormatError(f"{where}; the {lines} before it read cleanly "
                                   "(Trace.load(..., strict=False) keeps them)")
        self.problems.append(f"damaged at byte {damage.offset} of {size}: {damage.detail}; "
                             f"what followed line {self.number} is lost")

    def read(self, lines: Iterator[tuple[bytes | bytearray, bool]], gz: bool) -> None:
        first = next(lines, None)
        self.number = 1
        if first is None or not first[0].strip():
            raise TraceFormatError(f"{self.path} is not a cdpnb trace: it is empty")
        head = header_of(first[0], self.path, gz)
        head, bad = check_fields(TraceHeader, head, f"{self.path.name} line 1 (header)")
        self.head = head
        self.integrity.copy_of_previous(first[0], 1)  # (remembered as any line is)
        for message in bad:
            self.damage(message)
        decoder = LineDecoder()
        integrity = self.integrity
        for text, complete in lines:
            self.number += 1
            number = self.number
            if not text or text.isspace():  # (not strip(): that copies the line)
                continue
            where = f"{self.path.name} line {number}"
            copy = integrity.copy_of_previous(text, number)
            if copy is not None:
                # Nothing is lost by leaving out an exact copy; everything else is kept.
                self.damage(f"{where} {copy}", "{}; left out")
                continue
            late = integrity.after_footer()
            if late is not None:
                self.damage(f"{where} {late}")
            if complete:  # a line cut short is a crash, named as such below
                out_of_order = integrity.sequence(text)
                if out_of_order is not None:
                    self.damage(f"{where} {out_of_order}")
            length = len(text)
            try:
                decoded = text.decode("utf-8")
                del text  # (its bytes go before the parse: a long line is not held thrice)
                item = decode_record(decoded, where, decoder)
            except (TraceFormatError, UnicodeDecodeError) as exc:
                if not complete and integrity.footer_at is None:
                    self.cut_short(number, length)
                    break
                failure = (str(exc) if isinstance(exc, TraceFormatError)
                           else f"{where}: invalid UTF-8 ({exc})")
                if self.strict and self.compressed:
                    self.blame_the_stream(lines, failure)
                self.damage(failure, "skipped {}")
                continue
            if isinstance(item, dict):
                self.footer(item, where, number)
                continue
            self.records.append(item)
            duplicate = integrity.check(item, number)
            if duplicate is not None:
                self.damage(f"{where}: {duplicate}")

    compressed = False

    def blame_the_stream(self, lines: Iterator[tuple[bytes | bytearray, bool]], bad: str) -> None:
        """A bad line in a gzip (or zstd) file is most often a damaged stream inflating to garbage
        (a flipped bit rarely stops inflation at once; the checksum at the end catches
        it). Read on to the stream's end: if it is damaged, that is the error to name."""
        try:
            for _ in lines:
                pass
        except Damaged as damage:
            size = self.path.stat().st_size
            raise TraceFormatError(f"{self.path} is damaged at byte {damage.offset} of {size}: "
                                   f"{damage.detail}; the first line it garbled: {bad}") from None

    def cut_short(self, number: int, length: int) -> None:
        self.problems.append(cut_short_problem(number, length))
        warnings.warn(f"{self.path}: {self.problems[-1]}", TraceTruncatedWarning, stacklevel=4)

    def footer(self, item: dict[str, Any], where: str, number: int) -> None:
        checked, bad = check_fields(TraceFooter, item, f"{where} (footer)")
        for message in bad:
            self.damage(message)
        if self.end is None:
            self.end = checked
            self.integrity.footer_at = number

    def result(self) -> tuple[dict[str, Any], list[Record], dict[str, Any] | None, list[str]]:
        assert self.head is not None
        if self.unlisted:
            self.problems.append(f"... and {self.unlisted} more problems like those")
        if self.end is None and not self.problems:
            self.problems.append(NO_FOOTER)
        elif self.end is not None and not self.problems:
            mismatch = count_mismatch(self.end, self.integrity.counts)
            if mismatch is not None:
                self.damage(f"{self.path.name} line {self.integrity.footer_at} (footer): "
                            f"{mismatch}")
        return self.head, self.records, self.end, self.problems
