"""Traces under damage: corruption named as corruption (byte or line), a crash still a
crash, header and footer fields checked at load, repeated lines and ids found, and
``strict=False`` keeping everything it can read. Real recorded traces throughout."""

from __future__ import annotations

import gzip
import json
import re
import time
import warnings
import zlib
from pathlib import Path
from typing import Any

import pytest
import websockets
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cdpnb
from cdpnb.playback.backend import replay
from cdpnb.protocol import Command, Event, Note, Reply
from cdpnb.trace import Recorder, Trace, TraceFormatError, TraceTruncatedWarning

# Frozen copies of probe recordings (format version 1, as first shipped in datasets/):
# the byte offsets and line numbers below are theirs, whatever datasets/ holds now.
PROBES = Path(__file__).resolve().parent / "data" / "v1"
LARGE = PROBES / "chromium.native.jsonl.gz"  # 65 kB, 1,657 messages
SMALL = PROBES / "node.bridge.jsonl.gz"  # 2 kB, 27 messages


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _lenient(path: Path) -> Trace:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # damage is reported in problems, never as a crash
        return Trace.load(path, strict=False)


def _usable(trace: Trace) -> None:
    """What failed later, naming nothing, when bad fields got past the reader."""
    repr(trace)
    trace._repr_html_()
    _ = trace.complete, trace.label, trace.started_at, trace.duration_s
    trace.events()
    trace.commands()
    trace.dialogs()
    trace.frames()
    trace.console()
    trace.final_state()


def _flipped(data: bytes, at: int) -> bytes:
    damaged = bytearray(data)
    damaged[at] ^= 0x55
    return bytes(damaged)


# -- gzip damage ------------------------------------------------------------------------------


@pytest.mark.parametrize(("source", "size"), [(LARGE, 64854), (SMALL, 1889)])
def test_a_flipped_byte_in_a_gzip_trace_is_damage_at_a_byte(tmp_path: Path, source: Path,
                                                            size: int) -> None:
    # Before: the large one loaded its prefix as a crash ("cut short"), the small one
    # was "empty".
    data = source.read_bytes()
    path = _write(tmp_path / "flipped.jsonl.gz", _flipped(data, len(data) // 3))
    with pytest.raises(TraceFormatError, match=rf"is damaged at byte \d+ of {size}") as caught:
        Trace.load(path)
    assert "cut short" not in str(caught.value) and "empty" not in str(caught.value)


def test_a_damaged_gzip_trace_keeps_what_came_before_the_damage(tmp_path: Path) -> None:
    data = LARGE.read_bytes()
    lenient = _lenient(_write(tmp_path / "flipped.jsonl.gz", _flipped(data, len(data) // 2)))
    assert not lenient.complete and not lenient.truncated
    assert 0 < len(lenient.records) < 1657
    assert any("damaged at byte" in p for p in lenient.problems), lenient.problems
    whole = Trace.load(LARGE).records
    assert lenient.records[:100] == whole[:100]
    _usable(lenient)


def test_a_flip_in_the_gzip_header_names_byte_zero(tmp_path: Path) -> None:
    path = _write(tmp_path / "magic.jsonl.gz", _flipped(SMALL.read_bytes(), 0))
    with pytest.raises(TraceFormatError, match="gzip magic bytes 1f 8b"):
        Trace.load(path, strict=False)


def test_garbage_after_the_gzip_stream_is_damage(tmp_path: Path) -> None:
    data = LARGE.read_bytes()
    path = _write(tmp_path / "garbage.jsonl.gz", data + b"garbage!!")
    with pytest.raises(TraceFormatError, match=r"damaged at byte 64854 of 64863: 9 bytes after "
                                               r"the end of the gzip stream"):
        Trace.load(path)
    lenient = _lenient(path)
    assert lenient.records == Trace.load(LARGE).records
    assert not lenient.complete and lenient.footer is not None


def test_a_trace_in_two_gzip_members_is_read_whole(tmp_path: Path) -> None:
    # A concatenation of gzip members is one gzip file; the second must not be dropped.
    text = gzip.decompress(LARGE.read_bytes())
    cut = text.index(b"\n", len(text) // 2) + 1
    path = _write(tmp_path / "two.jsonl.gz", gzip.compress(text[:cut]) + gzip.compress(text[cut:]))
    trace = Trace.load(path)
    assert trace.records == Trace.load(LARGE).records and trace.complete


def test_a_second_trace_appended_as_a_gzip_member_is_named(tmp_path: Path) -> None:
    data = SMALL.read_bytes()
    path = _write(tmp_path / "appended.jsonl.gz", data + data)
    with pytest.raises(TraceFormatError, match="line 30 comes after the footer"):
        Trace.load(path)
    lenient = _lenient(path)
    assert any("a second header line" in p for p in lenient.problems)
    assert lenient.records[:27] == Trace.load(SMALL).records


def test_a_crash_is_still_a_crash(tmp_path: Path) -> None:
    # A recorder killed mid-stream: no gzip trailer, the last line half written.
    path = tmp_path / "live.jsonl.gz"
    recorder = Recorder(path)
    for i in range(200):
        recorder(Event("Runtime.consoleAPICalled", {"i": i, "pad": "x" * 50}, None, 1.0, 1.0))
    recorder._file.flush()
    data = path.read_bytes()
    for cut in range(1, 40):  # wherever the crash hit the last gzip block
        crashed = _write(tmp_path / "crashed.jsonl.gz", data[:-cut])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            trace = Trace.load(crashed)
        assert len(trace.records) >= 190 and not trace.complete
        assert re.match(r"line \d+ is cut short|no footer", trace.problems[0]), trace.problems
        assert trace.truncated == bool(caught)
    recorder.close()


def test_a_bad_line_in_a_gzip_file_with_intact_stream_is_named_by_line(tmp_path: Path) -> None:
    lines = gzip.decompress(SMALL.read_bytes()).split(b"\n")
    lines[5] = b'{"t": 1, "wall": 2, "dir": "sideways"}'
    path = _write(tmp_path / "line.jsonl.gz", gzip.compress(b"\n".join(lines)))
    with pytest.raises(TraceFormatError, match=r"line.jsonl.gz line 6: 'dir' must be"):
        Trace.load(path)


# -- header and footer fields ------------------------------------------------------------------


def _edited(path: Path, source: Path, edit: Any) -> Path:
    lines = [json.loads(line) for line in gzip.decompress(source.read_bytes()).splitlines()]
    edit(lines)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


@pytest.mark.parametrize(("where", "field", "value", "message"), [
    (0, "started_at", "yesterday", r"line 1 \(header\): 'started_at' must be a valid number"),
    (0, "started_at", 1e30, r"'started_at' must be less than or equal to"),
    (0, "started_mono", [1], r"'started_mono' must be a valid number"),
    (0, "backend", {"kind": 7}, r"'backend.kind' must be a valid string, got 7"),
    (0, "browser", "Chrome", r"'browser' must be a valid dictionary"),
    (0, "redacted", "all", r"'redacted' must be a valid list"),
    (0, "meta", [], r"'meta' must be a valid dictionary"),
    (-1, "counts", {"send": "many"}, r"line 29 \(footer\): 'counts.send' must be a valid integer"),
    (-1, "counts", {"send": True}, r"'counts.send' must be a valid integer, got True"),
    (-1, "counts", [], r"'counts' must be a valid dictionary"),
    (-1, "ended_at", "later", r"line 29 \(footer\): 'ended_at' must be a valid number"),
    (3, "wall", 1e12, r"line 4: 'wall' must be seconds since 1970"),
    (3, "t", "soon", r"line 4: 't' must be a finite number"),
])
def test_wrong_field_types_are_named_at_load(tmp_path: Path, where: int, field: str,
                                             value: Any, message: str) -> None:
    def edit(lines: list[dict[str, Any]]) -> None:
        lines[where][field] = value

    path = _edited(tmp_path / "fields.jsonl", SMALL, edit)
    with pytest.raises(TraceFormatError, match=message):
        Trace.load(path)
    lenient = _lenient(path)
    assert not lenient.complete
    assert any(field in p for p in lenient.problems), lenient.problems
    _usable(lenient)


# -- repeated lines and ids -------------------------------------------------------------------


def test_a_trace_with_every_line_doubled_is_found_out_and_repaired(tmp_path: Path) -> None:
    text = gzip.decompress(LARGE.read_bytes())
    doubled = b"".join(line + line for line in text.splitlines(keepends=True))
    path = _write(tmp_path / "doubled.jsonl", doubled)
    with pytest.raises(TraceFormatError, match="line 2 repeats line 1 byte for byte"):
        Trace.load(path)
    lenient = _lenient(path)
    assert lenient.records == Trace.load(LARGE).records  # each copy left out, nothing lost
    assert not lenient.complete
    assert "line 4 repeats line 3 byte for byte; left out" in lenient.problems[1]


def _connection(first_id: int, mono: float) -> list[Any]:
    return [Note("cdpnb.connected", {}, None, 1.0, mono),
            Command(first_id, "Runtime.enable", {}, None, 1.0, mono + 0.1),
            Reply(first_id, "Runtime.enable", {}, None, {}, 1.0, mono + 0.2),
            Note("cdpnb.disconnected", {"reason": "x"}, None, 1.0, mono + 0.3)]


def _recorded(path: Path, records: list[Any]) -> Path:
    recorder = Recorder(path)
    for record in records:
        recorder(record)
    recorder.close()
    return path


def test_ids_may_repeat_across_connections_but_not_within_one(tmp_path: Path) -> None:
    ok = _recorded(tmp_path / "ok.jsonl", _connection(1, 1.0) + _connection(1, 2.0))
    assert Trace.load(ok).complete
    twice = [*_connection(1, 1.0)[:3],
             Command(1, "Runtime.disable", {}, None, 1.0, 1.5),
             Reply(1, "Runtime.disable", {}, None, {}, 1.0, 1.6)]
    path = _recorded(tmp_path / "twice.jsonl", twice)
    with pytest.raises(TraceFormatError, match=r"line 5: command id 1 was already sent at line 3"):
        Trace.load(path)
    lenient = _lenient(path)
    assert lenient.records == tuple(twice)  # reported, and kept: it is recorded data
    assert "line 6: a second reply to command id 1 (the first is line 4)" in lenient.problems[1]


def test_a_repeated_connection_note_is_named(tmp_path: Path) -> None:
    records = [Note("cdpnb.connected", {"url": "a"}, None, 1.0, 1.0),
               Note("cdpnb.connected", {"url": "a"}, None, 1.0, 1.1),
               *_connection(1, 2.0)[1:]]
    path = _recorded(tmp_path / "notes.jsonl", records)
    with pytest.raises(TraceFormatError, match="line 3: repeats the cdpnb.connected note of "
                                               "line 2 with nothing between"):
        Trace.load(path)


def test_lines_after_the_footer_and_counts_that_do_not_add_up(tmp_path: Path) -> None:
    text = gzip.decompress(SMALL.read_bytes()).decode()
    lines = text.splitlines(keepends=True)
    after = _write(tmp_path / "after.jsonl", (text + lines[5]).encode())
    with pytest.raises(TraceFormatError, match="line 30 comes after the footer"):
        Trace.load(after)
    missing = _write(tmp_path / "missing.jsonl", "".join(lines[:5] + lines[6:]).encode())
    with pytest.raises(TraceFormatError, match=r"line 28 \(footer\): the footer counts \{note: 12, "
                                               r"recv: 8, send: 7\} but the file holds \{note: 12, "
                                               r"recv: 7, send: 7\}"):
        Trace.load(missing)
    assert len(_lenient(missing).records) == 26


@pytest.mark.browser
async def test_a_repaired_doubled_recording_replays(tmp_path: Path) -> None:
    # A real recording (node: quick), every line doubled, loaded leniently: replay serves
    # it to an unmodified supervisor. Before, the doubled connection note made the first
    # replayed connection an empty one, dropped at once.
    path = tmp_path / "node.jsonl"
    async with cdpnb.launch("node") as node:
        sup = await cdpnb.Supervisor.start(node, record=path)
        assert await sup.evaluate("6 * 7") == 42
        await sup.stop()
    doubled = _write(tmp_path / "doubled.jsonl", b"".join(
        line + line for line in path.read_bytes().splitlines(keepends=True)))
    trace = _lenient(doubled)
    async with replay(trace) as backend:
        sup = await cdpnb.Supervisor.start(backend)
        try:
            assert await sup.evaluate("6 * 7") == 42
            assert sup.connected and sup.reconnects == 0
        finally:
            await sup.stop()
        assert not backend.unmatched
        async with websockets.connect(backend.cdp_url) as ws:  # the endpoint is still up
            await ws.send(json.dumps({"id": 1, "method": "Nope.nope"}))
            assert json.loads(await ws.recv())["error"]["code"] == -32000


# -- random damage ----------------------------------------------------------------------------

_SOURCES = [SMALL, PROBES / "node.native.jsonl.gz", PROBES / "chromium.bridge.jsonl.gz"]
_JSON_VALUES = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=8),
                         st.lists(st.integers(), max_size=2),
                         st.dictionaries(st.text(max_size=4), st.integers(), max_size=2))


@st.composite
def _damage(draw: st.DrawFn, sources: list[Path] = _SOURCES) -> tuple[str, bool, bytes]:
    source = draw(st.sampled_from(sources))
    compressed = source.read_bytes()
    text = gzip.decompress(compressed)
    kind = draw(st.sampled_from(["flip", "truncate", "duplicate", "append", "field", "nested",
                                 "delete", "splice"]))
    as_gzip = draw(st.booleans())
    data = compressed if as_gzip and kind in ("flip", "truncate", "append") else text
    if kind == "flip":
        at = draw(st.integers(0, len(data) - 1))
        data = _flipped(data, at) if draw(st.booleans()) else \
            data[:at] + bytes([draw(st.integers(0, 255))]) + data[at + 1:]
    elif kind == "truncate":
        data = data[:draw(st.integers(0, len(data) - 1))]
    elif kind == "append":
        data += draw(st.binary(min_size=1, max_size=40))
    else:
        lines = data.splitlines(keepends=True)
        n = draw(st.integers(0, len(lines) - 1))
        if kind == "duplicate":
            lines.insert(n, lines[n])
        elif kind == "delete":
            del lines[n]
        elif kind == "splice":
            lines.insert(n, lines[draw(st.integers(0, len(lines) - 1))])
        elif kind == "field":
            line = json.loads(lines[n])
            key = draw(st.sampled_from([*sorted(line), "sessionId", "id", "params"]))
            line[key] = draw(_JSON_VALUES)
            lines[n] = (json.dumps(line) + "\n").encode()
        else:  # a value anywhere inside the line: what a hostile browser could send
            line = json.loads(lines[n])
            inner = line
            while True:
                keys = sorted(inner) if isinstance(inner, dict) else list(range(len(inner)))
                if not keys:
                    break
                key = draw(st.sampled_from(keys))
                if not isinstance(inner[key], dict | list) or not inner[key] \
                        or draw(st.booleans()):
                    inner[key] = draw(_JSON_VALUES)
                    break
                inner = inner[key]
            lines[n] = (json.dumps(line) + "\n").encode()
        data = b"".join(lines)
        if as_gzip:
            data = gzip.compress(data)
    return kind, as_gzip, data


@given(damage=_damage())
@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_random_damage_is_named_or_loads_with_its_problems(
        tmp_path: Path, damage: tuple[str, bool, bytes]) -> None:
    kind, as_gzip, data = damage
    path = _write(tmp_path / ("damaged.jsonl.gz" if as_gzip else "damaged.jsonl"), data)
    began = time.monotonic()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TraceTruncatedWarning)
        try:
            Trace.load(path)
        except TraceFormatError as exc:
            # Named: the line, the byte, or why the file is no trace at all.
            assert any(word in str(exc) for word in (" line ", "byte", "not a cdpnb trace",
                                                     "version")), (kind, exc)
        try:
            lenient = Trace.load(path, strict=False)
        except TraceFormatError as exc:
            # Only a file whose header cannot be read is refused when lenient.
            assert any(word in str(exc) for word in ("not a cdpnb trace", "line 1",
                                                     "header", "version", "magic")), (kind, exc)
        else:
            _usable(lenient)
            if lenient.problems:
                assert not lenient.complete
    assert time.monotonic() - began < 10, "reading a damaged trace must not hang"


def test_zlib_sees_what_the_reader_calls_damage() -> None:
    # The premise of the gzip tests: a flipped byte mid-stream makes zlib fail (or the
    # checksum differ), it does not inflate quietly.
    data = _flipped(LARGE.read_bytes(), len(LARGE.read_bytes()) // 2)
    with pytest.raises(zlib.error):
        zlib.decompress(data, wbits=31)


# -- zstd -------------------------------------------------------------------------------------


def _zstd_recording(path: Path, n: int) -> Recorder:
    recorder = Recorder(path)
    for i in range(n):
        recorder(Event("Runtime.consoleAPICalled", {"i": i, "pad": "x" * 50}, None, 1.0, 1.0))
    recorder.flush()
    return recorder


def test_a_zstd_recording_survives_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "live.jsonl.zst"
    recorder = _zstd_recording(path, 200)
    data = path.read_bytes()
    assert data.startswith(b"\x28\xb5\x2f\xfd")
    assert len(Trace.load(path).records) == 200  # every flushed line, no frame end yet
    for cut in range(1, 40):  # wherever the crash hit the last block
        crashed = _write(tmp_path / "crashed.jsonl.zst", data[:-cut])
        with warnings.catch_warnings(record=True):
            warnings.simplefilter("always")
            trace = Trace.load(crashed)
        assert not trace.complete and trace.problems
        assert re.match(r"line \d+ is cut short|no footer", trace.problems[0]), trace.problems
    recorder.close()
    closed = Trace.load(path)
    assert closed.complete and len(closed.records) == 200
    assert closed.records == Trace.load(path, strict=False).records


def test_damage_in_a_zstd_trace_is_named_by_byte(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl.zst"
    _zstd_recording(path, 300).close()
    data = path.read_bytes()
    whole = Trace.load(path).records
    named = 0
    for at in range(len(data) // 3, 2 * len(data) // 3, len(data) // 12):
        damaged = _write(tmp_path / "flipped.jsonl.zst", _flipped(data, at))
        try:
            # (A bit zstd does not use changes nothing: the same records, then.)
            assert Trace.load(damaged).records == whole
            continue
        except TraceFormatError as exc:
            assert re.search(rf"is damaged at byte \d+ of {len(data)}", str(exc)), exc
            # A bit flipped in zstd's literals stops nothing until the frame's checksum
            # at its end: the lines it garbled came out first.
            checksum = "checksum" in str(exc)
        named += 1
        lenient = _lenient(damaged)
        assert not lenient.complete and any("damaged at byte" in p for p in lenient.problems)
        if not checksum:
            assert lenient.records == whole[:len(lenient.records)]  # nothing before it lost
        _usable(lenient)
    assert named
    garbage = _write(tmp_path / "garbage.jsonl.zst", data + b"garbage!!")
    with pytest.raises(TraceFormatError, match=rf"damaged at byte {len(data)} of "
                                               rf"{len(data) + 9}: 9 bytes after the end of "
                                               "the zstd stream"):
        Trace.load(garbage)


@pytest.mark.parametrize("name,magic", [("bidi.jsonl.zst", b"\x28\xb5\x2f\xfd"),
                                        ("bidi.jsonl.gz", b"\x1f\x8b"),
                                        ("bidi.jsonl", b'{"cdpnb_trace"')])
def test_a_bidi_recording_stays_as_compressed_as_its_name_says(
        tmp_path: Path, name: str, magic: bytes) -> None:
    """The header names the protocol, so the file is started again when the connection
    says BiDi: in the same compression (a .zst trace was written plain)."""
    path = tmp_path / name
    recorder = Recorder(path)
    recorder.set_protocol("bidi")
    recorder(Event("browsingContext.load", {"context": "C"}, None, 1.0, 1.0))
    recorder.close()
    assert path.read_bytes().startswith(magic)
    trace = Trace.load(path)
    assert trace.header["protocol"] == "bidi" and trace.complete and len(trace) == 1
