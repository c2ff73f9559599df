"""Recording and reading traces: crash safety, refusals, redaction, replay equals live."""

from __future__ import annotations

import gzip
import json
import warnings
from pathlib import Path

import pytest

import cdpnb
from cdpnb.probes import ScenarioServer
from cdpnb.protocol import Command, Event, Fault, Note, Reply
from cdpnb.state import BrowserState, fold_all
from cdpnb.trace import Recorder, Trace, TraceFormatError, TraceTruncatedWarning
from cdpnb.trace.format import LineDecoder, decode_record, encode
from tests.conftest import open_two_site


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _write(path: Path, records: list[object], *, close: bool = True) -> Recorder:
    recorder = Recorder(path, backend={"kind": "test"}, cdpnb_version="0")
    for record in records:
        recorder(record)  # type: ignore[arg-type]
    if close:
        recorder.close()
    return recorder


SAMPLE = [
    Note("cdpnb.connected", {"url": "ws://127.0.0.1:1/x"}, None, 10.0, 1.0),
    Command(1, "Target.createTarget", {"url": "about:blank"}, None, 10.1, 1.1),
    Reply(1, "Target.createTarget", {"targetId": "T"}, None, {"url": "about:blank"}, 10.2, 1.2),
    Command(2, "Runtime.evaluate", {"expression": "<b>é</b>"}, "S", 10.3, 1.3),
    Event("Runtime.consoleAPICalled", {"type": "error", "args": []}, "S", 10.4, 1.4),
    Fault("malformed-json", "Expecting value", "{oops", 10.5, 1.5),
]


# -- the format -----------------------------------------------------------------------------


def test_every_record_round_trips_through_one_line() -> None:
    decoder = LineDecoder()
    for record in SAMPLE:
        line = encode(record)
        assert "\n" not in line
        assert decode_record(line, "test", decoder) == record


def test_recorder_writes_header_messages_and_footer_with_counts(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    _write(path, SAMPLE)
    lines = _lines(path)
    assert lines[0]["cdpnb_trace"] == 2 and lines[0]["backend"] == {"kind": "test"}
    assert lines[0]["protocol"] == "cdp"
    assert [line.get("seq") for line in lines[1:-1]] == [1, 2, 3, 4, 5, 6]
    assert [line.get("dir") for line in lines[1:-1]] == ["note", "send", "recv", "send", "recv",
                                                         "fault"]
    assert lines[-1]["counts"] == {"note": 1, "send": 2, "recv": 2, "fault": 1}
    trace = Trace.load(path)
    assert trace.records == tuple(SAMPLE)
    assert trace.complete and trace.problems == ()


def test_each_line_is_on_disk_before_the_next_message(tmp_path: Path) -> None:
    path = tmp_path / "live.jsonl"
    recorder = _write(path, SAMPLE[:3], close=False)
    # No close, no flush by us: a crash now would keep every line written so far.
    assert len(path.read_text().splitlines()) == 4
    trace = Trace.load(path)
    assert len(trace.records) == 3 and not trace.complete
    assert "no footer" in trace.problems[0]
    recorder.close()


def test_a_line_cut_short_loads_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "cut.jsonl"
    _write(path, SAMPLE, close=False)
    data = path.read_bytes()
    path.write_bytes(data[:-25])  # the recorder died writing the fault line
    with pytest.warns(TraceTruncatedWarning, match="cut short"):
        trace = Trace.load(path)
    assert trace.records == tuple(SAMPLE[:-1])
    assert trace.truncated and "line 7" in trace.problems[0]


def test_gzip_recording_survives_a_crash_mid_stream(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl.gz"
    recorder = _write(path, SAMPLE, close=False)
    # The gzip stream has no end marker yet: every sync-flushed line is readable.
    assert Trace.load(path).records == tuple(SAMPLE)
    recorder.close()
    assert gzip.decompress(path.read_bytes()).count(b"\n") == len(SAMPLE) + 2
    assert Trace.load(path).complete


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"name": "package.json", "version": 3}\n', "has no 'cdpnb_trace' header"),
        ("hello world\n", "line 1 is not JSON"),
        ("", "it is empty"),
        ('{"cdpnb_trace": 99}\n', "version 99"),
        ('{"cdpnb_trace": "one"}\n', "bad trace version"),
    ],
)
def test_a_foreign_file_is_refused_saying_why(tmp_path: Path, content: str,
                                              message: str) -> None:
    path = tmp_path / "foreign.json"
    path.write_text(content)
    with pytest.raises(TraceFormatError, match=message):
        Trace.load(path)


def test_a_bad_line_in_the_middle_is_named(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    _write(path, SAMPLE)
    lines = path.read_text().splitlines()
    lines[3] = '{"t": 1, "wall": 2, "dir": "sideways"}'
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TraceFormatError, match=r"bad.jsonl line 4: 'dir' must be"):
        Trace.load(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lenient = Trace.load(path, strict=False)
    assert len(lenient.records) == len(SAMPLE) - 1
    assert "skipped bad.jsonl line 4" in lenient.problems[0]


def test_missing_and_directory_paths_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no trace at"):
        Trace.load(tmp_path / "nope.jsonl")
    with pytest.raises(IsADirectoryError):
        Trace.load(tmp_path)


def test_redaction_hides_answers_typed_text_and_credentials(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    recorder = Recorder(path, redact=True)
    recorder(Command(1, "Page.handleJavaScriptDialog", {"accept": True,
                                                        "promptText": "hunter2"}, "S"))
    recorder(Note("cdpnb.dialogAnswering", {"dialog_id": "d-1", "prompt_text": "hunter2"}))
    recorder(Command(2, "Input.insertText", {"text": "hunter2"}, "S"))
    recorder(Command(3, "Page.navigate", {"url": "http://bob:hunter2@127.0.0.1:9/x"}, "S"))
    recorder.close()
    text = path.read_text()
    assert "hunter2" not in text
    assert "http://***@127.0.0.1:9/x" in text
    assert _lines(path)[0]["redacted"] == ["authorization", "cookies", "prompt_text",
                                           "typed_text", "url_credentials"]


def test_redact_names_a_bad_kind(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"unknown kinds \['passwords'\]"):
        Recorder(tmp_path / "x.jsonl", redact=["passwords"])


def test_replay_states_and_snapshot_at(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    _write(path, [*SAMPLE[:1], Note("cdpnb.disconnected", {"reason": "bye"}, None, 12.0, 3.0)])
    trace = Trace.load(path)
    start = trace.started_mono
    assert trace.state_at(1.5 - start).connected
    assert not trace.final_state().connected
    assert [s.connected for s in trace.replay()] == [True, False]
    with pytest.raises(TypeError, match="seconds since the trace started"):
        trace.snapshot_at("soon")  # type: ignore[arg-type]


# -- live recording against real Chromium ---------------------------------------------------


async def test_live_recording_replays_to_the_live_state(chromium: cdpnb.Backend,
                                                        site: ScenarioServer,
                                                        tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    sup = await cdpnb.Supervisor.start(chromium, record=path, dialog_timeout_s=30)
    ids = await open_two_site(sup, site)
    for frame, call in (("main", "alert('a')"), ("srcdoc", "confirm('c')"),
                        ("oopif", "prompt('p', 'd')")):
        await sup.evaluate(f"setTimeout(() => {{ window.__r = {call}; }}, 0); 0",
                           frame_id=ids[frame])
        dialog = await sup.wait_for_dialog(timeout=5)
        await sup.respond("accept", prompt_text="x" if frame == "oopif" else None,
                          dialog_id=dialog.id)
    assert await sup.evaluate("window.__r", frame_id=ids["oopif"]) == "x"
    live_before_stop = sup.state
    await sup.stop()

    trace = Trace.load(path)
    assert trace.complete
    assert trace.backend["kind"] == "chromium"
    assert "127.0.0.1" in str(trace.header["endpoint"])
    # sup.state after stop is the state when stop was asked; the core folded on to the
    # end (pages closed, connection gone), as the trace did.
    assert sup.state == live_before_stop
    assert trace.final_state() == sup._core.state
    # The state just before stop is one of the replayed states, frame tree and all.
    assert any(state == live_before_stop for _, state in trace.replay_states())
    assert fold_all(trace.messages) == sup._core.state
    kinds = [r.type for r in trace.final_state().recent_dialogs]
    assert kinds == ["alert", "confirm", "prompt"]
    assert any(isinstance(r, Event) and r.method == "Target.attachedToTarget"
               and r.session_id is not None for r in trace.records)
    assert trace.footer is not None
    assert trace.footer["counts"]["send"] == sum(isinstance(r, Command) for r in trace.records)


async def test_recording_is_stopped_and_closed_when_start_fails(tmp_path: Path) -> None:
    path = tmp_path / "dead.jsonl"
    with pytest.raises(cdpnb.EndpointError):
        await cdpnb.Supervisor.start("http://127.0.0.1:9", record=path, connect_timeout_s=1,
                                     reconnect_attempts=0)
    trace = Trace.load(path)
    assert trace.complete and trace.records == ()
    assert trace.final_state() == BrowserState()


async def test_redact_without_record_is_refused() -> None:
    with pytest.raises(ValueError, match="pass record=path"):
        await cdpnb.Supervisor.start("http://127.0.0.1:9", redact=True)


def test_page_text_that_is_not_valid_unicode_is_still_recorded(tmp_path: Path) -> None:
    # JS strings may hold lone surrogates ('\ud800'); UTF-8 cannot, so the recorder
    # writes ASCII escapes rather than losing the line.
    path = tmp_path / "s.jsonl"
    event = Event("Runtime.consoleAPICalled", {"type": "log", "args": [{"value": "a\ud800b"}]},
                  "S", 1.0, 1.0)
    recorder = _write(path, [event])
    assert recorder.write_errors == 0
    trace = Trace.load(path)
    assert trace.records == (event,) and trace.complete


def test_a_trace_with_write_errors_is_not_complete(tmp_path: Path) -> None:
    path = tmp_path / "w.jsonl"
    recorder = Recorder(path)
    recorder.write_errors = 1
    recorder.close()
    assert not Trace.load(path).complete


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz", ".jsonl.zst"])
def test_traces_and_their_tables_are_private_to_their_owner(tmp_path: Path,
                                                            suffix: str) -> None:
    """A trace holds prompt answers: 0600 whatever the umask, like ssh keys; a file that
    was there before is made private too; its Parquet export and a campaign cell alike."""
    import os
    import stat

    import pyarrow as pa

    from cdpnb.campaign.layout import Layout

    umask = os.umask(0o022)  # what a login shell has: new files 0644 but for this
    try:
        path = tmp_path / f"run{suffix}"
        path.write_text("")
        path.chmod(0o644)
        recorder = Recorder(path)
        recorder(Event("Page.javascriptDialogOpening", {"message": "secret?"}, "S", 1.0, 1.0))
        recorder.close()
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        exported = Trace.load(path).to_parquet(tmp_path / "run.parquet")
        assert stat.S_IMODE(exported.stat().st_mode) == 0o600
        cell = tmp_path / "campaign" / "cell.parquet"
        Layout(tmp_path / "campaign").write(cell, pa.table({"a": [1]}))
        assert stat.S_IMODE(cell.stat().st_mode) == 0o600
    finally:
        os.umask(umask)
