"""CPU-bound busy processes beside a command: the load harness for tests and benchmarks.

cdpnb's results are measurements, and a measurement must not change with the
machine's load. This module makes the load that proves it: ``N`` processes that each
spin one core until they are ended::

    python -m cdpnb.testing.busy -n 2 -- .venv/bin/python -m pytest   # the suite, 2 spinners
    python -m cdpnb.testing.busy -n 2 -- .venv/bin/cdpnb probe

or, in Python (a benchmark's "under load" round)::

    from cdpnb.testing.busy import busy_processes

    with busy_processes(2) as pids:
        ...                                 # measured with two cores' worth of spinning

The spinners are plain ``python -c`` children of this process, each ended by its own
pid when the block (or the command) ends. Each also checks its parent every few
milliseconds of spinning and exits when the parent is gone, so a killed harness
leaves nothing behind. The command's exit status is the harness's.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence

__all__ = ["busy_processes", "main"]

#: The spinner: pure CPU, no memory, no I/O; leaves when its parent does (the parent
#: pid changes to a reaper's when the harness dies without ending it).
_SPIN = """
import os, sys
parent = int(sys.argv[1])
while os.getppid() == parent:
    for _ in range(200_000):
        pass
"""


@contextlib.contextmanager
def busy_processes(count: int) -> Iterator[list[int]]:
    """Run ``count`` CPU-bound spinners for the duration of the block; yields their pids.

    ``count`` 0 runs none (so a benchmark can take the quiet and the loaded round with
    one code path). Each spinner is ended by its pid (SIGTERM, then SIGKILL) on the way
    out, whatever ended the block.
    """
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise ValueError(f"count must be an int >= 0, got {count!r}")
    spinners: list[subprocess.Popen[bytes]] = []
    try:
        for _ in range(count):
            spinners.append(subprocess.Popen(
                [sys.executable, "-c", _SPIN, str(os.getpid())],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL))
        yield [s.pid for s in spinners]
    finally:
        for spinner in spinners:
            with contextlib.suppress(ProcessLookupError):
                spinner.terminate()
        for spinner in spinners:
            try:
                spinner.wait(timeout=5)
            except subprocess.TimeoutExpired:
                spinner.kill()
                spinner.wait()


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m cdpnb.testing.busy -n N -- command ...``: the command's exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m cdpnb.testing.busy",
        description="Run a command with N CPU-bound busy processes beside it (a load "
                    "harness: results that are measurements must not change with it).")
    parser.add_argument("-n", "--processes", type=int, default=2,
                        help="how many busy processes (default 2: both cores of a "
                             "2-core machine)")
    parser.add_argument("command", nargs=argparse.REMAINDER,
                        help="the command to run, after --")
    args = parser.parse_args(argv)
    command = list(args.command)
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        parser.error("no command given (put it after --)")
    if args.processes < 0:
        parser.error(f"--processes must be >= 0, got {args.processes}")
    began = time.monotonic()
    with busy_processes(args.processes) as pids:
        print(f"cdpnb.testing.busy: {len(pids)} busy process(es) {pids} beside: "
              f"{' '.join(command)}",
              file=sys.stderr, flush=True)
        child = subprocess.Popen(command)
        try:
            status = child.wait()
        except KeyboardInterrupt:
            child.send_signal(signal.SIGINT)
            status = child.wait()
    print(f"cdpnb.testing.busy: the command exited {status} after {time.monotonic() - began:.0f} s",
          file=sys.stderr, flush=True)
    return status if status >= 0 else 128 - status


if __name__ == "__main__":
    sys.exit(main())
