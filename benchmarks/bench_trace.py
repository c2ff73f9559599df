"""Trace throughput: load, fold through the reducers, build each DataFrame, Parquet.

The trace is made of real recordings by default (``--trace cdp``): the CDP probe
traces of ``datasets/probes`` and Chromium's Network and console traffic
(``data/browsing.jsonl.gz``) tiled to ``--messages`` lines, each tile a connection of
its own (``tiled_trace.py`` says what each tile renumbers so the whole is one valid
trace). ``--trace bidi`` tiles the WebDriver BiDi probe traces; ``--trace synthetic``
synthesises one with ``cdpnb.trace.Recorder`` (navigations, network-like noise,
console calls, evaluates, frames, OOPIFs, dialogs: its payloads are nearly all the
text Python writes already, which real ones are not).

Each step is measured in a forked child, so every step gets a fresh peak-memory
reading (``ru_maxrss`` growth; a fork starts its own high-water mark): the bare limit
(reading, and decompressing, the file and nothing else), ``Trace.load`` of each,
each table "from the file" (load and table in a process that has not read the
trace), and each table and the fold in children of a process that has loaded it
once. It counts the payloads whose recorded text is not what the tables show (written
again whole, or only their numbers). Then the peers: DuckDB's ``read_json`` of the same
file beside cdpnb's "file →" steps, round by round (``--peer-rounds``), and pandas'
``read_json(lines=True)`` in the first of those rounds (``--pandas-rounds``), as cdpnb ÷
peer ratios. Prints a table against the targets and writes
``benchmarks/results/trace.json``.

    python benchmarks/bench_trace.py --messages 1000000
    python benchmarks/bench_trace.py --messages 10000000 --steps core   # 5 GB of JSONL

Not a test: speed is measured here, never asserted (see benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import gc
import json
import multiprocessing
import os
import platform
import random
import resource
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from tiled_trace import write_tiled

import cdpnb
from cdpnb.protocol import Command, ErrorReply, Event, Message, Note, Reply
from cdpnb.trace import Recorder, Trace

RESULTS = Path(__file__).resolve().parent / "results" / "trace.json"
PAGE = "8E6B3C1A0F2D4E5B9C7A1D3F5E7B9A2C"
MAIN = "F0A1B2C3D4E5F60718293A4B5C6D7E8F"


class Synth:
    """Emits protocol messages with advancing clocks and connection-wide command ids."""

    def __init__(self, seed: int = 7) -> None:
        self.rng = random.Random(seed)
        self.wall = 1_790_000_000.0
        self.mono = 1_000.0
        self.next_id = 0
        self.dialogs = 0

    def _tick(self) -> tuple[float, float]:
        dt = self.rng.expovariate(2000.0)  # ~0.5 ms between messages
        self.wall += dt
        self.mono += dt
        return self.wall, self.mono

    def event(self, method: str, params: dict[str, Any], session: str | None = PAGE) -> Event:
        return Event(method, params, session, *self._tick())

    def note(self, method: str, params: dict[str, Any], session: str | None = None) -> Note:
        return Note(method, params, session, *self._tick())

    def call(self, method: str, params: dict[str, Any], result: dict[str, Any],
             session: str | None = PAGE, error: bool = False) -> Iterator[Message]:
        self.next_id += 1
        cmd = Command(self.next_id, method, params, session, *self._tick())
        yield cmd
        if error:
            yield ErrorReply(cmd.id, method, -32000, "Cannot find context with specified id",
                             None, session, params, *self._tick())
        else:
            yield Reply(cmd.id, method, result, session, params, *self._tick())

    # -- scenes -------------------------------------------------------------------------

    def start(self) -> Iterator[Message]:
        yield self.note("cdpnb.connected", {"url": "ws://127.0.0.1:9222/devtools/browser/x"})
        yield from self.call("Browser.getVersion", {}, {"product": "Chrome/156.0.8078.79",
                                                        "protocolVersion": "1.3"}, None)
        yield from self.call("Target.createTarget", {"url": "about:blank"},
                             {"targetId": MAIN}, None)
        yield self.event("Target.attachedToTarget", {
            "sessionId": PAGE, "waitingForDebugger": False,
            "targetInfo": {"targetId": MAIN, "type": "page", "url": "about:blank"}}, None)
        yield self.note("cdpnb.pageTarget", {"target_id": MAIN, "session_id": PAGE})
        for method in ("Page.enable", "Runtime.enable", "Page.setLifecycleEventsEnabled"):
            yield from self.call(method, {}, {})

    def request(self, n: int, url: str) -> Iterator[Message]:
        rid = f"{self.rng.randrange(10**6)}.{n}"
        headers = {"User-Agent": "Mozilla/5.0 (X11; Linux x86_64) Chrome/156", "Accept": "*/*",
                   "Referer": url, "Accept-Language": "en-US,en;q=0.9"}
        yield self.event("Network.requestWillBeSent", {
            "requestId": rid, "loaderId": "L", "documentURL": url,
            "request": {"url": f"{url}asset/{n}.js", "method": "GET", "headers": headers,
                        "initialPriority": "High", "referrerPolicy": "no-referrer"},
            "timestamp": self.mono, "wallTime": self.wall, "type": "Script",
            "initiator": {"type": "parser", "url": url, "lineNumber": n}, "frameId": MAIN})
        yield self.event("Network.responseReceived", {
            "requestId": rid, "loaderId": "L", "timestamp": self.mono, "type": "Script",
            "response": {"url": f"{url}asset/{n}.js", "status": 200, "statusText": "OK",
                         "headers": {"Content-Type": "text/javascript", "Content-Length": "2048",
                                     "Cache-Control": "max-age=3600"},
                         "mimeType": "text/javascript", "connectionReused": True,
                         "remoteIPAddress": "127.0.0.1", "remotePort": 8080,
                         "encodedDataLength": 2300, "protocol": "http/1.1"},
            "frameId": MAIN})
        for _ in range(self.rng.randrange(1, 3)):
            yield self.event("Network.dataReceived", {"requestId": rid, "timestamp": self.mono,
                                                      "dataLength": 1024,
                                                      "encodedDataLength": 1100})
        yield self.event("Network.loadingFinished", {"requestId": rid, "timestamp": self.mono,
                                                     "encodedDataLength": 2300})

    def navigation(self, n: int) -> Iterator[Message]:
        url = f"http://127.0.0.1:8080/page/{n}?q={self.rng.randrange(1000)}"
        loader = f"LOADER{n:08d}"
        yield from self.call("Page.navigate", {"url": url}, {"frameId": MAIN, "loaderId": loader})
        yield self.event("Page.frameStartedLoading", {"frameId": MAIN})
        yield self.event("Runtime.executionContextsCleared", {})
        yield self.event("Page.frameNavigated", {"frame": {
            "id": MAIN, "loaderId": loader, "url": url, "domainAndRegistry": "",
            "securityOrigin": "http://127.0.0.1:8080", "mimeType": "text/html",
            "adFrameStatus": {"adFrameType": "none"}, "secureContextType": "Secure",
            "crossOriginIsolatedContextType": "NotIsolated", "gatedAPIFeatures": []},
            "type": "Navigation"})
        yield self.event("Runtime.executionContextCreated", {"context": {
            "id": n * 3 + 1, "origin": "http://127.0.0.1:8080", "name": "",
            "uniqueId": f"{n}.1", "auxData": {"isDefault": True, "type": "default",
                                              "frameId": MAIN}}})
        for name in ("init", "commit", "DOMContentLoaded", "load", "firstPaint",
                     "firstContentfulPaint", "networkAlmostIdle", "networkIdle"):
            yield self.event("Page.lifecycleEvent", {"frameId": MAIN, "loaderId": loader,
                                                     "name": name, "timestamp": self.mono})
        children = [f"CHILD{n:06d}{i}" for i in range(self.rng.randrange(0, 3))]
        for child in children:
            yield self.event("Page.frameAttached", {"frameId": child, "parentFrameId": MAIN})
            yield self.event("Page.frameNavigated", {"frame": {
                "id": child, "parentId": MAIN, "loaderId": f"{loader}c", "url": "about:srcdoc",
                "securityOrigin": "://", "mimeType": "text/html"}, "type": "Navigation"})
        for i in range(self.rng.randrange(10, 30)):
            yield from self.request(i, url)
        for i in range(self.rng.randrange(3, 12)):
            level = self.rng.choices(["log", "info", "warning", "error", "debug"],
                                     [60, 10, 15, 10, 5])[0]
            yield self.event("Runtime.consoleAPICalled", {
                "type": level, "args": [{"type": "string", "value": f"message {i} on {url}"},
                                        {"type": "number", "value": i, "description": str(i)}],
                "executionContextId": n * 3 + 1, "timestamp": self.wall * 1000,
                "stackTrace": {"callFrames": [{"functionName": "f", "scriptId": "7",
                                               "url": f"{url}asset/{i}.js",
                                               "lineNumber": i, "columnNumber": 4}]}})
        for i in range(self.rng.randrange(5, 20)):
            yield from self.call("Runtime.evaluate",
                                 {"expression": f"document.querySelectorAll('p').length + {i}",
                                  "returnByValue": True, "awaitPromise": True},
                                 {"result": {"type": "number", "value": i, "description": str(i)}},
                                 error=self.rng.random() < 0.01)
        if n % 40 == 7:
            yield from self.dialog(url)
        if n % 25 == 3:
            yield from self.oopif(n)
        if self.rng.random() < 0.05:
            yield self.event("Runtime.exceptionThrown", {"timestamp": self.wall * 1000,
                "exceptionDetails": {"exceptionId": n, "text": "Uncaught", "lineNumber": 1,
                                     "columnNumber": 9, "url": url,
                                     "exception": {"type": "object", "className": "Error",
                                                   "description": "Error: boom\n    at f"}}})
        for child in children:
            yield self.event("Page.frameDetached", {"frameId": child, "reason": "remove"})

    def dialog(self, url: str) -> Iterator[Message]:
        self.dialogs += 1
        did = f"d-{self.dialogs}"
        kind = ("alert", "confirm", "prompt")[self.dialogs % 3]
        yield self.event("Page.javascriptDialogOpening", {
            "url": url, "frameId": MAIN, "message": f"{kind} number {self.dialogs}", "type": kind,
            "hasBrowserHandler": True, "defaultPrompt": "d" if kind == "prompt" else ""})
        text = "answer" if kind == "prompt" else None
        yield self.note("cdpnb.dialogAnswering", {"dialog_id": did, "accept": True,
                                                  "prompt_text": text, "closed_by": "agent"},
                        PAGE)
        params: dict[str, Any] = {"accept": True}
        if text is not None:
            params["promptText"] = text
        replies = list(self.call("Page.handleJavaScriptDialog", params, {}))
        yield replies[0]
        yield self.event("Page.javascriptDialogClosed", {"frameId": MAIN, "result": True,
                                                         "userInput": text or ""})
        yield replies[1]
        yield self.note("cdpnb.dialogAnswered", {"dialog_id": did, "ok": True}, PAGE)

    def oopif(self, n: int) -> Iterator[Message]:
        frame, child = f"OOPIF{n:027d}", f"SESSION{n:025d}"
        yield self.event("Page.frameAttached", {"frameId": frame, "parentFrameId": MAIN})
        yield self.event("Target.attachedToTarget", {
            "sessionId": child, "waitingForDebugger": True,
            "targetInfo": {"targetId": frame, "type": "iframe", "url": "", "attached": True}})
        for method in ("Runtime.enable", "Page.enable", "Runtime.runIfWaitingForDebugger"):
            yield from self.call(method, {}, {}, child)
        yield self.event("Page.frameDetached", {"frameId": frame, "reason": "swap"})
        yield self.event("Page.frameNavigated", {"frame": {
            "id": frame, "parentId": MAIN, "loaderId": "LC", "url": "http://localhost:8080/child",
            "securityOrigin": "http://localhost:8080", "mimeType": "text/html"}}, child)
        yield self.event("Target.detachedFromTarget", {"sessionId": child, "targetId": frame})

    def messages(self, count: int) -> Iterator[Message]:
        emitted = 0
        for message in self.start():
            yield message
            emitted += 1
        n = 0
        while emitted < count:
            for message in self.navigation(n):
                if emitted >= count:
                    return
                yield message
                emitted += 1
            n += 1


# -- measuring -----------------------------------------------------------------------------


def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def _in_child(step: Callable[[], Any], conn: Any) -> None:
    try:
        before = _maxrss_mb()
        start, cpu = time.perf_counter(), time.process_time()
        result = step()
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
        rows = len(result) if hasattr(result, "__len__") and not isinstance(result, Path) \
            else None
        conn.send({"seconds": elapsed, "cpu_s": cpu, "peak_mb": _maxrss_mb() - before,
                   "rows": rows})
    except BaseException as exc:  # report, never hang the parent
        conn.send({"error": f"{type(exc).__name__}: {exc}"})
    finally:
        conn.close()


def measure(step: Callable[[], Any]) -> dict[str, Any]:
    """Run ``step`` in a forked child (it sees everything this process has loaded)."""
    # Objects this process made stay out of the child's collections: a collection would
    # write to every one of them, copying the pages the fork shares (a cost the step
    # would not have in a process of its own).
    gc.freeze()
    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_in_child, args=(step, send))
    child.start()
    send.close()
    result: dict[str, Any] = receive.recv()
    child.join()
    if "error" in result:
        raise RuntimeError(result["error"])
    return result


TARGETS = {  # issues 16 and 27: seconds for 1M messages, on the development machine
    "events()": 1.5, "dialogs()": 1.0, "frames()": 1.0, "to_parquet": 2.0,
    "file → events()": 1.5, "file → dialogs()": 1.0, "file → to_parquet": 1.5,
    "Parquet file → events()": 1.5, "Parquet file → dialogs()": 1.0,
}
#: Peak memory target for any step, MB.
PEAK_TARGET_MB = 1000


def _bare_parquet(path: Path) -> int:
    """pyarrow reading the columns ``Trace.from_parquet`` reads, nothing more."""
    import pyarrow.parquet as pq

    names = ["kind", "id", "method", "session_id", "payload", "params", "wall", "mono"]
    return int(pq.read_table(path, columns=names).num_rows)


def _bare_read(path: Path) -> int:
    """Reading the file and nothing else: the limit for any reader of it."""
    buffer = bytearray(8 << 20)
    total = 0
    with open(path, "rb", buffering=0) as raw:
        while got := raw.readinto(buffer):
            total += got
    return total


def _bare_inflate(path: Path) -> int:
    """Reading and decompressing the file, and nothing else."""
    import zlib

    import zstandard

    make: Callable[[], Any] = (lambda: zlib.decompressobj(wbits=31)) \
        if path.suffix == ".gz" else (lambda: zstandard.ZstdDecompressor().decompressobj())
    inflater, total = make(), 0
    with open(path, "rb") as raw:
        while data := raw.read(1 << 20):
            total += len(inflater.decompress(data))
    return total


# -- the peers: DuckDB reading the same file -------------------------------------------------

#: The lines a dialog table is made of (what DuckDB selects for the dialog rows).
DIALOG_METHODS = ("Page.javascriptDialogOpening", "Page.javascriptDialogClosed",
                  "cdpnb.dialogAnswering", "cdpnb.dialogAnswered", "cdpnb.bridgeDialogOpening")
#: The lines a frame table is made of.
FRAME_METHODS = ("Target.attachedToTarget", "Target.detachedFromTarget",
                 "Target.targetInfoChanged", "Page.frameAttached", "Page.frameNavigated",
                 "Page.frameDetached", "Page.navigatedWithinDocument")
_LINE = "{'seq':'BIGINT','t':'DOUBLE','wall':'DOUBLE','dir':'VARCHAR','msg':'JSON'}"


def _duckdb(path: Path, select: str, where: str = "seq IS NOT NULL") -> pd.DataFrame:
    """DuckDB (its own threads: all the machine's cores) reading the JSONL into a
    DataFrame: ``select`` over each line's fields, ``msg`` kept as JSON."""
    import duckdb

    quoted = str(path).replace("'", "''")
    source = (f"read_json('{quoted}', format='newline_delimited', columns={_LINE}, "
              "maximum_object_size=268435456)")
    return duckdb.connect().sql(f"SELECT {select} FROM {source} WHERE {where}").df()


def duckdb_events(path: Path) -> pd.DataFrame:
    """What ``events()`` holds, as DuckDB reads it: every message line, its method, id,
    session and payload (the payload as DuckDB writes JSON again, not as recorded)."""
    return _duckdb(path, "seq, t, wall, dir, msg->>'$.method' AS method, "
                         "(msg->>'$.id')::BIGINT AS id, msg->>'$.sessionId' AS session_id, "
                         "coalesce(msg->'$.params', msg->'$.result', msg->'$.error') AS payload")


def _rows_of(path: Path, methods: tuple[str, ...]) -> pd.DataFrame:
    names = ", ".join(f"'{m}'" for m in methods)
    return _duckdb(path, "seq, wall, dir, msg->>'$.method' AS method, "
                         "msg->>'$.sessionId' AS session_id, msg->'$.params' AS params",
                   f"msg->>'$.method' IN ({names})")


def duckdb_dialog_rows(path: Path) -> pd.DataFrame:
    """DuckDB selecting the lines the dialog rows come from (not the rows themselves:
    pairing an opening with its close and its answer is left undone, to DuckDB's
    advantage)."""
    return _rows_of(path, DIALOG_METHODS)


def duckdb_frame_rows(path: Path) -> pd.DataFrame:
    """DuckDB selecting the lines the frame rows come from (the frame tree not built)."""
    return _rows_of(path, FRAME_METHODS)


def pandas_events(path: Path) -> pd.DataFrame:
    """pandas' own JSONL reader (``read_json(lines=True)``, one thread) and the
    columns ``events()`` has that it does not make by itself (method, id, session)."""
    lines = pd.read_json(path, lines=True, dtype=False)
    lines = lines[lines["seq"].notna()]  # (the header line; as DuckDB's WHERE)
    messages = lines["msg"]
    return lines.assign(method=messages.str.get("method"), id=messages.str.get("id"),
                        session_id=messages.str.get("sessionId"))


#: cdpnb's step, the peer's, and the target for cdpnb ÷ the peer (issue 40; none for
#: pandas, which the issue names as a figure to show, not a bar).
PAIRS: dict[str, tuple[str, str, float | None]] = {
    "events": ("file → events()", "DuckDB read_json → events", 0.4),
    "dialogs": ("file → dialogs()", "DuckDB → the dialog lines", 0.8),
    "frames": ("file → frames()", "DuckDB → the frame lines", 0.8),
    "to_parquet": ("to_parquet", "DuckDB read_json → events", 0.5),
    "events, pandas": ("file → events()", "pandas read_json(lines) → events", None),
}


def from_the_file(path: Path, table: str) -> Callable[[], Any]:
    """Load and ``table`` in a process that has not read the trace (a "file →" step)."""
    return lambda: getattr(Trace.load(path), table)()


def peer_rounds(path: Path, repeats: int, pandas_rounds: int = 0) -> dict[str, list[float]]:
    """Each of cdpnb's "file →" steps and DuckDB's beside it, each a fresh child,
    ``repeats`` rounds with the order turned every round, pandas in the first
    ``pandas_rounds`` of them (≈30 s a round at a million lines); the seconds of each."""
    steps: dict[str, Callable[[], Any]] = {
        f"file → {table}()": from_the_file(path, table)
        for table in ("events", "dialogs", "frames")}
    steps |= {
        "DuckDB read_json → events": lambda: duckdb_events(path),
        "DuckDB → the dialog lines": lambda: duckdb_dialog_rows(path),
        "DuckDB → the frame lines": lambda: duckdb_frame_rows(path),
        "pandas read_json(lines) → events": lambda: pandas_events(path),
    }
    seconds: dict[str, list[float]] = {name: [] for name in steps}
    names = list(steps)
    for round_ in range(repeats):
        for name in (names if round_ % 2 == 0 else names[::-1]):
            if name.startswith("pandas") and round_ >= pandas_rounds:
                continue
            seconds[name].append(measure(steps[name])["seconds"])
    return {name: each for name, each in seconds.items() if each}


def _compressed_copies(path: Path, where: Path) -> tuple[Path, Path]:
    """The trace as .jsonl.zst (zstd level 3, as the recorder writes it) and .jsonl.gz
    (level 6; the recorder's level 9 takes ten times as long to write and inflates as
    fast)."""
    import gzip
    import shutil

    import zstandard

    zst, gz = where / "bench.jsonl.zst", where / "bench.jsonl.gz"
    with open(path, "rb") as source, open(zst, "wb") as sink:
        zstandard.ZstdCompressor(level=3, write_checksum=True).copy_stream(source, sink)
    with open(path, "rb") as source, gzip.open(gz, "wb", compresslevel=6) as packed:
        shutil.copyfileobj(source, packed, 8 << 20)
    return zst, gz


def _synthetic(path: Path, messages: int) -> tuple[float, float]:
    """Record the synthetic trace; (wall, CPU) seconds it took."""
    synth = Synth()
    recorder = Recorder(path, backend={"kind": "synthetic"})
    start, cpu = time.perf_counter(), time.process_time()
    for message in synth.messages(messages):
        recorder(message)
    recorder.close()
    return time.perf_counter() - start, time.process_time() - cpu


def _kept(path: Path | None, messages: int, kind: str) -> bool:
    """Whether ``path`` holds a tiled trace of ``kind`` and ``messages`` lines already."""
    if path is None or not path.exists():
        return False
    with open(path, "rb") as file:
        head = json.loads(file.readline())
        file.seek(max(path.stat().st_size - 4096, 0))
        end = json.loads(file.read().splitlines()[-1])
    return bool(head.get("protocol") == kind and head.get("backend") == {"kind": "tiled"}
                and sum(end.get("counts", {}).values()) == messages)


def payload_census(trace: Trace) -> dict[str, int]:
    """How many payloads the tables show as recorded, and how many they write again:
    whole (parsed and written by json) or only their numbers."""
    columns = trace._held
    whole = rows = tokens = 0
    try:
        from cdpnb.trace.canonical import edits
    except ImportError:  # (a cdpnb from before issue 27: every such payload written whole)
        from cdpnb.trace.canonical import noncanonical  # type: ignore[attr-defined]

        whole = sum(int(noncanonical(bytes(block.raw), block.offsets).sum())
                    for block in columns.blocks)
    else:
        for block in columns.blocks:
            found = edits(bytes(block.raw), block.offsets, frozenset(block.texts))
            whole += len(found.whole)
            rows += len(np.unique(found.rows))
            tokens += len(found.rows)
    return {"payloads": len(columns), "as_recorded": len(columns) - whole - rows,
            "written_whole": whole, "numbers_rewritten": rows,
            "number_tokens_rewritten": tokens}


def ratios(peers: dict[str, list[float]], steps: dict[str, dict[str, Any]]
           ) -> dict[str, dict[str, Any]]:
    """cdpnb ÷ the peer for each pair of ``PAIRS``: per round, median and range (a peer
    run in fewer rounds, pandas, against cdpnb's first ones). A step measured once
    (``to_parquet``, in a child of a process that has loaded the trace) is set against
    each of the peer's rounds."""
    out: dict[str, dict[str, Any]] = {}
    for key, (mine, theirs, target) in PAIRS.items():
        if theirs not in peers:
            continue
        if mine in peers:
            own = peers[mine]
        elif mine in steps:
            own = [steps[mine]["seconds"]] * len(peers[theirs])
        else:
            continue
        own = own[:len(peers[theirs])]
        each = sorted(a / b for a, b in zip(own, peers[theirs], strict=True))
        out[key] = {"cdpnb": mine, "peer": theirs, "target": target,
                    "cdpnb_s": round(float(np.median(own)), 3),
                    "peer_s": round(float(np.median(peers[theirs])), 3),
                    "median": round(float(np.median(each)), 3),
                    "min": round(each[0], 3), "max": round(each[-1], 3)}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1_000_000,
                        help="how many message lines (default 1,000,000)")
    parser.add_argument("--trace", choices=("cdp", "bidi", "synthetic"), default="cdp",
                        help="real recordings tiled (cdp, bidi) or the synthetic trace")
    parser.add_argument("--steps", choices=("all", "core"), default=None,
                        help="core: load, the tables, Parquet both ways (no compressed "
                             "copies, no 'file →' steps, no records); default all up to "
                             "2M messages, core above")
    parser.add_argument("--skip", type=lambda text: set(text.split(",")), default=set(),
                        help="steps to leave out, by name, comma-separated ('frames(),"
                             "dialogs()')")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where to write the JSON")
    parser.add_argument("--keep", type=Path, default=None,
                        help="keep the trace at this path (default: a temp file); a tiled "
                             "trace kept there before, of as many lines, is used again")
    parser.add_argument("--dir", type=Path, default=None,
                        help="where the temporary files go (default: the system's)")
    parser.add_argument("--peer-rounds", type=int, default=3,
                        help="rounds of cdpnb's 'file →' steps beside DuckDB reading the "
                             "same file (0: none)")
    parser.add_argument("--pandas-rounds", type=int, default=1,
                        help="how many of those rounds pandas' read_json(lines=True) "
                             "reads it too (default 1: ≈30 s at a million lines)")
    args = parser.parse_args(argv)
    if args.messages < 10:
        parser.error("--messages must be at least 10")
    every = (args.steps or ("all" if args.messages <= 2_000_000 else "core")) == "all"

    with tempfile.TemporaryDirectory(prefix="cdpnb-bench-", dir=args.dir) as tmp:
        path = args.keep or Path(tmp) / "bench.jsonl"
        steps: dict[str, dict[str, Any]] = {}
        start = time.perf_counter()
        if args.trace == "synthetic":
            record_s, record_cpu = _synthetic(path, args.messages)
            steps["record (Recorder)"] = {"seconds": record_s, "cpu_s": record_cpu,
                                          "peak_mb": None, "rows": args.messages}
        elif not _kept(args.keep, args.messages, args.trace):
            write_tiled(path, args.messages, args.trace)
        made_s = time.perf_counter() - start
        size_mb = path.stat().st_size / 1e6
        parquet = Path(tmp) / "bench.parquet"

        steps["bare limit: read .jsonl"] = measure(lambda: _bare_read(path))
        steps["Trace.load .jsonl"] = measure(lambda: Trace.load(path))
        zst_mb = gz_mb = None
        if every:
            zst, gz = _compressed_copies(path, Path(tmp))
            zst_mb, gz_mb = zst.stat().st_size / 1e6, gz.stat().st_size / 1e6
            steps["bare limit: read + inflate .jsonl.gz"] = measure(lambda: _bare_inflate(gz))
            steps["bare limit: read + decompress .jsonl.zst"] = measure(
                lambda: _bare_inflate(zst))
            steps["Trace.load .jsonl.gz"] = measure(lambda: Trace.load(gz))
            steps["Trace.load .jsonl.zst"] = measure(lambda: Trace.load(zst))
            # From the file: each in a process that has not read the trace.
            for table in ("events", "dialogs"):
                steps[f"file → {table}()"] = measure(from_the_file(path, table))
            steps["file → to_parquet"] = measure(lambda: Trace.load(path).to_parquet(parquet))

        trace = Trace.load(path)  # the children below share this copy
        scanned = trace._records is None  # (the columnar scan vouched for the file)
        census = payload_census(trace)

        def fold() -> Trace:
            trace.final_state()
            return trace

        def write_parquet() -> Trace:
            trace.to_parquet(parquet)
            return trace

        def run(name: str, step: Callable[[], Any]) -> None:
            if name not in args.skip:
                steps[name] = measure(step)

        run("fold (final_state)", fold)
        for table in ("events", "commands", "dialogs", "frames", "console"):
            run(f"{table}()", getattr(trace, table))
        run("to_parquet", write_parquet)
        if every:
            run("records (every message object)", lambda: trace.records)
        trace.to_parquet(parquet)
        run("from_parquet", lambda: Trace.from_parquet(parquet))
        # A trace kept as Parquet, read by a process that has not read it.
        run("Parquet file → events()", lambda: Trace.from_parquet(parquet).events())
        run("Parquet file → dialogs()", lambda: Trace.from_parquet(parquet).dialogs())
        run("bare limit: read .parquet", lambda: _bare_parquet(parquet))
        parquet_mb = parquet.stat().st_size / 1e6
        peers = (peer_rounds(path, args.peer_rounds, args.pandas_rounds)
                 if args.peer_rounds > 0 else {})

    n = len(trace)
    for name, step in steps.items():
        step["messages_per_s"] = n / step["seconds"] if step["seconds"] else None
        step["target_s"] = TARGETS.get(name)
    report = {
        "benchmark": "trace",
        "trace": args.trace,
        "messages": n,
        "scanned": scanned,
        "payloads": census,
        "made_s": round(made_s, 1),
        "jsonl_mb": round(size_mb, 1),
        "zst_mb": None if zst_mb is None else round(zst_mb, 1),
        "gz_mb": None if gz_mb is None else round(gz_mb, 1),
        "parquet_mb": round(parquet_mb, 1),
        "dialogs": int(trace.final_state().dialog_seq),
        "cdpnb": cdpnb.__version__,
        "python": platform.python_version(),
        "pandas": pd.__version__,
        "machine": f"{platform.machine()} {os.cpu_count()} cpus",
        "load_average": os.getloadavg()[0],
        "steps": {name: {k: (round(v, 4) if isinstance(v, float) else v)
                         for k, v in step.items()} for name, step in steps.items()},
        "peers": {name: [round(s, 4) for s in seconds] for name, seconds in peers.items()},
        "ratios": ratios(peers, steps),
    }
    sizes = "" if zst_mb is None else f" ({zst_mb:.0f} MB zstd, {gz_mb:.0f} MB gzip)"
    print(f"{n:,} messages ({args.trace}), {size_mb:.0f} MB JSONL{sizes}, {parquet_mb:.0f} MB "
          f"Parquet, {report['dialogs']} dialogs; "
          f"{'scanned' if scanned else 'read line by line'}")
    print(f"payloads: {census['as_recorded']:,} shown as recorded, "
          f"{census['numbers_rewritten']:,} with numbers written again, "
          f"{census['written_whole']:,} written again whole")
    print(f"(wall seconds and CPU seconds; load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cpus: wall time grows when other work shares them)")
    print(f"{'step':<42}{'seconds':>9}{'cpu s':>8}{'target':>8}{'peak MB':>9}{'rows':>11}")
    for name, step in steps.items():
        peak = "" if step["peak_mb"] is None else f"{step['peak_mb']:.0f}"
        rows = "" if step["rows"] is None else f"{step['rows']:,}"
        target = "" if step["target_s"] is None else f"{step['target_s']:.1f}"
        print(f"{name:<42}{step['seconds']:>9.2f}{step['cpu_s']:>8.2f}{target:>8}{peak:>9}"
              f"{rows:>11}")
    if report["ratios"]:
        print(f"beside DuckDB ({args.peer_rounds} rounds) and pandas ({args.pandas_rounds}): "
              "cdpnb ÷ the peer, each round's pair side by side; median and range:")
        print(f"{'cdpnb':<20}{'peer':<34}{'cdpnb s':>9}{'peer s':>8}{'ratio':>7}"
              f"{'range':>13}{'target':>8}")
        for pair in report["ratios"].values():
            target = "" if pair["target"] is None else f"{pair['target']:.2f}"
            print(f"{pair['cdpnb']:<20}{pair['peer']:<34}{pair['cdpnb_s']:>9.2f}"
                  f"{pair['peer_s']:>8.2f}{pair['median']:>7.2f}"
                  f"{pair['min']:>7.2f}–{pair['max']:<5.2f}{target:>8}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
