"""Launch → first page dialog-ready: cdpnb, Puppeteer and a bare launch, side by side.

Each measurement runs in a fresh process of its own, started the same way for every
contender (``subprocess.run`` from this script, one at a time), and is timed inside that
process from just before its launch call to the moment a page of its own is attached
and would see a dialog:

- ``cdpnb``: ``await cdpnb.launch(browser)`` then ``await cdpnb.Supervisor.start(backend)``
  until it returns (its page created, attached, ``Page.enable`` / the BiDi
  subscription done). ``import cdpnb`` and the lazy ``cdpnb.Supervisor`` import happen
  before the clock starts (Puppeteer's import is not timed either); how long they took
  is reported as ``import_s``.
- ``puppeteer``: node with the repository's ``puppeteer-core``:
  ``puppeteer.launch({executablePath, headless})`` (``browser: 'firefox'`` over
  WebDriver BiDi for Firefox), ``browser.newPage()`` and ``page.on('dialog')``.
- ``bare``: ``subprocess.Popen`` with the flags cdpnb uses (its own command-line
  functions), the endpoint read from stderr, a ``websockets`` client, and a page
  created and attached by hand (CDP: ``createTarget``, ``attachToTarget``,
  ``Page.enable``, ``Runtime.enable``; BiDi: ``session.new``, ``session.subscribe``,
  ``browsingContext.create``).

Rounds interleave the contenders and browsers in a random order, so load from
elsewhere hits all alike; one warm-up round (not counted) fills the page cache. For
cdpnb the time is cut into phases (seconds from the launch call): ``spawned`` (the
process started), ``endpoint`` (its port known), ``usable`` (the launch done in
its thread: for the CDP kinds ``/json/version`` read), ``launched`` (the caller's
``await cdpnb.launch`` returned), ``websocket`` (the supervisor's connection open),
``attached`` (its page attached) and ``ready``. ``cpu_s`` is the CPU time the
browser's process group had used at that moment, a figure that moves less with the
machine's load than the wall-clock time does.

No network: every browser gets cdpnb's offline flags or Firefox preferences
(Puppeteer too: ``--disable-component-update``, ``extraPrefsFirefox``), and every
endpoint is on 127.0.0.1.

    .venv/bin/python benchmarks/bench_launch.py [--rounds 10] [--busy 2]
        [--browsers headless-shell,chromium,firefox] [--contenders cdpnb,puppeteer,bare]

Prints a table and writes ``benchmarks/results/launch.json``. Not a test: speed is
measured here, never asserted (see benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results" / "launch.json"
BROWSERS = ("headless-shell", "chromium", "firefox")
CONTENDERS = ("cdpnb", "puppeteer", "bare")
#: One measurement may take this long before it counts as failed (a loaded machine
#: starts Firefox in 3–6 s).
CHILD_TIMEOUT_S = 120.0
#: The order the cdpnb phases happen in, for the table.
PHASES = ("spawned", "endpoint", "usable", "launched", "websocket", "attached", "ready")


# -- inside a measured process -----------------------------------------------------------

def group_cpu_s(pgid: int) -> float:
    """CPU seconds (user + system) used so far by the live processes of group ``pgid``
    (found as cdpnb's reaper finds them)."""
    import psutil

    from cdpnb.backends.reaper import members

    total = 0.0
    for pid in members(pgid):
        try:
            times = psutil.Process(pid).cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
    return total


def _is_our_page(text: str, protocol: str) -> bool:
    """Whether a received message says a page is attached: CDP's attachedToTarget for a
    page, or the reply to BiDi's browsingContext.create."""
    if protocol == "bidi":
        if '"context"' not in text:
            return False
        message = json.loads(text)
        result = message.get("result")
        return message.get("type") == "success" and isinstance(result, dict) \
            and "context" in result
    if '"Target.attachedToTarget"' not in text:
        return False
    message = json.loads(text)
    return bool(message.get("params", {}).get("targetInfo", {}).get("type") == "page")


class _Stamped:
    """The supervisor's transport, passed through, noting when its page was attached."""

    def __init__(self, transport: Any, marks: dict[str, float]) -> None:
        self._transport = transport
        self._marks = marks

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)

    def start(self, on_frames: Callable[[Sequence[str | bytes]], None],
              on_closed: Callable[[str], None]) -> None:
        protocol = str(getattr(self._transport, "protocol", "cdp"))

        def stamped(frames: Sequence[str | bytes]) -> None:
            if "attached" not in self._marks:
                for frame in frames:
                    text = frame if isinstance(frame, str) else frame.decode()
                    if _is_our_page(text, protocol):
                        self._marks["attached"] = time.monotonic()
                        break
            on_frames(frames)

        self._transport.start(stamped, on_closed)


def measure_cdpnb(browser: str) -> dict[str, Any]:
    imported = time.monotonic()
    import cdpnb
    from cdpnb.transport import connect_websocket

    supervisor_class = cdpnb.Supervisor  # the lazy import, outside the clock
    import_s = time.monotonic() - imported
    marks: dict[str, float] = {}

    async def stamped_connect(url: str, timeout: float) -> Any:
        transport = await connect_websocket(url, timeout)
        marks["websocket"] = time.monotonic()
        return _Stamped(transport, marks)

    async def run() -> dict[str, Any]:
        began = time.monotonic()
        backend = await cdpnb.launch(browser)
        launched = time.monotonic()
        try:
            sup = await supervisor_class.start(backend, transport=stamped_connect)
            ready = time.monotonic()
            cpu_s = group_cpu_s(backend.pid)
            await sup.stop()
        finally:
            await backend.aclose()
        # Backend.phases counts from when the launch's own thread began, a moment after
        # ``began`` (both time.monotonic()): shifted by that moment, they are on this
        # clock. ``usable`` (the launch done in its thread) against ``launched`` (the
        # caller has it) is the hand-over from that thread to the caller's loop.
        shift = backend._started.began - began
        phases = {**{name: value + shift for name, value in backend.phases.items()},
                  "launched": launched - began,
                  **{k: v - began for k, v in marks.items()}, "ready": ready - began}
        return {"total_s": ready - began, "phases": phases, "cpu_s": cpu_s,
                "import_s": import_s, "version": backend.version}

    return asyncio.run(run())


class _Bare:
    """A hand-made client on one open websocket: commands answered in order."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.next_id = 0

    def call(self, method: str, params: dict[str, Any] | None = None,
             session: str | None = None) -> dict[str, Any]:
        self.next_id += 1
        message: dict[str, Any] = {"id": self.next_id, "method": method,
                                   "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        self.ws.send(json.dumps(message))
        while True:
            reply = json.loads(self.ws.recv(timeout=30))
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply["result"]
                return result


def _read_endpoint(process: subprocess.Popen[bytes], pattern: bytes) -> str:
    assert process.stderr is not None
    for line in process.stderr:
        found = re.search(pattern, line)
        if found:
            return found[1].decode()
    raise RuntimeError(f"the browser exited ({process.wait()}) before naming its endpoint")


def measure_bare(browser: str) -> dict[str, Any]:
    from websockets.sync.client import connect

    from cdpnb.backends.chromium import command_line, find_executable
    from cdpnb.backends.firefox import (
        FIREFOX_ENV,
        find_firefox,
        firefox_command_line,
        user_js,
    )
    from cdpnb.backends.reaper import remove_workdir

    workdir = Path(tempfile.mkdtemp(prefix="bench-launch-"))
    marks: dict[str, float] = {}
    process = None
    try:
        began = time.monotonic()
        if browser == "firefox":
            binary = find_firefox()
            profile = workdir / "profile"
            profile.mkdir()
            (profile / "user.js").write_text(user_js())
            args, env = firefox_command_line(binary, profile), {**os.environ, **FIREFOX_ENV}
            pattern = rb"WebDriver BiDi listening on (ws://127\.0\.0\.1:\d+)"
        else:
            binary = find_executable(browser)
            args = command_line(binary, f"--user-data-dir={workdir / 'profile'}", ())
            env, pattern = dict(os.environ), rb"DevTools listening on (ws://\S+)"
        process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, start_new_session=True, env=env)
        marks["spawned"] = time.monotonic()
        # Only the first lines of stderr are read: a browser writes a few kB more at
        # most in a run this short, far below what the pipe holds.
        url = _read_endpoint(process, pattern)
        marks["endpoint"] = time.monotonic()
        with connect(url + "/session" if browser == "firefox" else url, max_size=None,
                     open_timeout=30) as ws:
            marks["websocket"] = time.monotonic()
            client = _Bare(ws)
            if browser == "firefox":
                client.call("session.new", {"capabilities": {"alwaysMatch": {
                    "unhandledPromptBehavior": {"default": "ignore"}}}})
                client.call("session.subscribe", {"events": ["browsingContext"]})
                client.call("browsingContext.create", {"type": "tab"})
                marks["attached"] = time.monotonic()
            else:
                target = client.call("Target.createTarget", {"url": "about:blank"})["targetId"]
                session = client.call("Target.attachToTarget",
                                      {"targetId": target, "flatten": True})["sessionId"]
                marks["attached"] = time.monotonic()
                client.call("Page.enable", session=session)
                client.call("Runtime.enable", session=session)
            ready = time.monotonic()
            cpu_s = group_cpu_s(process.pid)
        return {"total_s": ready - began, "cpu_s": cpu_s,
                "phases": {**{k: v - began for k, v in marks.items()}, "ready": ready - began}}
    finally:
        if process is not None:
            _end_group(process)
        # (also Chromium's singleton socket dir in /tmp, which it leaves behind)
        remove_workdir(str(workdir))


def _end_group(process: subprocess.Popen[bytes]) -> None:
    """End the browser's process group (its own session: the browser and every helper
    it started), while its leader is not yet reaped, so the group id cannot have been
    reused by a stranger; then reap the leader."""
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(10)


#: Puppeteer's side, run by node from the repository root (where node_modules is).
PUPPETEER_JS = r"""
import fs from 'node:fs';
import puppeteer from 'puppeteer-core';
const [executablePath, browser, headless, argsJson, prefsJson, envJson] = process.argv.slice(1);
function groupCpu(pgid) {
  let ticks = 0;
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat;
    try { stat = fs.readFileSync(`/proc/${entry}/stat`, 'latin1'); } catch { continue; }
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(fields[2]) === pgid) ticks += Number(fields[11]) + Number(fields[12]);
  }
  return ticks / 100;  // USER_HZ on Linux
}
const began = performance.now();
const options = {executablePath, browser, args: JSON.parse(argsJson),
                 headless: headless === 'shell' ? 'shell' : true};
if (browser === 'firefox') {
  options.extraPrefsFirefox = JSON.parse(prefsJson);
  options.env = {...process.env, ...JSON.parse(envJson)};
}
const instance = await puppeteer.launch(options);
const launched = performance.now();
let result;
try {
  const page = await instance.newPage();
  page.on('dialog', () => {});
  const ready = performance.now();
  const cpu = groupCpu(instance.process().pid);
  result = {total_s: (ready - began) / 1000, cpu_s: cpu, version: await instance.version(),
            phases: {launched: (launched - began) / 1000, ready: (ready - began) / 1000}};
} finally {
  await instance.close();
}
console.log(JSON.stringify(result));
"""


# -- the harness ------------------------------------------------------------------------

def _puppeteer_command(browser: str) -> list[str]:
    from cdpnb.backends.chromium import find_executable
    from cdpnb.backends.firefox import FIREFOX_ENV, FIREFOX_PREFS, find_firefox
    from cdpnb.backends.node import find_node

    if browser == "firefox":
        executable, name, headless, args = find_firefox(), "firefox", "true", []
    else:
        executable, name = find_executable(browser), "chrome"
        headless = "shell" if browser == "headless-shell" else "true"
        # Puppeteer's own defaults leave the component updater on: off, as for cdpnb.
        args = ["--disable-component-update"] + (["--no-sandbox"] if os.geteuid() == 0 else [])
    return [find_node(), "--input-type=module", "-e", PUPPETEER_JS, executable, name, headless,
            json.dumps(args), json.dumps(FIREFOX_PREFS), json.dumps(FIREFOX_ENV)]


def run_one(contender: str, browser: str) -> dict[str, Any]:
    """One measurement in a fresh process; its figures, or what went wrong."""
    from cdpnb.backends import npm

    if contender == "puppeteer":
        command = _puppeteer_command(browser)
    else:
        command = [sys.executable, __file__, "--child", contender, browser]
    env = {k: v for k, v in os.environ.items() if k != "NODE_OPTIONS"}
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S,
                              cwd=npm.node_modules().parent, stdin=subprocess.DEVNULL,
                              env=env, check=False)
    except subprocess.TimeoutExpired:
        return {"error": f"no answer within {CHILD_TIMEOUT_S:g} s"}
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        return {"error": f"exit {done.returncode}: {done.stderr.strip()[-400:]}"}
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def _spread(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def summarise(samples: dict[str, dict[str, list[dict[str, Any]]]]) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    for browser, by_contender in samples.items():
        row: dict[str, Any] = {}
        for contender, runs in by_contender.items():
            good = [r for r in runs if "error" not in r]
            errors = [r["error"] for r in runs if "error" in r]
            if not good:
                row[contender] = {"errors": errors}
                continue
            phases = {name: statistics.median(r["phases"][name] for r in good)
                      for name in good[0]["phases"]
                      if all(name in r["phases"] for r in good)}
            row[contender] = {"n": len(good), "total_s": _spread([r["total_s"] for r in good]),
                              "cpu_s": _spread([r["cpu_s"] for r in good]),
                              "phases_median_s": phases, "errors": errors,
                              "version": good[0].get("version")}
            if contender == "cdpnb":
                row[contender]["import_s"] = _spread([r["import_s"] for r in good])
        for other in ("puppeteer", "bare"):
            mine, theirs = row.get("cdpnb", {}), row.get(other, {})
            if "total_s" in mine and "total_s" in theirs:
                row[f"cdpnb_vs_{other}"] = (mine["total_s"]["median"]
                                            / theirs["total_s"]["median"])
        summary[browser] = row
    return summary


def table(summary: dict[str, Any]) -> str:
    lines = ["| browser | contender | median s | range s | CPU s | cdpnb ÷ |",
             "|---|---|---|---|---|---|"]
    for browser, row in summary.items():
        for contender in CONTENDERS:
            entry = row.get(contender)
            if entry is None:
                continue
            if "total_s" not in entry:
                lines.append(f"| {browser} | {contender} | failed: {entry['errors'][:1]} | | | |")
                continue
            total, cpu = entry["total_s"], entry["cpu_s"]
            ratio = row.get(f"cdpnb_vs_{contender}")
            lines.append(f"| {browser} | {contender} | {total['median']:.3f} | "
                         f"{total['min']:.3f}–{total['max']:.3f} | {cpu['median']:.2f} | "
                         f"{'' if ratio is None else f'{ratio:.2f}×'} |")
    lines.append("")
    lines.append("cdpnb's phases (median s from the launch call): " + "; ".join(
        f"{browser}: " + " → ".join(
            f"{name} {row['cdpnb']['phases_median_s'][name]:.3f}" for name in PHASES
            if name in row["cdpnb"]["phases_median_s"])
        for browser, row in summary.items() if "phases_median_s" in row.get("cdpnb", {})))
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--browsers", default=",".join(BROWSERS))
    parser.add_argument("--contenders", default=",".join(CONTENDERS))
    parser.add_argument("--warmup", type=int, default=1, help="rounds run first, not counted")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--busy", type=int, default=0, metavar="N",
                        help="run beside N CPU-bound processes (cdpnb.testing.busy)")
    parser.add_argument("--child", nargs=2, metavar=("CONTENDER", "BROWSER"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        contender, browser = args.child
        measure = measure_cdpnb if contender == "cdpnb" else measure_bare
        print(json.dumps(measure(browser)))
        return 0

    from cdpnb.testing.busy import busy_processes

    browsers = [b for b in args.browsers.split(",") if b]
    contenders = [c for c in args.contenders.split(",") if c]
    unknown = set(browsers) - set(BROWSERS) | set(contenders) - set(CONTENDERS)
    if unknown:
        parser.error(f"unknown: {', '.join(sorted(unknown))}")
    samples: dict[str, dict[str, list[dict[str, Any]]]] = {
        b: {c: [] for c in contenders} for b in browsers}
    load_before = os.getloadavg()
    began = time.monotonic()
    with busy_processes(args.busy):
        for round_number in range(args.warmup + args.rounds):
            pairs = [(b, c) for b in browsers for c in contenders]
            random.shuffle(pairs)
            for browser, contender in pairs:
                result = run_one(contender, browser)
                if round_number >= args.warmup:
                    samples[browser][contender].append(result)
            print(f"round {round_number + 1}/{args.warmup + args.rounds} done "
                  f"(load {os.getloadavg()[0]:.2f})", file=sys.stderr)
    summary = summarise(samples)
    results = {"summary": summary, "samples": samples, "rounds": args.rounds,
               "warmup": args.warmup, "busy_processes": args.busy,
               "load_before": load_before, "load_after": os.getloadavg(),
               "seconds": time.monotonic() - began, "cores": os.cpu_count(),
               "python": platform.python_version(), "platform": platform.platform(),
               "dont_write_bytecode": bool(os.environ.get("PYTHONDONTWRITEBYTECODE")),
               "when": time.strftime("%Y-%m-%d %H:%M")}
    print(table(summary))
    print(f"\nload average {load_before[0]:.2f} before, {os.getloadavg()[0]:.2f} after")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
