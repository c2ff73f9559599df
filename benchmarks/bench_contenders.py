"""CDP clients side by side, every contender treated alike: each in a process of its own.

The harness launches the browser (``headless-shell``, ``chromium``) and a loopback page
server, gives each contender a page of its own (a new target each, so no two dialog
handlers meet), and starts every contender as its own process
(``benchmarks/contenders/``): a bare ``websockets`` client (the reference), cdpnb's
async face, ``cdpnb.sync`` from a script's main thread, Playwright, Puppeteer, cdp-use,
pydoll and zendriver (the last three in their own venv, ``bash benchmarks/peers.sh``).
Round by round, the contenders in a random order, it wakes one with a line on its stdin
(``rtt K`` / ``dialog K``); the contender does K operations, timing each with its own
monotonic clock, and answers with the K durations. Every contender is woken the same
way, and the harness itself is no contender.

- ``rtt``: ``Runtime.evaluate {"expression": "1"}`` on the page, reply awaited;
- ``dialog``: the page runs ``alert("x"); 1``; timed until the evaluate's reply is in
  hand (the dialog seen, answered, the page's JS continued).

Pages apart is not enough for the two clients that attach to every page of a browser:
Puppeteer is given a ``targetFilter`` for its own page, and Playwright (which has
none, and dismisses a dialog on any page nobody listens on) a context listener that
leaves the other contenders' dialogs alone. cdpnb's dialog contenders check after each
batch, outside the timing, that cdpnb closed every dialog the way its row says, and the
bare client that the browser took each answer.

Each figure is a ratio to the bare client's median, same operation, browser and run.
By default the whole set runs twice: as the machine is, and beside two CPU-bound
processes (``cdpnb.testing.busy``), with the load average of each.

    .venv/bin/python benchmarks/bench_contenders.py [--repeats 3] [--rounds 60] [--batch 10]

Three more measures, each only when asked for (``contenders/more_measures.py``), per
phase and repeat as the above; ``--backends none`` runs only them:

- ``--memory [N]``: the RSS of each dialog contender's process tree (Playwright's node
  driver included), idle after a warm-up and after N dialogs (10000), each alone on
  headless-shell;
- ``--bidi``: ``script.evaluate`` of ``1`` over WebDriver BiDi on Firefox: a bare
  client, cdpnb's ``sup.bidi`` (async and ``cdpnb.sync``) and Selenium's own BiDi
  client, each in a Firefox of its own (it takes one session at a time) beside a bare
  client in another;
- ``--ingest [N]``: events taken in per second from bench_cdp.py's stream server, N per
  connection (100000): the bare loop and cdpnb's core as bench_cdp.py runs them,
  cdp-use's and pydoll's own event handlers.

Writes ``benchmarks/results/contenders.json``. Not a test: speed is measured, never
asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

from contenders.harness import (
    BIDI_CONTENDERS,
    BIDI_REFERENCE,
    CONTENDERS,
    INGEST_CONTENDERS,
    INGEST_REFERENCE,
    MEMORY_CONTENDERS,
    OPS,
    PEERS_PYTHON,
    PUPPETEER,
    REFERENCE,
    STARTED,
    Contender,
    Running,
    Setup,
    end_group,
)
from contenders.more_measures import bidi_repeat, ingest_repeat, memory_repeat
from contenders.more_report import more_tables, summarise_memory
from contenders.report import repeat_figures, summarise, table
from contenders.rounds import Repeat, run_rounds
from websockets.asyncio.client import connect

import cdpnb
from cdpnb.probes import ScenarioServer
from cdpnb.testing.busy import busy_processes

RESULTS = Path(__file__).resolve().parent / "results" / "contenders.json"
#: The measures asked for by their own options (``--memory``, ``--bidi``, ``--ingest``).
MORE_MEASURES = ("memory", "bidi", "ingest")
BUSY_PROCESSES = 2

def passes(contenders: list[Contender]) -> list[list[Contender]]:
    """Who runs beside whom. Playwright attaches to every page of the browser, and with
    it there every page's dialog is slower: the bare client's ``dialog`` took 1.60 ms
    beside Playwright against 0.88-0.94 ms beside Puppeteer, cdpnb or no one
    (headless-shell, 2026-11-26). So it runs in a pass of its own beside a bare client
    of its own, and everyone else in a first pass without it."""
    reference = [c for c in contenders if c.name == REFERENCE]
    return [[c for c in contenders if not c.apart],
            *([*reference, c] for c in contenders if c.apart)]


async def measure(backend: cdpnb.Backend, site: ScenarioServer, contenders: list[Contender],
                  rounds: int, warmup: int, batch: int, serial: int) -> Repeat:
    repeat = Repeat(load_before=os.getloadavg())
    for index, group in enumerate(passes(contenders)):
        samples: dict[str, dict[str, list[float]]] = {op: {} for op in OPS}
        repeat.passes.append(samples)
        await measure_pass(backend, site, group, f"{serial}.{index}", samples, repeat,
                           rounds, warmup, batch)
    repeat.load_after = os.getloadavg()
    return repeat


async def measure_pass(backend: cdpnb.Backend, site: ScenarioServer,
                       contenders: list[Contender], serial: str,
                       samples: dict[str, dict[str, list[float]]], repeat: Repeat,
                       rounds: int, warmup: int, batch: int) -> None:
    """Fresh pages and processes for ``contenders``, interleaved round by round."""
    running: dict[str, Running] = {}
    async with connect(backend.cdp_url, max_size=None, ping_interval=None) as ws:
        setup = Setup(ws)
        pages: dict[str, tuple[str, str]] = {}
        for contender in contenders:
            url = site.url("/blank") + f"?contender={contender.name}&repeat={serial}"
            pages[contender.name] = (await setup.open_page(url), url)
        try:
            with tempfile.TemporaryDirectory(prefix="cdpnb-contenders-") as logs:
                for contender in contenders:
                    target, url = pages[contender.name]
                    started = await Running.start(contender, [backend.cdp_url, target, url],
                                                  Path(logs))
                    if isinstance(started, str):
                        repeat.skipped[contender.name] = started
                    else:
                        running[contender.name] = started
                await run_rounds(running, samples, repeat, rounds, warmup, batch)
        finally:
            await asyncio.gather(*(r.end() for r in running.values()))
            for target, _ in pages.values():
                with contextlib.suppress(RuntimeError):
                    await setup.call("Target.closeTarget", {"targetId": target})


def versions() -> dict[str, str]:
    found = {name: metadata.version(name) for name in ("cdpnb", "websockets", "playwright")}
    package = PUPPETEER / "package.json"
    if package.exists():
        found["puppeteer-core"] = json.loads(package.read_text())["version"]
    if PEERS_PYTHON.exists():
        script = ("import importlib.metadata as m, json; print(json.dumps({d.name: d.version "
                  "for d in m.distributions() if d.name in ('cdp-use', 'pydoll-python', "
                  "'zendriver', 'selenium', 'websockets')}))")
        peers = json.loads(subprocess.run([str(PEERS_PYTHON), "-c", script], check=True,
                                          capture_output=True, text=True).stdout)
        found |= {("peers websockets" if k == "websockets" else k): v for k, v in peers.items()}
    return found


@contextlib.contextmanager
def phase_load(phase: str) -> Iterator[None]:
    with busy_processes(BUSY_PROCESSES if phase == "busy" else 0):
        yield


async def run_phase(backend: cdpnb.Backend, site: ScenarioServer, phase: str,
                    args: argparse.Namespace, first_serial: int) -> list[dict[str, Any]]:
    """The repeats of one backend and phase, each with fresh pages and processes."""
    chosen = [c for c in CONTENDERS if c.name == REFERENCE or not args.only
              or c.name in args.only]
    runs = []
    with phase_load(phase):
        for index in range(args.repeats):
            print(f"{backend.kind}, {phase}, repeat {index + 1}/{args.repeats} "
                  f"(load {os.getloadavg()[0]:.1f})", file=sys.stderr)
            repeat = await measure(backend, site, chosen, args.rounds, args.warmup,
                                   args.batch, first_serial + index)
            runs.append({"backend": backend.kind,
                         **repeat_run(repeat, phase, index, repeat_figures(repeat.passes))})
    return runs


def not_measured(runs: list[dict[str, Any]]) -> list[str]:
    """What was skipped or failed, once each, with its reason."""
    notes = [f"{what} {name}: {why}" for run in runs for what in ("skipped", "failed")
             for name, why in run[what].items()]
    return list(dict.fromkeys(notes))


async def run(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {"runs": [], "summary": {}, "browsers": {}}
    with ScenarioServer() as site:
        for kind in args.backends:
            async with cdpnb.launch(kind) as backend:
                results["browsers"][kind] = backend.version
                results["summary"][kind] = {}
                for phase in args.phases:
                    runs = await run_phase(backend, site, phase, args, len(results["runs"]))
                    results["runs"].extend(runs)
                    results["summary"][kind][phase] = summarise(runs)
        if args.memory:
            results["memory"] = await run_memory(site, args)
    if args.bidi:
        results["bidi"] = await run_more(args, "bidi")
    if args.ingest:
        results["ingest"] = await run_more(args, "ingest")
    results["not_measured"] = not_measured(
        [*results["runs"], *(run for measure in MORE_MEASURES
                             for run in results.get(measure, {}).get("runs", []))])
    return results


def chosen(contenders: tuple[Contender, ...], reference: str,
           args: argparse.Namespace) -> list[Contender]:
    return [c for c in contenders if c.name == reference or not args.only
            or c.name in args.only]


async def run_memory(site: ScenarioServer, args: argparse.Namespace) -> dict[str, Any]:
    """``--memory N``: RSS idle and after N dialogs, per phase and repeat (headless-shell)."""
    memory: dict[str, Any] = {"dialogs": args.memory, "runs": [], "summary": {}}
    contenders = [c for c in chosen(CONTENDERS, REFERENCE, args)
                  if c.name in MEMORY_CONTENDERS]
    async with cdpnb.launch("headless-shell") as backend:
        memory["browser"] = backend.version
        for phase in args.phases:
            runs = []
            with phase_load(phase):
                for index in range(args.repeats):
                    print(f"memory, {phase}, repeat {index + 1}/{args.repeats} "
                          f"(load {os.getloadavg()[0]:.1f})", file=sys.stderr)
                    run = await memory_repeat(backend, site, contenders, args.memory, index)
                    runs.append({"phase": phase, "repeat": index + 1, **run})
            memory["runs"].extend(runs)
            memory["summary"][phase] = summarise_memory(runs)
    return memory


async def run_more(args: argparse.Namespace, measure: str) -> dict[str, Any]:
    """``--bidi`` (Firefox, round trips) or ``--ingest N`` (events per connection): per
    phase, the repeats and the figures over them."""
    results: dict[str, Any] = {"runs": [], "summary": {}}
    if measure == "ingest":
        results["messages"] = args.ingest
        contenders = chosen(INGEST_CONTENDERS, INGEST_REFERENCE, args)
        reference = INGEST_REFERENCE
    else:
        contenders = chosen(BIDI_CONTENDERS, BIDI_REFERENCE, args)
        reference = BIDI_REFERENCE
    for phase in args.phases:
        runs = []
        with phase_load(phase):
            for index in range(args.repeats):
                print(f"{measure}, {phase}, repeat {index + 1}/{args.repeats} "
                      f"(load {os.getloadavg()[0]:.1f})", file=sys.stderr)
                if measure == "ingest":
                    repeat = await ingest_repeat(contenders, args.ingest, args.ingest_rounds,
                                                 1)
                else:
                    repeat = await bidi_repeat(contenders, args.rounds, args.warmup,
                                               args.batch)
                runs.append(repeat_run(repeat, phase, index,
                                       repeat_figures(repeat.passes, reference)))
        results["runs"].extend(runs)
        results["summary"][phase] = summarise(runs, ops=(measure,))
    return results


def repeat_run(repeat: Repeat, phase: str, index: int,
               figures: dict[str, dict[str, dict[str, float]]]) -> dict[str, Any]:
    return {"phase": phase, "repeat": index + 1, "load_before": repeat.load_before,
            "load_after": repeat.load_after,
            "runnable_median": (statistics.median(repeat.runnable)
                                if repeat.runnable else None),
            "skipped": repeat.skipped, "failed": repeat.failed, "figures": figures}


def interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def names_list(text: str) -> list[str]:
    return [word.strip() for word in text.split(",") if word.strip()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3,
                        help="measurements per backend and phase, fresh processes each")
    parser.add_argument("--rounds", type=int, default=60, help="measured rounds per repeat")
    parser.add_argument("--warmup", type=int, default=5, help="rounds before measuring")
    parser.add_argument("--batch", type=int, default=10, help="operations per wake-up")
    parser.add_argument("--phases", type=names_list, default=["quiet", "busy"],
                        help=f"quiet and/or busy (beside {BUSY_PROCESSES} CPU-bound processes)")
    parser.add_argument("--backends", type=names_list, default=["headless-shell", "chromium"],
                        help="for rtt and dialog; none: only --memory, --bidi, --ingest")
    parser.add_argument("--only", type=names_list, default=[],
                        help="these contenders (and each measure's bare one): " + ",".join(
                            c.name for c in (*CONTENDERS, *BIDI_CONTENDERS,
                                             *INGEST_CONTENDERS)))
    parser.add_argument("--memory", type=int, nargs="?", const=10_000, default=0,
                        metavar="N", help="also: RSS of each one's process tree idle and "
                        "after N dialogs (default 10000), headless-shell")
    parser.add_argument("--bidi", action="store_true",
                        help="also: WebDriver BiDi script.evaluate round trip on Firefox")
    parser.add_argument("--ingest", type=int, nargs="?", const=100_000, default=0,
                        metavar="N", help="also: events taken in per second, N per "
                        "connection (default 100000), from bench_cdp.py's stream server")
    parser.add_argument("--ingest-rounds", type=int, default=10,
                        help="measured connections per contender and repeat for --ingest")
    parser.add_argument("--out", type=Path, default=None,
                        help=f"default {RESULTS.name}; with --backends none "
                             "contenders-<measures>.json, contenders-bidi.json say")
    args = parser.parse_args()
    known = {c.name for c in (*CONTENDERS, *BIDI_CONTENDERS, *INGEST_CONTENDERS)}
    args.backends = [kind for kind in args.backends if kind != "none"]
    measures = [measure for measure in MORE_MEASURES if getattr(args, measure)]
    if not args.backends and not measures:
        parser.error("--backends none: give --memory, --bidi or --ingest")
    args.out = args.out or (RESULTS if args.backends else RESULTS.with_name(
        f"contenders-{'-'.join(measures)}.json"))
    if (args.repeats < 1 or args.rounds < 3 or args.batch < 1 or args.warmup < 0
            or args.memory < 0 or args.ingest < 0 or args.ingest_rounds < 3
            or not set(args.phases) <= {"quiet", "busy"} or not set(args.only) <= known
            or not set(args.backends) <= {"headless-shell", "chromium"}):
        parser.error("--repeats >= 1, --rounds >= 3, --batch >= 1, --warmup >= 0; phases "
                     "quiet,busy; backends headless-shell,chromium; --only from " +
                     ",".join(sorted(known)))
    # A SIGTERM ends the run as Ctrl-C does: the contenders' pages closed, their
    # processes ended by pid.
    signal.signal(signal.SIGTERM, interrupted)
    try:
        results = asyncio.run(run(args))
    finally:
        for pid in list(STARTED):  # a contender an error or Ctrl-C left running
            end_group(pid, signal.SIGKILL)
    results["settings"] = {k: v for k, v in vars(args).items() if k != "out"}
    results["versions"] = versions()
    results["machine"] = {"python": sys.version.split()[0], "cpus": os.cpu_count(),
                          "platform": platform.platform(), "busy_processes": BUSY_PROCESSES,
                          "when": time.strftime("%Y-%m-%d %H:%M")}
    if results["summary"]:
        print(table(results))
    print(more_tables(results))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"\nwritten to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
