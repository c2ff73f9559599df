"""The evaluate round trip with the Debugger domain on, with and without TCP_QUICKACK.

With ``Debugger.enable``, node 20 and Deno 2.9.8 write a ``Debugger.scriptParsed``
event before each ``Runtime.evaluate`` reply, on a socket without TCP_NODELAY: Nagle
holds the reply until the event is acknowledged, and a client that delays its ACK
(Linux's default) waits for its delayed-ACK timer. cdpnb's WebSocket arms TCP_QUICKACK
after a read that leaves a reply awaited (``cdpnb.transport.wire``); this measures each
backend both ways, side
by side: ``sup.cdp("Runtime.evaluate", {"expression": "1"})`` from ``cdpnb.sync``,
``--calls`` per cell (median), Debugger off and on, QUICKACK off and on, the four cells
interleaved round by round so load hits them alike, with the load average.

    .venv/bin/python benchmarks/bench_debugger_rtt.py [--backends node,deno,bun,...]
                                                      [--rounds 3] [--calls 30]

Prints a table and writes ``benchmarks/results/debugger_rtt.json``. Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any

import cdpnb.sync
from cdpnb.transport.wire import WireSocket

RESULTS = Path(__file__).resolve().parent / "results" / "debugger_rtt.json"
DEFAULT_BACKENDS = ("node", "deno", "bun", "headless-shell", "chromium")
#: (Debugger on, QUICKACK on): the four cells of each round.
CELLS = ((False, False), (False, True), (True, False), (True, True))


def cell_name(debugger: bool, quickack: bool) -> str:
    return f"debugger {'on' if debugger else 'off'}, quickack {'on' if quickack else 'off'}"


def round_trips(sup: Any, calls: int) -> list[float]:
    samples = []
    for _ in range(calls):
        began = time.perf_counter()
        sup.cdp("Runtime.evaluate", {"expression": "1"})
        samples.append((time.perf_counter() - began) * 1000)
    return samples


def measure(kind: str, rounds: int, calls: int) -> dict[str, Any]:
    samples: dict[str, list[float]] = {cell_name(*cell): [] for cell in CELLS}
    loads = []
    with cdpnb.sync.launch(kind) as backend, cdpnb.sync.Supervisor.start(backend) as sup:
        enabled = False
        for index in range(rounds):
            # Each round in another order: no cell always follows the same one.
            order = CELLS[index % 4:] + CELLS[:index % 4]
            for debugger, quickack in order:
                WireSocket.quickack = quickack
                if debugger != enabled:  # (Bun 1.4.5 refuses a second Debugger.enable)
                    sup.cdp("Debugger.enable" if debugger else "Debugger.disable")
                    enabled = debugger
                round_trips(sup, 3)  # the socket's ACK mode settles on the new setting
                samples[cell_name(debugger, quickack)] += round_trips(sup, calls)
                loads.append(os.getloadavg()[0])
        version = backend.version
    WireSocket.quickack = True
    return {"backend": kind, "version": version,
            "median_ms": {name: round(statistics.median(v), 3) for name, v in samples.items()},
            "p90_ms": {name: round(statistics.quantiles(v, n=10)[-1], 3)
                       for name, v in samples.items()},
            "calls_per_cell": rounds * calls,
            "load_average": [round(min(loads), 2), round(max(loads), 2)]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", default=",".join(DEFAULT_BACKENDS))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    results = []
    for kind in args.backends.split(","):
        result = measure(kind.strip(), args.rounds, args.calls)
        results.append(result)
        cells = "  ".join(f"{name}: {ms:g}" for name, ms in result["median_ms"].items())
        print(f"{kind:15} {result['version']:24} load {result['load_average']}  {cells}",
              flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                                    "machine": platform.platform(),
                                    "cpus": os.cpu_count(), "results": results}, indent=1)
                        + "\n")


if __name__ == "__main__":
    main()
