"""bench_contenders.py's three further measures, each asked for by its own option:

- ``--memory N``: on headless-shell, each contender alone (in a random order) on a page of
  its own: ``WARMUP_DIALOGS`` dialogs, then the RSS of its process tree (the process and
  every descendant: Playwright's node driver counts) when idle, then N more dialogs, and
  the RSS again once idle;
- ``--bidi``: ``script.evaluate`` of ``1`` on Firefox (more_libraries.py). Firefox ESR
  153 takes one BiDi session at a time (a second ``session.new`` on another connection:
  ``session not created: Maximum number of active sessions``), so each contender gets a
  Firefox of its own, and runs in a pass of its own beside a bare client in a second
  Firefox (two browsers at once, no more), the pair woken round by round as in the CDP
  passes, and swapping Firefoxes halfway;
- ``--ingest N``: events taken in per second from bench_cdp.py's stream server, every
  contender connecting to it in turn, round by round, N events per connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import random
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import psutil  # type: ignore[import-untyped]  # cdpnb's venv has it, no stubs
from bench_cdp import _stream_server
from contenders.harness import (
    BIDI_REFERENCE,
    Contender,
    ContenderFailed,
    Running,
    Setup,
)
from contenders.rounds import Repeat, run_rounds
from websockets.asyncio.client import connect

import cdpnb
from cdpnb.probes import ScenarioServer

__all__ = ["WARMUP_DIALOGS", "bidi_repeat", "ingest_repeat", "memory_repeat", "tree_rss"]

WARMUP_DIALOGS = 200
#: Dialogs per wake-up in the memory run (each batch well inside the reply timeout).
MEMORY_BATCH = 500
#: Idle time before each RSS reading: the last replies written, timers run.
SETTLE_S = 2.0
MB = 1024 * 1024


def tree_rss(pid: int) -> int:
    """Resident bytes of ``pid`` and all its descendants (shared pages counted in each)."""
    root = psutil.Process(pid)
    total = 0
    for process in (root, *root.children(recursive=True)):
        with contextlib.suppress(psutil.NoSuchProcess):
            total += process.memory_info().rss
    return total


async def memory_of(running: Running, dialogs: int) -> dict[str, Any]:
    await running.ask("dialog", WARMUP_DIALOGS)
    await asyncio.sleep(SETTLE_S)
    idle = tree_rss(running.process.pid)
    durations: list[float] = []
    while len(durations) < dialogs:
        durations += await running.ask("dialog", min(MEMORY_BATCH, dialogs - len(durations)))
    await asyncio.sleep(SETTLE_S)
    after = tree_rss(running.process.pid)
    return {"idle_mb": round(idle / MB, 1), "after_mb": round(after / MB, 1),
            "growth_mb": round((after - idle) / MB, 1), "dialogs": dialogs,
            "processes": 1 + len(psutil.Process(running.process.pid).children(recursive=True)),
            "dialog_median_ms": round(statistics.median(durations) * 1000, 4)}


async def memory_repeat(backend: cdpnb.Backend, site: ScenarioServer,
                        contenders: list[Contender], dialogs: int, serial: int,
                        ) -> dict[str, Any]:
    """Each contender alone, on a fresh page, in a fresh process."""
    run: dict[str, Any] = {"load_before": os.getloadavg(), "figures": {}, "skipped": {},
                           "failed": {}}
    async with connect(backend.cdp_url, max_size=None, ping_interval=None) as ws:
        setup = Setup(ws)
        with tempfile.TemporaryDirectory(prefix="cdpnb-contenders-") as logs:
            for contender in random.sample(contenders, len(contenders)):
                url = site.url("/blank") + f"?contender={contender.name}&memory={serial}"
                target = await setup.open_page(url)
                try:
                    started = await Running.start(contender, [backend.cdp_url, target, url],
                                                  Path(logs))
                    if isinstance(started, str):
                        run["skipped"][contender.name] = started
                        continue
                    try:
                        run["figures"][contender.name] = await memory_of(started, dialogs)
                    except ContenderFailed as failed:
                        run["failed"][contender.name] = f"memory: {failed}"
                        print(f"  {contender.name} failed: {failed}", file=sys.stderr)
                    finally:
                        await started.end()
                finally:
                    with contextlib.suppress(RuntimeError):
                        await setup.call("Target.closeTarget", {"targetId": target})
    run["load_after"] = os.getloadavg()
    return run


async def start_all(contenders: list[Contender], args_of: dict[str, list[str]],
                    repeat: Repeat, logs: Path) -> dict[str, Running]:
    running: dict[str, Running] = {}
    for contender in contenders:
        started = await Running.start(contender, args_of[contender.name], logs)
        if isinstance(started, str):
            repeat.skipped[contender.name] = started
        else:
            running[contender.name] = started
    return running


async def bidi_repeat(contenders: list[Contender], rounds: int, warmup: int, batch: int,
                      ) -> Repeat:
    """A pass per contender, in a random order: it and a bare client, each in a Firefox
    of its own, woken round by round; halfway the two swap Firefoxes (fresh processes,
    fresh sessions: every contender ends its session as it closes, and Firefox then
    takes a new one), so neither is measured on one Firefox only. Two bare clients so
    placed differed by up to 1.10× without the swap (2026-11-26, 5 rounds)."""
    repeat = Repeat(load_before=os.getloadavg())
    reference = next(c for c in contenders if c.name == BIDI_REFERENCE)
    others = [c for c in contenders if c is not reference]
    for other in random.sample(others, len(others)):
        samples: dict[str, dict[str, list[float]]] = {"bidi": {}}
        repeat.passes.append(samples)
        pair = random.sample([reference, other], 2)
        async with cdpnb.launch("firefox") as first, cdpnb.launch("firefox") as second:
            for half in (pair, pair[::-1]):
                args_of = {half[0].name: [first.cdp_url], half[1].name: [second.cdp_url]}
                with tempfile.TemporaryDirectory(prefix="cdpnb-contenders-") as logs:
                    running = await start_all(half, args_of, repeat, Path(logs))
                    try:
                        await run_rounds(running, samples, repeat, (rounds + 1) // 2,
                                         warmup, batch, ops=("bidi",))
                    finally:
                        await asyncio.gather(*(r.end() for r in running.values()))
    repeat.load_after = os.getloadavg()
    return repeat


async def ingest_repeat(contenders: list[Contender], count: int, rounds: int, warmup: int,
                        ) -> Repeat:
    """Every contender connecting in turn to one stream server (bench_cdp.py's, in a
    process of its own), one connection of ``count`` events per wake-up."""
    repeat = Repeat(load_before=os.getloadavg())
    parent, child = multiprocessing.Pipe()
    server = multiprocessing.get_context("spawn").Process(
        target=_stream_server, args=(child, count), daemon=True)
    server.start()
    try:
        url = f"ws://127.0.0.1:{parent.recv()}/devtools/browser/bench"
        samples: dict[str, dict[str, list[float]]] = {"ingest": {}}
        repeat.passes.append(samples)
        with tempfile.TemporaryDirectory(prefix="cdpnb-contenders-") as logs:
            running = await start_all(contenders, {c.name: [url, str(count)]
                                                   for c in contenders}, repeat, Path(logs))
            try:
                await run_rounds(running, samples, repeat, rounds, warmup, 1,
                                 ops=("ingest",))
            finally:
                await asyncio.gather(*(r.end() for r in running.values()))
    finally:
        server.kill()
        server.join()
    repeat.load_after = os.getloadavg()
    return repeat
