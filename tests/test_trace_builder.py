"""One table builder and one reply matcher for every trace.

Every trace is held as columns (a file as scanned, message objects through
``Columns.of_records``) and every table is built from those. The tables of the
recorded datasets are held to expectations stored beside the tests
(``tests/data/trace_tables.json``: each table's rows, dtypes and a digest of its
values), which the two builders cdpnb had before (one from columns, one from message
objects; they agreed on every dataset) wrote, so any change to what a table holds
shows here. The reply matcher is held to its rule, and the line reader and the columns
(its two users in a loaded trace) to pairing every reply alike.

    .venv/bin/python -m tests.test_trace_builder   # writes the expectations again

A digest writes values as JSON the same way on any pandas: missing as null, times as
ISO text, floats by their shortest repr, categoricals as their values with their
categories (in their order); dtypes are compared by name.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdpnb.protocol import Command, ErrorReply, Note, Reply
from cdpnb.trace import Recorder, Trace, TraceTruncatedWarning
from cdpnb.trace.columns import Columns
from cdpnb.trace.reader import read_trace
from cdpnb.trace.replies import ReplyMatcher

ROOT = Path(__file__).resolve().parent.parent
EXPECTED = ROOT / "tests" / "data" / "trace_tables.json"
TRACES = sorted((ROOT / "datasets" / "probes").glob("*.jsonl.gz")) \
    + sorted((ROOT / "tests" / "data" / "v1").glob("*.jsonl.gz"))
TABLES = ("events", "commands", "dialogs", "frames", "console", "timeline")


def name_of(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


def _dtype(dtype: Any) -> str:
    if isinstance(dtype, pd.CategoricalDtype):
        return f"category[{dtype.categories.dtype}]"
    return str(dtype)


def _value(value: Any) -> Any:
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    if isinstance(value, float):
        return None if math.isnan(value) else repr(value)
    if hasattr(value, "item"):  # a numpy scalar
        return _value(value.item())
    return value


def digest(frame: pd.DataFrame) -> dict[str, Any]:
    values = {str(name): [_value(v) for v in frame[name].astype(object).tolist()]
              for name in frame.columns}
    values.update({f"{name} categories": list(dtype.categories)
                   for name, dtype in frame.dtypes.items()
                   if isinstance(dtype, pd.CategoricalDtype)})
    text = json.dumps(values, ensure_ascii=True, sort_keys=False, separators=(",", ":"))
    return {"rows": len(frame),
            "dtypes": {str(name): _dtype(dtype) for name, dtype in frame.dtypes.items()},
            "sha256": hashlib.sha256(text.encode()).hexdigest()}


def digests(trace: Trace) -> dict[str, dict[str, Any]]:
    return {table: digest(getattr(trace, table)()) for table in TABLES}


def main() -> int:
    expected = {name_of(path): digests(Trace.load(path)) for path in TRACES}
    EXPECTED.write_text(json.dumps(expected, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {EXPECTED} ({len(expected)} traces)")
    return 0


# -- the tables -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def expected() -> dict[str, dict[str, dict[str, Any]]]:
    stored: dict[str, dict[str, dict[str, Any]]] = json.loads(EXPECTED.read_text())
    return stored


def test_every_dataset_has_its_expectations(
        expected: dict[str, dict[str, dict[str, Any]]]) -> None:
    assert sorted(expected) == sorted(name_of(path) for path in TRACES)
    assert len(TRACES) == 30
    assert all(sorted(tables) == sorted(TABLES) for tables in expected.values())


@pytest.mark.parametrize("path", TRACES, ids=name_of)
def test_the_tables_are_the_stored_ones_however_the_trace_is_held(
        path: Path, expected: dict[str, dict[str, dict[str, Any]]]) -> None:
    scanned = Trace.load(path)
    assert scanned._held.held is None, "the scan read it into columns"
    head, records, end, problems = read_trace(path)
    objects = Trace(head, records, end, problems, path)
    assert objects._held.held == objects.records, "message objects, held as they are"
    want = expected[name_of(path)]
    assert digests(scanned) == want
    assert digests(objects) == want


def test_message_objects_are_held_as_they_are() -> None:
    records = [
        Note("cdpnb.connected", {}, None, 10.0, 1.0),
        Command(1, "X.y", {"a": 1}, "S", 10.1, 1.1),
        Reply(1, "Made.up", {"r": 2}, "S", {"not": "the command's"}, 10.2, 1.2),
        ErrorReply(7, "", -1, "gone", {"d": 1}, None, {}, 10.3, 1.3),
    ]
    columns = Columns.of_records(records)
    assert columns.records() == tuple(records)
    assert columns.cmd_row.tolist() == [-1, -1, 1, -1]
    assert [columns.methods.names[code] for code in columns.method.tolist()] == \
        ["cdpnb.connected", "X.y", "Made.up", ""]  # each record's own method
    assert columns.value(2) == {"r": 2} and columns.value(3) == {"code": -1,
                                                               "message": "gone",
                                                               "data": {"d": 1}}
    assert columns.payload_texts().to_pylist() == [
        "{}", '{"a":1}', '{"r":2}', '{"code":-1,"message":"gone","data":{"d":1}}']
    assert columns.reply_params(np.array([2, 3])).to_pylist() == [
        '{"not":"the command\'s"}', "{}"]


# -- the reply matcher ---------------------------------------------------------------------


def test_a_reply_answers_the_latest_command_with_its_id_in_its_connection_once() -> None:
    matcher: ReplyMatcher[str] = ReplyMatcher()
    matcher.sent(1, "first")
    matcher.sent(1, "again")  # the same id before a reply: the latest is waited on
    matcher.sent(2, "two")
    assert matcher.answered(1) == "again"
    assert matcher.answered(1) is None  # answered once
    assert matcher.answered(3) is None  # sent before the recording began
    matcher.connected()
    assert matcher.answered(2) is None  # another connection's
    matcher.sent(2, "new")
    assert matcher.answered(2) == "new"


_OPS = st.lists(st.one_of(
    st.tuples(st.just("command"), st.integers(1, 3), st.sampled_from(["A.a", "B.b", "C.c"])),
    st.tuples(st.just("reply"), st.integers(1, 4), st.booleans()),
    st.tuples(st.just("connected"))), max_size=25)


@given(ops=_OPS)
@settings(max_examples=80, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_the_line_reader_and_the_columns_pair_every_reply_alike(
        tmp_path: Path, ops: list[tuple[Any, ...]]) -> None:
    """Ids repeated, answered twice, answered in another connection: the object reader
    (``LineDecoder``, giving each reply its command's method) and the columns
    (``Columns.match_replies``, behind the commands table) pair them the same way."""
    path = tmp_path / "pairs.jsonl"
    recorder = Recorder(path, backend={"kind": "test"})
    for t, op in enumerate(ops):
        wall, mono = 1_790_000_000.0 + t, 100.0 + t
        if op[0] == "command":
            recorder(Command(op[1], op[2], {"n": t}, None, wall, mono))
        elif op[0] == "reply":
            reply = Reply(op[1], "", {}, None, {}, wall, mono) if op[2] else \
                ErrorReply(op[1], "", -1, "no", None, None, {}, wall, mono)
            recorder(reply)  # (its method is not written: the reader pairs it)
        else:
            recorder(Note("cdpnb.connected", {}, None, wall, mono))
    recorder.close()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TraceTruncatedWarning)
        head, records, end, problems = read_trace(path, strict=False)
    columns = Columns.of_records(records)
    for row, record in enumerate(records):
        if isinstance(record, Reply | ErrorReply):
            command = int(columns.cmd_row[row])
            paired = records[command] if command >= 0 else None
            assert isinstance(paired, Command | None)
            assert record.method == (paired.method if paired is not None else "")
            assert record.params == (paired.params if paired is not None else {})
    loaded = Trace.load(path, strict=False)
    pd.testing.assert_frame_equal(loaded.commands(),
                                  Trace(head, records, end, problems).commands())


if __name__ == "__main__":
    sys.exit(main())
