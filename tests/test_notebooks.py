"""Every notebook in notebooks/ runs top to bottom on a fresh kernel, with no edits;
the executed dialogs notebook exports to HTML with its widgets' state, page text escaped."""

from __future__ import annotations

import contextlib
import copy
import json
import os
import re
import runpy
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
#: scripts/run_notebooks.py, which saves the notebooks with their outputs.
SAVING = runpy.run_path(str(ROOT / "scripts" / "run_notebooks.py"))


def run_notebook(path: Path, prelude: str | None = None,
                 cwd: Path = ROOT / "notebooks") -> nbformat.NotebookNode:
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:  # (a fresh run: nothing of the saved outputs reaches it)
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    if prelude is not None:
        nb.cells.insert(0, nbformat.v4.new_code_cell(prelude))
    # cwd is where Jupyter starts a notebook's kernel: the notebook's own folder. Its
    # environment has FORCE_COLOR=1, as a Jupyter kernel's has (Bun then colours its
    # banner: tests/test_runtimes.py).
    client = NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(cwd)}})
    with _force_color():
        client.execute()
    return nb


@contextlib.contextmanager
def _force_color() -> Iterator[None]:
    before = os.environ.get("FORCE_COLOR")
    os.environ["FORCE_COLOR"] = "1"  # (the kernel process inherits it)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("FORCE_COLOR", None)
        else:
            os.environ["FORCE_COLOR"] = before


_executed: dict[str, nbformat.NotebookNode] = {}


def executed(name: str) -> nbformat.NotebookNode:
    """Each notebook executed once per test session."""
    if name not in _executed:
        _executed[name] = run_notebook(ROOT / "notebooks" / name)
    return _executed[name]


def _errors(nb: nbformat.NotebookNode) -> list[str]:
    return [f"{o['ename']}: {o['evalue']}" for c in nb.cells if c.cell_type == "code"
            for o in c.get("outputs", []) if o.get("output_type") == "error"]


def _text(nb: nbformat.NotebookNode) -> str:
    parts = []
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            parts.append(o.get("text", ""))
            parts.append(str(o.get("data", {}).get("text/plain", "")))
    return "\n".join(parts)


def test_the_kernel_is_this_interpreter() -> None:
    # The python3 kernelspec must resolve to the venv cdpnb is installed in.
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import sys; print(sys.prefix)")])
    NotebookClient(nb, timeout=60, kernel_name="python3").execute()
    assert nb.cells[0].outputs[0]["text"].strip() == sys.prefix


def test_the_three_investigations_are_there() -> None:
    names = {p.name for p in NOTEBOOKS}
    assert {"01-probe-backends.ipynb", "02-dialogs-and-frames.ipynb",
            "03-replay-a-shared-trace.ipynb"} <= names


@pytest.mark.browser
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs_top_to_bottom(path: Path) -> None:
    nb = executed(path.name)
    assert _errors(nb) == []


def _shape(nb: nbformat.NotebookNode) -> list[list[tuple[str, ...]]]:
    """What each code cell shows, by kind: a stream's name (consecutive pieces of one
    stream are one: a progress bar writes in as many pieces as it likes), or an output's
    type and MIME types. The values (timings, ports, paths) are the run's own."""
    shape = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        kinds: list[tuple[str, ...]] = []
        for o in cell.get("outputs", []):
            kind = (("stream", o["name"]) if o["output_type"] == "stream" else
                    (o["output_type"], "not saved")
                    if o.get("metadata", {}).get("cdpnb", {}).get("not_saved")
                    or SAVING["too_large"](o) else
                    (o["output_type"], *sorted(o.get("data", {}))))
            if not kinds or kinds[-1] != kind or kind[0] != "stream":
                kinds.append(kind)
        shape.append(kinds)
    return shape


@pytest.mark.browser
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_the_committed_notebook_shows_what_a_fresh_run_shows(path: Path) -> None:
    """Notebooks are committed with their outputs (``scripts/run_notebooks.py``), so a
    reader on GitHub sees the results: every code cell ran, in order, without an
    error, and shows the kinds of output a fresh run of today's code shows."""
    committed = nbformat.read(path, as_version=4)
    code = [c for c in committed.cells if c.cell_type == "code"]
    assert [c.execution_count for c in code] == list(range(1, len(code) + 1)), (
        f"{path.name} is not saved as run top to bottom: "
        "run .venv/bin/python scripts/run_notebooks.py " + f"notebooks/{path.name}")
    assert _errors(committed) == []
    assert _shape(committed) == _shape(executed(path.name)), (
        f"{path.name}'s saved outputs are not what it shows now: run "
        f".venv/bin/python scripts/run_notebooks.py notebooks/{path.name}")


def test_notebooks_run_from_the_repository_root_too() -> None:
    nb = run_notebook(ROOT / "notebooks" / "03-replay-a-shared-trace.ipynb", cwd=ROOT)
    assert _errors(nb) == []


@pytest.mark.browser
def test_quickstart_still_works_after_nest_asyncio_apply() -> None:
    nb = run_notebook(ROOT / "notebooks" / "00-quickstart.ipynb",
                      prelude="import nest_asyncio\nnest_asyncio.apply()")
    assert _errors(nb) == []
    assert "nest_asyncio" in nb.cells[0].source


@pytest.mark.browser
def test_probe_notebook_shows_every_backend_here() -> None:
    from cdpnb.probes import available_backends

    text = _text(executed("01-probe-backends.ipynb"))
    for kind, why in available_backends().items():
        if why is None:
            assert f"'{kind}': None" in text or f'"{kind}": None' in text
    at = text.find("surprises")
    assert "0 surprises" in text, text[max(0, at - 5):at + 2000]  # (the table says which)
    assert "cells changed status since the recording" in text


def test_replay_notebook_compares_agent_and_remote_closes() -> None:
    text = _text(executed("03-replay-a-shared-trace.ipynb"))
    assert "{'agent': 33}" in text and "{'remote': 33}" in text


@pytest.mark.browser
def test_dialogs_notebook_exports_to_html_with_widget_state_and_escaped_text(
        tmp_path: Path) -> None:
    nb = executed("02-dialogs-and-frames.ipynb")
    assert WIDGET_STATE in nb.metadata.get("widgets", {})
    html = export_html(nb, tmp_path, "02")

    # The page's markup (a prompt message, a confirm, a console error) is text everywhere.
    for raw in ("<img src=x onerror", "<script>bad()", "Proceed <b>now"):
        assert raw not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html

    # The widgets' final state is in the page: the supervisor view and the trace view.
    match = re.search(r'<script type="application/vnd.jupyter.widget-state\+json">(.*?)</script>',
                      html, re.S)
    assert match, "no widget state in the exported HTML"
    models = json.loads(match.group(1))["state"]
    values = [m["state"].get("value", "") for m in models.values()
              if m["model_name"] == "HTMLModel"]
    tree = next(v for v in values if "OOPIF" in v and "/two-site" in v)
    assert "/child" in tree and "session " in tree
    assert any("stopped" in v for v in values)
    recent = next(v for v in values if "Ada Lovelace" in v)
    assert "&lt;img src=x onerror=alert(1)&gt;" in recent and "<img" not in recent
    images = [m for m in models.values() if m["model_name"] == "ImageModel"]
    assert images, "the trace view's dialog plot is missing"


def export_html(nb: nbformat.NotebookNode, folder: Path, name: str, *options: str) -> str:
    """``jupyter nbconvert --to html [options]`` of ``nb``, as a user would run it."""
    source = folder / f"{name}.ipynb"
    nbformat.write(nb, source)
    subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", *options,
                    str(source)], check=True, capture_output=True, timeout=120)
    return (folder / f"{name}.html").read_text()


@pytest.mark.browser
def test_exported_views_show_their_static_snapshot_without_the_widget_manager(
        tmp_path: Path) -> None:
    # Saved as JupyterLab saves by default (no widget state): nbconvert shows each
    # view's text/html, which needs no widget manager and no network.
    live = copy.deepcopy(executed("02-dialogs-and-frames.ipynb"))
    live.metadata.pop("widgets", None)
    html = export_html(live, tmp_path, "02")
    assert html.count('class="cdpnb-static"') == 3  # view, trace.view(), the final view
    for raw in ("<img src=x onerror", "<script>bad()", "Proceed <b>now"):
        assert raw not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    static = html.split('class="cdpnb-static"')
    final = static[3]  # the last `view` cell: stopped, the dialogs it answered kept
    assert "stopped" in final and "Ada Lovelace" in final and "OOPIF" in final
    assert 'src="data:image/png;base64,' in static[2]  # the trace view's dialog plot

    probe = copy.deepcopy(executed("01-probe-backends.ipynb"))
    probe.metadata.pop("widgets", None)
    html = export_html(probe, tmp_path, "01")
    assert html.count('class="cdpnb-static"') == 1 and ">dialogs cross-site<" in html
    # the plots are retina PNGs (twice the pixels, shown at half size)
    images = [o for c in probe.cells for o in c.get("outputs", [])
              if "image/png" in o.get("data", {})]
    assert len(images) == 2
    assert all(o["metadata"]["image/png"]["width"] > 0 for o in images)


@pytest.mark.browser
def test_campaign_notebook_runs_on_two_workers_and_duckdb_agrees() -> None:
    nb = executed("04-campaign.ipynb")
    text = _text(nb)
    assert "2 workers; dashboard: http://127.0.0.1:" in text
    assert "DuckDB and pandas agree" in text
    assert "ran 0, skipped 12 of 12 cells" in text  # resumed: nothing ran again
    outputs = [o for c in nb.cells for o in c.get("outputs", [])]
    html = "".join(str(o.get("data", {}).get("text/html", "")) for o in outputs)
    assert 'Dask dashboard: <a href="http://127.0.0.1:' in html
    assert "<b>cdpnb campaign</b>" in html and "0 failed" in html
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) == 1 and images[0]["metadata"]["image/png"]["width"] > 0  # retina
    # each verdict whole (pandas cuts a cell at 50 characters; the Styler wraps it), the
    # rule once under them
    verdicts = re.findall(r'<td id="T_\w+_row\d+_col4" class="[^"]*" >([^<]*)</td>', html)
    assert len(verdicts) == 3, html
    assert all(" − " in v and " → " in v and "…" not in v for v in verdicts)
    assert html.count("<caption>A difference is beyond the run-to-run noise when both "
                      "permutation p &lt; 0.05") == 1


@pytest.mark.browser
def test_the_readme_offline_export_of_a_notebook_with_widget_state_is_static(
        tmp_path: Path) -> None:
    # Executed by nbclient, as `nbconvert --execute` does: the widget state is saved, and
    # a plain export would show live widgets whose manager comes from a CDN (blank
    # offline). The README's command clears the metadata first.
    nb = executed("02-dialogs-and-frames.ipynb")
    assert WIDGET_STATE in nb.metadata.get("widgets", {})
    html = export_html(nb, tmp_path, "02", "--ClearMetadataPreprocessor.enabled=True")
    assert "widget-state+json" not in html
    assert html.count('class="cdpnb-static"') == 3
    readme = (ROOT / "README.md").read_text()
    assert "--ClearMetadataPreprocessor.enabled=True" in readme
