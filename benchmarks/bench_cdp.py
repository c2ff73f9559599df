"""cdpnb's own figures against the raw limit, side by side in one run.

Every figure is a ratio of clients measured on the same browser and page (or the same
stream), interleaved round by round, so machine load hits them alike. The round trip
and the dialog round trip against the peer libraries are ``bench_contenders.py``'s
(every client in a process of its own, woken alike); here:

- **dialog detection**: ``alert()`` sent → the dialog in cdpnb's state vs → the
  ``Page.javascriptDialogOpening`` event read by a bare client (both listening to the
  same page; cdpnb answers);
- **bridge**: a ``prompt()`` round trip timed inside page JS, native vs bridged;
- **event ingest**: a loopback server (its own process) streams events as fast as it
  can; messages/s taken in by cdpnb's core (parse, record to a trace in each format,
  fold) vs a bare ``websockets`` + ``json.loads`` loop;
- **attach**: ``Supervisor.start`` on a running browser (connect → ready), and
  ``sup.snapshot()`` on a page with 300 frames.

    .venv/bin/python benchmarks/bench_cdp.py [--rounds 300] [--out FILE]

Prints a table and writes ``benchmarks/results/cdp.json``. Not a test: speed is
measured here, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import os
import platform
import random
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from websockets.asyncio.client import ClientConnection, connect

import cdpnb
from cdpnb.probes import ScenarioServer
from cdpnb.protocol import Event
from cdpnb.session.core import Core, settle
from cdpnb.state import BrowserState
from cdpnb.testing.busy import busy_processes
from cdpnb.trace import Recorder

RESULTS = Path(__file__).resolve().parent / "results" / "cdp.json"


class BareClient:
    """The raw limit: one websockets connection to a page, json in and out."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.next_id = 0
        self.waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.on_event: Callable[[str, float], None] = lambda method, at: None
        self.reader = asyncio.ensure_future(self._read())

    @classmethod
    async def open(cls, url: str) -> BareClient:
        return cls(await connect(url, max_size=None, compression=None, ping_interval=None))

    async def _read(self) -> None:
        async for frame in self.ws:
            at = time.perf_counter()
            message = json.loads(frame)
            if "id" in message:
                future = self.waiting.pop(message["id"], None)
                if future is not None:
                    future.set_result(message)
            else:
                self.on_event(message.get("method", ""), at)

    async def send(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.next_id += 1
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.waiting[self.next_id] = future
        await self.ws.send(json.dumps({"id": self.next_id, "method": method,
                                       "params": params or {}}))
        return await future

    async def close(self) -> None:
        await self.ws.close()
        self.reader.cancel()


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


# -- dialog detection ---------------------------------------------------------------------


async def dialog_detection(sup: cdpnb.Supervisor, bare: BareClient,
                           rounds: int) -> dict[str, Any]:
    await bare.send("Page.enable")
    seen_bare: list[float] = []
    bare.on_event = lambda method, at: (seen_bare.append(at)
                                        if method == "Page.javascriptDialogOpening" else None)
    to_cdpnb: list[float] = []
    to_bare: list[float] = []
    for i in range(rounds):
        mark = sup.state.dialog_seq
        seen_cdpnb: list[float] = []

        def opened(state: BrowserState, mark: int = mark,
                   seen: list[float] = seen_cdpnb) -> bool:
            # Runs on cdpnb's engine thread as each message is folded: the moment the
            # dialog is in the state, i.e. in what sup.snapshot() returns.
            if state.dialog_seq > mark and not seen:
                seen.append(time.perf_counter())
            return bool(seen)

        waiting = asyncio.ensure_future(sup.wait_for(opened, timeout=5))
        await asyncio.sleep(0.005)
        seen_bare.clear()
        sent = time.perf_counter()
        await bare.send("Runtime.evaluate", {"expression": f"setTimeout(() => alert({i}), 0)"})
        await waiting
        for _ in range(5000):  # the bare reader runs on this loop: give it turns
            if seen_bare:
                break
            await asyncio.sleep(0.001)
        to_cdpnb.append(seen_cdpnb[0] - sent)
        to_bare.append(seen_bare[0] - sent)
        await sup.wait_for(lambda s: not s.pending_dialogs, timeout=5)
    bare.on_event = lambda method, at: None
    return {"cdpnb_state_ms": round(median_ms(to_cdpnb), 3),
            "bare_event_ms": round(median_ms(to_bare), 3),
            "ratio_to_bare": round(median_ms(to_cdpnb) / median_ms(to_bare), 3)}


PROMPT_IN_PAGE = ("(() => { const t = performance.now(); prompt('q', 'd'); "
                  "return performance.now() - t })()")


async def bridge_round_trip(backend: cdpnb.Backend, site: ScenarioServer,
                            rounds: int) -> dict[str, Any]:
    native = await cdpnb.Supervisor.start(backend, policy="auto_accept", bridge=False)
    bridged = await cdpnb.Supervisor.start(backend, policy="auto_accept", bridge=True)
    try:
        for sup in (native, bridged):
            await sup.navigate(site.url("/blank"))
        samples: dict[str, list[float]] = {"native": [], "bridge": []}
        for _ in range(rounds):
            for name, sup in random.sample([("native", native), ("bridge", bridged)], 2):
                samples[name].append(await sup.evaluate(PROMPT_IN_PAGE, timeout=10) / 1000)
        via = {d.via for d in bridged.state.recent_dialogs}
        assert via == {"bridge"}, via
    finally:
        await native.stop()
        await bridged.stop()
    return {"native_ms": round(median_ms(samples["native"]), 3),
            "bridge_ms": round(median_ms(samples["bridge"]), 3),
            "ratio_bridge_to_native": round(median_ms(samples["bridge"])
                                            / median_ms(samples["native"]), 3)}


async def attach_and_snapshot(backend: cdpnb.Backend, site: ScenarioServer,
                              rounds: int) -> dict[str, Any]:
    starts = []
    for _ in range(rounds):
        started = time.perf_counter()
        sup = await cdpnb.Supervisor.start(backend)
        starts.append(time.perf_counter() - started)
        await sup.stop()
    sup = await cdpnb.Supervisor.start(backend)
    try:
        await sup.navigate(site.url("/many?n=300"), timeout=60)
        await sup.wait_for(lambda s: len(s.frames) >= 301, timeout=30)
        snaps = [await asyncio.to_thread(lambda: timed_sync(sup.snapshot)) for _ in range(50)]
        snap = sup.snapshot()
        full = [timed_sync(lambda: sup.frame_tree(full=True)) for _ in range(20)]
        frames = len(sup.state.frames)
    finally:
        await sup.stop()
    return {"start_ms": round(median_ms(starts), 2),
            "snapshot_300_frames_ms": round(median_ms(snaps), 3),
            "full_frame_tree_300_frames_ms": round(median_ms(full), 3),
            "frames": frames, "snapshot_children": len(snap.frame_tree.children),
            "snapshot_truncated": snap.frame_tree.truncated}


def timed_sync(call: Callable[[], Any]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


# -- event ingest ------------------------------------------------------------------------

#: Distinct events the ingest stream cycles through.
STREAM_EVENTS = 4096
WORDS = ("fetch", "user", "render", "cache", "miss", "hit", "timeout", "retry", "ok", "id",
         "session", "frame", "layout", "paint", "script", "token", "query", "row", "done")


def stream_events(count: int = STREAM_EVENTS, seed: int = 7) -> list[bytes]:
    """What a busy page's DevTools stream carries, made up but shaped like Chromium's:
    console calls with varied text, numbers and stack frames, and network requests
    and responses with headers and URLs, with times spelt as Chromium spells them
    (epoch milliseconds with an exponent). Varied, so parsing and compression see text
    like a real stream's (one repeated event compressed 10x better than this)."""
    rng = random.Random(seed)
    events = []
    for i in range(count):
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 12)))
        stamp = f"{1.795636643825e12 + i * 13.7 + rng.random():.15e}"
        if i % 3:
            text = json.dumps({"method": "Runtime.consoleAPICalled", "params": {
                "type": rng.choice(("log", "info", "warning")),
                "args": [{"type": "string", "value": f"{words} #{i}"},
                         {"type": "number", "value": rng.randint(0, 10**6),
                          "description": str(rng.randint(0, 10**6))}],
                "executionContextId": 1, "timestamp": 0.0,
                "stackTrace": {"callFrames": [
                    {"functionName": rng.choice(WORDS), "scriptId": str(rng.randint(5, 90)),
                     "url": f"http://127.0.0.1:8000/app/{rng.choice(WORDS)}.js",
                     "lineNumber": rng.randint(0, 900), "columnNumber": rng.randint(0, 80)}
                    for _ in range(rng.randint(1, 3))]}}}, separators=(",", ":"))
        else:
            url = f"http://127.0.0.1:8000/api/{rng.choice(WORDS)}?{rng.choice(WORDS)}={i}"
            text = json.dumps({"method": "Network.requestWillBeSent", "params": {
                "requestId": f"{rng.randint(1000, 9999)}.{i}", "loaderId": f"L{i % 17:030X}",
                "documentURL": "http://127.0.0.1:8000/app", "request": {
                    "url": url, "method": rng.choice(("GET", "POST")), "headers": {
                        "Accept": "*/*", "User-Agent": "Mozilla/5.0 (X11; Linux x86_64)",
                        "sec-ch-ua": '"Chromium";v="156", "Not.A/Brand";v="99"',
                        "Referer": "http://127.0.0.1:8000/app"},
                    "initialPriority": "High", "referrerPolicy": "strict-origin"},
                "timestamp": 0.0, "wallTime": 0.0, "initiator": {"type": "script"},
                "type": "Fetch", "frameId": f"F{i % 5:031X}"}}, separators=(",", ":"))
        # Chromium's spelling of its epoch-millisecond floats (1.795636643825172e+12).
        events.append(text.replace('"timestamp":0.0', f'"timestamp":{stamp}', 1)
                      .replace('"wallTime":0.0', f'"wallTime":{stamp}', 1).encode())
    return events


#: Frames per write of the stream server: the burst a browser's DevTools writes when a
#: page logs in a loop; the kernel hands a reader whatever has arrived.
STREAM_BURST = 64


def _stream_server(port_out: Any, count: int) -> None:
    """A child process: each connection gets ``count`` events (``stream_events`` over
    and over) as fast as the socket takes them. websockets (sans-I/O) does
    the opening handshake; the frames are made once and written in bursts, so the
    server costs next to nothing per message and the figure is the client's (a Python
    server writing frame by frame was itself the limit at 140-190k/s, and how eagerly a
    client read changed its speed)."""
    from websockets.frames import Frame, Opcode
    from websockets.server import ServerProtocol

    frames = [Frame(Opcode.TEXT, event).serialize(mask=False, extensions=[])
              for event in stream_events()]
    bursts = [b"".join(frames[i:i + STREAM_BURST])
              for i in range(0, len(frames) - STREAM_BURST + 1, STREAM_BURST)]
    listener = socket.create_server(("127.0.0.1", 0))
    port_out.send(listener.getsockname()[1])
    while True:
        sock, _ = listener.accept()
        with sock, contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            protocol = ServerProtocol()
            events: list[Any] = []
            while not events:
                data = sock.recv(65536)
                if not data:
                    break
                protocol.receive_data(data)
                events = protocol.events_received()
            if not events:
                continue
            protocol.send_response(protocol.accept(events[0]))
            sock.sendall(b"".join(protocol.data_to_send()))
            for i in range(count // STREAM_BURST):
                sock.sendall(bursts[i % len(bursts)])
            sock.sendall(b"".join(frames[:count % STREAM_BURST]))
            # The client's closing handshake: websockets answers it.
            while data := sock.recv(65536):
                protocol.receive_data(data)
                out = protocol.data_to_send()
                sock.sendall(b"".join(out))
                if b"" in out:  # websockets' end of stream: the server closes
                    break


async def ingest_bare(url: str, count: int) -> float:
    started = time.perf_counter()
    n = 0
    async with connect(url, compression=None, ping_interval=None, max_size=None) as ws:
        async for frame in ws:
            json.loads(frame)
            n += 1
            if n == count:
                break
    return count / (time.perf_counter() - started)


async def ingest_cdpnb(url: str, count: int, record_to: Path | None) -> float:
    core = Core(url, command_timeout_s=5, connect_timeout_s=5)
    recorder = Recorder(record_to) if record_to is not None else None
    if recorder is not None:
        recorder.auto_flush = False  # as the supervisor does: flushed per batch read
    core.recorder = recorder
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    seen = [0]

    def counted(message: object, changes: object) -> None:
        # On the reader thread, as each message is folded (a quick check, nothing more).
        if type(message) is Event:
            seen[0] += 1
            if seen[0] == count:
                settle(done, None)

    core.subscribe(counted, now=True)
    started = time.perf_counter()
    await core.connect()
    await done
    rate = count / (time.perf_counter() - started)
    await core.close()
    if recorder is not None:
        recorder.close()
    return rate


#: The trace formats the recorder writes, by the suffix that picks them.
RECORDED_FORMATS = (".jsonl", ".jsonl.gz", ".jsonl.zst")


async def event_ingest(count: int, rounds: int) -> dict[str, Any]:
    parent, child = multiprocessing.Pipe()
    server = multiprocessing.get_context("spawn").Process(
        target=_stream_server, args=(child, count), daemon=True)
    server.start()
    try:
        url = f"ws://127.0.0.1:{parent.recv()}/devtools/browser/bench"
        rates: dict[str, list[float]] = {"bare": [], "not recording": [],
                                         **{suffix: [] for suffix in RECORDED_FORMATS}}
        with tempfile.TemporaryDirectory() as tmp:
            for i in range(rounds):
                for name in random.sample(list(rates), len(rates)):
                    if name == "bare":
                        rates[name].append(await ingest_bare(url, count))
                    else:
                        trace = Path(tmp) / f"{i}{name}" if name.startswith(".") else None
                        rates[name].append(await ingest_cdpnb(url, count, trace))
    finally:
        server.kill()
        server.join()
    median = {name: statistics.median(r) for name, r in rates.items()}
    bare_rate = median["bare"]
    return {"messages": count, "cdpnb_per_s": round(median[".jsonl"]),
            "cdpnb_not_recording_per_s": round(median["not recording"]),
            "bare_per_s": round(bare_rate), "ratio_to_bare": round(median[".jsonl"] / bare_rate, 3),
            "ratio_not_recording_to_bare": round(median["not recording"] / bare_rate, 3),
            "recording": {suffix: {"per_s": round(median[suffix]),
                                   "ratio_to_bare": round(median[suffix] / bare_rate, 3),
                                   "ratio_range": [round(min(r) / bare_rate, 3),
                                                   round(max(r) / bare_rate, 3)]}
                          for suffix, r in rates.items() if suffix.startswith(".")},
            "cdpnb_does": "parse, record to a trace (the wire bytes as they came, "
                          "flushed per batch read; .gz and .zst compressed on the reader "
                          "thread), fold into state"}


# -- run ---------------------------------------------------------------------------------


async def run(rounds: int, ingest_messages: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    with ScenarioServer() as site:
        async with cdpnb.launch("chromium") as backend:
            sup = await cdpnb.Supervisor.start(backend, policy="auto_accept", bridge=False)
            await sup.navigate(site.url("/blank"))
            page_ws = backend.cdp_url.split("/devtools/")[0] + \
                f"/devtools/page/{sup.page_target_id}"
            bare = await BareClient.open(page_ws)
            try:
                results["dialog_detection"] = await dialog_detection(sup, bare, rounds // 3)
            finally:
                await bare.close()
                await sup.stop()
            results["bridge_prompt"] = await bridge_round_trip(backend, site, rounds // 6)
            results["attach"] = await attach_and_snapshot(backend, site, 15)
            results["browser"] = backend.version
    results["event_ingest"] = await event_ingest(ingest_messages, 3)
    return results


def table(results: dict[str, Any]) -> str:
    dialog = results["dialog_detection"]
    bridge = results["bridge_prompt"]
    ingest = results["event_ingest"]
    attach = results["attach"]
    rows = [
        ("alert() → in cdpnb's state / bare event",
         f"{dialog['cdpnb_state_ms']:.3f} / {dialog['bare_event_ms']:.3f} ms",
         f"{dialog['ratio_to_bare']:.2f}× bare"),
        ("prompt() in page JS, bridge / native",
         f"{bridge['bridge_ms']:.3f} / {bridge['native_ms']:.3f} ms",
         f"{bridge['ratio_bridge_to_native']:.2f}× native"),
        *((f"event ingest, cdpnb recording {suffix} / bare",
           f"{ingest['recording'][suffix]['per_s']:,} / {ingest['bare_per_s']:,} msg/s",
           f"{ingest['recording'][suffix]['ratio_to_bare']:.2f}× bare")
          for suffix in RECORDED_FORMATS),
        ("event ingest, cdpnb not recording",
         f"{ingest['cdpnb_not_recording_per_s']:,} msg/s",
         f"{ingest['ratio_not_recording_to_bare']:.2f}× bare"),
        ("Supervisor.start on a running browser", f"{attach['start_ms']:.1f} ms", ""),
        ("sup.snapshot(), 300 frames", f"{attach['snapshot_300_frames_ms']:.3f} ms",
         f"truncated={attach['snapshot_truncated']}"),
    ]
    width = max(len(r[0]) for r in rows)
    return "\n".join(f"{a:<{width}}  {b:>26}  {c}" for a, b, c in rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=300,
                        help="dialogs: a third of it, prompts: a sixth")
    parser.add_argument("--ingest-messages", type=int, default=200_000)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--busy", type=int, default=0, metavar="N",
                        help="run beside N CPU-bound processes (cdpnb.testing.busy): the ratios "
                             "under load (default 0: as the machine is)")
    args = parser.parse_args()
    if args.rounds < 6 or args.ingest_messages < 1000 or args.busy < 0:
        parser.error("--rounds must be >= 6, --ingest-messages >= 1000, --busy >= 0")
    with busy_processes(args.busy):
        results = asyncio.run(run(args.rounds, args.ingest_messages))
    results["machine"] = {"python": sys.version.split()[0], "cpus": os.cpu_count(),
                          "platform": platform.platform(), "busy_processes": args.busy,
                          "load": os.getloadavg(), "when": time.strftime("%Y-%m-%d %H:%M")}
    print(table(results))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"\nwritten to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
