"""Every ```python block of the README runs as written, in order, one Jupyter cell
each (top-level ``await``, as a reader would paste them), on a fresh kernel; every
result the README states with ``# →`` is checked. Docstring examples run as doctests."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

import cdpnb

ROOT = Path(__file__).resolve().parent.parent
ARROW = "# → "
CHECK = '''
def _readme_says(value, expected):
    assert repr(value) == expected, f"the README says {expected}, the code gives {value!r}"
'''


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.M | re.S)


def with_checks(block: str) -> str:
    """``expr  # → repr`` (or ``# → repr`` on the line after ``expr``) becomes a check."""
    lines = block.splitlines()
    out: list[str] = []
    for line in lines:
        stripped = line.strip()
        if stripped.startswith(ARROW):  # the result of the line before
            previous = out.pop()
            indent = previous[: len(previous) - len(previous.lstrip())]
            out.append(f"{indent}_readme_says({previous.strip()}, {stripped[4:]!r})")
        elif ARROW in line:
            code, expected = line.split(ARROW)
            code = code.rstrip()
            indent = code[: len(code) - len(code.lstrip())]
            out.append(f"{indent}_readme_says({code.strip()}, {expected.strip()!r})")
        else:
            out.append(line)
    return "\n".join(out)


def test_blocks_are_found_and_checks_made() -> None:
    blocks = python_blocks((ROOT / "README.md").read_text())
    assert len(blocks) >= 6
    checked = "\n".join(with_checks(b) for b in blocks)
    assert checked.count("_readme_says(") >= 8
    assert "_readme_says(await sup.evaluate(\"[undefined, NaN, -0, 2n ** 70n]\", timeout=2), " \
           "'[Undefined, nan, -0.0, 1180591620717411303424]')" in checked


def _files_under(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``folder``: its size and modification time."""
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.browser
def test_every_python_block_of_the_readme_runs(tmp_path: Path) -> None:
    blocks = python_blocks((ROOT / "README.md").read_text())
    # A fresh folder with the repository's datasets, as at the top of a checkout: the
    # files the README writes (traces, Parquet) land here.
    (tmp_path / "datasets").symlink_to(ROOT / "datasets")
    shipped = _files_under(ROOT / "datasets")
    cells = [CHECK, *(with_checks(b) for b in blocks)]
    # The campaign block once more, as a reader running it again would: it must still
    # say what it says (its cells are skipped the second time, not run).
    campaign = [c for c in cells if "cdpnb.campaign(" in c]
    assert len(campaign) == 1
    cells.append(campaign[0])
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    NotebookClient(nb, timeout=240, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    errors = [f"{o['ename']}: {o['evalue']}" for c in nb.cells
              for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert errors == []
    assert (tmp_path / "runs" / "playwright.jsonl.gz").exists()
    assert (tmp_path / "runs" / "run.parquet").exists()
    # nothing but runs/ (and the datasets link) is left where the blocks ran, and the
    # shipped datasets are as they were (a block once recorded into datasets/)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["datasets", "runs"]
    assert _files_under(ROOT / "datasets") == shipped
    # the notebook views rendered: with no widget manager drawing (nbclient), each is its
    # static snapshot, kept current
    views = nb.cells[-3].outputs
    assert len([o for o in views if 'class="cdpnb-static"'
                in o.get("data", {}).get("text/html", "")]) == 3


#: The modules whose examples launch a browser.
_LAUNCHING = {"cdpnb.backends.launch"}


def _modules() -> list[str]:
    names = [m.name for m in pkgutil.walk_packages(cdpnb.__path__, "cdpnb.")
             if not m.name.startswith("cdpnb.cli.__main__")]
    return sorted(names)


@pytest.mark.parametrize("module", [
    pytest.param(name, marks=pytest.mark.browser) if name in _LAUNCHING else name
    for name in _modules()])
def test_docstring_examples(module: str) -> None:
    imported = importlib.import_module(module)
    failures, _ = doctest.testmod(imported, optionflags=doctest.ELLIPSIS, verbose=False)
    assert failures == 0


def test_docstring_examples_exist() -> None:
    finder = doctest.DocTestFinder()
    examples = sum(len(t.examples) for m in _modules()
                   for t in finder.find(importlib.import_module(m)))
    assert examples >= 10
