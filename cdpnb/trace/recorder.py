"""Crash-safe JSONL recording at wire speed: one line per message, the wire bytes as
they are.

A received message's line is its bytes as the socket gave them, inside a small
prefix (``seq``, times, direction): no parse-and-encode again. Lines go to the file
in batches: the supervisor's core flushes after each batch of frames it read in one
go, and after each message it writes or notes itself. A crash loses at most the
lines of the batch being read (they were not yet flushed) and the line being written;
everything flushed before is whole (gzip: sync-flushed).

A write that fails (a full disk, a file size limit) ends the writing: the file is cut
back to its last whole flush, so it holds exactly the first ``written`` messages and no
hole, and the failure is said (``failure``; a Supervisor issues it as a hint and a
CdpnbWarning at the user's next call), never only counted.
"""

from __future__ import annotations

import logging
import os
import stat
import time
from collections import Counter
from collections.abc import Callable, Iterable
from contextlib import suppress
from pathlib import Path
from typing import Any

from cdpnb.protocol import Command, ErrorReply, Fault, Reply
from cdpnb.trace.compressed import GzipWriter, ZstdWriter
from cdpnb.trace.format import Record, dumps, encode, footer, header, verbatim_tail
from cdpnb.trace.private_files import make_private_dirs, open_private
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


class _Descriptor:
    """The trace file's descriptor, written without a buffer of its own: when ``write``
    returns, every byte is in the file (a short write is continued, an error raised),
    and ``size`` counts the bytes that are, so a failed write can be cut back to the
    end of the last whole flush. Once ``discarding``, nothing more reaches the file
    (what a compressor still holds when it is closed goes nowhere)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.size = 0
        self.closed = False
        self.discarding = False
        #: A device or a pipe (/dev/full, /dev/stdout) cannot be cut back.
        self.regular = stat.S_ISREG(os.fstat(fd).st_mode)

    def write(self, data: bytes, /) -> int:
        if self.discarding:
            return len(data)
        view = memoryview(data)
        while view:
            written = os.write(self.fd, view)
            if written <= 0:  # never for a file; a device could
                raise OSError(28, os.strerror(28))
            self.size += written
            view = view[written:]
        return len(data)

    def flush(self) -> None:
        """Nothing to do: ``write`` keeps nothing back."""

    def cut(self, size: int) -> None:
        """Cut the file back to ``size`` bytes (a regular file; on a full disk too)."""
        if self.regular and not self.closed:
            with suppress(OSError):
                os.ftruncate(self.fd, size)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            os.close(self.fd)


def _reason(exc: BaseException) -> str:
    """An OSError's own words (``No space left on device``), else its message."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


class Recorder:
    """Writes a trace as messages happen. ``.jsonl.gz`` paths are gzip, sync-flushed at
    each ``flush`` (ISA-L's deflate at level 2: as quick to write as zstd, ≈30%
    bigger); ``.jsonl.zst`` paths zstd, a block ended at each ``flush`` (the smallest,
    and the quickest to read).

    The file is created 0600 (``cdpnb.trace.private_files``), its missing folders 0700.

    A file that cannot be created, or whose header cannot be written, raises OSError
    here. A write that fails later (a full disk) is never raised into the supervisor's
    read loop: writing ends, the file is cut back to its last whole flush so it holds
    exactly the first ``written`` messages, ``failure`` says so, and ``on_error`` (a
    Supervisor's hints and warnings) is told once. ``write_errors`` counts the
    messages that did not reach the file.
    """

    def __init__(self, path: str | os.PathLike[str], *, redact: bool | Iterable[str] = False,
                 endpoint: str | None = None, backend: dict[str, Any] | None = None,
                 browser: dict[str, Any] | None = None, meta: dict[str, Any] | None = None,
                 cdpnb_version: str = "") -> None:
        self.path = Path(path)
        self.redactions = check_redactions(redact)
        self.counts: Counter[str] = Counter()
        #: Messages recorded that did not reach the file (a write failed).
        self.write_errors = 0
        #: Messages whose lines are in the file (header and footer not counted).
        self.written = 0
        #: The first write that failed; nothing is written after it.
        self.error: OSError | ValueError | None = None
        #: Messages that could not be encoded (nested too deep); a fault line replaces each.
        self.unrecordable = 0
        self.closed = False
        if self.path.is_dir():
            raise IsADirectoryError(f"record= names a directory, not a file: {self.path}")
        self._gzip = self.path.suffix == ".gz"
        self._on_error: Callable[[str], None] | None = None
        self._unflushed = 0  # messages among _lines (not the header or footer)
        self._flushed_size = 0  # bytes in the file at the end of the last whole flush
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
        self._raising = True  # a failure now is raised, not logged
        self._open()
        self._raising = False
        if self.error is not None:  # nothing recorded yet: say it to whoever asked
            errno = getattr(self.error, "errno", None)
            raise OSError(errno or 5, _reason(self.error), str(self.path))  # (5: EIO)

    def _open(self) -> None:
        """Create the file (0600, whatever the umask; missing folders 0700), compressed
        as its name says, and write the header."""
        make_private_dirs(self.path.parent)
        descriptor = _Descriptor(open_private(self.path))
        writer: _Descriptor | GzipWriter | ZstdWriter = descriptor
        self._descriptor, self._file = descriptor, writer
        self.error, self.written, self._flushed_size = None, 0, 0
        try:
            if self._gzip:
                writer = GzipWriter(descriptor)
            elif self.path.suffix == ".zst":
                writer = ZstdWriter(descriptor)
        except (OSError, ValueError) as exc:
            self._fail(exc)
            return
        self._file = writer
        self._lines.append(redact_line(dumps(self._header), self.redactions).encode() + b"\n")
        self.flush()

    @property
    def size(self) -> int:
        """Bytes in the file so far (compressed, for a compressed trace)."""
        return self._descriptor.size

    @property
    def failure(self) -> str | None:
        """Why the file holds less than was recorded, in a sentence; None if it holds
        everything so far."""
        if self.error is None:
            return None
        return (f"writing the trace {self.path} failed ({_reason(self.error)}): it holds "
                f"the first {self.written} messages and nothing after them is recorded")

    @property
    def on_error(self) -> Callable[[str], None] | None:
        """Called once, with ``failure``, when writing fails (on the thread that wrote;
        at once when set after the failure); while None, the failure is logged as an
        error on the ``cdpnb.trace`` logger instead."""
        return self._on_error

    @on_error.setter
    def on_error(self, callback: Callable[[str], None] | None) -> None:
        self._on_error = callback
        if callback is not None and self.failure is not None:
            callback(self.failure)

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
        with suppress(OSError, ValueError):
            self._file.close()
        self._descriptor.close()
        self._open()  # (as compressed as before: .gz, .zst or plain)

    def __call__(self, record: Record, wire: bytes | None = None) -> None:
        """Record one message; ``wire`` is its JSON as the socket carried it (a sent
        command's, a received reply's or event's), written into the line as it is.
        Call ``flush`` to put the lines in the file."""
        if self.closed:
            return
        self.seq += 1
        if self.error is not None:  # nothing more reaches the file: counted, not encoded
            self.counts[_DIRECTION[type(record).__name__]] += 1
            self.write_errors += 1
            return
        self._unflushed += 1
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
        crash). Once a write has failed, the lines are counted in ``write_errors``."""
        if not self._lines:
            return
        lines, self._lines = self._lines, []
        messages, self._unflushed = self._unflushed, 0
        if self.error is not None:
            self.write_errors += messages
            return
        try:
            self._file.write(b"".join(lines))
            self._file.flush()
        except (OSError, ValueError) as exc:
            self.write_errors += messages
            self._fail(exc)
            return
        self.written += messages
        self._flushed_size = self._descriptor.size

    def _fail(self, exc: OSError | ValueError) -> None:
        """Writing failed: cut the file back to its last whole flush (a part of a line,
        or of a compressed block, would read as damage) and write nothing more into it;
        say so once."""
        self.error = exc
        descriptor = self._descriptor
        descriptor.discarding = True
        descriptor.cut(self._flushed_size)
        with suppress(OSError, ValueError):
            if self._file is not descriptor:
                self._file.close()  # a compressor's remains: discarded
        with suppress(OSError):
            descriptor.close()
        failure = self.failure
        if self._raising or failure is None:
            return
        if self._on_error is None:  # nobody to tell but the log
            log.error("cdpnb: %s", failure)
            return
        try:
            self._on_error(failure)
        except Exception:  # never into the read loop that was writing
            log.exception("cdpnb: %s (and telling it failed)", failure)

    def close(self) -> None:
        """Write the footer (counts) and close the file. Idempotent."""
        if self.closed:
            return
        self.flush()
        if self.error is None:
            counts = dict(self.counts)
            if self.write_errors:
                counts["write_errors"] = self.write_errors
            if self.unrecordable:
                counts["unrecordable"] = self.unrecordable
            self._lines.append(
                dumps(footer(ended_at=time.time(), counts=counts)).encode() + b"\n")
            self.flush()
        self.closed = True
        if self.error is not None:
            return  # closed when it failed
        try:
            self._file.close()  # gzip's trailer, zstd's frame end
        except (OSError, ValueError) as exc:
            self._fail(exc)
            return
        self._descriptor.close()

    def __repr__(self) -> str:
        recorded = sum(self.counts.values())
        if self.error is not None:
            return (f"<Recorder {self.path} failed ({_reason(self.error)}): {self.written} "
                    f"of {recorded} messages written>")
        state = "closed" if self.closed else "recording"
        return f"<Recorder {self.path} {state} {recorded} messages>"
