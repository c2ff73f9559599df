"""Hostile and broken input: what the wire, the page or the caller can throw at cdpnb.

Frames a browser never sends (too big, not UTF-8) come from the fault-injecting proxy
in front of a real Chromium; everything else is real page text or pure input.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import logging
import math
import socket
import warnings
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from cdp_proxy import CDPProxy
from conftest import settle

import cdpnb
import cdpnb.backends.chromium as chromium_mod
from cdpnb.backends.chromium import CHROMIUM_FLAGS
from cdpnb.probes import ScenarioServer
from cdpnb.protocol import CDPConnection, Event, Fault, TransportFault
from cdpnb.protocol.js_values import MAX_DEPTH
from cdpnb.state import BrowserState, fold
from cdpnb.trace import Recorder, Trace
from cdpnb.transport import wire

# -- the wire ------------------------------------------------------------------------------


@pytest.fixture
async def proxy(chromium: cdpnb.Backend) -> AsyncIterator[CDPProxy]:
    p = await CDPProxy(chromium.cdp_url).start()
    yield p
    await p.close()


async def _fault_then_recovery(sup: cdpnb.Supervisor, kind: str) -> None:
    await settle(sup, lambda s: sup.stats().get(f"fault:{kind}") == 1)
    # The refused frame ended that connection (RFC 6455 allows nothing else); the
    # supervisor reconnects to the same page and works.
    await settle(sup, lambda s: sup.connected and sup.reconnects == 1, timeout=10)
    assert await sup.evaluate("6 * 7") == 42


@pytest.mark.browser
@pytest.mark.logs_warnings  # a peer sending bad frames is worth a warning
async def test_an_oversized_message_is_reported_and_the_supervisor_recovers(
        proxy: CDPProxy, site: ScenarioServer, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wire, "MAX_MESSAGE_BYTES", 2**20)
    trace = tmp_path / "big.jsonl"
    async with await cdpnb.Supervisor.start(proxy.url, record=trace) as sup:
        await sup.navigate(site.url("/blank"))
        big = json.dumps({"method": "Runtime.consoleAPICalled",
                          "params": {"type": "log", "args": [], "pad": "x" * (2**21)}})
        await proxy.inject(big)
        await _fault_then_recovery(sup, "oversized-message")
        assert "larger than the 1 MiB limit" in (sup._core.last_disconnect_reason or "")
    faults = [r for r in Trace.load(trace).records if isinstance(r, Fault)]
    assert [f.kind for f in faults] == ["oversized-message"]


@pytest.mark.browser
@pytest.mark.logs_warnings  # a peer sending bad frames is worth a warning
async def test_a_text_frame_that_is_not_utf8_is_reported(
        proxy: CDPProxy, site: ScenarioServer) -> None:
    async with await cdpnb.Supervisor.start(proxy.url) as sup:
        await sup.navigate(site.url("/blank"))
        for client, _ in proxy.connections:
            await client.send(b'{"method": "Page.x\xff\xfe", "params": {}}', text=True)
        await _fault_then_recovery(sup, "invalid-utf8")


def test_transport_faults_travel_the_frame_stream_to_the_parser() -> None:
    conn = CDPConnection()
    fault = conn.receive(TransportFault("invalid-utf8", "byte 3", b"ab\xff"))
    assert fault.kind == "invalid-utf8" and fault.raw == "ab\\xff"


# -- page-controlled text ---------------------------------------------------------------


@pytest.mark.browser
async def test_lone_surrogates_in_an_answer_are_sent(sup: cdpnb.Supervisor,
                                                     site: ScenarioServer) -> None:
    # A Python str may hold a lone surrogate, which has no UTF-8 form: the command goes
    # out with JSON escapes instead of failing in the socket. (Chromium 156 itself puts
    # U+FFFD in place of lone surrogates, both in what it sends and what it reads.)
    await sup.navigate(site.url("/blank"))
    await sup.evaluate("setTimeout(() => { window.r = prompt('odd \\ud800 text') }, 0)")
    dialog = await sup.wait_for_dialog(timeout=5)
    assert dialog.message == "odd \ufffd text"
    await sup.respond("accept", prompt_text="a\udfffb", dialog_id=dialog.id)
    assert await sup.evaluate("window.r") == "a\ufffdb"


@pytest.mark.browser
async def test_huge_and_deep_page_values(sup: cdpnb.Supervisor, site: ScenarioServer) -> None:
    await sup.navigate(site.url("/blank"))
    text = await sup.evaluate("'x'.repeat(5 * 1024 * 1024)", timeout=20)
    assert len(text) == 5 * 1024 * 1024
    nest = "(() => {{ let o = 1; for (let i = 0; i < {}; i++) o = [o]; return o }})()"
    shallow = await sup.evaluate(nest.format(MAX_DEPTH - 1))
    for _ in range(MAX_DEPTH - 1):
        shallow = shallow[0]
    assert shallow == 1
    # Deeper than that is described (with a handle), never a failed command.
    deep = await sup.evaluate(nest.format(5000))
    assert isinstance(deep, cdpnb.RemoteObject) and deep.subtype == "array"
    assert await sup.evaluate_on(deep, "a => a.length") == 1


# -- reducers and recorder ------------------------------------------------------------------


def _attached(fid: str, parent: str | None) -> Event:
    return Event("Page.frameAttached", {"frameId": fid, "parentFrameId": parent}, None, 0, 0)


def test_a_frame_that_would_be_its_own_ancestor_is_refused() -> None:
    state = BrowserState()
    for message in (_attached("A", None), _attached("B", "A"), _attached("C", "B")):
        state = fold(state, message).state
    navigated = Event("Page.frameNavigated", {"frame": {"id": "A", "parentId": "C",
                                                        "url": "x"}}, None, 0, 0)
    after = fold(state, navigated).state
    for frame in after.frames:  # every parent chain ends: no frame lost in a loop
        seen = {frame}
        parent = after.frames[frame].parent_frame_id
        while parent in after.frames:
            assert parent not in seen, after.frames
            seen.add(parent)
            parent = after.frames[parent].parent_frame_id
    looped = fold(state, _attached("Z", "Z")).state
    assert "Z" not in looped.frames
    assert looped.counters["malformed:Page.frameAttached"] == 1


@pytest.mark.logs_warnings  # a message the trace could not hold is worth an error
def test_a_message_too_deep_to_write_leaves_a_fault_line(tmp_path: Path) -> None:
    path = tmp_path / "deep.jsonl"
    recorder = Recorder(path)
    deep: object = 1
    # Deeper than any encoder goes on every Python claimed (3.13's C encoders take
    # 2,000 levels where 3.11's stop at the recursion limit; none takes 100,000).
    for _ in range(100_000):
        deep = [deep]
    recorder(Event("Runtime.consoleAPICalled", {"args": deep}, None, 1.0, 1.0))
    recorder(Event("Runtime.consoleAPICalled", {"args": [1]}, None, 2.0, 2.0))
    recorder.close()
    assert recorder.unrecordable == 1
    lines = path.read_text().splitlines()
    assert len(lines) == 4  # header, fault, the next message, footer
    assert "unrecordable" in lines[1] and "Runtime.consoleAPICalled" in lines[1]
    trace = Trace.load(path)
    assert len(trace.messages) == 1
    assert not trace.complete  # one message could not be kept, and the trace says so


def test_a_gzip_trace_cut_mid_line_keeps_every_whole_line(tmp_path: Path) -> None:
    path = tmp_path / "cut.jsonl.gz"
    recorder = Recorder(path)
    for i in range(50):
        recorder(Event("Runtime.consoleAPICalled", {"i": i}, None, float(i), float(i)))
    # What a crash leaves: every line sync-flushed (each ends in an empty stored block,
    # 5 bytes), no footer; 7 bytes off cuts into the last line.
    data = path.read_bytes()
    cut = tmp_path / "crashed.jsonl.gz"
    cut.write_bytes(data[:-7])
    with pytest.warns(Warning):
        trace = Trace.load(cut)
    assert len(trace.messages) >= 49
    recorder.close()
    assert gzip.decompress(path.read_bytes()).count(b"\n") == 52


def test_lone_surrogates_in_a_trace_header_compare_and_write_parquet(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A backend name or a meta value may come from a page's JS: a lone surrogate,
    # which the trace's ASCII lines keep but UTF-8 (Arrow, Parquet, a terminal) cannot.
    odd = tmp_path / "odd.jsonl"
    Recorder(odd, backend={"kind": "chro\ud800me", "version": "1\udfff"},
             meta={"note": "\ud800", "\udc00key": ["\ud83d"]}).close()
    plain = tmp_path / "plain.jsonl"
    Recorder(plain, backend={"kind": "chromium"}).close()
    trace = Trace.load(odd)
    assert trace.header["meta"] == {"note": "\ud800", "\udc00key": ["\ud83d"]}

    back = Trace.from_parquet(trace.to_parquet(tmp_path / "odd.parquet"))
    assert back.header == trace.header  # escaped in the file, the same strings read back

    from cdpnb import cli

    assert cli.main(["compare", str(odd), str(plain)]) == 0
    out = capsys.readouterr().out
    assert "chro\\ud800me" in out and "1\\udfff" in out
    out.encode()  # valid UTF-8 throughout
    table = cdpnb.compare(trace, back)
    assert table.loc[("trace", "backend")].tolist() == ["chro\\ud800me"] * 2
    trace.path = None  # a trace made here is named by its backend
    named = cdpnb.compare(trace, Trace.load(plain)).columns
    assert named[0] == "chro\\ud800me"


# -- security ----------------------------------------------------------------------------


@pytest.mark.browser
@pytest.mark.parametrize("kind", ["chromium", "headless-shell", "node"])
async def test_debugging_listens_on_loopback_only(kind: str) -> None:
    async with cdpnb.launch(kind) as backend:
        process = psutil.Process(backend.pid)
        listening = [c.laddr for p in (process, *process.children(recursive=True))
                     for c in p.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN]
        assert listening, "found no listening socket"
        assert {addr.ip for addr in listening} == {"127.0.0.1"}, listening
        assert backend.cdp_url.startswith("ws://127.0.0.1:")
        assert {a.port for a in listening} >= {int(backend.cdp_url.split(":")[2].split("/")[0])}


WEBRTC = """(async () => {
  const pc = new RTCPeerConnection({iceServers: []});
  pc.createDataChannel('probe');
  const gathered = new Promise(done => { pc.onicegatheringstatechange = () => {
    if (pc.iceGatheringState === 'complete') done(); }; });
  await pc.setLocalDescription(await pc.createOffer());
  await Promise.race([gathered, new Promise(done => setTimeout(done, 3000))]);
  window.__pc = pc;  // kept open while the sockets are looked at
  return pc.localDescription.sdp.split('\\r\\n').filter(l => l.startsWith('a=candidate'));
})()"""

LOOPBACK = {"127.0.0.1", "::1"}
UNSPECIFIED = {"0.0.0.0", "::"}


def _sockets(pid: int) -> list[tuple[str, str, str, bool]]:
    """(process type, 'tcp'/'udp', local address, listening or connected) of every inet
    socket of the browser and its helpers."""
    found = []
    for proc in (psutil.Process(pid), *psutil.Process(pid).children(recursive=True)):
        role = next((a.split("=", 1)[1] for a in proc.cmdline()
                     if a.startswith("--utility-sub-type=")), None) or next(
            (a.split("=", 1)[1] for a in proc.cmdline() if a.startswith("--type=")), "browser")
        for c in proc.net_connections(kind="inet"):
            kind = "udp" if c.type == socket.SOCK_DGRAM else "tcp"
            found.append((role, kind, c.laddr.ip, c.status == psutil.CONN_LISTEN or bool(c.raddr)))
    return found


async def _webrtc_sockets(kind: str, site: ScenarioServer,
                          args: tuple[str, ...] = ()) -> tuple[list[str], list[Any]]:
    async with cdpnb.launch(kind, args=args) as backend:
        sup = await cdpnb.Supervisor.start(backend)
        try:
            await sup.navigate(site.url("/blank"))
            candidates = await sup.evaluate(WEBRTC, timeout=10)
            await asyncio.sleep(0.3)
            return candidates, _sockets(backend.pid)
        finally:
            await sup.stop()


@pytest.mark.browser
@pytest.mark.parametrize("kind", ["chromium", "headless-shell"])
async def test_a_page_peer_connection_announces_and_joins_nothing(
        kind: str, site: ScenarioServer, monkeypatch: pytest.MonkeyPatch) -> None:
    candidates, sockets = await _webrtc_sockets(kind, site)
    assert candidates == []  # no interface named, not even as an mDNS name
    outside = [s for s in sockets if s[2] not in LOOPBACK]
    # Nothing listens, connects, joins a multicast group or binds a non-loopback address.
    assert [s for s in outside if s[3] or s[2] not in UNSPECIFIED] == [], outside
    # What the flags cannot prevent on 156 (measured, and written next to the flags):
    # the network service's two unconnected UDP sockets on the unspecified addresses.
    assert {(role, proto) for role, proto, _, _ in outside} <= {
        ("network.mojom.NetworkService", "udp")}, outside
    assert len(outside) <= 2, outside

    # The control: the same page without the flags names the interfaces and joins mDNS.
    bare = tuple(f for f in CHROMIUM_FLAGS if "webrtc" not in f.lower())
    monkeypatch.setattr(chromium_mod, "CHROMIUM_FLAGS", bare)
    candidates, sockets = await _webrtc_sockets(kind, site)
    assert len(candidates) >= 1 and all(".local " in c for c in candidates), candidates
    assert "224.0.0.251" in {s[2] for s in sockets}


@pytest.mark.browser
async def test_credentials_in_a_cdp_url_appear_nowhere(
        proxy: CDPProxy, site: ScenarioServer, tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    url = proxy.url.replace("ws://", "ws://ada:hunter2@", 1)
    trace = tmp_path / "creds.jsonl"
    caplog.set_level(logging.DEBUG, logger="cdpnb")
    sup = await cdpnb.Supervisor.start(url, record=trace)
    try:
        await sup.navigate(site.url("/blank"))
        await proxy.drop()  # a reconnect logs the URL again
        await settle(sup, lambda s: sup.reconnects == 1 and sup.connected, timeout=10)
        shown = [repr(sup), str(sup.snapshot().to_dict()), sup.snapshot()._repr_html_(),
                 sup.view().header.value]
        with pytest.raises(cdpnb.CDPError) as failed:
            await sup.cdp("No.suchMethod")
        shown.append(str(failed.value))
    finally:
        await sup.stop()
    shown += [trace.read_text(), caplog.text]
    for text in shown:
        assert "hunter2" not in text
    assert "ada:" not in trace.read_text()


@pytest.mark.browser
async def test_the_bridge_host_is_never_looked_up_or_connected_to(
        site: ScenarioServer, tmp_path: Path) -> None:
    # Chromium's own network log lists every host it resolves and every connection it
    # opens. A fetch to another .invalid host is the control: it is looked up.
    netlog = tmp_path / "netlog.json"
    async with cdpnb.launch("chromium", args=[f"--log-net-log={netlog}"]) as backend:
        sup = await cdpnb.Supervisor.start(backend, bridge=True, policy="auto_accept",
                                           reconnect_attempts=0)
        await sup.navigate(site.url("/two-site"))
        await settle(sup, lambda s: any(f.is_oopif for f in s.frames.values()))
        oopif = next(f.frame_id for f in sup.state.frames.values() if f.is_oopif)
        for frame_id in (None, oopif):
            assert await sup.evaluate("prompt('bridged?', 'yes')", frame_id=frame_id,
                                      timeout=10) == "yes"
        assert {d.via for d in sup.state.recent_dialogs} == {"bridge"}
        await sup.evaluate("fetch('http://control-host.invalid/').catch(() => 0)")
        await asyncio.sleep(0.5)
        # The browser closes: its log ends. Its page may be told gone before stop() (by
        # timing: beside two CPU-bound processes it was), and a raw Browser.close is
        # somebody else's close to the supervisor: that advice is not this test's.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", cdpnb.CdpnbWarning)
            with contextlib.suppress(cdpnb.CdpnbError):
                await sup.cdp("Browser.close", browser=True, timeout=5)
            await sup.stop()
        for _ in range(100):
            if not backend.running:
                break
            await asyncio.sleep(0.05)
    network = _network_events(netlog.read_text())
    assert any("control-host.invalid" in e for e in network), "the log shows no lookups"
    assert not [e for e in network if "cdpnb-bridge" in e]


def _network_events(netlog: str) -> list[str]:
    """Host resolution, DNS, socket and stream events of a Chromium net log, as text."""
    data = json.loads(netlog)
    names = {v: k for k, v in data["constants"]["logEventTypes"].items()}
    wanted = ("HOST_RESOLVER", "DNS_", "SOCKET", "TCP_", "HTTP_STREAM", "SSL_")
    return [json.dumps(event.get("params")) for event in data["events"]
            if names.get(event.get("type"), "").startswith(wanted)]


# -- bad arguments ---------------------------------------------------------------------------


@pytest.mark.browser
async def test_every_public_call_names_its_bad_argument(
        sup: cdpnb.Supervisor, chromium: cdpnb.Backend, tmp_path: Path) -> None:
    url = chromium.cdp_url
    start = cdpnb.Supervisor.start
    cases: list[tuple[str, Any]] = [
        ("url", lambda: start(42)),  # type: ignore[arg-type]
        ("policy", lambda: start(url, policy="sometimes")),  # type: ignore[arg-type]
        ("dialog_timeout_s", lambda: start(url, dialog_timeout_s=-1)),
        ("command_timeout_s", lambda: start(url, command_timeout_s=math.nan)),
        ("reconnect_attempts", lambda: start(url, reconnect_attempts=-2)),
        ("bridge", lambda: start(url, bridge="maybe")),  # type: ignore[arg-type]
        ("record", lambda: start(url, record=tmp_path)),
        ("redact", lambda: start(url, redact=True)),
        ("url", lambda: sup.navigate("")),
        ("timeout", lambda: sup.navigate("about:blank", timeout=0)),
        ("action", lambda: sup.respond("perhaps")),  # type: ignore[arg-type]
        ("prompt_text", lambda: sup.respond("accept", prompt_text=5)),  # type: ignore[arg-type]
        ("dialog_id", lambda: sup.respond("accept", dialog_id=7)),  # type: ignore[arg-type]
        ("timeout", lambda: sup.wait_for_dialog(timeout="soon")),  # type: ignore[arg-type]
        ("predicate", lambda: sup.wait_for(42)),  # type: ignore[arg-type]
        ("method", lambda: sup.cdp("nodot")),
        ("params", lambda: sup.cdp("Runtime.evaluate", "1")),  # type: ignore[arg-type]
        ("frame_id", lambda: sup.cdp("Runtime.evaluate", frame_id=3)),  # type: ignore[arg-type]
        ("session_id", lambda: sup.cdp("Runtime.evaluate", session_id=3)),  # type: ignore[arg-type]
        ("expression", lambda: sup.evaluate(42)),  # type: ignore[arg-type]
        ("timeout", lambda: sup.evaluate("1", timeout=-5)),
        ("await_promise", lambda: sup.evaluate("1", await_promise=None)),  # type: ignore[arg-type]
        ("frame_id", lambda: sup.accessibility(frame_id=3)),  # type: ignore[arg-type]
        ("selector", lambda: sup.click(5)),  # type: ignore[arg-type]
        ("ref", lambda: sup.click(ref="#b")),
        ("ref", lambda: sup.evaluate_on("no colon", "el => el")),
        ("function", lambda: sup.evaluate_on("button:Go", 5)),  # type: ignore[arg-type]
        ("method", lambda: sup.annotate("nodot")),
        ("params", lambda: sup.annotate("my.note", [1])),  # type: ignore[arg-type]
    ]
    for name, call in cases:
        with pytest.raises((TypeError, ValueError, LookupError, OSError)) as caught:
            await call()
        assert name in str(caught.value), (name, caught.value)
    with pytest.raises(ValueError, match="kind"):
        cdpnb.launch("netscape")
    with pytest.raises(TypeError, match="args"):
        cdpnb.launch("chromium", args="--flag")
    with pytest.raises(ValueError, match="refresh_s"):
        sup.view(refresh_s=0)
    with pytest.raises(FileNotFoundError, match="nothing-here"):
        cdpnb.Trace.load(tmp_path / "nothing-here.jsonl")
