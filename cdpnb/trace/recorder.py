"""Crash-safe JSONL recording: one line per message, flushed as it is written."""

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
from cdpnb.trace.format import Record, dumps, encode, footer, header
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


class Recorder:
    """Writes a trace as messages happen. ``.jsonl.gz`` paths are gzip, sync-flushed per line.

    A crash loses at most the line being written. Write failures (a full disk) are
    counted and logged, never raised into the supervisor's read loop.
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
        self._file: IO[str]
        if self._gzip:
            self._raw = gzip.open(self.path, "wb")  # noqa: SIM115 - lives as long as we do
            self._file = _GzipLines(self._raw)  # type: ignore[assignment]
        else:
            self._file = open(self.path, "w", encoding="utf-8", newline="\n")  # noqa: SIM115
        self._write_line(redact_line(dumps(header(
            started_at=time.time(), started_mono=time.monotonic(), cdpnb_version=cdpnb_version,
            endpoint=endpoint, backend=backend, browser=browser, redacted=self.redactions,
            meta=meta)), self.redactions))

    def __call__(self, record: Record) -> None:
        """Record one message (a listener-shaped callable for the supervisor core)."""
        if self.closed:
            return
        try:
            if self.redactions:
                record = redact_message(record, self.redactions)
                line = redact_line(encode(record), self.redactions)
            else:
                line = encode(record)
        except (RecursionError, ValueError) as exc:
            # JSON parsed near the recursion limit can be too deep to write back from
            # the deeper stack we are on; the reader must never die of it, so the line
            # says what could not be recorded instead.
            record, line = self._unrecordable(record, exc)
        self.counts[_DIRECTION[type(record).__name__]] += 1
        self._write_line(line)

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
        return fault, encode(fault)

    def _write_line(self, line: str) -> None:
        try:
            self._file.write(line + "\n")
            self._file.flush()
        except (OSError, ValueError) as exc:
            self.write_errors += 1
            if self.write_errors == 1:
                log.error("cdpnb: writing the trace %s failed: %s (messages are being lost "
                          "from the recording)", self.path, exc)

    def close(self) -> None:
        """Write the footer (counts) and close the file. Idempotent."""
        if self.closed:
            return
        counts = dict(self.counts)
        if self.write_errors:
            counts["write_errors"] = self.write_errors
        if self.unrecordable:
            counts["unrecordable"] = self.unrecordable
        self._write_line(dumps(footer(ended_at=time.time(), counts=counts)))
        self.closed = True
        try:
            self._file.close()
            if self._gzip:
                self._raw.close()
        except OSError as exc:
            log.error("cdpnb: closing the trace %s failed: %s", self.path, exc)

    def __repr__(self) -> str:
        state = "closed" if self.closed else "recording"
        return f"<Recorder {self.path} {state} {sum(self.counts.values())} messages>"


class _GzipLines:
    """Text lines into a gzip stream, sync-flushed so a crash keeps what was written."""

    def __init__(self, raw: gzip.GzipFile) -> None:
        self._raw = raw

    def write(self, text: str) -> int:
        return self._raw.write(text.encode("utf-8"))

    def flush(self) -> None:
        self._raw.flush(zlib.Z_SYNC_FLUSH)

    def close(self) -> None:
        self._raw.flush()
