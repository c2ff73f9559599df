"""Every notebook in notebooks/ runs top to bottom on a fresh kernel, with no edits."""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def run_notebook(path: Path, prelude: str | None = None) -> nbformat.NotebookNode:
    nb = nbformat.read(path, as_version=4)
    if prelude is not None:
        nb.cells.insert(0, nbformat.v4.new_code_cell(prelude))
    client = NotebookClient(nb, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(ROOT)}})
    client.execute()
    return nb


def test_the_kernel_is_this_interpreter() -> None:
    # The python3 kernelspec must resolve to the venv cdpnb is installed in.
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import sys; print(sys.prefix)")])
    NotebookClient(nb, timeout=60, kernel_name="python3").execute()
    assert nb.cells[0].outputs[0]["text"].strip() == sys.prefix


def test_there_are_notebooks() -> None:
    assert NOTEBOOKS, "notebooks/ has no notebook to run"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs_top_to_bottom(path: Path) -> None:
    nb = run_notebook(path)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert errors == []


def test_quickstart_still_works_after_nest_asyncio_apply() -> None:
    nb = run_notebook(ROOT / "notebooks" / "00-quickstart.ipynb",
                      prelude="import nest_asyncio\nnest_asyncio.apply()")
    assert "nest_asyncio" in nb.cells[0].source
