"""Run the notebooks top to bottom on a fresh kernel and save each with its outputs.

    .venv/bin/python scripts/run_notebooks.py [notebooks/NN-name.ipynb ...]

The committed notebooks carry their outputs, so a reader on GitHub sees the results;
``tests/test_notebooks.py`` runs each again and holds that the saved outputs are the
ones a fresh run gives (cell by cell: the same kinds of output, no error), so they cannot
drift from the code. Run under ``FORCE_COLOR=1``, as a Jupyter kernel is. A notebook
whose run raises is left as it was (exit status 1, the error named).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"

#: An output larger than this (its JSON, bytes) is not saved, only a line that says so:
#: notebook 06 shows the evidence report inline, 5-10 MB each, which would make the
#: notebook too large to show on GitHub (measured: 14.5 MB whole).
SAVED_OUTPUT_LIMIT = 1_000_000


def too_large(output: dict[str, Any]) -> bool:
    return len(json.dumps(output)) > SAVED_OUTPUT_LIMIT


def shrunk(output: dict[str, Any]) -> dict[str, Any]:
    """``output`` as it is saved: itself, or a line in its place when too large."""
    if not too_large(output):
        return output
    size = len(json.dumps(output)) / 1e6
    kept = {k: v for k, v in output.items() if k not in ("data", "metadata")}
    return {**kept, "metadata": {"cdpnb": {"not_saved": True}}, "data": {"text/plain": (
        f"(an output of {size:.1f} MB, not saved with the notebook: run it to see it)")}}


def run(path: Path) -> list[str]:
    """Execute ``path`` in its own folder and save it; the errors its cells raised
    (then nothing is saved)."""
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=900, kernel_name="python3", record_timing=False,
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    errors = [f"{o['ename']}: {o['evalue']}" for cell in nb.cells
              if cell.cell_type == "code" for o in cell.get("outputs", [])
              if o.get("output_type") == "error"]
    if not errors:
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.outputs = [nbformat.from_dict(shrunk(o)) for o in cell.outputs]
        nbformat.write(nb, path)
    return errors


def main(argv: list[str]) -> int:
    os.environ["FORCE_COLOR"] = "1"  # (the kernel inherits it, as Jupyter's do)
    paths = [Path(a).resolve() for a in argv] or sorted(NOTEBOOKS.glob("*.ipynb"))
    failed = 0
    for path in paths:
        print(f"running {path.relative_to(ROOT)}", flush=True)
        errors = run(path)
        for error in errors:
            print(f"  {error}", file=sys.stderr)
        failed += bool(errors)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
