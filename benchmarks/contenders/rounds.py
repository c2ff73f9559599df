"""The rounds of bench_contenders.py: contenders woken one at a time, in a random order,
round by round, and what one repeat of that gathers."""

from __future__ import annotations

import asyncio
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path

from contenders.harness import OPS, ContenderFailed, Running

__all__ = ["Repeat", "run_rounds", "runnable_now"]


@dataclass
class Repeat:
    """One measurement: fresh pages and fresh contender processes."""

    #: Per pass (see ``passes``): per operation and contender, the durations.
    passes: list[dict[str, dict[str, list[float]]]] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    load_before: tuple[float, float, float] = (0.0, 0.0, 0.0)
    load_after: tuple[float, float, float] = (0.0, 0.0, 0.0)
    runnable: list[int] = field(default_factory=list)  # sampled once per round


def runnable_now() -> int | None:
    """Tasks running or ready to run at this instant, the harness included (Linux's
    /proc/loadavg): the load of the moment, where the 1-minute load average still
    remembers the minute before (a phase of repeats lasts about one)."""
    try:
        return int(Path("/proc/loadavg").read_text().split()[3].split("/")[0])
    except (OSError, IndexError, ValueError):
        return None

async def run_rounds(running: dict[str, Running], samples: dict[str, dict[str, list[float]]],
                     repeat: Repeat, rounds: int, warmup: int, batch: int,
                     ops: tuple[str, ...] = OPS, idle_s: float = 0.0) -> None:
    """``warmup + rounds`` rounds; in each, per operation, every contender that takes
    part in it is woken once, in a random order, for ``batch`` operations; ``idle_s``
    of nothing before each wake-up (bench_proxy.py: a call after an idle moment)."""
    for index in range(warmup + rounds):
        if index >= warmup and (now := runnable_now()) is not None:
            repeat.runnable.append(now)
        for op in ops:
            names = [name for name, r in running.items()
                     if op in r.contender.labels and name not in repeat.failed]
            for name in random.sample(names, len(names)):
                if idle_s:
                    await asyncio.sleep(idle_s)
                try:
                    durations = await running[name].ask(op, batch)
                except ContenderFailed as failed:
                    # Listed as failed, its figures of this repeat dropped: a contender
                    # that stopped part way is not compared on part of the rounds.
                    repeat.failed[name] = f"{op}: {failed}"
                    for by_name in samples.values():
                        by_name.pop(name, None)
                    print(f"  {name} failed: {failed}", file=sys.stderr)
                    continue
                if index >= warmup:
                    samples[op].setdefault(name, []).extend(durations)
