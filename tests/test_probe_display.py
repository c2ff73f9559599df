"""The probe's result as a newcomer sees it: the matrix in a terminal at 80 columns
and piped to a file, in a notebook (its HTML, ``result.view()``, ``result.style``) with
fourteen backends, the latency plot; ``matrix()`` the way round every display has
it; the traces in one line; ``repeats=``."""

from __future__ import annotations

import asyncio
import base64
import fcntl
import json
import os
import pty
import re
import shutil
import struct
import subprocess
import sys
import termios
import time
import warnings
from itertools import pairwise
from pathlib import Path
from typing import Any

import nbformat
import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

import cdpnb
from cdpnb import cli
from cdpnb.cli.probing import traces_line
from cdpnb.notebook.plots import plot_latencies
from cdpnb.probes import ProbeResult
from cdpnb.probes.display import header_lines
from tests.jupyterlab import TOKEN, jupyterlab, until_shown

ROOT = Path(__file__).resolve().parent.parent
PROBES = ROOT / "datasets" / "probes"
NODE = PROBES / "node.native.jsonl.gz"
#: Where the screenshots are kept when CDPNB_SCREENSHOTS names a folder (to look at).
SHOTS = os.environ.get("CDPNB_SCREENSHOTS")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def shipped() -> ProbeResult:
    """The fourteen backends probed on the development machine."""
    return ProbeResult.from_json((PROBES / "probe.json").read_text())


def piped(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cdpnb.cli", *args], capture_output=True,
                          text=True, timeout=120, cwd=ROOT,
                          env={**os.environ, "COLUMNS": "80", **env})


def trailing_spaces(text: str) -> list[str]:
    return [line for line in ANSI.sub("", text).splitlines() if line != line.rstrip()]


# -- f. repeats= ---------------------------------------------------------------------------------


def test_repeat_still_works_but_warns_that_the_name_is_repeats() -> None:
    with pytest.warns(DeprecationWarning, match=r"use repeats=") as caught:
        old = asyncio.run(cdpnb.probe([f"replay:{NODE}"], repeat=2, progress=False))
    # (said at the caller's line, not in asyncio's: whoever reads it finds the call)
    assert [Path(w.filename).name for w in caught] == [Path(__file__).name]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new name warns of nothing
        new = asyncio.run(cdpnb.probe([f"replay:{NODE}"], repeats=2, progress=False))
    for result in (old, new):
        assert sorted(set(result.checks()["run"].astype(int))) == [0, 1]
    with pytest.raises(TypeError, match="repeats= only"), pytest.warns(DeprecationWarning):
        asyncio.run(cdpnb.probe([f"replay:{NODE}"], repeats=2, repeat=3, progress=False))
    with pytest.raises(ValueError, match="repeats must be an int >= 1"):
        asyncio.run(cdpnb.probe([f"replay:{NODE}"], repeats=0, progress=False))
    assert cli.build_parser().parse_args(["probe", "--repeats", "2"]).repeats == 2


# -- e. matrix() as every display has it ---------------------------------------------------------


def test_matrix_has_capabilities_as_rows_as_every_display_does() -> None:
    result = shipped()
    matrix, marks = result.matrix(), result.matrix_text(reasons=False)
    capabilities = ["protocol", *result.capabilities()]
    assert list(matrix.index) == list(marks.index) == capabilities
    assert list(matrix.columns) == list(marks.columns) == list(result.backends)
    assert (matrix.index.name, matrix.columns.name) == ("capability", "backend")
    assert matrix.loc["dialogs main", "node"] == "fail"
    assert matrix.loc["protocol", "webkit"] == "classic"
    assert matrix.loc["site isolation", "lightpanda"] == "no"
    node_isolation: Any = matrix.loc["site isolation", "node"]
    assert pd.isna(node_isolation)
    assert isinstance(matrix.loc["command RTT ms", "chromium"], float)
    assert marks.loc["dialogs main", "firefox"] == "✓"
    # turned round, a typed column per capability, for analysis
    typed = result.matrix(rows="backend")
    assert list(typed.index) == list(result.backends) and list(typed.columns) == capabilities
    assert list(typed["dialogs main"].cat.categories) == ["ok", "partial", "fail"]
    assert typed["dialogs main"].max() == "fail" and typed["command RTT ms"].dtype == "Float64"
    assert result.matrix_text(rows="backend").equals(result.matrix_text().T)
    with pytest.raises(ValueError, match="rows must be 'capability' or 'backend'"):
        result.matrix(rows="backends")  # type: ignore[arg-type]
    # ... and so do the displays: the Styler, the HTML, the view, the CLI's tables
    assert result.style.index.equals(matrix.index)
    html = result._repr_html_()
    assert html.index(">dialogs main<") < html.index(">command RTT ms<")
    assert result.view().matrix.index.equals(marks.index)


def test_matrix_json_keeps_a_column_per_backend(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["matrix", str(PROBES), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert list(data["matrix"]) == list(shipped().backends)
    assert data["matrix"]["node"]["dialogs main"].startswith("✗ no Page domain")


# -- a. the traces in one line -------------------------------------------------------------------


def test_the_traces_are_one_line_under_the_matrix_and_verbose_lists_them(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    result = shipped()
    paths = [p for modes in result.traces.values() for p in modes.values()]
    assert len(paths) > 20
    assert cli.main(["matrix", str(PROBES)]) == 0
    out = capsys.readouterr().out
    tail = " ".join(out.split("has every check)")[1].split())
    assert tail == (f"{len(paths)} traces (BACKEND.MODE.jsonl.gz) in datasets/probes: open "
                    "one with cdpnb.Trace.load(path), compare two with cdpnb compare A B; "
                    "--verbose lists them")
    assert not [p for p in paths if p in out]
    for flag in ("-v", "--verbose"):
        assert cli.main(["matrix", str(PROBES), flag]) == 0
        listed = capsys.readouterr().out
        assert all(p in listed for p in paths) and "--verbose lists them" not in listed


def test_the_traces_line_names_their_folder_or_folders(tmp_path: Path) -> None:
    one = {"a": {"native": str(tmp_path / "a.native.jsonl.gz")}}
    assert traces_line(one).startswith(f"1 trace (BACKEND.MODE.jsonl.gz) in {tmp_path}: ")
    two = {**one, "b": {"native": "/elsewhere/b.native.jsonl.gz"}}
    assert f"2 traces (BACKEND.MODE.jsonl.gz) in 2 folders ({tmp_path}, …)" in traces_line(two)


# -- b. piped and in a terminal -------------------------------------------------------------------


@pytest.mark.parametrize("args", [("matrix", "datasets/probes"),
                                  ("matrix", "datasets/probes", "--reasons", "-v"),
                                  ("probe", "--backends", f"replay:{NODE}", "--reasons")])
def test_piped_output_has_no_trailing_spaces(args: tuple[str, ...]) -> None:
    for env in ({}, {"FORCE_COLOR": "1"}):  # (a notebook kernel sets FORCE_COLOR)
        done = piped(*args, **env)
        assert done.returncode == 0, done.stderr
        assert "capability" in done.stdout
        assert trailing_spaces(done.stdout) == [] and trailing_spaces(done.stderr) == []
        assert ("\x1b[" in done.stdout) == bool(env)
        # (the legend says what frame? means where the matrix shows it: classic's cells)
        assert ("frame?: seen and answered" in done.stdout) == (args[0] == "matrix")


def in_a_terminal(*args: str, columns: int = 80) -> str:
    """What ``cdpnb ARGS`` writes to a terminal ``columns`` wide (a pseudo-terminal:
    rich asks it its size, as it asks a real one; no COLUMNS in the environment)."""
    main, secondary = pty.openpty()
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
    process = subprocess.Popen([sys.executable, "-m", "cdpnb.cli", *args], cwd=ROOT,
                               stdin=secondary, stdout=secondary, stderr=secondary,
                               env={**env, "TERM": "xterm-256color"})
    os.close(secondary)
    chunks = []
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # EIO: the terminal's other end closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(main)
    assert process.wait(60) == 0
    return b"".join(chunks).decode().replace("\r\n", "\n")


def test_the_matrix_fits_a_terminal_80_columns_wide_and_reads_well() -> None:
    raw = in_a_terminal("matrix", "datasets/probes")
    assert "\x1b[" in raw  # a terminal: coloured
    text = ANSI.sub("", raw)
    lines = text.splitlines()
    assert [line for line in lines if len(line) > 80] == []
    assert trailing_spaces(text) == []
    # fourteen backends as three tables of whole names and major versions
    tables = [i for i, line in enumerate(lines) if line.startswith("capability ")]
    assert len(tables) == 3
    heads = " ".join(" ".join(lines[max(0, i - 3):i + 1]) for i in tables).split()
    for backend in shipped().backends:
        for part in header_lines(backend, ""):
            assert part in heads, part
    assert "156.0.8078.108" not in text and "156" in heads
    # every row of a table has a cell under each of its backends
    for start in tables:
        columns = len(lines[start].split()) - 1
        body = lines[start + 2:start + 2 + 5]
        assert all(len(re.split(r" {2,}", row.strip())) == columns + 1 for row in body), body
    assert re.search(r"^dialogs cross-site +frame\? +frame\? +✓ +✓$", text, re.M)


# -- c. the matrix in a notebook ------------------------------------------------------------------


def test_backend_headers_break_after_a_plus_and_give_the_major_version() -> None:
    assert header_lines("chromium+chromedriver+bidi", "Chrome/156.0.8078.108") == [
        "chromium+", "chromedriver+", "bidi", "156"]
    assert header_lines("firefox", "Firefox/153.7.0esr") == ["firefox", "153"]
    assert header_lines("webkit", "WebKitGTK/2.50.6") == ["webkit", "2.50"]
    html = shipped()._repr_html_()
    assert "writing-mode:vertical-rl" in html
    assert "overflow-wrap:break-word" not in html.split("<thead>")[1].split("</thead>")[0]


#: What the notebook shows: the HTML repr, the view (a live widget), the Styler, the plot.
CELLS = [
    "from pathlib import Path\n"
    "from cdpnb.probes import ProbeResult\n"
    f"result = ProbeResult.from_json(Path({str(PROBES / 'probe.json')!r}).read_text())\n"
    "result",
    "result.view()",
    "result.style",
    "%matplotlib inline\n"
    "%config InlineBackend.figure_formats = ['retina']  # (as notebook 01)\n"
    "from cdpnb.notebook import plot_latencies\n"
    "plot_latencies(result)",
]

#: Measured in the page: what is cut or broken in each output, and how wide it is.
MEASURE = """(() => {
  const outputs = [...jupyterapp.shell.currentWidget.content.widgets]
    .map(cell => cell.outputArea ? cell.outputArea.node : null);
  const lines = el => { const r = document.createRange(); r.selectNodeContents(el);
                        return new Set([...r.getClientRects()].map(q => Math.round(
                          getComputedStyle(el.parentNode).writingMode.startsWith('vertical')
                          ? q.left : q.top))).size; };
  const out = {};
  outputs.forEach((node, i) => {
    if (!node) return;
    const cut = [...node.querySelectorAll('button, td, th')]
      .filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.innerText);
    const broken = [...node.querySelectorAll('th b, .widget-html b, td')]
      .filter(e => e.innerText.trim() && lines(e) > 1
              && !e.innerText.trim().includes(' ')).map(e => e.innerText);
    const img = node.querySelector('img');
    out[i] = {cut, broken, buttons: node.querySelectorAll('button').length,
              width: node.clientWidth, content: Math.max(0, ...[...node.querySelectorAll(
                'table, .widget-gridbox, img')].map(e => e.scrollWidth)),
              img: img ? [img.clientWidth, img.naturalWidth] : null};
  });
  return out;
})()"""


@pytest.mark.browser
def test_in_jupyterlab_fourteen_backends_fit_with_no_word_cut_or_broken(
        tmp_path: Path, chromium: cdpnb.Backend) -> None:
    folder = tmp_path / "lab"
    folder.mkdir()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbformat.write(nb, folder / "matrix.ipynb")
    with jupyterlab(folder, tmp_path) as port:
        url = f"http://127.0.0.1:{port}/lab/tree/matrix.ipynb?token={TOKEN}"
        measured = asyncio.run(_run_and_measure(chromium, url, tmp_path))
    html, view, styled, plot = (measured[str(i)] for i in range(4))
    # the view: a button per cell (and its capability's row, and the headers), none cut
    result = shipped()
    assert view["buttons"] == len(result.backends) * (len(result.capabilities()) + 1)
    for name, shown in (("html", html), ("view", view), ("style", styled)):
        assert shown["cut"] == [] and shown["broken"] == [], (name, shown)
    # a JupyterLab of 1,300 px with its side panels shut (an output ~1,150 px wide):
    # the HTML, the view and the Styler fit it whole (names upright: before, the HTML
    # needed 1,470 px, the Styler 1,670, and the view cut "classic" to "clas…")
    for shown in (html, view, styled):
        assert shown["content"] <= shown["width"], measured
    # the plot is shown at its own size (100 px per inch), not shrunk to fit
    shown_px, natural_px = plot["img"]
    assert shown_px <= plot["width"] and shown_px >= natural_px / 2 - 1, plot


async def _run_and_measure(backend: cdpnb.Backend, url: str, folder: Path) -> dict[str, Any]:
    deadline = time.monotonic() + 300  # (JupyterLab shows a notebook in 10-60 s)
    sup = await cdpnb.Supervisor.start(backend.cdp_url)

    async def until(expression: str, what: str) -> Any:
        return await until_shown(sup, expression, what, deadline)

    try:
        await sup.cdp("Emulation.setDeviceMetricsOverride", {
            "width": 1300, "height": 1000, "deviceScaleFactor": 1, "mobile": False})
        await sup.navigate(url)
        notebook = "jupyterapp.shell.currentWidget"
        await until(f"window.jupyterapp && {notebook} && {notebook}.sessionContext.session"
                    "?.kernel?.connectionStatus === 'connected' && "
                    f"{notebook}.sessionContext.session.kernel.status === 'idle'",
                    "an idle kernel")
        await sup.evaluate("jupyterapp.shell.collapseLeft(); jupyterapp.shell.collapseRight()")
        await sup.evaluate("jupyterapp.commands.execute('notebook:run-all-cells')")
        outputs = f"{notebook}.content.widgets"
        await until(f"{outputs}[1].outputArea.node.querySelectorAll('button').length > 100 "
                    f"&& {outputs}[3].outputArea.node.querySelector('img')?.complete",
                    "the view and the plot")
        await asyncio.sleep(1)  # (the last layout)
        measured: dict[str, Any] = await sup.evaluate(MEASURE)
        for i in range(len(CELLS)):
            await sup.evaluate(f"{outputs}[{i}].node.scrollIntoView()")
            shot = await sup.cdp("Page.captureScreenshot", {"format": "png"})
            png = folder / f"matrix-cell-{i}.png"
            png.write_bytes(base64.b64decode(shot["data"]))
            if SHOTS:
                shutil.copy(png, Path(SHOTS) / png.name)
        return measured
    finally:
        await sup.stop()


# -- d. the latency plot --------------------------------------------------------------------------


def test_the_latency_plot_of_fourteen_backends_reads_across_at_full_size() -> None:
    result = shipped()
    for compare_with in (None, result):
        fig = plot_latencies(result, compare_with=compare_with)
        width_in, height_in = fig.get_size_inches()
        # a notebook shows it at 100 px per inch (matplotlib's dpi): ~930 px, whole
        assert 8 <= width_in <= 9.5 and height_in >= 0.3 * len(result.backends)
        renderer = FigureCanvasAgg(fig).get_renderer()  # type: ignore[no-untyped-call]
        fig.draw(renderer)
        first = fig.axes[0]
        labels = [t for t in first.get_yticklabels() if t.get_text()]
        assert [t.get_text() for t in labels] == list(result.backends)
        assert {t.get_rotation() for t in labels} == {0.0}
        assert min(float(t.get_fontsize()) for t in labels) >= 10
        boxes = sorted((t.get_window_extent(renderer) for t in labels), key=lambda b: b.y0)
        assert all(a.y1 <= b.y0 for a, b in pairwise(boxes))  # no overlap
        for ax in fig.axes:
            ticks = [t for t in ax.get_xticklabels() if t.get_text()]
            assert ticks and {t.get_rotation() for t in ticks} == {0.0}
