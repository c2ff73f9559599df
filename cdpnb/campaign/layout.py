"""Where a campaign's files go: a Parquet dataset partitioned by backend and scenario.

::

    OUT/campaign.json                                   what each run asked for and did
    OUT/checks/backend=B/scenario=S/r00003.parquet      one row: the cell's outcome
    OUT/checks/backend=B/scenario=S/r00003.jsonl.gz     the cell's trace, beside it
    OUT/checks/backend=B/scenario=S/r00003.failed.parquet   a cell that has not succeeded
    OUT/checks/backend=B/scenario=S/.r00003.attempts    attempts started, until it succeeds
    OUT/latencies/backend=B/scenario=S/r00003.parquet   one row per latency sample

One file per cell, written whole (to a hidden temporary name, then renamed), so a
reader never sees half a cell and a worker killed mid-write loses only its own cell.
Every file is created 0600 and every folder 0700 (``cdpnb.trace.private_files``): cells
hold what their traces hold (prompt answers, page contents), and so does the
manifest's list of backends (a CDP URL). A root that exists keeps its mode.
The checks file is written last: it is the mark that a cell is finished, which is
what a resumed campaign skips. Partition values are percent-encoded (a CDP URL as a
backend) and read back decoded by DuckDB and pyarrow alike.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import quote, unquote

import pyarrow as pa
import pyarrow.parquet as pq

from cdpnb.campaign.cells import Cell
from cdpnb.trace.private_files import make_private_dirs, private_file

__all__ = ["CHECKS_SCHEMA", "LATENCIES_SCHEMA", "Layout"]

_CHECKS_FIELDS: list[pa.Field[Any]] = [
    pa.field("repeat", pa.int32()),
    pa.field("capability", pa.string()),
    pa.field("mode", pa.string()),
    pa.field("kind", pa.string()),
    pa.field("version", pa.string()),
    # ok / partial / fail as the check found; "error" when the cell itself failed
    pa.field("status", pa.string()),
    pa.field("expected", pa.string()),
    pa.field("detail", pa.string()),
    pa.field("value_ms", pa.float64()),
    pa.field("check_seconds", pa.float64()),
    pa.field("cell_seconds", pa.float64()),
    pa.field("attempts", pa.int32()),
    pa.field("browser_launched", pa.bool_()),
    pa.field("browser_cells", pa.int32()),
    pa.field("worker", pa.string()),
    pa.field("host", pa.string()),
    pa.field("run_id", pa.string()),
    pa.field("started_at", pa.timestamp("ms", tz="UTC")),
    pa.field("trace", pa.string()),
]
_LATENCIES_FIELDS: list[pa.Field[Any]] = [
    pa.field("repeat", pa.int32()),
    pa.field("capability", pa.string()),
    pa.field("sample", pa.int32()),
    pa.field("ms", pa.float64()),
]
CHECKS_SCHEMA = pa.schema(_CHECKS_FIELDS)
LATENCIES_SCHEMA = pa.schema(_LATENCIES_FIELDS)
_CELL_FILE = re.compile(r"r(\d+)\.parquet")
_SAFE = "+-._~"  # kept as they are in a partition folder's name; the rest is %-encoded


class Layout:
    """The files of the campaign rooted at ``root``."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def create(self) -> None:
        """Create the root folder, and the missing folders above it, 0700 (a root that
        exists keeps its mode)."""
        make_private_dirs(self.root)

    @property
    def manifest(self) -> Path:
        return self.root / "campaign.json"

    def partition(self, table: str, cell: Cell) -> Path:
        return (self.root / table / f"backend={quote(cell.backend, safe=_SAFE)}"
                / f"scenario={quote(cell.scenario, safe=_SAFE)}")

    def checks_file(self, cell: Cell) -> Path:
        return self.partition("checks", cell) / f"r{cell.repeat:05d}.parquet"

    def failed_file(self, cell: Cell) -> Path:
        return self.partition("checks", cell) / f"r{cell.repeat:05d}.failed.parquet"

    def latencies_file(self, cell: Cell) -> Path:
        return self.partition("latencies", cell) / f"r{cell.repeat:05d}.parquet"

    def trace_file(self, cell: Cell) -> Path:
        return self.partition("checks", cell) / f"r{cell.repeat:05d}.jsonl.gz"

    def glob(self, table: str) -> str:
        """The files of ``table`` as a glob, for DuckDB's ``read_parquet``."""
        return str(self.root / table / "**" / "*.parquet")

    def finished(self) -> set[Cell]:
        """Every cell with a checks file: from the folder names, no file is opened."""
        done = set()
        for path in (self.root / "checks").glob("backend=*/scenario=*/r*.parquet"):
            match = _CELL_FILE.fullmatch(path.name)
            if match:
                backend = unquote(path.parent.parent.name.removeprefix("backend="))
                scenario = unquote(path.parent.name.removeprefix("scenario="))
                done.add(Cell(backend, scenario, int(match.group(1))))
        return done

    def is_finished(self, cell: Cell) -> bool:
        return self.checks_file(cell).exists()

    def write(self, path: Path, table: pa.Table) -> None:
        """Write ``table`` to ``path`` whole: a hidden temporary file, then a rename."""
        _write_whole(path, lambda file: pq.write_table(table, file))

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        """Write ``campaign.json`` whole (indented JSON), 0600."""
        text = json.dumps(manifest, indent=1) + "\n"
        _write_whole(self.manifest, lambda file: file.write(text.encode("utf-8")))

    def attempts_file(self, cell: Cell) -> Path:
        return self.partition("checks", cell) / f".r{cell.repeat:05d}.attempts"

    def attempts(self, cell: Cell) -> int:
        """How many attempts at ``cell`` have started (in any run) and not succeeded."""
        try:
            return int(self.attempts_file(cell).read_text(encoding="ascii"))
        except (FileNotFoundError, ValueError):
            return 0

    def start_attempt(self, cell: Cell) -> int:
        """Count one more attempt, before it runs: one lost with its worker counts too."""
        attempt = self.attempts(cell) + 1
        # (Its folder is the cell's trace's: created here 0700, before the trace.)
        _write_whole(self.attempts_file(cell),
                     lambda file: file.write(str(attempt).encode("ascii")))
        return attempt


def _write_whole(path: Path, write: Callable[[BinaryIO], object]) -> None:
    """Write ``path`` through ``write`` into a hidden temporary file beside it, created
    0600 (and its missing folders 0700) before a byte is in it, then renamed over
    ``path``: a reader sees the old file or the new one, never half of one, and no
    other user ever can."""
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        with private_file(temporary, exclusive=True) as file:
            write(file)
        os.replace(temporary, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
