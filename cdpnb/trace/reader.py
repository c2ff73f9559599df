"""Reading traces back: header checks, a tolerated truncated tail, clear refusals."""

from __future__ import annotations

import json
import os
import warnings
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from cdpnb.trace.format import (
    TRACE_VERSION,
    LineDecoder,
    Record,
    TraceFormatError,
    decode_record,
)

__all__ = ["TraceTruncatedWarning", "read_trace"]

_GZIP_MAGIC = b"\x1f\x8b"
_CHUNK = 1 << 20


class TraceTruncatedWarning(UserWarning):
    """The trace ends mid-line (the recorder was killed); everything before it loaded."""


def _gzip_lines(path: Path) -> Iterator[tuple[bytes, bool]]:
    """Lines of a gzip file, tolerating a stream cut short (a killed recorder)."""
    inflater = zlib.decompressobj(wbits=31)
    pending = b""
    with open(path, "rb") as raw:
        while True:
            chunk = raw.read(_CHUNK)
            if not chunk:
                break
            try:
                pending += inflater.decompress(chunk)
            except zlib.error:
                break  # a corrupt tail: keep what inflated cleanly before it
            *lines, pending = pending.split(b"\n")
            for line in lines:
                yield line, True
            if inflater.eof:
                break
    if pending:
        yield pending, False


def _plain_lines(path: Path) -> Iterator[tuple[bytes, bool]]:
    with open(path, "rb") as raw:
        for line in raw:
            if line.endswith(b"\n"):
                yield line[:-1], True
            else:
                yield line, False


def _header(first: bytes, path: Path) -> dict[str, Any]:
    excerpt = first[:60].decode("utf-8", "replace")
    try:
        head = json.loads(first)
    except ValueError:
        raise TraceFormatError(f"{path} is not a cdpnb trace: line 1 is not JSON "
                               f"(it starts {excerpt!r})") from None
    if not isinstance(head, dict) or "cdpnb_trace" not in head:
        raise TraceFormatError(f"{path} is not a cdpnb trace: line 1 has no 'cdpnb_trace' "
                               f"header (it starts {excerpt!r})")
    version = head["cdpnb_trace"]
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise TraceFormatError(f"{path}: line 1 has a bad trace version {version!r}")
    if version > TRACE_VERSION:
        raise TraceFormatError(f"{path} is trace format version {version}; this cdpnb reads "
                               f"up to version {TRACE_VERSION} (upgrade cdpnb)")
    return head


def read_trace(
    path: str | os.PathLike[str], *, strict: bool = True
) -> tuple[dict[str, Any], list[Record], dict[str, Any] | None, list[str]]:
    """``(header, records, footer, problems)`` of the trace at ``path``.

    A last line cut short is reported in ``problems`` (and warned about); any
    other bad line is a TraceFormatError naming it, unless ``strict=False``, which
    skips and reports it instead.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no trace at {path}")
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a directory, not a trace file")
    with open(path, "rb") as probe:
        gz = probe.read(2) == _GZIP_MAGIC
    lines = _gzip_lines(path) if gz else _plain_lines(path)
    first = next(lines, None)
    if first is None or not first[0].strip():
        raise TraceFormatError(f"{path} is not a cdpnb trace: it is empty")
    head = _header(first[0], path)
    records: list[Record] = []
    end: dict[str, Any] | None = None
    problems: list[str] = []
    decoder = LineDecoder()
    number = 1
    for text, complete in lines:
        number += 1
        if not text.strip():
            continue
        where = f"{path.name} line {number}"
        try:
            item = decode_record(text.decode("utf-8"), where, decoder)
        except (TraceFormatError, UnicodeDecodeError) as exc:
            if not complete:
                problems.append(f"line {number} is cut short ({len(text)} bytes): the "
                                "recording stopped mid-line; everything before it loaded")
                warnings.warn(f"{path}: {problems[-1]}", TraceTruncatedWarning, stacklevel=3)
                break
            if strict:
                raise TraceFormatError(str(exc) if isinstance(exc, TraceFormatError)
                                       else f"{where}: invalid UTF-8 ({exc})") from None
            problems.append(f"skipped {where}: {exc}")
            continue
        if isinstance(item, dict):
            end = item
        else:
            records.append(item)
    if end is None and not problems:
        problems.append("no footer: the recording did not close cleanly (a crash, or still "
                        "being written)")
    return head, records, end, problems
