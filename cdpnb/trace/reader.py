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

import json
import os
import warnings
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from cdpnb.protocol import Command, ErrorReply, Event, Fault, Note, Reply, opens_connection
from cdpnb.trace.format import (
    READABLE_VERSIONS,
    TRACE_VERSION,
    LineDecoder,
    Record,
    TraceFooter,
    TraceFormatError,
    TraceHeader,
    check_fields,
    decode_record,
)
from cdpnb.trace.sources import GZIP_MAGIC, ZSTD_MAGIC, compression

__all__ = ["TraceTruncatedWarning", "check_path", "cut_short_problem", "header_of",
           "read_trace"]

_CHUNK = 1 << 18
#: Problems listed one by one; past this many (a damaged gzip stream garbles every line
#: after the damage) they are counted in one last entry.
MAX_PROBLEMS = 100

#: The footer's count key for each kind of record (the recorder counts the same way).
_DIRECTION = {Command: "send", Reply: "recv", ErrorReply: "recv", Event: "recv",
              Note: "note", Fault: "fault"}


class TraceTruncatedWarning(UserWarning):
    """The trace ends mid-line (the recorder was killed); everything before it loaded."""


class _Damaged(Exception):
    """The file's bytes stop making sense at ``offset``; nothing after it can be read."""

    def __init__(self, offset: int, detail: str) -> None:
        super().__init__(detail)
        self.offset = offset
        self.detail = detail


def _shortest_failing(fails: Callable[[int], bool], low: int, high: int) -> int:
    """The least length in ``[low, high]`` for which ``fails``, knowing ``high`` does: a
    prefix that fails stays failed when it grows, so a binary search finds it."""
    while low < high:
        middle = (low + high) // 2
        if fails(middle):
            high = middle
        else:
            low = middle + 1
    return low


class _Format:
    """A compressed format's reading: magic bytes, a fresh decompressor, its error."""

    def __init__(self, name: str, magic: bytes, make: Callable[[], Any],
                 error: type[Exception]) -> None:
        self.name, self.magic, self.make, self.error = name, magic, make, error

    def _fails(self, decompressor: Any, data: bytes) -> bool:
        try:
            decompressor.decompress(data)
        except self.error:
            return True
        return False

    def recover(self, path: Path, member: tuple[int, int], before: Any, data: bytes,
                offset: int) -> tuple[int, bytes]:
        """Where ``data`` (at ``offset`` in the file) fails, and what it decompresses to
        before that byte. ``member``: where the member began and how much it gave before
        ``data``. zlib's state can be copied, so gzip is searched within ``data``; zstd's
        cannot, so its member is decompressed again from its start, once per step."""
        if before is not None:
            bad = _shortest_failing(lambda n: self._fails(before.copy(), data[:n]),
                                    1, len(data)) - 1
            return offset + bad, before.decompress(data[:bad])
        start, given = member
        with open(path, "rb") as raw:
            raw.seek(start)
            blob = raw.read(offset + len(data) - start)
        bad = _shortest_failing(lambda n: self._fails(self.make(), blob[:n]),
                                offset - start + 1, len(blob)) - 1
        return start + bad, self.make().decompress(blob[:bad])[given:]

    def failure(self, exc: Exception) -> str:
        if "incorrect data check" in str(exc) or "doesn't match checksum" in str(exc):
            return (f"the {self.name} checksum at the end of the stream does not match what "
                    f"{'inflated' if self.name == 'gzip' else 'decompressed'}: a byte before "
                    "it is damaged")
        verb = "inflate" if self.name == "gzip" else "decompress"
        return f"the {self.name} data does not {verb} ({exc})"


def _format(kind: str) -> _Format:
    if kind == "gzip":
        return _Format("gzip", GZIP_MAGIC, lambda: zlib.decompressobj(wbits=31), zlib.error)
    import zstandard

    return _Format("zstd", ZSTD_MAGIC, lambda: zstandard.ZstdDecompressor().decompressobj(),
                   zstandard.ZstdError)


def _compressed_lines(path: Path, form: _Format) -> Iterator[tuple[bytes, bool]]:
    """Lines of a gzip or zstd file (every member or frame of it), and whether each ended
    with a newline.

    A stream that just stops is a crash: the recorder flushes each batch of lines to a
    boundary the decompressor can read up to, so every whole line before the cut comes
    out. A stream that does not decompress, or bytes after its end that are not another
    member, raise _Damaged with the byte offset.
    """
    size = path.stat().st_size
    inflater = form.make()
    pending = b""
    offset = 0  # where ``data`` starts in the file
    member = (0, 0)  # where the member began, how many bytes it gave so far
    data = b""
    with open(path, "rb") as raw:
        while True:
            if not data:
                data = raw.read(_CHUNK)
                if not data:
                    break
            before = inflater.copy() if form.name == "gzip" else None
            try:
                out = inflater.decompress(data)
            except form.error as exc:
                bad, good = form.recover(path, member, before, data, offset)
                # Every whole line that came out before the bad byte is still good.
                pending += good
                yield from ((line, True) for line in pending.split(b"\n")[:-1])
                raise _Damaged(bad, form.failure(exc)) from None
            pending += out
            member = (member[0], member[1] + len(out))
            *lines, pending = pending.split(b"\n")
            for line in lines:
                yield line, True
            if not inflater.eof:
                offset += len(data)
                data = b""
                continue
            # The end of one member: what follows is another member or nothing.
            offset += len(data) - len(inflater.unused_data)
            data = inflater.unused_data
            while len(data) < len(form.magic):
                more = raw.read(_CHUNK)
                if not more:
                    break
                data += more
            if not data:
                break
            if not data.startswith(form.magic):
                raise _Damaged(offset, f"{size - offset} bytes after the end of the "
                                       f"{form.name} stream are not {form.name} data")
            inflater = form.make()
            member = (offset, 0)
    if pending:
        yield pending, False


def _plain_lines(path: Path) -> Iterator[tuple[bytes, bool]]:
    with open(path, "rb") as raw:
        for line in raw:
            if line.endswith(b"\n"):
                yield line[:-1], True
            else:
                yield line, False


def header_of(first: bytes, path: Path, gz: bool) -> dict[str, Any]:
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


class _Integrity:
    """What a recorder never writes, found line by line: a line that repeats the one
    before it byte for byte, a command id sent twice or answered twice in one
    connection (ids restart only after a ``cdpnb.connected`` note), a
    ``cdpnb.connected`` note right after another, anything after the footer."""

    def __init__(self) -> None:
        self.previous = b""
        self.sent: dict[int, int] = {}  # command id -> its line, this connection
        self.answered: dict[int, int] = {}
        #: line of the cdpnb.connected note just read (None once anything follows it)
        self.connected_at: int | None = None
        self.footer_at: int | None = None
        self.counts: Counter[str] = Counter()
        self.seq: int | None = None  # the last line's number (version 2)

    def copy_of_previous(self, text: bytes, number: int) -> str | None:
        same = text == self.previous
        self.previous = text
        return f"repeats line {number - 1} byte for byte" if same else None

    def sequence(self, text: bytes) -> str | None:
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

    def count_mismatch(self, end: dict[str, Any]) -> str | None:
        counts = end.get("counts") or {}
        if counts.get("write_errors"):
            return None  # lines the recorder counted but could not write: expected
        said = {k: v for k, v in counts.items() if k in ("send", "recv", "note", "fault") and v}
        found = {k: v for k, v in self.counts.items() if v}
        if said == found:
            return None
        return (f"the footer counts {_counts(said)} but the file holds {_counts(found)}: "
                "lines were added or lost after recording")


def _counts(counts: dict[str, int]) -> str:
    return "{" + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())) + "}"


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
    gz = kind == "gzip"
    reader = _Reader(path, strict)
    # A zstd stream checks its content only at the end (its checksum): a flipped bit
    # garbles a line first, and the stream is to blame, as for gzip.
    reader.compressed = kind != "plain"
    lines = _plain_lines(path) if kind == "plain" else _compressed_lines(path, _format(kind))
    try:
        reader.read(lines, gz)
    except _Damaged as damage:
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
        self.integrity = _Integrity()

    def damage(self, message: str, lenient: str = "{}") -> None:
        """Damage found at one line: raised when strict, else reported as ``lenient``
        says (what was done about it)."""
        if self.strict:
            raise TraceFormatError(message)
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(lenient.format(message))
        else:
            self.unlisted += 1

    def damaged(self, damage: _Damaged) -> None:
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

    def read(self, lines: Iterator[tuple[bytes, bool]], gz: bool) -> None:
        first = next(lines, None)
        self.number = 1
        if first is None or not first[0].strip():
            raise TraceFormatError(f"{self.path} is not a cdpnb trace: it is empty")
        head = header_of(first[0], self.path, gz)
        head, bad = check_fields(TraceHeader, head, f"{self.path.name} line 1 (header)")
        self.head = head
        self.integrity.previous = first[0]
        for message in bad:
            self.damage(message)
        decoder = LineDecoder()
        integrity = self.integrity
        for text, complete in lines:
            self.number += 1
            number = self.number
            if not text.strip():
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
            try:
                item = decode_record(text.decode("utf-8"), where, decoder)
            except (TraceFormatError, UnicodeDecodeError) as exc:
                if not complete and integrity.footer_at is None:
                    self.cut_short(number, len(text))
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

    def blame_the_stream(self, lines: Iterator[tuple[bytes, bool]], bad: str) -> None:
        """A bad line in a gzip (or zstd) file is most often a damaged stream inflating to garbage
        (a flipped bit rarely stops inflation at once; the checksum at the end catches
        it). Read on to the stream's end: if it is damaged, that is the error to name."""
        try:
            for _ in lines:
                pass
        except _Damaged as damage:
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
            self.problems.append("no footer: the recording did not close cleanly (a crash, or "
                                 "still being written)")
        elif self.end is not None and not self.problems:
            mismatch = self.integrity.count_mismatch(self.end)
            if mismatch is not None:
                self.damage(f"{self.path.name} line {self.integrity.footer_at} (footer): "
                            f"{mismatch}")
        return self.head, self.records, self.end, self.problems
