"""``cdpnb probe``: probe the backends on this machine and print the capability matrix.

With no backend installed it says so and shows the matrix replayed from the probe
traces shipped in ``datasets/``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path

from cdpnb.backends import LAUNCHABLE
from cdpnb.probes import CHECKS, available_backends, parse_backend, probe, recorded_probes

#: The recorded probes shipped with the repository.
DATASETS = Path(__file__).resolve().parent.parent / "datasets" / "probes"


class _Progress:
    """A one-line progress bar on stderr (plain lines when stderr is not a terminal)."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.done = 0
        self.tty = sys.stderr.isatty()

    def __call__(self, label: str) -> None:
        self.done += 1
        width = 30
        filled = width * min(self.done, self.total) // max(self.total, 1)
        line = f"[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} {label}"
        if self.tty:
            sys.stderr.write("\r" + line[:110].ljust(110))
            if self.done == self.total:
                sys.stderr.write("\n")
        elif self.done == self.total or self.done % 10 == 0:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()


def _choose_backends(args: argparse.Namespace) -> list[str]:
    if args.backends:
        return [b.strip() for b in args.backends.split(",") if b.strip()]
    found = available_backends()
    for kind, why in found.items():
        print(f"{kind:20} {'available' if why is None else why}")
    chosen = [kind for kind, why in found.items() if why is None]
    if chosen:
        return chosen
    replays = recorded_probes(args.datasets) if args.datasets.is_dir() else []
    if not replays:
        print(f"\nNo backend is installed and no recorded probes are in {args.datasets}.")
        return []
    print("\nNo browser backend is installed on this machine (apt-get install chromium "
          "chromium-headless-shell nodejs). Showing the matrix REPLAYED from the probe traces "
          f"recorded in {args.datasets}:")
    return [f"replay:{next(iter(spec.traces.values()))}" for spec in replays]


def _probe(args: argparse.Namespace) -> int:
    backends = _choose_backends(args)
    if not backends:
        return 1
    progress = _Progress(len(backends) * len(CHECKS) * args.repeat)
    result = asyncio.run(probe(backends, repeat=args.repeat, progress=progress, out=args.out))
    print()
    print(result.to_markdown())
    surprises = result.surprises()
    if not surprises.empty:
        print("\nDifferent from what the measured facts predict:")
        for row in surprises.itertuples():
            print(f"  {row.backend} {row.check}: {row.status} (expected {row.expected}): "
                  f"{row.detail}")
    if args.out:
        out = result.save(args.out)
        print(f"\nresults written to {out}/probe.json and {out}/matrix.md")
    if result.traces:
        print("\ntraces (cdpnb.Trace.load, or --backends replay:<trace>):")
        for name, traces in result.traces.items():
            print(f"  {name}: {', '.join(traces.values())}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="cdpnb", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("probe", help="probe backends and print the capability matrix")
    p.add_argument("--backends", default=None,
                   help=f"comma-separated: {', '.join(LAUNCHABLE)}, a CDP URL, or "
                        "replay:<trace> (default: every backend installed here)")
    p.add_argument("--repeat", type=int, default=1, help="runs of every check (default 1)")
    p.add_argument("--out", default=None,
                   help="folder for probe.json, matrix.md and the traces")
    p.add_argument("--datasets", type=Path, default=DATASETS,
                   help="recorded probes to replay when no backend is installed")
    args = parser.parse_args(argv)
    if args.command == "probe":
        if args.backends:
            for backend in args.backends.split(","):
                if backend.strip():
                    try:
                        parse_backend(backend)
                    except ValueError as exc:
                        parser.error(str(exc))
        if args.repeat < 1:
            parser.error("--repeat must be at least 1")
        return _probe(args)
    return 2  # pragma: no cover - argparse enforces a command


if __name__ == "__main__":
    sys.exit(main())
