"""Crash-safe JSONL recording at wire speed: one line per message, the wire bytes as
they are.

A received message's line is its bytes as the socket gave them, inside a small
prefix (``seq``, times, direction): no parse-and-encode again. Lines go to the file
in batches: the supervisor's core flushes after each batch of frames it read in one
go, and after each message it writes or notes itself. A crash loses at most the
lines of the batch being read (they were not yet flushed) and the line being written;
everything flushed before is whole (gzip: sync-flushed).
"""

from __future__ import annotations

import gzip
import logging
import os
import time
import zlib
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

from cdpnb.protocol import Command, ErrorReply, Fault, Reply
from cdpnb.trace.compressed import ZstdWriter
from cdpnb.trace.format import Record, dumps, encode, footer, header, verbatim_tail
from cdpnb.trace.private import create_private
from cdpnb.trace.redaction import REDACTIONS, redact_line, redact_message

__all__ = ["Recorder", "check_redactions"]

log = logging.getLogger("cdpnb.trace")

_DIRECTION = {"Command": "send", "Reply": "recv", "ErrorReply": "recv", "Event": "recv",
              "Note": "note", "Fault": "fault"}


def check_redactions(redact: bool | Iterable[str]) -> frozenset[str]:
    """``True`` means every kind; otherwise a subset of REDACTIONS, named on error."""
    if redact is True:
        return frozenset(REDACTIONS)
    if redact is False or redact is None:
        return frozenset()
    if isinstance(redact, str):
        redact = [redact]
    kinds = frozenset(redact)
    unknown = sorted(kinds - set(REDACTIONS))
    if unknown:
        raise ValueError(f"redact names unknown kinds {unknown}; choose from {list(REDACTIONS)} "
                         "or pass True for all")
    return kinds


_VERBATIM = {"Command": "send", "Reply": "recv", "ErrorReply": "recv", "Event": "recv"}


class Recorder:
    """Writes a trace as messages happen. ``.jsonl.gz`` paths are gzip, sync-flushed at
    each ``flush``; ``.jsonl.zst`` paths zstd, a block ended at each ``flush`` (ten times
    cheaper to write than gzip, nearly twice as quick to read, as small).

    Write failures (a full disk) are counted and logged, never raised into the
    supervisor's read loop.
    """

    def __init__(self, path: str | os.PathLike[str], *, redact: bool | Iterable[str] = False,
                 endpoint: str | None = None, backend: dict[str, Any] | None = None,
                 browser: dict[str, Any] | None = None, meta: dict[str, Any] | None = None,
                 cdpnb_version: str = "") -> None:
        self.path = Path(path)
        self.redactions = check_redactions(redact)
        self.counts: Counter[str] = Counter()
        self.write_errors = 0
        #: Messages that could not be encoded (nested too deep); a fault line replaces each.
        self.unrecordable = 0
        self.closed = False
        if self.path.is_dir():
            raise IsADirectoryError(f"record= names a directory, not a file: {self.path}")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._gzip = self.path.suffix == ".gz"
        self._file = self._open()
        self.seq = 0
        #: Flush after each line. The supervisor's core turns it off and flushes itself,
        #: after each batch of frames read in one go and each message it sends or notes.
        self.auto_flush = True
        self._lines: list[bytes] = []
        self._tail_key: tuple[float, float, str] | None = None
        self._tail = b""
        self._header = header(
            started_at=time.time(), started_mono=time.monotonic(), cdpnb_version=cdpnb_version,
            endpoint=endpoint, backend=backend, browser=browser, redacted=self.redactions,
            meta=meta)
        self._write_header()

    def _open(self) -> IO[bytes] | gzip.GzipFile | ZstdWriter:
        """The file, new and private (0600), compressed as its name says."""
        create_private(self.path)
        if self._gzip:
            return gzip.GzipFile(self.path, "wb")
        if self.path.suffix == ".zst":
            return ZstdWriter(self.path)
        return open(self.path, "wb")

    def _write_header(self) -> None:
        self._lines.append(redact_line(dumps(self._header), self.redactions).encode() + b"\n")
        self.flush()

    @property
    def protocol(self) -> str:
        """The protocol the header names: ``cdp`` until the connection says otherwise."""
        return str(self._header["protocol"])

    def set_protocol(self, protocol: str) -> None:
        """Name the endpoint's protocol in the header. The header is written at once
        (a trace of a crash before the first message still says what it is), so the
        file is started again while it holds nothing else; a later change is refused."""
        if protocol == self._header["protocol"]:
            return
        if self.seq or self.closed:
            raise ValueError(f"the trace {self.path} already holds {self.protocol} messages; "
                             f"it cannot switch to {protocol}")
        self._header = {**self._header, "protocol": protocol}
        self._lines = []
        self._file.close()
        self._file = self._open()  # (as compressed as before: .gz, .zst or plain)
        self._write_header()

    def __call__(self, record: Record, wire: bytes | None = None) -> None:
        """Record one message; ``wire`` is its JSON as the socket carried it (a sent
        command's, a received reply's or event's), written into the line as it is.
        Call ``flush`` to put the lines in the file."""
        if self.closed:
            return
        self.seq += 1
        direction = _VERBATIM.get(type(record).__name__)
        if (wire is not None and direction is not None and not self.redactions
                and b"\n" not in wire):
            # The hot path (every received message): the wire bytes in a prefix whose
            # times and direction are shared by the messages of one read.
            key = (record.mono, record.wall, direction)
            if key != self._tail_key:
                self._tail_key, self._tail = key, verbatim_tail(direction, *key[:2])
            self.counts[direction] += 1
            self._lines.append(b'{"seq":%d%b%b}\n' % (self.seq, self._tail, wire))
            if self.auto_flush:
                self.flush()
            return
        try:
            if self.redactions:
                record = redact_message(record, self.redactions)
                line = redact_line(encode(record, self.seq), self.redactions).encode()
            else:
                line = encode(record, self.seq).encode()
        except (RecursionError, ValueError) as exc:
            # JSON parsed near the recursion limit can be too deep to write back from
            # the deeper stack we are on; the reader must never die of it, so the line
            # says what could not be recorded instead.
            record, text = self._unrecordable(record, exc)
            line = text.encode()
        self.counts[_DIRECTION[type(record).__name__]] += 1
        self._lines.append(line + b"\n")
        if self.auto_flush:
            self.flush()

    def _unrecordable(self, record: Record, exc: Exception) -> tuple[Fault, str]:
        self.unrecordable += 1
        what = record.kind if isinstance(record, Fault) else record.method
        if isinstance(record, Command | Reply | ErrorReply):
            what = f"{what} (id {record.id})"
        fault = Fault("unrecordable", f"{_DIRECTION[type(record).__name__]} {what}: "
                      f"{type(exc).__name__}: {exc}", "", record.wall, record.mono)
        if self.unrecordable == 1:
            log.error("cdpnb: a message could not be written to the trace %s (%s); a fault "
                      "line stands in for it", self.path, fault.detail)
        return fault, encode(fault, self.seq)

    def flush(self) -> None:
        """Write the lines recorded since the last flush, and flush the file (gzip:
        sync-flushed, zstd: its block ended, so everything flushed decompresses after a
        crash)."""
        if not self._lines:
            return
        lines, self._lines = self._lines, []
        try:
            self._file.write(b"".join(lines))
            if isinstance(self._file, gzip.GzipFile):
                self._file.flush(zlib.Z_SYNC_FLUSH)
            else:
                self._file.flush()
        except (OSError, ValueError) as exc:
            self.write_errors += len(lines)
            if self.write_errors == len(lines):
                log.error("cdpnb: writing the trace %s failed: %s (messages are being lost "
                          "from the recording)", self.path, exc)

    def close(self) -> None:
        """Write the footer (counts) and close the file. Idempotent."""
        if self.closed:
            return
        self.flush()
        counts = dict(self.counts)
        if self.write_errors:
            counts["write_errors"] = self.write_errors
        if self.unrecordable:
            counts["unrecordable"] = self.unrecordable
        self._lines.append(dumps(footer(ended_at=time.time(), counts=counts)).encode() + b"\n")
        self.flush()
        self.closed = True
        try:
            self._file.close()
        except OSError as exc:
            log.error("cdpnb: closing the trace %s failed: %s", self.path, exc)

    def __repr__(self) -> str:
        state = "closed" if self.closed else "recording"
        return f"<Recorder {self.path} {state} {sum(self.counts.values())} messages>"
