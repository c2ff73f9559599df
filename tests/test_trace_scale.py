"""What lets real traces load at scale (issue 27) gives what the line reader gives.

Real payloads are not all the text Python writes: Chromium spells epoch milliseconds
with an exponent (``1.795636643825172e+12``) and sends headers whose strings hold
escaped quotes next to commas and spaces (``sec-ch-ua``). ``canonical`` writes only
the numbers again in the first case and leaves the second as it is; here both, and
every other spelling, against ``encode_json(json.loads(...))``, the line reader's text,
one payload at a time and through whole traces. And the dialog and frame tables fold
without the execution contexts' events (``tables.CONTEXTS_ONLY``): each of those rules
is held to writing the contexts only.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdpnb.protocol import Event, Message, Note
from cdpnb.state import BrowserState, fold
from cdpnb.state.changes import Malformed
from cdpnb.trace import Trace, tables
from cdpnb.trace.canonical import canonical_buffer, edits, encode_json
from tests.test_trace_columnar import RECORDED, Writer, _exponents, assert_same, by_objects

# -- payloads one by one --------------------------------------------------------------------

#: Chromium's own spellings, and what a careless or spaced encoder writes.
CHROMIUM = [
    # epoch ms as Chromium writes them: numbers written again, the rest kept
    b'{"type":"log","args":[{"type":"string","value":"a \\"b\\", c: [d]"}],'
    b'"executionContextId":2,"timestamp":1.795696860335236e+12}',
    b'{"requestId":"1.2","response":{"status":200,"responseTime":1.795696860068e+12,'
    b'"timing":{"requestTime":54517.78,"proxyStart":-1}}}',
    # escaped quotes beside structural characters and spaces, inside strings
    b'{"headers":{"sec-ch-ua":"\\"Not:A-Brand\\";v=\\"8\\", \\"Chromium\\";v=\\"156\\"",'
    b'"sec-ch-ua-platform":"\\"Linux\\""}}',
    b'{"s":"\\\\","t":"\\\\\\", {x: 1.50}","u":"end\\\\"}',  # backslash runs before quotes
    b'{"s":"a: 1e5, -0, 1.50 ] [ {","n":[1e5,2E-7,-0,-0.0,1.0,1.50,0.00001]}',
    b'{"big":123456789012345678901234567890,"neg":-123456789012345678901,"z":0}',
    b'{"long":1795696860.3441417,"not_shortest":0.1000000000000000055511151231257827,'
    b'"huge":12345678901234567.5,"e16":1e16,"e16p":1e+16}',
    b'{"a": 1, "b" :[ 2 ,3 ]}',  # spaces outside strings: written whole
    b'{"a":"caf\\u00e9","b":"\\/"}',  # escapes Python writes otherwise: whole
    b'{"lone":"a\\ud800b","pair":"\\ud83d\\ude00"}',  # lone surrogate: whole, escaped again
    b'{"inf":1e400,"ok":1.5e3}',  # json.loads reads inf: whole
    b'{}',
    b'{"nested":[[1.5e+12,[2e5]],{"k":[-0]}],"after":"1e5"}',
]


def _buffer(payloads: list[bytes]) -> tuple[bytes, np.ndarray[Any, np.dtype[np.int64]]]:
    offsets = np.zeros(len(payloads) + 1, np.int64)
    np.cumsum([len(p) for p in payloads], out=offsets[1:])
    return b"".join(payloads), offsets


def _line_reader_text(payload: bytes) -> str:
    from cdpnb.trace.canonical import escape_surrogates

    return escape_surrogates(encode_json(json.loads(payload)))


def _canonical(payloads: list[bytes]) -> list[str]:
    raw, offsets = _buffer(payloads)
    out, bounds = canonical_buffer(raw, offsets, {})
    return [out[bounds[i]:bounds[i + 1]].decode() for i in range(len(payloads))]


def test_each_spelling_becomes_the_line_readers_text() -> None:
    assert _canonical(CHROMIUM) == [_line_reader_text(p) for p in CHROMIUM]


def test_only_the_numbers_are_written_again_where_only_they_differ() -> None:
    raw, offsets = _buffer(CHROMIUM)
    found = edits(raw, offsets)
    assert found.whole == [7, 8, 9, 10]  # spaces outside strings, escapes, inf
    assert sorted(set(found.rows.tolist())) == [0, 1, 4, 6, 12]
    texts = dict(zip(((int(s), int(e)) for s, e in zip(found.starts, found.ends,
                                                         strict=True)), found.texts,
                     strict=True))
    assert raw.index(b"1.795696860335236e+12") in {s for s, _ in texts}
    assert b"1795696860335.236" in texts.values()
    # escaped quotes, structural characters and spaces inside strings: left as they are
    assert 2 not in found.whole and 2 not in found.rows and 3 not in found.rows


def test_rows_given_their_text_are_not_looked_at() -> None:
    raw, offsets = _buffer(CHROMIUM)
    out, bounds = canonical_buffer(raw, offsets, {0: "{}", 7: '{"x":1}'})
    assert out[bounds[0]:bounds[1]] == b"{}"
    assert out[bounds[7]:bounds[8]] == b'{"x":1}'
    assert out[bounds[1]:bounds[2]].decode() == _line_reader_text(CHROMIUM[1])


_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=6) | \
    st.sampled_from(['"', '\\', '\\"', '", "', ': ', '1e5', ',1.50]', ' {', '\\\\"'])
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False) | _TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=10)


_ENCODERS = {
    "python": lambda v: json.dumps(v, separators=(",", ":"), ensure_ascii=False),
    "ascii": lambda v: json.dumps(v, separators=(",", ":")),
    "spaced": lambda v: json.dumps(v),
    "exponents": _exponents,
    "digits": lambda v: json.dumps(v, separators=(",", ":")).replace(".0,", ".00,"),
}


@given(values=st.lists(st.dictionaries(_TEXT, _JSON, max_size=4), min_size=1, max_size=8),
       encoders=st.lists(st.sampled_from(sorted(_ENCODERS)), min_size=8, max_size=8))
@settings(max_examples=300, deadline=None)
def test_random_payloads_become_the_line_readers_text(values: list[dict[str, Any]],
                                                      encoders: list[str]) -> None:
    payloads = []
    for value, how in zip(values, encoders, strict=False):
        try:
            payloads.append(_ENCODERS[how](value).encode())
        except UnicodeEncodeError:
            payloads.append(_ENCODERS["ascii"](value).encode())  # (a lone surrogate)
    assert _canonical(payloads) == [_line_reader_text(p) for p in payloads]


# -- whole traces -----------------------------------------------------------------------------


def test_chromium_spellings_load_as_the_line_reader_reads_them(tmp_path: Path) -> None:
    path = tmp_path / "chromium.jsonl"
    w = Writer(path)
    w.add(Note("cdpnb.connected", {"url": "ws://x"}))
    for payload in CHROMIUM:
        w.wire(Event("X", {}), b'{"method":"Runtime.consoleAPICalled","params":' + payload
               + b',"sessionId":"S"}')
    w.close()
    columnar = Trace.load(path)
    assert_same(columnar, by_objects(path))
    assert columnar.events()["payload"].tolist()[1:] == [_line_reader_text(p) for p in CHROMIUM]


# -- the execution contexts' events, left out of the dialog and frame tables' fold -----------------


def _states() -> list[BrowserState]:
    """States a real run passes through: every 40th of two recordings' (CDP, OOPIFs)."""
    found = []
    for path in [p for p in RECORDED if p.name.startswith(("chromium.native", "chromium+p"))]:
        state = BrowserState()
        for i, message in enumerate(Trace.load(path).messages):
            state = fold(state, message).state
            if i % 40 == 0:
                found.append(state)
    return found


_STATES = _states()
_SESSIONS = sorted({sid for state in _STATES for sid, _ in state.contexts} - {None})
_FRAMES = sorted({fid for state in _STATES for _, fid in state.contexts})
_IDS = st.one_of(st.integers(0, 30), st.none(), st.text(max_size=2), st.booleans())


def _context_event() -> st.SearchStrategy[Message]:
    session = st.sampled_from([*_SESSIONS, None, "elsewhere"])
    aux = st.fixed_dictionaries({"isDefault": st.booleans(),
                                 "frameId": st.sampled_from([*_FRAMES, "F?"]) | _IDS})
    created = st.builds(lambda cid, aux, sid: Event(
        "Runtime.executionContextCreated", {"context": {"id": cid, "auxData": aux}}, sid),
        _IDS, aux | st.none(), session)
    destroyed = st.builds(lambda cid, sid: Event(
        "Runtime.executionContextDestroyed", {"executionContextId": cid}, sid), _IDS, session)
    cleared = st.builds(lambda sid: Event("Runtime.executionContextsCleared", {}, sid), session)
    malformed = st.builds(lambda method, sid: Event(method, {}, sid),
                          st.sampled_from(sorted(tables.CONTEXTS_ONLY)), session)
    return st.one_of(created, destroyed, cleared, malformed)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(_STATES), _context_event())
def test_context_rules_change_nothing_but_the_contexts(state: BrowserState,
                                                       event: Message) -> None:
    """``Trace.dialogs`` and ``Trace.frames`` fold without the CONTEXTS_ONLY events:
    they may because those rules write the contexts (and a malformed one's counter)
    only, and report nothing but Malformed."""
    assert event.method in tables.CONTEXTS_ONLY
    after, changes = fold(state, event)
    assert all(type(change) is Malformed for change in changes)
    assert after.evolve(contexts=state.contexts, counters=state.counters) == state


def test_every_state_tried_has_contexts() -> None:
    assert len(_STATES) > 50 and sum(1 for s in _STATES if s.contexts) > 25
    assert len(_SESSIONS) > 1 and len(_FRAMES) > 3


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.name)
def test_the_tables_folded_without_them_are_the_tables_folded_with_them(
        path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = Trace.load(path)
    left_out = trace.dialogs(), trace.frames()
    monkeypatch.setattr(tables, "NOT_FOLDED", frozenset())
    again = Trace.load(path)
    pd.testing.assert_frame_equal(left_out[0], again.dialogs(), check_exact=True)
    pd.testing.assert_frame_equal(left_out[1], again.frames(), check_exact=True)
