"""A trace as one lossless Parquet file, and back.

The file holds the events table (payloads as JSON text), the exact ``wall`` and
``mono`` floats, and each reply's command params, with the trace's header, footer and
problems as JSON in the file's key-value metadata.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cdpnb.protocol import Command, ErrorReply, Event, Fault, Note, Reply
from cdpnb.trace.canonical import encode_json
from cdpnb.trace.dtypes import text_array
from cdpnb.trace.format import Record, TraceFormatError
from cdpnb.trace.nogc import gc_paused
from cdpnb.trace.trace import Trace

__all__ = ["PARQUET_KEY", "PARQUET_VERSION", "from_parquet", "to_parquet"]

#: Parquet key-value metadata key holding header, footer and problems (JSON).
PARQUET_KEY = b"cdpnb.trace"
PARQUET_VERSION = 1


def _pa_strings(values: list[str | None]) -> Any:
    import pyarrow as pa

    return text_array(lambda v: pa.array(v, pa.string()), values)


def to_parquet(trace: Trace, path: str | os.PathLike[str]) -> Path:
    """Write every record to one Parquet file: the events table, plus ``wall`` and
    ``mono`` (the exact floats) and ``params`` (a reply's command params, JSON), with
    the trace's header, footer and problems as JSON in the file's key-value metadata.
    ``from_parquet`` rebuilds records equal to these (for JSON-valued records, which
    is every record read from a trace file)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a directory; to_parquet writes one file")
    frame, extra = _parts(trace)
    table = pa.Table.from_pandas(frame, preserve_index=False)
    for name, column in extra.items():
        table = table.append_column(name, column)
    about = {"version": PARQUET_VERSION, "header": trace.header, "footer": trace.footer,
             "problems": list(trace.problems)}
    metadata = {**(table.schema.metadata or {}), PARQUET_KEY: encode_json(about).encode()}
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table.replace_schema_metadata(metadata), path)
    return path


def _parts(trace: Trace) -> tuple[Any, dict[str, Any]]:
    """The events table without payloads, and the columns that follow it: payload,
    wall, mono, params."""
    import pyarrow as pa

    from cdpnb.trace import columnar, tables

    if trace._columns is not None:
        return columnar.parquet_parts(trace._columns, trace.started_mono)
    columns = tables.event_columns(trace.records, extras=True)
    frame = tables.events_frame(columns, trace.started_mono).drop(columns=["payload"])
    return frame, {"payload": _pa_strings(columns["payload"]),
                   "wall": pa.array(columns["wall"], pa.float64()),
                   "mono": pa.array(columns["mono"], pa.float64()),
                   "params": _pa_strings(columns["params"])}


_BUILDERS: dict[str, Callable[[Any, Any, Any, Any, Any, float, float], Record]] = {
    "command": lambda i, m, s, body, _p, wall, mono: Command(i, m, body, s, wall, mono),
    "reply": lambda i, m, s, body, p, wall, mono: Reply(i, m, body, s, p, wall, mono),
    "error": lambda i, m, s, body, p, wall, mono: ErrorReply(
        i, m, body["code"], body["message"], body.get("data"), s, p, wall, mono),
    "event": lambda _i, m, s, body, _p, wall, mono: Event(m, body, s, wall, mono),
    "note": lambda _i, m, s, body, _p, wall, mono: Note(m, body, s, wall, mono),
    "fault": lambda _i, _m, _s, body, _p, wall, mono: Fault(
        body["kind"], body["detail"], body["raw"], wall, mono),
}


def _column_values(column: Any) -> list[Any]:
    """A pyarrow column as Python values (to_pylist is slow on dictionary columns)."""
    import pyarrow as pa

    if pa.types.is_dictionary(column.type):
        column = column.cast(column.type.value_type)
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        values: list[Any] = column.to_numpy(zero_copy_only=False).tolist()
        return values
    return list(column.to_pylist())


def from_parquet(path: str | os.PathLike[str]) -> Trace:
    """The trace ``to_parquet`` wrote: equal header, footer, problems and records."""
    import pyarrow.parquet as pq

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no Parquet trace at {path}")
    try:
        schema = pq.read_schema(path)
    except Exception as exc:  # pyarrow raises several types for "not this kind of file"
        raise TraceFormatError(f"{path} is not a cdpnb Parquet trace: {exc}") from None
    meta = (schema.metadata or {}).get(PARQUET_KEY)
    if meta is None:
        raise TraceFormatError(f"{path} is a Parquet file without cdpnb trace metadata "
                               f"(no {PARQUET_KEY.decode()!r} key); write it with "
                               "Trace.to_parquet")
    about = json.loads(meta)
    if about.get("version", 0) > PARQUET_VERSION:
        raise TraceFormatError(f"{path} is cdpnb Parquet trace version {about['version']}; "
                               f"this cdpnb reads up to {PARQUET_VERSION} (upgrade cdpnb)")
    names = ["kind", "id", "method", "session_id", "payload", "params", "wall", "mono"]
    missing = [name for name in names if name not in schema.names]
    if missing:
        raise TraceFormatError(f"{path} has cdpnb trace metadata but lacks columns {missing}")
    table = pq.read_table(path, columns=names)
    loads = json.loads
    records: list[Record] = []
    columns = [_column_values(table.column(name)) for name in names]
    with gc_paused():
        for row, (kind, cid, method, session, body, params, wall, mono) in enumerate(
                zip(*columns, strict=True)):
            build = _BUILDERS.get(kind)
            if build is None:
                raise TraceFormatError(f"{path} row {row}: unknown record kind {kind!r}")
            records.append(build(cid, method, session, loads(body),
                                 loads(params) if params is not None else {}, wall, mono))
    return Trace(about.get("header") or {}, records, about.get("footer"),
                 about.get("problems") or (), path)
