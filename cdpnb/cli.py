"""``cdpnb probe``: probe the backends on this machine and print the capability matrix."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence

from cdpnb.backends.chromium import KINDS
from cdpnb.probes import CHECKS, available_backends, probe


class _Progress:
    """A one-line progress bar on stderr (plain lines when stderr is not a terminal)."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.done = 0
        self.tty = sys.stderr.isatty()

    def __call__(self, label: str) -> None:
        self.done += 1
        width = 30
        filled = width * self.done // max(self.total, 1)
        line = f"[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} {label}"
        if self.tty:
            sys.stderr.write("\r" + line[:110].ljust(110))
            if self.done == self.total:
                sys.stderr.write("\n")
        elif self.done == self.total or self.done % 10 == 0:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()


def _probe(args: argparse.Namespace) -> int:
    kinds = [k.strip() for k in args.backends.split(",") if k.strip()]
    found = available_backends()
    for kind in kinds:
        where = found.get(kind)
        print(f"{kind:16} {where or 'not installed (apt-get install ' + KINDS[kind].package + ')'}")
    if not any(found.get(k) for k in kinds):
        print("\nNo browser backend is installed on this machine; every cell below is ✗ "
              "with the reason. Install one with `apt-get install chromium`.")
    progress = _Progress(len(kinds) * len(CHECKS) * args.repeat)
    result = asyncio.run(probe(kinds, repeat=args.repeat, progress=progress))
    print()
    print(result.to_markdown())
    if args.out:
        out = result.save(args.out)
        print(f"\nresults written to {out}/probe.json and {out}/matrix.md")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="cdpnb", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("probe", help="probe backends and print the capability matrix")
    p.add_argument("--backends", default=",".join(KINDS),
                   help=f"comma-separated backends (default: {','.join(KINDS)})")
    p.add_argument("--repeat", type=int, default=1, help="runs of every check (default 1)")
    p.add_argument("--out", default=None, help="folder for probe.json and matrix.md")
    args = parser.parse_args(argv)
    if args.command == "probe":
        unknown = [k for k in args.backends.split(",") if k.strip() and k.strip() not in KINDS]
        if unknown:
            parser.error(f"unknown backend(s): {', '.join(unknown)}; choose from "
                         f"{', '.join(KINDS)}")
        if args.repeat < 1:
            parser.error("--repeat must be at least 1")
        return _probe(args)
    return 2  # pragma: no cover - argparse enforces a command


if __name__ == "__main__":
    sys.exit(main())
