"""Trace DataFrames, Parquet round trips and compare(): synthetic traces with exact
expectations, and one real recording against Chromium."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import open_two_site

import cdpnb
from cdpnb.probes import ScenarioServer
from cdpnb.protocol import Command, ErrorReply, Event, Fault, Note, Reply
from cdpnb.trace import Recorder, Trace, TraceFormatError, compare
from cdpnb.trace.format import Record

START_WALL = 1_700_000_000.0
START_MONO = 500.0
PAGE = "S-PAGE"
CHILD = "S-CHILD"

CAT = "category"
STR = str(pd.Series(["x"], dtype="str").dtype)  # pandas' default str: every text column's
NULLABLE_STR = STR  # (text that can be missing too: NaN there)
UTC = "datetime64[ns, UTC]"

DTYPES = {
    "events": {"time": UTC, "t": "float64", "direction": CAT, "kind": CAT, "session_id": CAT,
               "id": "Int64", "method": CAT, "payload": STR},
    "commands": {"sent": UTC, "t": "float64", "method": CAT, "session_id": CAT, "id": "Int64",
                 "latency_ms": "Float64", "ok": "boolean", "error_code": "Int64",
                 "error": NULLABLE_STR, "params": STR},
    "dialogs": {"dialog_id": NULLABLE_STR, "opened_at": UTC, "closed_at": UTC, "t": "float64",
                "type": CAT, "message": NULLABLE_STR, "default_prompt": NULLABLE_STR,
                "frame_id": NULLABLE_STR, "url": NULLABLE_STR, "session_id": CAT, "via": CAT,
                "has_browser_handler": "boolean", "accepted": "boolean",
                "answer": NULLABLE_STR, "closed_by": CAT, "reason": CAT, "open_ms": "Float64"},
    "frames": {"time": UTC, "t": "float64", "event": CAT, "frame_id": NULLABLE_STR,
               "name": NULLABLE_STR, "parent_frame_id": NULLABLE_STR, "url": NULLABLE_STR,
               "origin": NULLABLE_STR, "session_id": CAT, "parent_session_id": CAT,
               "is_oopif": "boolean", "reason": CAT},
    "console": {"time": UTC, "t": "float64", "session_id": CAT, "level": CAT, "kind": CAT,
                "source": CAT, "text": NULLABLE_STR, "url": NULLABLE_STR, "line": "Int64",
                "column": "Int64"},
}


def dtypes(frame: pd.DataFrame) -> dict[str, str]:
    out = {}
    for name, dtype in frame.dtypes.items():
        if isinstance(dtype, pd.CategoricalDtype):
            assert str(dtype.categories.dtype) == STR, (name, dtype)  # str categories, always
            out[str(name)] = CAT
        else:
            out[str(name)] = str(dtype)
    return out


class Script:
    """Builds records with advancing clocks: 1 ms apart unless told otherwise."""

    def __init__(self) -> None:
        self.records: list[Record] = []
        self.step = 0.0

    def _at(self, dt: float) -> tuple[float, float]:
        self.step += dt
        return START_WALL + self.step, START_MONO + self.step

    def add(self, kind: type, *args: Any, dt: float = 0.001, **kwargs: Any) -> Any:
        wall, mono = self._at(dt)
        record = kind(*args, **kwargs, wall=wall, mono=mono)
        self.records.append(record)
        return record

    def event(self, method: str, params: dict[str, Any], session: str | None = PAGE,
              dt: float = 0.001) -> Event:
        result: Event = self.add(Event, method, params, session, dt=dt)
        return result

    def note(self, method: str, params: dict[str, Any], session: str | None = None) -> Note:
        result: Note = self.add(Note, method, params, session)
        return result

    def trace(self) -> Trace:
        header = {"cdpnb_trace": 1, "started_at": START_WALL, "started_mono": START_MONO,
                  "backend": {"kind": "synthetic"}, "browser": None, "meta": {}}
        footer = {"cdpnb_trace_end": 1, "ended_at": START_WALL + self.step + 1, "counts": {}}
        return Trace(header, self.records, footer)


def wall_time(wall: float) -> pd.Timestamp:
    return pd.to_datetime(wall, unit="s", utc=True)


# -- events ---------------------------------------------------------------------------------


def every_kind() -> Script:
    s = Script()
    s.note("cdpnb.connected", {"url": "ws://x"})
    s.add(Command, 1, "Runtime.evaluate", {"expression": "'é <script>'"}, PAGE)
    s.add(Reply, 1, "Runtime.evaluate", {"result": {"value": "é <script>"}}, PAGE,
          {"expression": "'é <script>'"})
    s.add(Command, 2, "No.such", {}, None)
    s.add(ErrorReply, 2, "No.such", -32601, "'No.such' wasn't found", {"hint": [1, None]})
    s.event("Page.lifecycleEvent", {"name": "load", "frameId": "F"})
    s.add(Fault, "json", "not JSON", "{oops")
    return s


def test_events_has_one_typed_row_per_record_with_compact_json_payloads() -> None:
    s = every_kind()
    trace = s.trace()
    frame = trace.events()
    assert dtypes(frame) == DTYPES["events"]
    assert len(frame) == len(trace.records) == 7
    assert list(frame["direction"]) == ["note", "send", "recv", "send", "recv", "recv", "fault"]
    assert list(frame["kind"]) == ["note", "command", "reply", "command", "error", "event",
                                   "fault"]
    assert list(frame["direction"].cat.categories) == ["send", "recv", "note", "fault"]
    assert frame["id"].tolist() == [pd.NA, 1, 1, 2, 2, pd.NA, pd.NA]
    assert frame["session_id"].isna().tolist() == [True, False, False, True, True, False, True]
    assert frame["method"].tolist()[:6] == ["cdpnb.connected", "Runtime.evaluate",
                                            "Runtime.evaluate", "No.such", "No.such",
                                            "Page.lifecycleEvent"]
    assert pd.isna(frame["method"].iloc[6])
    assert frame["t"].tolist() == pytest.approx([0.001 * i for i in range(1, 8)])
    assert frame["time"].iloc[0] == wall_time(s.records[0].wall)
    payloads = frame["payload"].tolist()
    assert payloads[1] == '{"expression":"\'é <script>\'"}'  # compact, unicode kept
    assert json.loads(payloads[2]) == {"result": {"value": "é <script>"}}
    assert json.loads(payloads[4]) == {"code": -32601, "message": "'No.such' wasn't found",
                                       "data": {"hint": [1, None]}}
    assert json.loads(payloads[6]) == {"kind": "json", "detail": "not JSON", "raw": "{oops"}


# -- commands -------------------------------------------------------------------------------


def test_commands_join_replies_within_a_connection_and_ids_restart_after_reconnect() -> None:
    s = Script()
    s.note("cdpnb.connected", {})
    s.add(Command, 1, "Page.navigate", {"url": "http://a/"}, PAGE)
    s.add(Command, 2, "No.such", {}, PAGE)
    s.add(Reply, 1, "Page.navigate", {"frameId": "F"}, PAGE, dt=0.010)
    s.add(ErrorReply, 2, "No.such", -32601, "not found", None, PAGE, dt=0.002)
    s.add(Command, 3, "Runtime.evaluate", {"expression": "hang()"}, PAGE)
    s.note("cdpnb.disconnected", {"reason": "dropped"})
    s.note("cdpnb.connected", {})
    s.add(Command, 1, "Browser.getVersion", {}, None)
    s.add(Reply, 3, "Runtime.evaluate", {}, None)  # another connection's id 3: no match
    s.add(Reply, 1, "Browser.getVersion", {"product": "x"}, None, dt=0.004)
    frame = s.trace().commands()
    assert dtypes(frame) == DTYPES["commands"]
    assert frame["method"].tolist() == ["Page.navigate", "No.such", "Runtime.evaluate",
                                        "Browser.getVersion"]
    assert frame["id"].tolist() == [1, 2, 3, 1]
    latency = frame["latency_ms"]
    assert latency.isna().tolist() == [False, False, True, False]
    assert latency.dropna().tolist() == pytest.approx([11.0, 12.0, 5.0])
    assert frame["ok"].tolist() == [True, False, pd.NA, True]
    assert frame["error_code"].tolist() == [pd.NA, -32601, pd.NA, pd.NA]
    assert frame["error"].isna().tolist() == [True, False, True, True]
    assert frame["error"][1] == "not found"
    assert frame["params"].tolist()[0] == '{"url":"http://a/"}'
    assert frame["session_id"].tolist()[:3] == [PAGE] * 3 and pd.isna(frame["session_id"][3])
    assert frame["sent"].iloc[0] == wall_time(s.records[1].wall)


# -- dialogs --------------------------------------------------------------------------------


def open_dialog(s: Script, kind: str, message: str, frame: str = "MAIN",
                default: str = "") -> None:
    s.event("Page.javascriptDialogOpening", {"url": "http://a/", "frameId": frame,
                                             "message": message, "type": kind,
                                             "hasBrowserHandler": True,
                                             "defaultPrompt": default})


def answer(s: Script, dialog_id: str, accept: bool, closed_by: str, text: str | None = None,
           *, closed_event: bool = True, user_input: str = "", frame: str = "MAIN") -> None:
    s.note("cdpnb.dialogAnswering", {"dialog_id": dialog_id, "accept": accept,
                                     "prompt_text": text, "closed_by": closed_by}, PAGE)
    params = {"accept": accept} if text is None else {"accept": accept, "promptText": text}
    cmd = s.add(Command, 100 + len(s.records), "Page.handleJavaScriptDialog", params, PAGE)
    if closed_event:
        s.event("Page.javascriptDialogClosed", {"frameId": frame, "result": accept,
                                                "userInput": user_input}, dt=0.004)
    s.add(Reply, cmd.id, cmd.method, {}, PAGE, params)
    s.note("cdpnb.dialogAnswered", {"dialog_id": dialog_id, "ok": True}, PAGE)


def dialog_script() -> Script:
    s = Script()
    s.note("cdpnb.connected", {})
    s.note("cdpnb.pageTarget", {"target_id": "MAIN", "session_id": PAGE})
    open_dialog(s, "alert", "héllo <script>alert(1)</script>")
    answer(s, "d-1", True, "agent")
    open_dialog(s, "confirm", "sure?", frame="SRCDOC")
    answer(s, "d-2", False, "auto_policy", frame="SRCDOC")
    open_dialog(s, "prompt", "name?", frame="OOPIF", default="def")
    answer(s, "d-3", True, "agent", "ünï <b>", user_input="ünï <b>", frame="OOPIF")
    open_dialog(s, "prompt", "waited", default="w")
    answer(s, "d-4", False, "watchdog")
    open_dialog(s, "beforeunload", "")
    s.event("Page.javascriptDialogClosed", {"frameId": "MAIN", "result": False,
                                            "userInput": ""}, dt=0.002)  # closed by someone else
    s.note("cdpnb.bridgeDialogOpening", {"type": "confirm", "message": "bridged",
                                         "frameId": "OOPIF", "requestId": "R-6"}, CHILD)
    s.note("cdpnb.dialogAnswering", {"dialog_id": "d-6", "accept": True, "prompt_text": None,
                                     "closed_by": "agent"}, CHILD)
    s.note("cdpnb.dialogAnswered", {"dialog_id": "d-6", "ok": True}, CHILD)
    open_dialog(s, "alert", "dropped with the connection")
    s.note("cdpnb.disconnected", {"reason": "gone"})
    s.note("cdpnb.connected", {})
    open_dialog(s, "alert", "still open")
    return s


def test_dialogs_one_row_per_dialog_of_each_type_and_each_closer() -> None:
    frame = dialog_script().trace().dialogs()
    assert dtypes(frame) == DTYPES["dialogs"]
    assert frame["dialog_id"].tolist() == [f"d-{i}" for i in range(1, 9)]
    assert frame["type"].tolist() == ["alert", "confirm", "prompt", "prompt", "beforeunload",
                                      "confirm", "alert", "alert"]
    assert frame["message"][0] == "héllo <script>alert(1)</script>"
    assert frame["closed_by"].tolist()[:7] == ["agent", "auto_policy", "agent", "watchdog",
                                               "remote", "agent", "cdpnb"]
    assert pd.isna(frame["reason"][5]) and frame["reason"][6] == "disconnected"
    assert pd.isna(frame["closed_by"][7])
    assert frame["accepted"].tolist() == [True, False, True, False, False, True, pd.NA, pd.NA]
    assert frame["answer"].isna().tolist() == [True, True, False, True, True, True, True, True]
    assert frame["answer"][2] == "ünï <b>"
    assert frame["via"].tolist() == ["native"] * 5 + ["bridge", "native", "native"]
    assert frame["frame_id"].tolist()[:3] == ["MAIN", "SRCDOC", "OOPIF"]
    assert frame["default_prompt"][2] == "def"
    assert frame["session_id"].tolist()[5] == CHILD
    assert frame["has_browser_handler"].tolist()[:2] == [True, True]
    assert pd.isna(frame["has_browser_handler"][5])  # the bridge note does not say
    # alert: opened, then answering note, command, and the closed event 4 ms later.
    assert frame["open_ms"][0] == pytest.approx(6.0, abs=1e-3)  # wall floats near 1.7e9
    delta = frame["closed_at"][0] - frame["opened_at"][0]
    assert abs(delta - pd.Timedelta(milliseconds=6)) < pd.Timedelta(microseconds=1)
    assert pd.isna(frame["closed_at"][7]) and pd.isna(frame["open_ms"][7])
    assert frame["t"].is_monotonic_increasing


def test_dialogs_follow_the_reducers_when_a_closed_record_is_amended() -> None:
    # Our accept was on its way, the dialog closed accepted, then our command failed:
    # the reducers re-attribute the close to "remote" after the fact.
    s = Script()
    s.note("cdpnb.connected", {})
    open_dialog(s, "prompt", "who?")
    s.note("cdpnb.dialogAnswering", {"dialog_id": "d-1", "accept": True, "prompt_text": "me",
                                     "closed_by": "agent"}, PAGE)
    s.event("Page.javascriptDialogClosed", {"frameId": "MAIN", "result": True,
                                            "userInput": "them"})
    s.note("cdpnb.dialogAnswered", {"dialog_id": "d-1", "ok": False,
                                    "error": "No dialog is showing"}, PAGE)
    trace = s.trace()
    frame = trace.dialogs()
    final = trace.final_state().recent_dialogs[-1]
    assert frame["closed_by"].tolist() == [final.closed_by]
    assert frame["answer"].tolist() == [final.prompt_text]


def test_dialogs_keeps_every_row_beyond_the_reducers_recent_cap() -> None:
    s = Script()
    s.note("cdpnb.connected", {})
    for i in range(1, 26):
        open_dialog(s, "alert", f"sequential {i}")
        answer(s, f"d-{i}", True, "agent")
    for i in range(26, 51):  # 25 open at once (not Chromium, but the fold allows it)
        open_dialog(s, "confirm", f"piled {i}")
    s.note("cdpnb.disconnected", {"reason": "gone"})
    frame = s.trace().dialogs()
    assert len(frame) == 50
    assert frame["dialog_id"].tolist() == [f"d-{i}" for i in range(1, 51)]
    assert (frame["closed_by"][:25] == "agent").all()
    assert (frame["closed_by"][25:] == "cdpnb").all()  # given up on: the connection went
    assert (frame["reason"][25:] == "disconnected").all()
    assert frame["closed_at"].notna().all()


# -- frames ---------------------------------------------------------------------------------


def frame_script() -> Script:
    s = Script()
    s.note("cdpnb.connected", {})
    s.note("cdpnb.pageTarget", {"target_id": "MAIN", "session_id": PAGE})
    s.event("Page.frameNavigated", {"frame": {"id": "MAIN", "loaderId": "L", "url": "http://a:1/",
                                              "securityOrigin": "http://a:1", "mimeType": "t"}})
    s.event("Page.frameAttached", {"frameId": "SRCDOC", "parentFrameId": "MAIN"})
    s.event("Page.frameNavigated", {"frame": {"id": "SRCDOC", "parentId": "MAIN",
                                              "url": "about:srcdoc", "securityOrigin": "://"}})
    s.event("Page.frameAttached", {"frameId": "OOPIF", "parentFrameId": "MAIN"})
    s.event("Target.attachedToTarget", {
        "sessionId": CHILD, "waitingForDebugger": True,
        "targetInfo": {"targetId": "OOPIF", "type": "iframe", "url": "", "attached": True}})
    s.event("Page.frameDetached", {"frameId": "OOPIF", "reason": "swap"})
    s.event("Page.frameNavigated", {"frame": {"id": "OOPIF", "parentId": "MAIN",
                                              "url": "http://b:2/child", "urlFragment": "#x",
                                              "securityOrigin": "http://b:2"}}, session=CHILD)
    s.event("Target.attachedToTarget", {  # a worker: not a frame
        "sessionId": "S-WORKER", "targetInfo": {"targetId": "W", "type": "worker"}})
    s.event("Target.detachedFromTarget", {"sessionId": CHILD, "targetId": "OOPIF"})
    s.event("Page.frameDetached", {"frameId": "SRCDOC", "reason": "remove"})
    s.event("Page.frameNavigated", {"frame": {"id": "MAIN", "url": "data:text/html,x"}})
    return s


def test_frames_timeline_has_attach_navigate_detach_and_the_oopif_with_its_parent() -> None:
    frame = frame_script().trace().frames()
    assert dtypes(frame) == DTYPES["frames"]
    rows = [(r.event, r.frame_id) for r in frame.itertuples()]
    # the OOPIF's frameDetached(reason=swap) moved it to another process: "swapped", as
    # the timeline says, not "detached"
    assert rows == [("navigated", "MAIN"), ("attached", "SRCDOC"), ("navigated", "SRCDOC"),
                    ("attached", "OOPIF"), ("oopif_attached", "OOPIF"), ("swapped", "OOPIF"),
                    ("navigated", "OOPIF"), ("oopif_detached", "OOPIF"),
                    ("detached", "SRCDOC"), ("navigated", "MAIN"), ("detached", "OOPIF")]
    assert pd.isna(frame["parent_frame_id"][0])
    assert frame["parent_frame_id"].tolist()[1:9] == ["MAIN"] * 8
    assert frame["url"][0] == "http://a:1/" and frame["origin"][0] == "http://a:1"
    assert frame["origin"][2] == "http://a:1"  # srcdoc runs with its parent's origin
    attach = frame.iloc[4]
    assert attach["session_id"] == CHILD and attach["parent_session_id"] == PAGE
    assert attach["is_oopif"] and pd.isna(attach["url"])
    assert frame["reason"][5] == "swap" and frame["reason"][8] == "remove"
    assert frame["url"][6] == "http://b:2/child#x" and frame["origin"][6] == "http://b:2"
    assert frame["session_id"][6] == CHILD and frame["is_oopif"][6]
    assert frame["is_oopif"].tolist() == [False, False, False, False, True, True, True, True,
                                          False, False, False]
    assert pd.isna(frame["origin"][9])  # data: URLs have no origin to derive
    # Back in its parent's process when its session ended, the OOPIF's frame went when
    # MAIN navigated: no event says so, the fold's FrameRemoved(reason="navigated") does.
    assert frame["reason"][10] == "navigated" and frame["url"][10] == "http://b:2/child#x"


def test_timeline_tells_an_oopif_swap_from_a_removal() -> None:
    timeline = frame_script().trace().timeline()
    events = [(r.event, r.frame_id) for r in timeline.itertuples()]
    # the OOPIF's frameDetached(reason=swap) moved it to another process: not a removal;
    # it left the tree only when MAIN navigated, at the end
    assert ("swapped", "OOPIF") in events and events.count(("detached", "OOPIF")) == 1
    assert set(events[-2:]) == {("navigated", "MAIN"), ("detached", "OOPIF")}
    assert ("detached", "SRCDOC") in events
    assert "swapped" in timeline["event"].cat.categories


# -- console --------------------------------------------------------------------------------


def test_console_has_every_level_and_uncaught_exceptions_with_full_text() -> None:
    s = Script()
    long = "x" * 5000
    s.event("Runtime.consoleAPICalled", {
        "type": "log", "args": [{"type": "string", "value": "hi <script>"},
                                {"type": "number", "value": 1, "description": "1"},
                                {"type": "object", "description": "Object"}],
        "stackTrace": {"callFrames": [{"url": "http://a/x.js", "lineNumber": 3,
                                       "columnNumber": 7}]}})
    s.event("Runtime.consoleAPICalled", {"type": "warning", "args": [{"type": "string",
                                                                      "value": "ünï"}]}, CHILD)
    s.event("Runtime.consoleAPICalled", {"type": "error", "args": [{"type": "string",
                                                                    "value": long}]})
    s.event("Runtime.exceptionThrown", {"exceptionDetails": {
        "text": "Uncaught", "lineNumber": 0, "columnNumber": 75, "url": "http://a/y.js",
        "exception": {"type": "object", "description": "Error: boom\n    at <anonymous>"}}})
    s.event("Runtime.exceptionThrown", {"exceptionDetails": {"text": "Uncaught 42"}})
    s.event("Runtime.exceptionThrown", {"exceptionDetails": "malformed"})
    frame = s.trace().console()
    assert dtypes(frame) == DTYPES["console"]
    assert frame["level"].tolist() == ["log", "warning", "error", "error", "error"]
    assert frame["kind"].tolist() == ["console"] * 3 + ["exception"] * 2
    assert frame["text"].tolist()[:2] == ["hi <script> 1 Object", "ünï"]
    assert frame["text"][2] == long  # the table keeps what the snapshot's ring buffer cuts
    assert frame["text"][3] == "Error: boom\n    at <anonymous>"
    assert frame["text"][4] == "Uncaught 42"
    assert frame["url"].tolist()[:4] == ["http://a/x.js", "", "", "http://a/y.js"]
    assert frame["line"].tolist() == [3, pd.NA, pd.NA, 0, pd.NA]
    assert frame["column"].tolist()[0] == 7
    assert frame["session_id"].tolist()[1] == CHILD


# -- empty traces ---------------------------------------------------------------------------


@pytest.mark.parametrize("table", sorted(DTYPES))
def test_an_empty_trace_gives_every_table_its_columns_and_dtypes(table: str) -> None:
    empty = Trace({"cdpnb_trace": 1}, [])
    frame = getattr(empty, table)()
    assert len(frame) == 0
    assert dtypes(frame) == DTYPES[table]


def test_a_trace_of_only_notes_and_faults_gives_empty_tables_too() -> None:
    s = Script()
    s.note("cdpnb.connected", {})
    s.add(Fault, "binary", "a binary frame", "")
    trace = s.trace()
    assert len(trace.events()) == 2
    for table in ("commands", "dialogs", "frames", "console"):
        assert dtypes(getattr(trace, table)()) == DTYPES[table]


# -- Parquet --------------------------------------------------------------------------------


def assert_round_trip(trace: Trace, path: Path) -> Trace:
    written = trace.to_parquet(path)
    assert written == path and path.is_file()
    back = Trace.from_parquet(path)
    assert back.records == trace.records
    assert [type(r) for r in back.records] == [type(r) for r in trace.records]
    assert back.header == trace.header
    assert back.footer == trace.footer
    assert back.problems == trace.problems
    return back


def test_parquet_round_trip_is_lossless_for_every_kind_of_record(tmp_path: Path) -> None:
    s = every_kind()
    s.event("Runtime.consoleAPICalled", {"type": "log", "args": [
        {"type": "string", "value": "日本語 🎉 </script><script>x()</script> \u0000 \n"}]})
    s.event("Runtime.consoleAPICalled", {"type": "log", "args": [
        {"type": "string", "value": "lone \ud800 surrogate"}]})  # not encodable as UTF-8
    s.add(ErrorReply, 9, "X.y", 1, "plain", None, None, {"p": 1.5})
    s.add(Reply, 10, "", {"n": 12345678901234567890, "f": 0.1, "b": False}, CHILD, {})
    s.note("cdpnb.dialogAnswering", {"dialog_id": "d-1", "prompt_text": None}, PAGE)
    trace = s.trace()
    trace.problems = ("a problem",)
    back = assert_round_trip(trace, tmp_path / "t.parquet")
    # Replies whose params are not a recorded command's (9 and 10 here) cannot be held
    # as columns: the records are built one by one, equal all the same.
    assert back._held.held is not None
    pd.testing.assert_frame_equal(back.events(), trace.events())
    # The file is also a plain events table for anyone with pandas.
    plain = pd.read_parquet(tmp_path / "t.parquet")
    assert list(plain.columns) == [*DTYPES["events"], "wall", "mono", "params"]
    assert plain["wall"].tolist() == [r.wall for r in trace.records]
    assert plain["method"].dtype == "category"


def test_parquet_round_trip_of_a_recorded_file_and_of_an_empty_trace(tmp_path: Path) -> None:
    recorder = Recorder(tmp_path / "run.jsonl", backend={"kind": "synthetic"})
    for record in dialog_script().records + frame_script().records:
        recorder(record)
    recorder.close()
    loaded = Trace.load(tmp_path / "run.jsonl")
    back = assert_round_trip(loaded, tmp_path / "run.parquet")
    assert back._held.held is None  # read as columns, as Trace.load reads a file
    pd.testing.assert_frame_equal(back.dialogs(), loaded.dialogs())
    pd.testing.assert_frame_equal(back.commands(), loaded.commands())
    # A row of a kind no cdpnb writes is named, whichever way the file is read.
    table = pq.read_table(tmp_path / "run.parquet")
    kinds = table.column("kind").cast(pa.string()).to_pylist()
    kinds[3] = "telegram"
    odd = table.set_column(table.schema.get_field_index("kind"), "kind",
                           pa.array(kinds, pa.string()))
    pq.write_table(odd.replace_schema_metadata(table.schema.metadata), tmp_path / "odd.parquet")
    with pytest.raises(TraceFormatError, match="row 3: unknown record kind 'telegram'"):
        Trace.from_parquet(tmp_path / "odd.parquet")
    empty = Trace({"cdpnb_trace": 1, "meta": {"note": "ünï"}}, [], None, ["no footer"])
    again = assert_round_trip(empty, tmp_path / "sub" / "empty.parquet")
    assert dtypes(again.events()) == DTYPES["events"]


def test_parquet_read_as_columns_pickles_and_odd_records_are_kept_as_they_were(
        tmp_path: Path) -> None:
    import copy
    import pickle

    every = every_kind()
    every.records.pop()  # (a fault: kept, but not needed here)
    columns = assert_round_trip(every.trace(), tmp_path / "plain.parquet")
    assert columns._held.held is None
    # A view of the file's buffer does not pickle; the trace does (Dask, joblib).
    for again in (pickle.loads(pickle.dumps(columns)), copy.deepcopy(columns)):
        assert again.records == columns.records
        pd.testing.assert_frame_equal(again.events(), columns.events())
    # Records only a hand can make (no id on a reply, no method on an event, a reply
    # with no command and no method) are read back as they were, one by one.
    for odd in (lambda s: s.add(Reply, None, "X.y", {}, None, {}),
                lambda s: s.add(ErrorReply, None, "X.y", 1, "m", None, None, {}),
                lambda s: s.event(None, {}),  # type: ignore[arg-type]
                lambda s: s.add(Reply, 77, None, {}, None, {})):
        script = every_kind()
        odd(script)
        back = assert_round_trip(script.trace(), tmp_path / "odd.parquet")
        assert back._held.held is not None
    # A matched reply whose params the file leaves out (a file edited by hand).
    table = pq.read_table(tmp_path / "plain.parquet")
    params = table.column("params").to_pylist()
    assert params[2] is not None
    params[2] = None
    edited = table.set_column(table.schema.get_field_index("params"), "params",
                              pa.array(params, pa.string()))
    pq.write_table(edited.replace_schema_metadata(table.schema.metadata),
                   tmp_path / "edited.parquet")
    back = Trace.from_parquet(tmp_path / "edited.parquet")
    assert back._held.held is not None and back.records[2].params == {}


def test_a_parquet_trace_read_in_many_row_groups_gives_the_same_tables(
        tmp_path: Path) -> None:
    recorder = Recorder(tmp_path / "run.jsonl", backend={"kind": "synthetic"})
    for record in dialog_script().records + frame_script().records + every_kind().records:
        recorder(record)
    recorder.close()
    loaded = Trace.load(tmp_path / "run.jsonl")
    table = pq.read_table(loaded.to_parquet(tmp_path / "one.parquet"))
    pq.write_table(table, tmp_path / "many.parquet", row_group_size=4)  # (metadata kept)
    back = Trace.from_parquet(tmp_path / "many.parquet")
    assert back._held.held is None and len(back._held.blocks) > 5
    assert back.records == loaded.records
    for name in ("events", "commands", "dialogs", "frames", "console"):
        pd.testing.assert_frame_equal(getattr(back, name)(), getattr(loaded, name)(),
                                      check_exact=True, obj=name)


def test_from_parquet_refuses_files_it_did_not_write(tmp_path: Path) -> None:
    foreign = tmp_path / "foreign.parquet"
    pq.write_table(pa.table({"a": [1, 2]}), foreign)
    with pytest.raises(TraceFormatError, match="without cdpnb trace metadata"):
        Trace.from_parquet(foreign)
    text = tmp_path / "notes.parquet"
    text.write_text("hello")
    with pytest.raises(TraceFormatError, match="is not a cdpnb Parquet trace"):
        Trace.from_parquet(text)
    with pytest.raises(FileNotFoundError, match="no Parquet trace"):
        Trace.from_parquet(tmp_path / "missing.parquet")
    with pytest.raises(IsADirectoryError):
        Trace({}, []).to_parquet(tmp_path)


# -- compare --------------------------------------------------------------------------------


def renamed(s: Script, suffix: str) -> list[Record]:
    """The same run with other ids, as a second browser would give."""
    out: list[Record] = []
    for r in s.records:
        if isinstance(r, Event | Note):
            raw = json.dumps(r.params).replace("MAIN", "MAIN" + suffix)
            out.append(type(r)(r.method, json.loads(raw), r.session_id, r.wall, r.mono))
        else:
            out.append(r)
    return out


def test_compare_lines_up_traces_by_content_not_ids() -> None:
    a = dialog_script().trace()
    s = dialog_script()
    s.add(Fault, "json", "bad", "")
    b = Trace(a.header, renamed(s, "-other"), a.footer)
    table = compare(a, b)
    assert list(table.columns) == ["synthetic", "synthetic (2)"]
    assert table.index.names == ["section", "item"]
    assert list(dict.fromkeys(table.index.get_level_values(0))) == [
        "trace", "dialogs", "frames", "commands", "console", "faults"]
    alert = 'alert "héllo <script>alert(1)</script>"'
    assert table.loc[("dialogs", f"{alert}: seen")].tolist() == [1, 1]
    assert table.loc[("dialogs", 'prompt "name?": answer')].tolist() == ['"ünï <b>"'] * 2
    assert table.loc[("dialogs", 'alert "still open": closed_by')].tolist() == ["open"] * 2
    assert table.loc[("dialogs", 'confirm "bridged": via')].tolist() == ["bridge"] * 2
    assert table.loc[("dialogs", 'confirm "sure?": answer')].tolist() == ["dismiss"] * 2
    assert table.loc[("faults", "faults")].tolist() == [0, 1]
    assert table.loc[("faults", "kind: json")].tolist() == [0, 1]
    assert table.loc[("commands", "median ms: Page.handleJavaScriptDialog")].tolist() == [
        pytest.approx(5.0)] * 2

    frames = compare(frame_script().trace(), Trace({}, []), labels=["two-site", "empty"])
    assert frames.loc[("frames", "frames")].tolist() == [3, 0]
    assert frames.loc[("frames", "oopifs")].tolist() == [1, 0]
    # the srcdoc frame, and the OOPIF's when MAIN navigated
    assert frames.loc[("frames", "detached")].tolist() == [2, 0]
    assert frames.loc[("frames", "swapped")].tolist() == [1, 0]  # the OOPIF
    assert frames.loc[("frames", "max depth")].tolist()[0] == 1
    assert frames.loc[("frames", "max depth")].isna().tolist() == [False, True]
    assert compare([a, b], labels=["x", "y"]).columns.tolist() == ["x", "y"]
    with pytest.raises(ValueError, match="labels has 1 names for 2 traces"):
        compare(a, b, labels=["x"])
    with pytest.raises(ValueError, match="distinct"):
        compare(a, b, labels=["x", "x"])
    with pytest.raises(ValueError, match="at least one trace"):
        compare()
    with pytest.raises(TypeError, match="takes Trace objects, got str"):
        compare("run.jsonl")  # type: ignore[arg-type]
    assert cdpnb.compare is compare and cdpnb.Trace is Trace


# -- a real recording -----------------------------------------------------------------------


@pytest.mark.browser
async def test_a_real_two_site_recording_as_tables(
    chromium: cdpnb.Backend, site: ScenarioServer, tmp_path: Path
) -> None:
    path = tmp_path / "run.jsonl"
    sup = await cdpnb.Supervisor.start(chromium.cdp_url, record=path)
    try:
        ids = await open_two_site(sup, site)
        for call, frame, action, text in (
            ("alert('A <script>')", "main", "accept", None),
            ("confirm('C ünï')", "srcdoc", "dismiss", None),
            ("prompt('p', 'd')", "oopif", "accept", "x"),
        ):
            await sup.evaluate(f"setTimeout(() => {{ window.__r = {call}; }}, 0); 0",
                               frame_id=ids[frame])
            d = await sup.wait_for_dialog(5)
            await sup.respond(action, prompt_text=text, dialog_id=d.id)
    finally:
        await sup.stop()
    trace = Trace.load(path)
    assert trace.complete

    dialogs = trace.dialogs()
    assert dtypes(dialogs) == DTYPES["dialogs"]
    assert dialogs["type"].tolist() == ["alert", "confirm", "prompt"]
    assert dialogs["message"].tolist() == ["A <script>", "C ünï", "p"]
    assert dialogs["frame_id"].tolist() == [ids["main"], ids["srcdoc"], ids["oopif"]]
    assert dialogs["closed_by"].tolist() == ["agent"] * 3
    assert dialogs["accepted"].tolist() == [True, False, True]
    assert dialogs["answer"].isna().tolist() == [True, True, False]
    assert dialogs["answer"][2] == "x"
    assert dialogs["default_prompt"][2] == "d"
    assert (dialogs["open_ms"] > 0).all()

    frames = trace.frames()
    oopif = frames[(frames["frame_id"] == ids["oopif"]) & (frames["event"] == "oopif_attached")]
    assert len(oopif) == 1
    assert oopif["is_oopif"].tolist() == [True]
    assert oopif["parent_frame_id"].iloc[0] == ids["main"]
    assert oopif["parent_session_id"].iloc[0] == sup.page_session_id
    navigated = frames[frames["event"] == "navigated"].set_index("frame_id")
    assert navigated.loc[ids["oopif"], "origin"] == site.site_b
    assert navigated.loc[ids["srcdoc"], "origin"] == site.site_a

    commands = trace.commands()
    evaluate = commands[commands["method"] == "Runtime.evaluate"]
    assert len(evaluate) >= 3
    assert (evaluate["latency_ms"] > 0).all() and evaluate["ok"].all()
    navigate = commands[commands["method"] == "Page.navigate"]
    assert navigate["params"].map(json.loads).map(lambda p: p["url"]).tolist() == [
        site.url("/two-site")]
    assert (commands["method"] == "Page.handleJavaScriptDialog").sum() == 3

    events = trace.events()
    assert len(events) == len(trace.records)
    assert dtypes(events) == DTYPES["events"]
    assert_round_trip(trace, tmp_path / "run.parquet")
