"""The events and commands tables, and the Parquet columns, of a trace: built from its
columns (``Columns``) with numpy and Arrow, no message object made. Every trace is held
as columns (``Columns.of_records`` for one of message objects), so this is the one way
these tables are built.

Categories are the values present, sorted (but the fixed ones: directions, kinds); a
reply's method is its command's unless its line (or record) named another; payloads are
the text Python writes for them (``Columns.payload_texts``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from cdpnb.trace.blocks import (
    COMMAND,
    DIRECTION_OF_KIND,
    DIRECTIONS,
    ERROR,
    KIND_NAMES,
    REPLY,
)
from cdpnb.trace.columns import Columns
from cdpnb.trace.dtypes import (
    TEXT,
    categorical_codes,
    frame_of,
    seconds_since,
    strings,
    wall_times,
)

__all__ = ["commands", "events", "parquet_parts"]

_DIRECTION = np.array(DIRECTION_OF_KIND, np.int8)


def _fixed(codes: np.ndarray[Any, Any], names: tuple[str, ...]) -> pd.Categorical:
    return pd.Categorical.from_codes(codes, categories=pd.Index(list(names), dtype=TEXT))


def _ints(values: np.ndarray[Any, Any], missing: np.ndarray[Any, Any]) -> Any:
    return pd.arrays.IntegerArray(values.astype(np.int64), missing)


def _frame(columns: Columns, start: float, payloads: bool) -> pd.DataFrame:
    table: dict[str, Any] = {
        "time": wall_times(columns.wall),
        "t": seconds_since(columns.mono, start),
        "direction": _fixed(_DIRECTION[columns.kind], DIRECTIONS),
        "kind": _fixed(columns.kind, KIND_NAMES),
        "session_id": categorical_codes(columns.session, columns.sessions.names),
        # Only a command and its reply have an id: a note or an event whose line carries
        # one (a damaged or hand-made line) has none as a message (hypothesis found a
        # note with "id": 0 read as 0 here and as missing by the message reader).
        "id": _ints(columns.ids, ~columns.has_id | (columns.kind > ERROR)),
        "method": categorical_codes(columns.method, columns.methods.names),
    }
    if payloads:
        table["payload"] = pd.array(columns.payload_texts(), dtype=TEXT)
    return frame_of(table)


def events(columns: Columns, start: float) -> pd.DataFrame:
    """One row per record: ``time, t, direction, kind, session_id, id, method, payload``.

    ``payload`` is compact JSON of the params (commands, events, notes), the result
    (replies), ``{code, message[, data]}`` (error replies) or ``{kind, detail, raw}``
    (faults). A reply's ``method`` is the method of the command it answers.
    """
    return _frame(columns, start, payloads=True)


def commands(columns: Columns, start: float) -> pd.DataFrame:
    """One row per command sent, joined with its reply.

    A reply answers the latest command with its id since the last ``cdpnb.connected``
    note (ids restart with each connection: ``ReplyMatcher``). ``latency_ms`` and
    ``ok`` are NA for a command that never got a reply.
    """
    kind = columns.kind
    sent = np.flatnonzero(kind == COMMAND)
    row_of = np.full(len(kind), -1, np.int64)
    row_of[sent] = np.arange(len(sent))
    replies = np.flatnonzero(((kind == REPLY) | (kind == ERROR)) & (columns.cmd_row >= 0))
    answered = row_of[columns.cmd_row[replies]]
    n = len(sent)
    latency = np.zeros(n)
    with np.errstate(over="ignore", invalid="ignore"):
        # A damaged trace's times can be huge: inf, as Python's float arithmetic gives
        # the message reader, not a RuntimeWarning (hypothesis found one on 3.13).
        latency[answered] = (columns.mono[replies] - columns.mono[sent[answered]]) * 1000.0
    waiting = np.ones(n, np.bool_)
    waiting[answered] = False
    ok = np.zeros(n, np.bool_)
    ok[answered] = kind[replies] == REPLY
    failed = replies[kind[replies] == ERROR]
    code = np.zeros(n, np.int64)
    error: list[str | None] = [None] * n
    for row, reply in zip(row_of[columns.cmd_row[failed]].tolist(), failed.tolist(),
                          strict=True):
        code[row], error[row], _ = columns.error(reply)
    texts = columns.payload_texts(sent)
    return frame_of({
        "sent": wall_times(columns.wall[sent]),
        "t": seconds_since(columns.mono[sent], start),
        "method": categorical_codes(columns.method[sent], columns.methods.names),
        "session_id": categorical_codes(columns.session[sent], columns.sessions.names),
        "id": _ints(columns.ids[sent], ~columns.has_id[sent]),
        "latency_ms": pd.arrays.FloatingArray(latency, waiting),
        "ok": pd.arrays.BooleanArray(ok, waiting),
        "error_code": _ints(code, waiting | ok),
        "error": strings(error),
        "params": pd.array(texts, dtype=TEXT),
    })


def parquet_parts(columns: Columns, start: float) -> tuple[pd.DataFrame, dict[str, Any]]:
    """What ``parquet.to_parquet`` writes: the events table without payloads, then the
    payload, wall, mono and params columns (a reply's params, ``Columns.reply_params``;
    null for any other row)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = columns.kind
    reply = (kind == REPLY) | (kind == ERROR)
    # (Every payload's text first: the commands' the replies take are then picked from it.)
    payload = columns.payload_texts().cast(pa.string())
    params = pc.replace_with_mask(pa.nulls(len(kind), pa.large_string()), pa.array(reply),
                                  columns.reply_params(np.flatnonzero(reply)))
    return _frame(columns, start, payloads=False), {
        "payload": payload,
        "wall": pa.array(columns.wall, pa.float64()),
        "mono": pa.array(columns.mono, pa.float64()),
        "params": params.cast(pa.string()),
    }
