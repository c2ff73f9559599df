"""A trace as one lossless Parquet file, and back.

The file holds the events table (payloads as JSON text), the exact ``wall`` and
``mono`` floats, and each reply's command params, with the trace's header, footer and
problems as JSON in the file's key-value metadata. It writes a trace's columns and
reads back columns (``Trace.to_parquet`` and ``Trace.from_parquet`` hand them over).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cdpnb.protocol import Command, ErrorReply, Event, Fault, Note, Reply
from cdpnb.trace import columnar
from cdpnb.trace.blocks import (
    COMMAND,
    ERROR,
    FAULT,
    KIND_NAMES,
    NO_ID,
    REPLY,
    Block,
    Vocabulary,
    error_fields,
)
from cdpnb.trace.canonical import encode_json, escape_surrogates
from cdpnb.trace.columns import Columns
from cdpnb.trace.format import Record, TraceFormatError
from cdpnb.trace.private_files import private_file
from cdpnb.trace.scan import Refused, match_replies
from cdpnb.trace.without_gc import gc_paused

__all__ = ["PARQUET_KEY", "PARQUET_VERSION", "ParquetTrace", "read_parquet", "to_parquet"]

#: Parquet key-value metadata key holding header, footer and problems (JSON).
PARQUET_KEY = b"cdpnb.trace"
PARQUET_VERSION = 1


def to_parquet(path: str | os.PathLike[str], columns: Columns, start: float, *,
               header: dict[str, Any], footer: dict[str, Any] | None,
               problems: Sequence[str]) -> Path:
    """Write every record to one Parquet file: the events table, plus ``wall`` and
    ``mono`` (the exact floats) and ``params`` (a reply's command params, JSON), with
    the trace's header, footer and problems as JSON in the file's key-value metadata.
    ``read_parquet`` gives back records equal to these (for JSON-valued records, which
    is every record read from a trace file). The file is created 0600 (the owner's
    alone, as the trace is), the folders it needs 0700."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a directory; to_parquet writes one file")
    frame, extra = columnar.parquet_parts(columns, start)
    table = pa.Table.from_pandas(frame, preserve_index=False)
    for name, column in extra.items():
        table = table.append_column(name, column)
    about = {"version": PARQUET_VERSION, "header": header, "footer": footer,
             "problems": list(problems)}
    # A header may hold lone surrogates (a backend name or a meta value taken from a
    # page's JavaScript): UTF-8 cannot, and a \udXXX escape in the JSON text reads
    # back as the very same string.
    metadata = {**(table.schema.metadata or {}),
                PARQUET_KEY: escape_surrogates(encode_json(about)).encode()}
    # A trace's tables hold what the trace holds: 0600 from its creation, folders 0700.
    with private_file(path) as file:
        pq.write_table(table.replace_schema_metadata(metadata), file)
    return path


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


@dataclass(frozen=True)
class ParquetTrace:
    """What a Parquet trace holds: header, footer, problems and the messages."""

    header: dict[str, Any]
    columns: Columns
    footer: dict[str, Any] | None
    problems: Sequence[str]


def read_parquet(path: str | os.PathLike[str]) -> ParquetTrace:
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
    header, footer = about.get("header") or {}, about.get("footer")
    problems = about.get("problems") or ()
    columns = _columns_of(table)
    if columns is None:
        columns = Columns.of_records(_records_of(table, names, path))
    return ParquetTrace(header, columns, footer, problems)


def _records_of(table: Any, names: list[str], path: Path) -> list[Record]:
    """The file's rows as records, one by one, as ``to_parquet`` wrote them."""
    loads = json.loads
    records: list[Record] = []
    values = [_column_values(table.column(name)) for name in names]
    with gc_paused():
        for row, (kind, cid, method, session, body, params, wall, mono) in enumerate(
                zip(*values, strict=True)):
            build = _BUILDERS.get(kind)
            if build is None:
                raise TraceFormatError(f"{path} row {row}: unknown record kind {kind!r}")
            records.append(build(cid, method, session, loads(body),
                                 loads(params) if params is not None else {}, wall, mono))
    return records


def _columns_of(table: Any) -> Columns | None:
    """The file's rows as a loaded trace's columns (its payloads are already the text the
    tables show, so they are kept as they are); None when the rows are not what a
    trace's columns can hold as they stand (an unknown kind, a missing payload, a reply
    whose params are not its matched command's, ids a connection repeats): the records
    are built one by one then, as ``to_parquet`` wrote them."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = table.num_rows
    kind = pc.index_in(_plain(table.column("kind")), value_set=pa.array(KIND_NAMES))
    payload = table.column("payload")
    if kind.null_count or payload.null_count:
        return None
    ids = table.column("id")
    methods, sessions = Vocabulary(), Vocabulary()
    kinds = kind.to_numpy(zero_copy_only=False).astype(np.int8)
    has_id = pc.is_valid(ids).to_numpy(zero_copy_only=False)
    answered = (kinds == COMMAND) | (kinds == REPLY) | (kinds == ERROR)
    named = pc.is_valid(table.column("method")).to_numpy(zero_copy_only=False)
    if (answered & ~has_id).any() or (~named & (kinds != FAULT)).any():
        return None  # (a record made by hand: only records hold those as they are)
    rows = {
        "mono": table.column("mono").to_numpy().astype(np.float64),
        "wall": table.column("wall").to_numpy().astype(np.float64),
        "seq": np.arange(1, n + 1, dtype=np.int64), "kind": kinds,
        "ids": pc.fill_null(ids, NO_ID).to_numpy().astype(np.int64), "has_id": has_id,
        "method_codes": _codes(table.column("method"), methods),
        "session_codes": _codes(table.column("session_id"), sessions)}
    # A block per chunk (row group) the file was read in: its buffer kept as it is.
    blocks, first = [], 0
    for chunk in payload.chunks:
        texts = chunk.cast(pa.large_string())  # (the same data buffer, wider offsets)
        size = len(texts)
        buffers: list[Any] = texts.buffers()
        bounds = np.frombuffer(buffers[1], np.int64)[texts.offset:texts.offset + size + 1]
        raw = memoryview(buffers[2])[bounds[0]:bounds[-1]] if size else b""
        block = Block(**{name: column[first:first + size] for name, column in rows.items()},
                      methods=[], sessions=[], raw=raw, offsets=bounds - bounds[0])
        block.text = texts  # (written as the tables show it: no second look)
        for row in np.flatnonzero(block.kind == ERROR).tolist():
            body = block.value(row)
            if not isinstance(body, dict):
                return None
            block.errors[row] = error_fields(body)
        blocks.append(block)
        first += size
    columns = Columns.from_blocks([b for b in blocks if len(b)], methods, sessions)
    try:
        match_replies(columns, methods)
    except Refused:
        return None
    # A reply's params are its matched command's payload ("{}" for none): the file's
    # params column must say so, or the records would differ from the ones written.
    replies = np.flatnonzero((kinds == REPLY) | (kinds == ERROR))
    if len(replies):
        expected = columns.reply_params(replies)
        said = table.column("params").take(pa.array(replies)).cast(pa.large_string())
        if pc.all(pc.equal(said, expected), skip_nulls=False).as_py() is not True:
            return None
    return columns


def _plain(column: Any) -> Any:
    import pyarrow as pa

    return column.cast(column.type.value_type) if pa.types.is_dictionary(column.type) \
        else column


def _codes(column: Any, vocabulary: Vocabulary) -> np.ndarray[Any, np.dtype[np.int32]]:
    """A string column as codes of ``vocabulary`` (-1 for null)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    encoded: Any = pc.dictionary_encode(_plain(column)).combine_chunks() if len(column) \
        else pa.DictionaryArray.from_arrays(pa.array([], pa.int32()), pa.array([], pa.string()))
    lookup = np.append(vocabulary.codes(encoded.dictionary.to_pylist()), -1).astype(np.int32)
    indices: Any = pc.fill_null(encoded.indices, -1)
    codes: np.ndarray[Any, np.dtype[np.int32]] = lookup[indices.to_numpy(zero_copy_only=False)]
    return codes
