"""A client through ``cdpnb proxy`` against the same client straight to the browser.

The proxy issue's target: a client's round trip through the proxy at most 1.10× the
direct one, and recording at wire speed. One headless-shell, shared by everything; as
the machine is and beside two CPU-bound processes (``cdpnb.testing.busy``), three repeats each,
with fresh processes every repeat:

- two ``cdpnb proxy --url http://127.0.0.1:PORT --record …`` processes in front of it,
  one recording ``.jsonl``, one ``.jsonl.gz`` (the proxy always records: there is no
  figure without recording);
- the floors (``contenders/relay.py``; ``--no-floors`` leaves them out): a relay that
  pumps WebSocket frames with ``websockets`` as the proxy does and does nothing else,
  and one that writes the TCP bytes it reads on to the other socket in the read
  callback: what one more hop through a Python process costs before the proxy does any
  work of its own;
- bench_contenders.py's contenders (``benchmarks/contenders/``), each a process of its
  own on a page of its own, woken by a line on its stdin and timing its own operations:
  the bare ``websockets`` client straight to the browser, through each proxy and each
  floor; Puppeteer straight and through the ``.jsonl`` proxy; ``bare-burst`` (a bare
  client with ``Runtime.enable`` on) straight, through each proxy and the WebSocket floor;
- with ``--candidate DIR``, a third proxy run from another tree (``DIR/cdpnb`` first on
  ``PYTHONPATH``), recording ``.jsonl``, for the bare clients: a change to the proxy
  measured beside the proxy as it is, in the same run.

Measures, the contenders of each woken in a shuffled order round by round:

- ``rtt``: ``Runtime.evaluate {"expression": "1"}``, ``--batch`` calls in a row a wake-up;
- ``rtt-idle``: one call a wake-up, after ``--idle`` seconds (50 ms) with no call anywhere;
- ``burst``: the page logs ``--burst`` console messages (10,000) in one loop; the time
  until the client has every ``Runtime.consoleAPICalled`` and the reply, as events/s.

After each repeat the proxies are stopped as Ctrl-C stops them and each recording is
read back: every command the client sent and every console event the browser sent must
be there, and the footer's counts must equal the lines. Each go-between's CPU time is
given per round trip and per console event it relayed.

    .venv/bin/python benchmarks/bench_proxy.py [--repeats 3] [--rounds 30] [--batch 10] \\
        [--phases quiet,busy] [--bursts 2] [--burst 10000] [--no-puppeteer] [--no-floors] \\
        [--candidate DIR]

Writes ``benchmarks/results/proxy.json``. Not a test: speed is measured, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gzip
import json
import os
import platform
import signal
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psutil  # type: ignore[import-untyped]  # cdpnb's venv has it, no stubs
from bench_contenders import names_list, versions
from contenders.harness import (
    STARTED,
    Contender,
    Running,
    Setup,
    end_group,
)
from contenders.rounds import Repeat, run_rounds
from websockets.asyncio.client import connect

import cdpnb
from cdpnb.probes import ScenarioServer
from cdpnb.testing.busy import busy_processes

RESULTS = Path(__file__).resolve().parent / "results" / "proxy.json"
BUSY_PROCESSES = 2
#: How long a go-between has to print its endpoint, and to end once told to.
PROXY_START_S = 60.0
PROXY_STOP_S = 20.0
#: The proxies' recordings, by route (``candidate``: ``--candidate``'s tree).
SUFFIXES = {"jsonl": ".jsonl", "gz": ".jsonl.gz", "candidate": ".jsonl"}
#: The floors, by route: contenders/relay.py's kinds.
FLOORS = {"relay-ws": "ws", "relay-tcp": "tcp"}
RELAY_PY = Path(__file__).resolve().parent / "contenders" / "relay.py"
OP_TITLES = {
    "rtt": 'Runtime.evaluate {"expression": "1"} round trip, calls in a row',
    "rtt-idle": 'Runtime.evaluate {"expression": "1"}, one call after an idle moment',
    "burst": "console burst, Runtime.enable on: events/s the client takes in",
}


@dataclass(frozen=True)
class Variant:
    """One contender process: a client, by its library, and the way it goes."""

    key: str
    contender: Contender
    route: str  # "direct", a proxy's ("jsonl", "gz") or a floor's ("relay-ws", ...)
    #: The key of the same client going direct, which its ratio is to.
    direct: str


def variants(puppeteer: bool, floors: bool,
             candidate: bool = False) -> tuple[list[Variant], list[Variant]]:
    """The round-trip contenders and the burst contenders."""
    def bare(route: str, what: str) -> Variant:
        key = "bare" if route == "direct" else f"bare+{route}"
        return Variant(key, Contender("bare", "cdpnb", {"rtt": what}), route, "bare")

    def burst(route: str, what: str) -> Variant:
        key = "burst" if route == "direct" else f"burst+{route}"
        return Variant(key, Contender("bare-burst", "cdpnb", {"burst": what}), route,
                       "burst")

    rtt = [bare("direct", "bare websockets, direct"),
           bare("jsonl", "… through the proxy, .jsonl"),
           bare("gz", "… through the proxy, .jsonl.gz")]
    if candidate:
        rtt.append(bare("candidate", "… through the --candidate proxy, .jsonl"))
    if floors:
        rtt += [bare("relay-ws", "… through a bare websockets relay"),
                bare("relay-tcp", "… through a bare TCP relay")]
    if puppeteer:
        rtt += [Variant("puppeteer", Contender("puppeteer", "node", {
                    "rtt": "Puppeteer CDPSession.send, direct"}), "direct", "puppeteer"),
                Variant("puppeteer+jsonl", Contender("puppeteer", "node", {
                    "rtt": "… through the proxy, .jsonl"}), "jsonl", "puppeteer")]
    bursts = [burst("direct", "bare websockets + json.loads, direct"),
              burst("jsonl", "… through the proxy, .jsonl"),
              burst("gz", "… through the proxy, .jsonl.gz")]
    if candidate:
        bursts.append(burst("candidate", "… through the --candidate proxy, .jsonl"))
    if floors:
        bursts.append(burst("relay-ws", "… through a bare websockets relay"))
    return rtt, bursts


def tail(log: Path) -> str:
    return log.read_text(errors="replace")[-300:]


@dataclass
class ProxyProcess:
    """A go-between in a process (and session) of its own: ``cdpnb proxy`` recording
    to ``record``, or a floor (``record`` None)."""

    process: asyncio.subprocess.Process
    record: Path | None
    url: str = ""
    ws_url: str = ""

    @classmethod
    async def start(cls, route: str, browser_ws: str, work: Path,
                    candidate: Path | None = None) -> ProxyProcess:
        log = work / f"{route}.stderr"
        record: Path | None = None
        env = dict(os.environ)
        # (run from the work folder: ``-m`` puts the current folder first on sys.path,
        # which would shadow the candidate's tree with this one)
        if route == "candidate" and candidate is not None:
            env["PYTHONPATH"] = os.pathsep.join(
                part for part in (str(candidate), env.get("PYTHONPATH")) if part)
        if route in SUFFIXES:
            record = work / route / f"proxy{SUFFIXES[route]}"
            record.parent.mkdir(parents=True)
            command = [sys.executable, "-m", "cdpnb.cli", "proxy", "--url",
                       f"http://{urlsplit(browser_ws).netloc}", "--record", str(record)]
        else:
            command = [sys.executable, str(RELAY_PY), FLOORS[route], browser_ws]
        with log.open("wb") as err:
            process = await asyncio.create_subprocess_exec(
                *command, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
                stderr=err, start_new_session=True, env=env, cwd=work)
        STARTED.add(process.pid)
        proxy = cls(process, record)
        assert process.stdout is not None
        try:
            lines = [(await asyncio.wait_for(process.stdout.readline(), PROXY_START_S))
                     .decode().strip() for _ in range(2)]
        except TimeoutError:
            await proxy.stop()
            raise RuntimeError(f"{route} printed no endpoint in {PROXY_START_S:.0f} s "
                               f"({tail(log)})") from None
        if not lines[1].startswith("ws://"):
            await proxy.stop()
            raise RuntimeError(f"{route} did not start: {lines} ({tail(log)})")
        proxy.url, proxy.ws_url = lines
        return proxy

    def cpu(self) -> float:
        """CPU seconds the proxy's process has used so far (every thread)."""
        times = psutil.Process(self.process.pid).cpu_times()
        return float(times.user + times.system)

    async def stop(self) -> None:
        """SIGTERM, as Ctrl-C (the recordings closed, their footers written), then its
        group by its pid if it lingers."""
        pid = self.process.pid
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.process.wait(), PROXY_STOP_S)
        end_group(pid, signal.SIGKILL)
        STARTED.discard(pid)


def read_recording(path: Path) -> dict[str, Any]:
    """What one recording holds: its connection's path, the lines by direction, the
    client's evaluates, the browser's console events, and whether its footer's counts
    are the lines it holds."""
    opener = gzip.open if path.suffix == ".gz" else open
    lines: dict[str, int] = {}
    evaluates = console = 0
    footer: dict[str, Any] | None = None
    with opener(path, "rb") as file:
        head = json.loads(file.readline())
        for raw in file:
            line = json.loads(raw)
            if "cdpnb_trace_end" in line:
                footer = line
                continue
            direction = line.get("dir", "?")
            lines[direction] = lines.get(direction, 0) + 1
            method = (line.get("msg") or {}).get("method")
            if direction == "send" and method == "Runtime.evaluate":
                evaluates += 1
            elif direction == "recv" and method == "Runtime.consoleAPICalled":
                console += 1
    counts = (footer or {}).get("counts", {})
    return {"file": path.name, "path": head.get("meta", {}).get("proxy", {}).get("path"),
            "lines": lines, "evaluates": evaluates, "console_events": console,
            "footer": footer is not None,
            "footer_matches": footer is not None and all(
                counts.get(k, 0) == lines.get(k, 0) for k in ("send", "recv", "note"))}


def check_recordings(proxies: dict[str, ProxyProcess], targets: dict[str, str],
                     sent: dict[str, int], bursts: dict[str, int],
                     burst_size: int) -> dict[str, Any]:
    """Each proxied contender's recording against what it did: every evaluate it sent
    (``sent``: the round-trip contenders'), every console event of its bursts."""
    found: dict[str, Any] = {}
    for route, proxy in proxies.items():
        if proxy.record is None:
            continue
        for path in sorted(proxy.record.parent.iterdir()):
            recording = {"route": route, **read_recording(path)}
            key = next((k for k, t in targets.items() if recording["path"]
                        and recording["path"].endswith(t)), None)  # page sockets
            found[key or f"{route}/{recording['file']}"] = recording
    checks: dict[str, Any] = {"recordings": found, "problems": []}
    for key, recording in found.items():
        if not recording["footer_matches"]:
            checks["problems"].append(f"{key}: footer " + (
                "counts differ from the lines" if recording["footer"] else "missing"))
        if key in bursts:
            wanted = bursts[key] * burst_size
            if recording["console_events"] != wanted:
                checks["problems"].append(f"{key}: {recording['console_events']} console "
                                          f"events recorded of {wanted}")
        elif key in sent and key.startswith("bare") and recording["evaluates"] != sent[key]:
            checks["problems"].append(f"{key}: {recording['evaluates']} evaluates recorded "
                                      f"of {sent[key]}")
    return checks


@dataclass
class Counting:
    """How many operations each contender was asked for (warm-up included)."""

    done: dict[str, int] = field(default_factory=dict)

    def add(self, running: dict[str, Running], repeat: Repeat, count: int) -> None:
        for name in running:
            if name not in repeat.failed:
                self.done[name] = self.done.get(name, 0) + count


async def start_all(chosen: list[Variant], pages: dict[str, tuple[str, str]],
                    browser_ws: dict[str, str], extra: list[str], logs: Path,
                    repeat: Repeat) -> dict[str, Running]:
    running: dict[str, Running] = {}
    folder = logs / "contenders"
    for variant in chosen:  # a folder each: the logs are named by library
        (folder / variant.key).mkdir(parents=True)
    started = await asyncio.gather(*(
        Running.start(v.contender, [browser_ws[v.route], *pages[v.key], *extra],
                      folder / v.key) for v in chosen))
    for variant, result in zip(chosen, started, strict=True):
        if isinstance(result, str):
            repeat.skipped[variant.key] = result
        else:
            running[variant.key] = result
    return running


async def measure(backend: cdpnb.Backend, site: ScenarioServer, args: argparse.Namespace,
                  serial: int) -> tuple[Repeat, dict[str, Any]]:
    """One repeat: fresh go-betweens, pages and contender processes."""
    repeat = Repeat(load_before=os.getloadavg())
    samples: dict[str, dict[str, list[float]]] = {"rtt": {}, "rtt-idle": {}, "burst": {}}
    repeat.passes.append(samples)
    rtt_variants, burst_variants = variants(args.puppeteer, args.floors,
                                            args.candidate is not None)
    chosen = [*rtt_variants, *burst_variants]
    routes = list(dict.fromkeys(v.route for v in chosen if v.route != "direct"))
    with tempfile.TemporaryDirectory(prefix="cdpnb-bench-proxy-") as work:
        logs = Path(work)
        started = await asyncio.gather(*(
            ProxyProcess.start(route, backend.cdp_url, logs, args.candidate)
            for route in routes), return_exceptions=True)
        proxies = {route: p for route, p in zip(routes, started, strict=True)
                   if isinstance(p, ProxyProcess)}
        for route, failed in zip(routes, started, strict=True):
            if not isinstance(failed, ProxyProcess):  # its contenders listed, not run
                for variant in [v for v in chosen if v.route == route]:
                    repeat.skipped[variant.key] = f"{failed}"
        rtt_variants = [v for v in rtt_variants if v.key not in repeat.skipped]
        burst_variants = [v for v in burst_variants if v.key not in repeat.skipped]
        running: dict[str, Running] = {}
        async with connect(backend.cdp_url, max_size=None, ping_interval=None) as ws:
            setup = Setup(ws)
            pages: dict[str, tuple[str, str]] = {}
            try:
                for variant in [*rtt_variants, *burst_variants]:
                    url = site.url("/blank") + f"?contender={variant.key}&repeat={serial}"
                    pages[variant.key] = (await setup.open_page(url), url)
                browser_ws = {"direct": backend.cdp_url,
                              **{route: p.ws_url for route, p in proxies.items()}}
                rtt = await start_all(rtt_variants, pages, browser_ws, [], logs, repeat)
                bursts = await start_all(burst_variants, pages, browser_ws,
                                         [str(args.burst)], logs, repeat)
                running = {**rtt, **bursts}
                cpu = [{route: p.cpu() for route, p in proxies.items()}]
                walls = [time.monotonic()]
                asked = await rtt_rounds(rtt, samples, repeat, args)
                cpu.append({route: p.cpu() for route, p in proxies.items()})
                walls.append(time.monotonic())
                asked_bursts = await burst_rounds(bursts, samples, repeat, args)
                cpu.append({route: p.cpu() for route, p in proxies.items()})
                walls.append(time.monotonic())
            finally:
                await asyncio.gather(*(r.end() for r in running.values()))
                await asyncio.gather(*(p.stop() for p in proxies.values()))
                for target, _ in pages.values():
                    with contextlib.suppress(RuntimeError):
                        await setup.call("Target.closeTarget", {"targetId": target})
        targets = {key: target for key, (target, _) in pages.items()}
        checks = check_recordings(proxies, targets, asked.done, asked_bursts.done,
                                  args.burst)
    checks["stage_s"] = {"rtt": round(walls[1] - walls[0], 1),
                         "burst": round(walls[2] - walls[1], 1)}
    # Each go-between's CPU time in each stage, per round trip and per console event it
    # relayed (what its contenders were asked to do, warm-up included).
    by_key = {v.key: v for v in chosen}
    checks["cpu"] = {}
    for route in proxies:
        trips = sum(n for key, n in asked.done.items() if by_key[key].route == route)
        events = sum(n * args.burst for key, n in asked_bursts.done.items()
                     if by_key[key].route == route)
        checks["cpu"][route] = {
            "us_per_round_trip": round((cpu[1][route] - cpu[0][route]) / trips * 1e6, 1)
            if trips else None,
            "us_per_event": round((cpu[2][route] - cpu[1][route]) / events * 1e6, 1)
            if events else None}
    for key in repeat.failed:  # a contender that failed part way is not compared
        for by_name in samples.values():
            by_name.pop(key, None)
    repeat.load_after = os.getloadavg()
    return repeat, checks


async def rtt_rounds(rtt: dict[str, Running], samples: dict[str, dict[str, list[float]]],
                     repeat: Repeat, args: argparse.Namespace) -> Counting:
    """Round-trip rounds: a batch in a row, then one call after an idle moment, each
    contender in a shuffled order."""
    asked = Counting()
    idle: dict[str, dict[str, list[float]]] = {"rtt": samples["rtt-idle"]}
    scratch: dict[str, dict[str, list[float]]] = {"rtt": {}}
    for index in range(args.warmup + args.rounds):
        measured = 1 if index >= args.warmup else 0
        await run_rounds(rtt, samples if measured else scratch, repeat, measured,
                         1 - measured, args.batch, ops=("rtt",))
        await run_rounds(rtt, idle if measured else scratch, repeat, measured,
                         1 - measured, 1, ops=("rtt",), idle_s=args.idle)
        asked.add(rtt, repeat, args.batch + 1)
    return asked


async def burst_rounds(bursts: dict[str, Running],
                       samples: dict[str, dict[str, list[float]]], repeat: Repeat,
                       args: argparse.Namespace) -> Counting:
    """``--bursts`` rounds, the contenders shuffled in each, no warm-up: a burst is
    thousands of frames, and the round trips before it warmed every process up."""
    asked = Counting()
    for _ in range(args.bursts):
        await run_rounds(bursts, samples, repeat, 1, 0, 1, ops=("burst",))
        asked.add(bursts, repeat, 1)
    return asked


def figures(repeat: Repeat, variants_by_key: dict[str, Variant]) -> dict[str, Any]:
    """Per operation and contender of one repeat: median (and p90) ms, and the ratio to
    the same client going direct (a burst's: events/s through ÷ events/s direct)."""
    out: dict[str, Any] = {}
    for op, by_name in repeat.passes[0].items():
        rows: dict[str, Any] = {}
        for name, durations in by_name.items():
            rows[name] = {"median_ms": round(statistics.median(durations) * 1000, 4),
                          "p90_ms": round(statistics.quantiles(durations, n=10)[-1] * 1000, 4)
                          if len(durations) > 1 else None,
                          "samples": len(durations)}
        for name, row in rows.items():
            direct = rows.get(variants_by_key[name].direct)
            if direct:
                ratio = row["median_ms"] / direct["median_ms"]
                row["ratio_to_direct"] = round(1 / ratio if op == "burst" else ratio, 4)
        out[op] = rows
    return out


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Over one phase's repeats: the median of the medians, the median ratio and its
    range, events/s for the bursts."""
    summary: dict[str, Any] = {
        "load_1min": [round(r["load_after"][0], 2) for r in runs],
        "runnable_median": statistics.median(
            [r["runnable_median"] for r in runs if r["runnable_median"] is not None] or [0])}
    for op in OP_TITLES:
        summary[op] = {}
        names = dict.fromkeys(n for r in runs for n in r["figures"].get(op, {}))
        for name in names:
            rows = [r["figures"][op][name] for r in runs if name in r["figures"].get(op, {})]
            ratios = [row["ratio_to_direct"] for row in rows if "ratio_to_direct" in row]
            median_ms = statistics.median(row["median_ms"] for row in rows)
            summary[op][name] = {"median_ms": round(median_ms, 4), "repeats": len(rows),
                                 "ratio": round(statistics.median(ratios), 3) if ratios else None,
                                 "ratio_range": [min(ratios), max(ratios)] if ratios else None}
            if op == "burst":
                summary[op][name]["events_per_s"] = round(
                    runs[0]["settings_burst"] / (median_ms / 1000))
    cpu = [r["checks"]["cpu"] for r in runs]
    summary["cpu_us"] = {
        route: {what: [c[route][what] for c in cpu if c.get(route, {}).get(what)]
                for what in ("us_per_round_trip", "us_per_event")}
        for route in dict.fromkeys(route for c in cpu for route in c)}
    summary["recording_problems"] = [p for r in runs for p in r["checks"]["problems"]]
    return summary


def table(results: dict[str, Any]) -> str:
    labels = {v.key: v.contender.labels
              for group in variants(True, True, True) for v in group}
    lines = [f"cdpnb proxy in front of headless-shell ({results['browser']}): each figure "
             "the median over repeats of a",
             "repeat's median, × the same client going direct in the same repeat (bursts: "
             "events/s through ÷ direct),",
             "and the range over repeats. load: 1-minute load average after each repeat; "
             "run: tasks running or ready."]
    phases = list(results["summary"])
    repeats = results["settings"]["repeats"]
    heads = [f"{phase} (load {min(s['load_1min']):.1f}–{max(s['load_1min']):.1f}, "
             f"run {s['runnable_median']:.0f})" for phase, s in results["summary"].items()]
    for op, title in OP_TITLES.items():
        unit = "events/s" if op == "burst" else "ms"
        extra = {"rtt": f" ({results['settings']['batch']} a wake-up)",
                 "rtt-idle": f" (≥ {results['settings']['idle'] * 1000:.0f} ms idle before it)",
                 "burst": f" ({results['settings']['burst']:,} a burst)"}[op]
        lines += [f"\n  {title}{extra}",
                  (f"  {'':<42}" + "".join(f" {h:<30}" for h in heads)).rstrip(),
                  (f"  {'':<42}" + "".join(f"{unit:>9} {'×direct':>7} {'range':<13}"
                                           for _ in phases)).rstrip()]
        present = {n for s in results["summary"].values() for n in s[op]}
        for name in (key for key in labels if key in present):
            cells = []
            for phase in phases:
                row = results["summary"][phase][op].get(name)
                if row is None:
                    cells.append(f"{'—':>9} {'':>7} {'':<13}")
                    continue
                value = (f"{row['events_per_s']:>9,}" if op == "burst"
                         else f"{row['median_ms']:>9.3f}")
                low, high = row["ratio_range"] or (0, 0)
                span = f"{low:.2f}–{high:.2f}" if row["ratio_range"] else ""
                if row["repeats"] < repeats:
                    span += f" n={row['repeats']}"
                ratio = f"{row['ratio']:>7.2f}" if row["ratio"] is not None else f"{'':>7}"
                cells.append(f"{value} {ratio} {span:<13}")
            label = labels[name][op.split("-")[0]]
            lines.append(f"  {label[:42]:<42}" + "".join(cells))
    lines.append("\n  the go-between's CPU µs per round trip / per console event it "
                 "relayed (each repeat's)")
    for phase, summary in results["summary"].items():
        for route, cpu in summary["cpu_us"].items():
            lines.append(f"  {phase:<6}{route:<11}" + " / ".join(
                ", ".join(f"{v:.0f}" for v in cpu[what]) or "—"
                for what in ("us_per_round_trip", "us_per_event")))
    for phase, summary in results["summary"].items():
        problems = summary["recording_problems"]
        lines.append(f"  recordings, {phase}: " + (
            "every evaluate and console event there, footers' counts = lines"
            if not problems else "; ".join(problems)))
    for note in results["not_measured"]:
        lines.append(f"  {note}")
    return "\n".join(lines)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {"runs": [], "summary": {}}
    by_key = {v.key: v for group in variants(args.puppeteer, args.floors,
                                             args.candidate is not None) for v in group}
    with ScenarioServer() as site:
        async with cdpnb.launch("headless-shell") as backend:
            results["browser"] = backend.version
            for phase in args.phases:
                runs = []
                with busy_processes(BUSY_PROCESSES if phase == "busy" else 0):
                    for index in range(args.repeats):
                        print(f"{phase}, repeat {index + 1}/{args.repeats} "
                              f"(load {os.getloadavg()[0]:.1f})", file=sys.stderr)
                        repeat, checks = await measure(backend, site, args,
                                                       len(results["runs"]) + index)
                        runs.append({
                            "phase": phase, "repeat": index + 1,
                            "load_before": repeat.load_before, "load_after": repeat.load_after,
                            "runnable_median": (statistics.median(repeat.runnable)
                                                if repeat.runnable else None),
                            "skipped": repeat.skipped, "failed": repeat.failed,
                            "figures": figures(repeat, by_key), "checks": checks,
                            "settings_burst": args.burst})
                results["runs"].extend(runs)
                results["summary"][phase] = summarise(runs)
    results["not_measured"] = list(dict.fromkeys(
        f"{what} {name}: {why}" for run in results["runs"] for what in ("skipped", "failed")
        for name, why in run[what].items()))
    return results


def interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3,
                        help="measurements per phase, fresh proxies and processes each")
    parser.add_argument("--rounds", type=int, default=30, help="measured rounds per repeat")
    parser.add_argument("--warmup", type=int, default=3, help="rounds before measuring")
    parser.add_argument("--batch", type=int, default=10, help="calls in a row per wake-up")
    parser.add_argument("--idle", type=float, default=0.05,
                        help="seconds of nothing before each idle-mode call (≥ 0.05)")
    parser.add_argument("--bursts", type=int, default=2,
                        help="bursts per contender and repeat")
    parser.add_argument("--burst", type=int, default=10_000,
                        help="console messages per burst")
    parser.add_argument("--phases", type=names_list, default=["quiet", "busy"],
                        help=f"quiet and/or busy (beside {BUSY_PROCESSES} CPU-bound processes)")
    parser.add_argument("--no-puppeteer", dest="puppeteer", action="store_false",
                        help="leave Puppeteer (direct and through the proxy) out")
    parser.add_argument("--no-floors", dest="floors", action="store_false",
                        help="leave the bare relays (contenders/relay.py) out")
    parser.add_argument("--candidate", type=Path, default=None, metavar="DIR",
                        help="also the proxy of another tree (DIR holds its cdpnb/, put "
                             "first on PYTHONPATH), recording .jsonl: a change measured "
                             "beside the proxy as it is")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    if args.candidate is not None:
        args.candidate = args.candidate.resolve()
    if (args.repeats < 1 or args.rounds < 3 or args.batch < 1 or args.warmup < 0
            or args.idle < 0.05 or args.bursts < 1 or args.burst < 1
            or not args.phases or not set(args.phases) <= {"quiet", "busy"}
            or (args.candidate is not None and not (args.candidate / "cdpnb").is_dir())):
        parser.error("--repeats >= 1, --rounds >= 3, --batch >= 1, --warmup >= 0, "
                     "--idle >= 0.05, --bursts >= 1, --burst >= 1; phases quiet,busy; "
                     "--candidate DIR holding a cdpnb/")
    signal.signal(signal.SIGTERM, interrupted)
    began = time.monotonic()
    try:
        results = asyncio.run(run(args))
    finally:
        for pid in list(STARTED):  # a contender or proxy an error or Ctrl-C left running
            end_group(pid, signal.SIGKILL)
    results["settings"] = {k: str(v) if isinstance(v, Path) else v
                           for k, v in vars(args).items() if k != "out"}
    results["versions"] = versions()
    results["machine"] = {"python": sys.version.split()[0], "cpus": os.cpu_count(),
                          "platform": platform.platform(), "busy_processes": BUSY_PROCESSES,
                          "when": time.strftime("%Y-%m-%d %H:%M"),
                          "wall_s": round(time.monotonic() - began, 1)}
    print(table(results))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"\nwritten to {args.out} ({results['machine']['wall_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
