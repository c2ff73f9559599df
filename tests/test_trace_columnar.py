"""The columnar scan (``Trace.load``: the file read into columns, no message object
made) against the object reader (``read_trace``: every line a message object, held as
columns by ``Columns.of_records``): the same frames, dtypes included, the same records,
problems and state, on the recorded datasets (v2), the frozen v1 copies, and hand-made
traces that hold everything the scan must get right or leave to the object reader. (The
tables are built one way for both: ``tests/test_trace_builder.py`` holds them to their
stored values.)"""

from __future__ import annotations

import dataclasses
import json
import warnings
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdpnb.protocol import Command, ErrorReply, Event, Fault, Note, Reply
from cdpnb.trace import Recorder, Trace, TraceFormatError, TraceTruncatedWarning
from cdpnb.trace.reader import read_trace
from tests.test_trace_damage import _damage

ROOT = Path(__file__).resolve().parent.parent
RECORDED = sorted((ROOT / "datasets" / "probes").glob("*.jsonl.gz"))
FROZEN_V1 = sorted((ROOT / "tests" / "data" / "v1").glob("*.jsonl.gz"))
TABLES = ("events", "commands", "dialogs", "frames", "console", "timeline")


def by_objects(path: Path, strict: bool = True) -> Trace:
    head, records, end, problems = read_trace(path, strict=strict)
    return Trace(head, records, end, problems, path)


def assert_same(columnar: Trace, objects: Trace) -> None:
    assert objects._held.held is not None  # message objects, held as columns
    assert (columnar.header, columnar.footer, columnar.problems) == \
        (objects.header, objects.footer, objects.problems)
    assert (columnar.complete, columnar.truncated) == (objects.complete, objects.truncated)
    assert len(columnar) == len(objects)
    assert columnar.summary() == objects.summary()
    assert columnar.browser == objects.browser
    assert columnar.final_state() == objects.final_state()
    for table in TABLES:
        pd.testing.assert_frame_equal(getattr(columnar, table)(), getattr(objects, table)(),
                                      check_exact=True, obj=table)
    assert columnar.records == objects.records


def parquet_tables_equal(columnar: Trace, objects: Trace, tmp_path: Path) -> None:
    a = pq.read_table(columnar.to_parquet(tmp_path / "columnar.parquet"))
    b = pq.read_table(objects.to_parquet(tmp_path / "objects.parquet"))
    assert a.schema.equals(b.schema, check_metadata=True)
    assert a.equals(b)
    back = Trace.from_parquet(tmp_path / "columnar.parquet")
    assert back._held.held is None, "read back as columns, no record made"
    assert back._records is None
    assert_same(back, objects)


@pytest.mark.parametrize("path", RECORDED + FROZEN_V1, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_recorded_traces_give_the_same_frames_both_ways(path: Path, tmp_path: Path) -> None:
    columnar = Trace.load(path)
    assert columnar._columns is not None, "the scan read it"
    assert columnar._records is None, "no message object made at load"
    assert_same(columnar, by_objects(path))
    parquet_tables_equal(columnar, by_objects(path), tmp_path)


def test_every_dataset_is_there() -> None:
    # fourteen backends, two modes each, but the two over WebDriver classic (no bridge)
    assert len(RECORDED) == 26 and len(FROZEN_V1) == 4


# -- hand-made traces -------------------------------------------------------------------------

START = 1_790_000_000.0


class Writer:
    """A v2 trace written by the Recorder, the received messages' wire bytes given as
    they would come off a socket (the recorder writes those as they are)."""

    def __init__(self, path: Path) -> None:
        self.recorder = Recorder(path, backend={"kind": "test"})
        self.t = 0.0

    def _times(self) -> tuple[float, float]:
        self.t += 0.001
        return START + self.t, 100.0 + self.t

    def wire(self, record: Any, wire: bytes) -> None:
        """A received (or sent) message given by its wire bytes; ``record`` says what
        kind (its fields are not what is written, its times are set here)."""
        wall, mono = self._times()
        self.recorder(dataclasses.replace(record, wall=wall, mono=mono), wire)

    def add(self, record: Any) -> None:
        wall, mono = self._times()
        self.recorder(dataclasses.replace(record, wall=wall, mono=mono))

    def close(self) -> None:
        self.recorder.close()


WIRE_EVENTS = [
    # what Chrome writes: compact, non-ASCII as \u escapes, JS number spelling
    b'{"method":"Runtime.consoleAPICalled","params":{"type":"log","args":[{"type":"string",'
    b'"value":"caf\\u00e9 \\ud83d\\ude00"}],"timestamp":1790000000123.456},"sessionId":"S"}',
    b'{"method":"Page.lifecycleEvent","params":{"timestamp":0.00005,"tiny":1e-7,"huge":1e+21,'
    b'"whole":5,"neg":-0,"big":123456789012345678901234567890},"sessionId":"S"}',
    # what a Python peer writes: spaces after , and :
    b'{"method": "Page.frameAttached", "params": {"frameId": "F2", "parentFrameId": "F1"}, '
    b'"sessionId": "S"}',
    # numbers a careless encoder writes
    b'{"method":"X.y","params":{"a":1.50,"b":0.10000000000000001,"c":1E5,"d":5.0,'
    b'"e":1000.0092610771186,"f":[ 1 , 2 ]},"sessionId":"S"}',
    # text that looks like the above inside strings (must stay as it is)
    b'{"method":"X.y","params":{"s":"a, b: {1.50, -0, 1e5} [ ]","u":"\\\\u00e9","v":"\\/"}}',
    # lone surrogates (JS strings may hold them): msgspec refuses the line, json reads it
    b'{"method":"Runtime.consoleAPICalled","params":{"type":"log","args":[{"type":"string",'
    b'"value":"a\\ud800b"}]},"sessionId":"S"}',
    # a control character escaped the long way, a key repeated... no: JSON leaves that open
    b'{"method":"X.y","params":{"t":"tab\\u0009here","nl":"a\\nb"},"sessionId":"S"}',
    # no params at all
    b'{"method":"Runtime.executionContextsCleared","sessionId":"S"}',
    # UTF-8 as it is (a peer that does not escape)
    "{\"method\":\"X.y\",\"params\":{\"text\":\"naïve ☃\"}}".encode(),
]


def _rich(path: Path) -> Writer:
    w = Writer(path)
    w.add(Note("cdpnb.connected", {"url": "ws://x"}))
    command, reply, event = Command(0, "X"), Reply(0, "", {}), Event("X", {})
    error = ErrorReply(0, "", -1, "")
    w.wire(command, b'{"id":1,"method":"Target.attachToTarget","params":{"targetId":"T"}}')
    w.wire(reply, b'{"id":1,"result":{"sessionId":"S"}}')
    w.wire(event, b'{"method":"Target.attachedToTarget","params":{"sessionId":"S",'
                  b'"targetInfo":{"targetId":"T","type":"page","url":"about:blank"}}}')
    w.add(Note("cdpnb.pageTarget", {"target_id": "T", "session_id": "S"}))
    w.wire(command, b'{"id":2,"method":"Page.getFrameTree","sessionId":"S"}')
    w.wire(reply, b'{"id":2,"result":{"frameTree":{"frame":{"id":"F1","loaderId":"L",'
                  b'"url":"http://a/","securityOrigin":"http://a","mimeType":"text/html"}}},'
                  b'"sessionId":"S"}')
    for wire in WIRE_EVENTS:  # rows 7 to 15
        w.wire(event, wire)
    w.wire(event, b'{"method":"Page.javascriptDialogOpening","params":{"url":"http://a/",'
                  b'"frameId":"F1","message":"sure?","type":"confirm","hasBrowserHandler":true,'
                  b'"defaultPrompt":""},"sessionId":"S"}')
    w.wire(command, b'{"id":3,"method":"Page.handleJavaScriptDialog","params":{"accept":true},'
                    b'"sessionId":"S"}')
    w.wire(error, b'{"id":3,"error":{"code":-32000,"message":"No dialog is showing",'
                  b'"data":null,"extra":1},"sessionId":"S"}')
    w.wire(event, b'{"method":"Page.javascriptDialogClosed","params":{"frameId":"F1",'
                  b'"result":false,"userInput":""},"sessionId":"S"}')
    w.wire(error, b'{"id":99,"error":{"message":7}}')
    w.wire(reply, b'{"id":98,"result":{}}')  # its command: before the trace began
    w.add(Fault("malformed-json", "Expecting value", "{oops"))
    w.add(Note("cdpnb.disconnected", {"reason": "bye"}))
    w.add(Note("cdpnb.connected", {"url": "ws://x"}))
    # ids restart with the connection
    w.wire(command, b'{"id":1,"method":"Runtime.evaluate","params":{"expression":"1"}}')
    w.wire(reply, b'{"id":1,"result":{"result":{"type":"number","value":1}}}')
    w.wire(command, b'{"id":2,"method":"Browser.getVersion"}')
    w.wire(reply, b'{"id":2,"result":{"product":"Chrome/156","protocolVersion":"1.3"}}')
    w.wire(command, b'{"id":3,"method":"Never.answered","params":{}}')
    return w


@pytest.mark.parametrize("name", ["rich.jsonl", "rich.jsonl.gz", "rich.jsonl.zst"])
def test_a_trace_with_everything_odd_gives_the_same_frames(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    _rich(path).close()
    columnar = Trace.load(path)
    assert columnar._columns is not None
    assert_same(columnar, by_objects(path))
    parquet_tables_equal(columnar, by_objects(path), tmp_path)
    payloads = columnar.events()["payload"].tolist()
    assert '"value":"café 😀"' in payloads[7]  # escapes written as Python writes them
    assert '"timestamp":5e-05,"tiny":1e-07,"huge":1e+21,"whole":5,"neg":0,' in payloads[8]
    assert '"s":"a, b: {1.50, -0, 1e5} [ ]"' in payloads[11]  # strings as they were
    assert '"value":"a\\ud800b"' in payloads[12]  # a lone surrogate, escaped
    assert payloads[14] == "{}"


def test_a_trace_still_being_written_and_one_cut_short(tmp_path: Path) -> None:
    path = tmp_path / "live.jsonl"
    writer = _rich(path)
    writer.recorder.flush()
    assert_same(Trace.load(path), by_objects(path))  # no footer yet
    data = path.read_bytes()
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(data[:-30])
    with pytest.warns(TraceTruncatedWarning, match="cut short") as caught:
        columnar = Trace.load(cut)
    assert caught[0].filename == __file__  # the warning points at the caller
    with pytest.warns(TraceTruncatedWarning):
        objects = by_objects(cut)
    assert columnar._columns is not None and columnar.truncated
    assert_same(columnar, objects)
    writer.close()


def test_a_v1_line_in_a_v2_trace_and_blank_lines_are_read_alike(tmp_path: Path) -> None:
    path = tmp_path / "mixed.jsonl"
    w = Writer(path)
    w.add(Note("cdpnb.connected", {}))
    w.close()
    lines = path.read_text().splitlines(keepends=True)
    v1 = ('{"seq":2,"t":100.5,"wall":1790000000.5,"dir":"recv","method":"Page.frameDetached",'
          '"params":{"frameId":"F"},"sessionId":"S"}\n')
    footer = json.loads(lines[-1])
    footer["counts"]["recv"] = 1
    path.write_text(lines[0] + "\n" + lines[1] + "  \n" + v1 + json.dumps(footer) + "\n")
    assert_same(Trace.load(path), by_objects(path))


def test_damage_goes_to_the_object_reader_which_names_it(tmp_path: Path) -> None:
    path = tmp_path / "damaged.jsonl"
    _rich(path).close()
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:5] + lines[6:]))  # a line lost
    with pytest.raises(TraceFormatError, match=r"line 6 is message 6, but 5 came next"):
        Trace.load(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lenient = Trace.load(path, strict=False)
    assert lenient._columns is None
    assert_same(lenient, by_objects(path, strict=False))


# -- random payloads, written the ways peers write them ---------------------------------------

# Text with lone surrogates too: JavaScript strings may hold them.
_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=6)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False) | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=8)
_ENCODERS = {
    "python": lambda v: json.dumps(v, separators=(",", ":"), ensure_ascii=False),
    "ascii": lambda v: json.dumps(v, separators=(",", ":")),
    "spaced": lambda v: json.dumps(v),
    "msgspec": lambda v: msgspec.json.encode(v).decode(),
    "digits": lambda v: json.dumps(v).replace(".0,", ".00,").replace("e-", "E-"),
    # Chromium's writer: large and small floats with an exponent (1.795636643825172e+12)
    "exponents": lambda v: _exponents(v),
}


def _exponents(value: Any) -> str:
    if isinstance(value, float):
        return str(np.format_float_scientific(value, unique=True, trim="-"))
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(k)}:{_exponents(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(map(_exponents, value)) + "]"
    return json.dumps(value)


@given(params=st.lists(st.dictionaries(st.text(max_size=5), _JSON, max_size=4), min_size=1,
                       max_size=6),
       encoders=st.lists(st.sampled_from(sorted(_ENCODERS)), min_size=6, max_size=6))
@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_random_payloads_give_the_same_frames(tmp_path: Path, params: list[dict[str, Any]],
                                             encoders: list[str]) -> None:
    path = tmp_path / "random.jsonl"
    w = Writer(path)
    for value, how in zip(params, encoders, strict=False):
        try:
            text = _ENCODERS[how]({"method": "Runtime.consoleAPICalled", "params": value})
            wire = text.encode()
        except (UnicodeEncodeError, TypeError):
            continue  # (msgspec will not write a lone surrogate)
        w.wire(Event("X", {}), wire)
    w.close()
    columnar = Trace.load(path)
    assert columnar._columns is not None
    assert_same(columnar, by_objects(path))


# -- random damage: the same verdict both ways ---------------------------------------------------


def _verdict(load: Any) -> tuple[str, Trace | None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TraceTruncatedWarning)
        try:
            return "", load()
        except TraceFormatError as exc:
            return str(exc), None


@given(damage=_damage(sources=[FROZEN_V1[2], RECORDED[6]]), strict=st.booleans())
@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_random_damage_gets_the_same_verdict(tmp_path: Path, damage: tuple[str, bool, bytes],
                                            strict: bool) -> None:
    _, as_gzip, data = damage  # (small recordings, v1 and v2)
    path = tmp_path / ("damaged.jsonl.gz" if as_gzip else "damaged.jsonl")
    path.write_bytes(data)
    error, columnar = _verdict(lambda: Trace.load(path, strict=strict))
    expected, objects = _verdict(lambda: by_objects(path, strict=strict))
    assert error == expected
    if columnar is not None and objects is not None:
        assert_same(columnar, objects)
