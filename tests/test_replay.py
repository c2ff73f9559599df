"""The replay endpoint: a recorded run served as CDP drives an unmodified supervisor."""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import websockets
import websockets.sync.client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cdpnb
from cdpnb.playback.backend import replay
from cdpnb.playback.script import ReplayScript
from cdpnb.probes import ScenarioServer
from cdpnb.protocol import Command, Event, Note, Reply
from cdpnb.trace import Trace

TIMES = {"opened_at", "closed_at", "at"}


def _timeless(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: _timeless(v) for k, v in data.items() if k not in TIMES}
    if isinstance(data, list):
        return [_timeless(v) for v in data]
    return data


async def _scenario(target: Any, url: str, record: Path | None = None) -> dict[str, Any]:
    """Open the two-site page, answer a dialog in each frame, return what was seen."""
    sup = await cdpnb.Supervisor.start(target, record=record, dialog_timeout_s=30)
    try:
        await sup.navigate(url)
        deadline = time.monotonic() + 5
        while not any(c.is_oopif for c in sup.frame_tree().children):
            assert time.monotonic() < deadline, "no OOPIF appeared"
            await asyncio.sleep(0.01)
        tree = sup.frame_tree()
        frames = {"main": tree.top.frame_id if tree.top else "",
                  "oopif": next(c.frame_id for c in tree.children if c.is_oopif)}
        answers = {}
        for name, call, text in (("main", "confirm('sure?')", None),
                                 ("oopif", "prompt('name?', 'd')", "ada")):
            await sup.evaluate(f"setTimeout(() => {{ window.__r = {call}; }}, 0); 0",
                               frame_id=frames[name])
            dialog = await sup.wait_for_dialog(timeout=5)
            await sup.respond("accept", prompt_text=text, dialog_id=dialog.id)
            answers[name] = await sup.evaluate("window.__r", frame_id=frames[name])
        snapshot = sup.snapshot().to_dict()
    finally:
        await sup.stop()
    return {"answers": answers, "snapshot": snapshot, "final": sup.snapshot().to_dict()}


@pytest.fixture(scope="module")
def recorded(chromium: cdpnb.Backend, site: ScenarioServer,
             tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], str]:
    path = tmp_path_factory.mktemp("replay") / "two-site.jsonl"
    url = site.url("/two-site")
    live = asyncio.run(_scenario(chromium, url, path))
    return path, live, url


async def test_replay_drives_an_unmodified_supervisor_to_the_same_snapshot(
        recorded: tuple[Path, dict[str, Any], str]) -> None:
    path, live, url = recorded
    trace = Trace.load(path)
    async with replay(trace) as backend:
        replayed = await _scenario(backend, url)
        assert not backend.unmatched
    assert replayed["answers"] == live["answers"] == {"main": True, "oopif": "ada"}
    assert _timeless(replayed["snapshot"]) == _timeless(live["snapshot"])
    assert _timeless(replayed["final"]) == _timeless(live["final"])
    oopif = [c for c in live["snapshot"]["frame_tree"]["children"] if c["is_oopif"]]
    assert oopif and oopif[0]["session_id"]


async def test_a_replayed_run_records_the_same_conversation(
        recorded: tuple[Path, dict[str, Any], str], tmp_path: Path) -> None:
    path, _, url = recorded
    original = Trace.load(path)
    async with replay(original) as backend:
        await _scenario(backend, url, tmp_path / "again.jsonl")
    again = Trace.load(tmp_path / "again.jsonl")

    def methods(trace: Trace) -> list[tuple[str, str, str]]:
        return [(type(r).__name__, r.method, r.session_id or "") for r in trace.messages
                if not isinstance(r, Note)]

    assert sorted(methods(again)) == sorted(methods(original))
    assert again.backend["kind"] == "replay"
    assert again.backend["recorded_kind"] == "chromium"


async def test_a_command_the_recording_cannot_answer_is_a_clear_cdp_error(
        recorded: tuple[Path, dict[str, Any], str]) -> None:
    path, _, _ = recorded
    async with replay(path) as backend:
        sup = await cdpnb.Supervisor.start(backend.http_url)  # via /json/version
        try:
            with pytest.raises(cdpnb.CDPError, match="recording has no .*reply for "
                                                     "DOM.getDocument") as caught:
                await sup.cdp("DOM.getDocument", {"depth": 1})
            assert caught.value.code == -32000
            assert len(backend.unmatched) == 1
        finally:
            await sup.stop()


def test_replay_works_from_blocking_code(recorded: tuple[Path, dict[str, Any], str]) -> None:
    path, _, url = recorded
    with replay(path) as backend:
        sup = cdpnb.sync.Supervisor.start(backend.cdp_url)
        try:
            sup.navigate(url)
            assert sup.snapshot().frame_tree.top is not None
            assert backend.version.startswith("Chrome/")
        finally:
            sup.stop()


def _paced_messages() -> list[Any]:
    """A connection whose browser says three things 0.2 s apart after one command."""
    return [
        Note("cdpnb.connected", {}, None, 0.0, 0.0),
        Command(1, "Runtime.enable", {}, None, 0.0, 10.0),
        *(Event("Runtime.consoleAPICalled", {"type": "log", "args": [{"value": n}]},
                None, 0.0, 10.0 + 0.2 * n) for n in range(3)),
        Reply(1, "Runtime.enable", {}, None, {}, 0.0, 10.5),
    ]


async def _event_times(url: str) -> tuple[list[float], dict[str, Any]]:
    async with websockets.connect(url) as ws:
        began = time.monotonic()
        await ws.send(json.dumps({"id": 7, "method": "Runtime.enable"}))
        times, reply = [], {}
        while True:
            msg = json.loads(await ws.recv())
            if "id" in msg:
                reply = msg
                break
            times.append(time.monotonic() - began)
        return times, reply


@pytest.mark.parametrize("speed", [None, 1.0])
async def test_events_come_at_recorded_pace_or_as_fast_as_possible(speed: float | None) -> None:
    trace = Trace({"cdpnb_trace": 1}, _paced_messages())
    async with replay(trace, speed=speed) as backend:
        times, reply = await _event_times(backend.cdp_url)
    assert reply == {"id": 7, "result": {}}  # the client's id, not the recorded one
    assert len(times) == 3
    if speed is None:
        assert times[-1] < 0.15
    else:
        assert 0.35 < times[-1] < 1.0
        assert min(b - a for a, b in itertools.pairwise(times)) > 0.15


async def test_events_wait_for_the_command_that_preceded_them() -> None:
    trace = Trace({"cdpnb_trace": 1}, _paced_messages())
    async with replay(trace, stall_s=5) as backend, websockets.connect(backend.cdp_url) as ws:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(ws.recv(), 0.3)  # nothing before the gate
        await ws.send(json.dumps({"id": 1, "method": "Runtime.enable"}))
        first = json.loads(await asyncio.wait_for(ws.recv(), 2))
        assert first["method"] == "Runtime.consoleAPICalled"


async def test_each_recorded_connection_plays_on_its_own_socket() -> None:
    messages = [
        Note("cdpnb.connected", {}, None, 0.0, 0.0),
        Event("Inspector.one", {}, None, 0.0, 0.1),
        Note("cdpnb.disconnected", {"reason": "dropped"}, None, 0.0, 0.2),
        Note("cdpnb.connected", {}, None, 0.0, 0.3),
        Event("Inspector.two", {}, None, 0.0, 0.4),
    ]
    assert [len(s) for s in ReplayScript.connections(messages)] == [1, 1]
    async with replay(Trace({"cdpnb_trace": 1}, messages)) as backend:
        async with websockets.connect(backend.cdp_url) as ws:
            assert json.loads(await ws.recv())["method"] == "Inspector.one"
            with pytest.raises(websockets.ConnectionClosed):
                await asyncio.wait_for(ws.recv(), 2)  # lost where the recording lost it
            assert ws.close_code == 1011
        async with websockets.connect(backend.cdp_url) as ws:
            assert json.loads(await ws.recv())["method"] == "Inspector.two"


def test_bad_arguments_name_themselves(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="takes a Trace or a path"):
        replay(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="speed must be None"):
        replay(Trace({"cdpnb_trace": 1}, []), speed=0)
    with pytest.raises(FileNotFoundError):
        replay(tmp_path / "missing.jsonl")


# -- odd input: the endpoint answers and stays up ------------------------------------------


def _replies_to(ws: Any, frames: list[str | bytes]) -> list[dict[str, Any]]:
    """Send each frame and read the one reply it gets (a sync websockets client)."""
    replies = []
    for frame in frames:
        ws.send(frame, text=isinstance(frame, str))
        replies.append(json.loads(ws.recv(timeout=5)))
    return replies


def _answers_the_recorded_command(ws: Any) -> None:
    ws.send(json.dumps({"id": 99, "method": "Runtime.enable"}))
    seen = [json.loads(ws.recv(timeout=5)) for _ in range(4)]
    assert [m.get("method") for m in seen[:3]] == ["Runtime.consoleAPICalled"] * 3
    assert seen[3] == {"id": 99, "result": {}}


def test_odd_commands_get_error_replies_and_the_connection_stays_up() -> None:
    trace = Trace({"cdpnb_trace": 1}, _paced_messages())
    frames: list[str | bytes] = [
        '{"id": 1, "method": "Runtime.evaluate", "params": [1, 2]}',
        '{"id": 2, "method": "Runtime.evaluate", "sessionId": ["S"]}',
        '{"id": "3", "method": "Runtime.evaluate"}',
        "not json at all",
        b"\xff\xfe binary, not UTF-8",
        "[" * 50_000 + "]" * 50_000,
        '{"id": 4, "method": "Runtime.evaluate", "params": {"deep": ' + "[" * 900 + "]" * 900
        + "}}",
    ]
    with replay(trace) as backend, websockets.sync.client.connect(backend.cdp_url) as ws:
        replies = _replies_to(ws, frames)
        assert [r["error"]["code"] for r in replies] == [-32602, -32600, -32600, -32700,
                                                          -32700, -32700, -32000]
        assert [r.get("id") for r in replies] == [1, 2, None, None, None, None, 4]
        assert "params must be an object" in replies[0]["error"]["message"]
        assert "'sessionId'" in replies[1]["error"]["message"]
        _answers_the_recorded_command(ws)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=3),
    max_leaves=12)
_command_like = st.fixed_dictionaries(
    {}, optional={"id": _json | st.integers(), "method": _json | st.sampled_from(
        ["Runtime.evaluate", "Page.navigate", "Runtime.enable", ""]),
        "params": _json, "sessionId": _json})
# Raw text frames without lone surrogates (no UTF-8 form: a client cannot send them);
# JSON frames carry them escaped, which the endpoint must echo back without dying.
_raw_text = st.text(st.characters(exclude_categories=["Cs"]), max_size=30)
_frames = st.lists(_command_like.map(json.dumps) | _json.map(json.dumps) | _raw_text
                   | st.binary(max_size=30), min_size=1, max_size=6)


@pytest.fixture(scope="module")
def paced_endpoint() -> Iterator[str]:
    # A long stall: the recorded events wait for the recorded command, whatever comes first.
    with replay(Trace({"cdpnb_trace": 1}, _paced_messages()), stall_s=60) as backend:
        yield backend.cdp_url


@given(frames=_frames)
@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_random_frames_get_one_reply_each_and_the_endpoint_stays_up(
        paced_endpoint: str, frames: list[str | bytes]) -> None:
    with websockets.sync.client.connect(paced_endpoint) as ws:
        for frame in frames:
            ws.send(frame, text=isinstance(frame, str))
            try:
                sent = json.loads(frame)
            except ValueError:
                sent = None
            if isinstance(sent, dict) and sent.get("method") == "Runtime.enable" \
                    and isinstance(sent.get("id"), int) and not isinstance(sent["id"], bool) \
                    and sent.get("params") in (None, {}) and "sessionId" not in sent:
                return  # the recorded command itself: answered as recorded, tested above
            reply = json.loads(ws.recv(timeout=5))
            assert set(reply) <= {"id", "error", "sessionId"}, reply
            assert isinstance(reply["error"]["code"], int)
            assert isinstance(reply["error"]["message"], str)
            if isinstance(sent, dict) and "id" in reply:
                assert reply["id"] == sent["id"]
        _answers_the_recorded_command(ws)


@pytest.mark.browser
async def test_a_recorded_lone_surrogate_is_replayed(tmp_path: Path) -> None:
    # Node's inspector sends a JS string's lone surrogate as a JSON escape (measured on
    # node 20; Chromium 156 sends U+FFFD instead), so a real recording holds one. The
    # replay endpoint must send it on as the live sender would, not die of it.
    path = tmp_path / "node.jsonl"
    async with cdpnb.launch("node") as node:
        sup = await cdpnb.Supervisor.start(node, record=path)
        live = await sup.evaluate("'x\\udfffy'")
        await sup.cdp("Runtime.evaluate", {"expression": "console.log('a\\ud800b')"})
        await sup.stop()
    assert live == "x\udfffy"
    trace = Trace.load(path)
    assert any("a\ud800b" in json.dumps(r.params, ensure_ascii=False)
               for r in trace.messages if isinstance(r, Event))
    async with replay(trace) as backend:
        sup = await cdpnb.Supervisor.start(backend)
        try:
            assert await sup.evaluate("'x\\udfffy'") == "x\udfffy"
            await sup.cdp("Runtime.evaluate", {"expression": "console.log('a\\ud800b')"})
            assert sup.connected and sup.reconnects == 0
        finally:
            await sup.stop()
        assert not backend.unmatched
