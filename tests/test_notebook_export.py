"""Exported notebooks tell the last story: every view's output follows it to its final
state, in a notebook executed by nbclient (``jupyter nbconvert --execute``), in one
saved by JupyterLab, and in their HTML exports opened in a browser with no network."""

from __future__ import annotations

import asyncio
import base64
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

import cdpnb
from cdpnb.campaign.progress import CampaignProgress, summary_text
from cdpnb.probes import ScenarioServer
from cdpnb.progress_line import ProgressLine, duration_text
from tests.jupyterlab import TOKEN, jupyterlab, until_shown

ROOT = Path(__file__).resolve().parent.parent
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
HOSTILE = "<img src=x onerror=alert(1)>"
#: Where the screenshots are kept when CDPNB_SCREENSHOTS names a folder (to look at).
SHOTS = os.environ.get("CDPNB_SCREENSHOTS")


def _notebook(cells: list[str]) -> nbformat.NotebookNode:
    nb: nbformat.NotebookNode = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    return nb


def execute(cells: list[str], folder: Path) -> nbformat.NotebookNode:
    """The cells run top to bottom on a fresh kernel by nbclient, as nbconvert does."""
    nb = _notebook(cells)
    NotebookClient(nb, timeout=180, kernel_name="python3",
                   resources={"metadata": {"path": str(folder)}}).execute()
    errors = [f"{o['ename']}: {o['evalue']}" for c in nb.cells for o in c.outputs
              if o.output_type == "error"]
    assert errors == []
    return nb


def displays(nb: nbformat.NotebookNode, index: int) -> list[dict[str, Any]]:
    """The display outputs' bundles of cell ``index``."""
    return [dict(o["data"]) for o in nb.cells[index].outputs
            if o.output_type in ("display_data", "execute_result")]


def to_html(source: Path, *options: str) -> str:
    """``jupyter nbconvert [options] --to html source``, as a user runs it."""
    subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", *options, "--to", "html",
                    str(source)], check=True, capture_output=True, timeout=300,
                   cwd=source.parent)
    return source.with_suffix(".html").read_text()


def test_summary_lines_and_durations() -> None:
    done = CampaignProgress(total=240, skipped=0, done=238, failed=2)
    assert summary_text(done, 192.4) == "240 cells · 238 ok · 2 failed · 3m12s"
    resumed = CampaignProgress(total=12, skipped=6, done=5, failed=1, retried=2)
    assert summary_text(resumed, 4.25) == \
        "12 cells · 5 ok · 1 failed · 6 done before · 2 retried · 4.2s"
    cut = CampaignProgress(total=240, skipped=0, done=30, failed=1)
    assert summary_text(cut, 42, ended="interrupted") == \
        "interrupted after 31 of 240 cells · 30 ok · 1 failed · 42s"
    assert summary_text(cut, 42, ended="stopped").startswith("stopped after 31 of 240 cells")
    with pytest.raises(ValueError, match="ended must be a word"):
        summary_text(cut, 42, ended="")
    assert [duration_text(s) for s in (0.04, 9.96, 59.4, 60, 3599, 3600, 7322)] == \
        ["0.0s", "10.0s", "59s", "1m00s", "59m59s", "1h00m", "2h02m"]
    with pytest.raises(TypeError, match="total must be an int"):
        ProgressLine("campaign", "240")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="total must be 0 or more, got -1"):
        ProgressLine("campaign", -1)
    with pytest.raises(TypeError, match="label must be a str"):
        ProgressLine(None, 1)  # type: ignore[arg-type]


def test_progress_lines_end_as_summary_lines_with_what_they_did_not_write_escaped(
        tmp_path: Path) -> None:
    worker = f"{HOSTILE}\x1b]0;pwned\x07"
    nb = execute([
        # A campaign's progress as cdpnb.campaign shows it: a line, then a summary.
        "import time\n"
        "from cdpnb.campaign.progress import CampaignProgress, progress_display\n"
        "with progress_display(True) as show:\n"
        "    for done in range(0, 241, 60):\n"
        f"        show(CampaignProgress(240, 0, done, running={{{worker!r}: ('c',)}}))\n"
        "        time.sleep(0.2)\n",
        # Interrupted: the line says how far it got.
        "try:\n"
        "    with progress_display(True) as show:\n"
        "        show(CampaignProgress(240, 6, 31, failed=1))\n"
        "        raise KeyboardInterrupt\n"
        "except KeyboardInterrupt:\n"
        "    pass\n",
        # A line still open shows its detail, escaped.
        "from cdpnb.progress_line import ProgressLine\n"
        "line = ProgressLine('probe', 3)\n"
        f"sent = line.update(1, {worker!r})\n",
    ], tmp_path)
    [finished] = displays(nb, 0)  # one output, updated in place: no bar left behind
    assert finished["text/plain"].startswith("campaign: 240 cells · 240 ok · 0 failed · ")
    summary = finished["text/plain"].removeprefix("campaign: ")
    assert finished["text/html"].endswith(f"<b>campaign</b>: {summary}</div>")
    [interrupted] = displays(nb, 1)
    assert "campaign: interrupted after 38 of 240 cells · 31 ok · 1 failed · 6 done before" \
        in interrupted["text/plain"]
    [open_line] = displays(nb, 2)
    html, plain = open_line["text/html"], open_line["text/plain"]
    assert '<progress max="3" value="1"' in html and "1/3 (33%)" in html
    assert "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "\x1b" not in html + plain and "\\x1b]0;pwned\\x07" in plain


def test_a_probes_progress_in_a_notebook_ends_as_a_summary_line(tmp_path: Path) -> None:
    # A real probe (on a replayed trace, so no browser) in a real kernel: its progress
    # is one output, updated in place, that ends as "probe: N checks · time" — not a
    # widget bar left at 0% in the saved file.
    trace = ROOT / "datasets/probes/headless-shell.native.jsonl.gz"
    nb = execute([
        "import cdpnb\n"
        f"result = await cdpnb.probe([{('replay:' + str(trace))!r}])\n"
        "len(result.checks())",
    ], tmp_path)
    bundles = displays(nb, 0)
    lines = [b for b in bundles if "text/plain" in b and b["text/plain"].startswith("probe")]
    assert len(lines) == 1, bundles
    [line] = lines
    assert WIDGET_VIEW not in line
    checks = int(bundles[-1]["text/plain"])
    assert re.fullmatch(rf"probe: {checks} checks · [0-9.]+s", line["text/plain"]), line
    assert "0%" not in line["text/html"] and "<progress" not in line["text/html"]


def test_trace_and_probe_views_export_the_choice_made_last(tmp_path: Path) -> None:
    trace = cdpnb.Trace.load(ROOT / "datasets/probes/chromium.native.jsonl.gz")
    page = str(trace.dialogs()["session_id"].iloc[0])
    nb = execute([
        "import cdpnb\n"
        "from cdpnb.probes import ProbeResult\n"
        f"view = cdpnb.Trace.load({str(ROOT / 'datasets/probes/chromium.native.jsonl.gz')!r})"
        ".view()\n"
        "view",
        f"view.select({page!r})",
        "probe = ProbeResult.from_json(open("
        f"{str(ROOT / 'datasets/probes/probe.json')!r}).read()).view()\n"
        "probe",
        "probe.select('chromium+playwright', 'dialogs cross-site')",
    ], tmp_path)
    # No widget manager drew anything: each output is the static snapshot, and the
    # one shown last (a choice made in a later cell updated it).
    [trace_out] = displays(nb, 0)
    assert WIDGET_VIEW not in trace_out
    assert f"session {page[:11]}" in trace_out["text/html"]
    assert "all sessions" not in trace_out["text/html"].split("</div>")[2]
    assert '<img src="data:image/png;base64,' in trace_out["text/html"]
    [probe_out] = displays(nb, 2)
    assert WIDGET_VIEW not in probe_out
    assert "dialog.alert.cross_site" in probe_out["text/html"]
    assert "closed by remote" in probe_out["text/html"]

    source = tmp_path / "views.ipynb"
    nbformat.write(nb, source)
    html = to_html(source)
    assert html.count('class="cdpnb-static"') == 2
    assert '<script type="application/vnd.jupyter.widget-view+json">' not in html


def test_where_a_widget_manager_draws_widgets_views_are_widgets_with_a_current_snapshot(
        tmp_path: Path) -> None:
    # JupyterLab's widget manager answers the kernel's jsdlink probe by copying 1 into
    # the probe's target (measured against JupyterLab in the browser test below); here
    # the cell does what that copy does to the kernel.
    path = ROOT / "datasets/probes/chromium.native.jsonl.gz"
    trace = cdpnb.Trace.load(path)
    page = str(trace.dialogs()["session_id"].iloc[0])
    nb = execute([
        "import asyncio, cdpnb\n"
        "from cdpnb.notebook import snapshot\n"
        f"before = cdpnb.Trace.load({str(path)!r}).view()\n"
        "before",
        "snapshot._front_end.target.value = 1  # the widget manager's copy",
        f"after = cdpnb.Trace.load({str(path)!r}).view()\n"
        "after",
        f"after.select({page!r})\n"
        "await asyncio.sleep(snapshot.QUIET_S + 0.5)  # a live widget's snapshot waits",
        "after.select(None)  # the cell ends before the quiet time: sent later",
    ], tmp_path)
    [before] = displays(nb, 0)
    assert WIDGET_VIEW in before, "a view displayed before the answer becomes its widget"
    [after] = displays(nb, 2)
    assert WIDGET_VIEW in after
    # the update after the quiet time carries the choice; the one a cell end would send
    # too early (it redraws the live widget) did not go: nbclient keeps only a cell's own
    assert f"session {page[:11]}" in after["text/html"].split("</div>")[2]


@pytest.mark.browser
def test_nbconvert_execute_to_html_shows_each_views_last_state_in_a_browser(
        tmp_path: Path, chromium: cdpnb.Backend, site: ScenarioServer) -> None:
    trace = tmp_path / "run.jsonl"
    campaign = tmp_path / "campaign"
    source = tmp_path / "export.ipynb"
    nbformat.write(_notebook([
        "import asyncio, cdpnb\n"
        f"sup = await cdpnb.Supervisor.start({chromium.cdp_url!r}, policy='auto_accept', "
        f"record={str(trace)!r})\n"
        "view = sup.view()\n"
        "view",
        f"await sup.navigate({site.url('/two-site')!r})\n"
        "await sup.wait_for(lambda s: any(f.is_oopif and f.url.endswith('/child') "
        "for f in s.frames.values()), timeout=10)\n"
        "oopif = next(f for f in sup.snapshot().frame_tree.children if f.is_oopif)\n"
        "await sup.evaluate(\"setTimeout(() => { window.answer = prompt("
        f"'{HOSTILE} Your name?', 'Ada from the OOPIF'); console.error('{HOSTILE} logged') "
        "}, 0)\", frame_id=oopif.frame_id)\n"
        "await sup.wait_for(lambda s: s.recent_dialogs and s.console_errors_total, "
        "timeout=10)\n"
        "assert await sup.evaluate('window.answer', frame_id=oopif.frame_id) == "
        "'Ada from the OOPIF'",
        "await sup.stop()",
        f"cdpnb.Trace.load({str(trace)!r}).view()",
        f"result = cdpnb.campaign(['headless-shell'], ['dialog.alert.main'], 2, "
        f"out={str(campaign)!r}, concurrency=1)",
    ]), source)
    # The user's command: execute and export in one go.
    html = to_html(source, "--execute")

    # Every view is its snapshot (no widget a CDN-loaded manager would have to draw):
    # the supervisor's as it was when it stopped, the trace's with its plot, and the
    # campaign's progress as one summary line.
    assert '<script type="application/vnd.jupyter.widget-view+json">' not in html
    assert html.count('class="cdpnb-static"') == 2  # sup.view(), trace.view()
    assert "<img src=x" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "<b>campaign</b>: 2 cells · 2 ok · 0 failed · " in html
    assert html.count('class="cdpnb-progress"') == 1

    # Opened in a browser, offline (the export's CDN scripts do not load): what a
    # reader sees, view by view.
    site.add("/exported-25", html)
    views, progress, heights = asyncio.run(
        _open_and_shoot(chromium, site.url("/exported-25"), tmp_path / "export.png"))
    supervisor, trace_view = views
    assert min(heights) > 100
    assert supervisor.startswith("cdpnb supervisor stopped")
    assert "OOPIF" in supervisor and site.url("/child", "b") in supervisor
    assert "about:srcdoc" in supervisor
    # the answered prompt: its markup shown as text, the answer, who answered
    assert f"{HOSTILE} Your name?" in supervisor
    assert "accept 'Ada from the OOPIF'" in supervisor and "auto_policy" in supervisor
    assert f"{HOSTILE} logged" in supervisor
    assert "complete" in trace_view and "dialog_closed" in trace_view
    assert f"{HOSTILE} Your name?" in trace_view
    assert progress.startswith("campaign: 2 cells · 2 ok · 0 failed · ")


async def _open_and_shoot(backend: cdpnb.Backend, url: str, png: Path, *,
                          progress: bool = True) -> tuple[list[str], str, list[float]]:
    """Each static view's text, the progress line's, the views' drawn heights; and a
    full-page screenshot in ``png`` (copied to $CDPNB_SCREENSHOTS when set)."""
    sup = await cdpnb.Supervisor.start(backend.cdp_url)
    try:
        await sup.cdp("Emulation.setDeviceMetricsOverride", {
            "width": 1100, "height": 1000, "deviceScaleFactor": 1, "mobile": False})
        await sup.navigate(url)
        views = await sup.evaluate(
            "[...document.querySelectorAll('.cdpnb-static')].map(e => e.innerText)")
        line = await sup.evaluate(
            "document.querySelector('.cdpnb-progress').innerText") if progress else ""
        heights = await sup.evaluate(
            "[...document.querySelectorAll('.cdpnb-static')].map(e => e.offsetHeight)")
        shot = await sup.cdp("Page.captureScreenshot", {"format": "png",
                                                        "captureBeyondViewport": True})
        await asyncio.to_thread(_keep, png, shot["data"])
        return [str(v) for v in views], str(line), [float(h) for h in heights]
    finally:
        await sup.stop()


@pytest.mark.browser
def test_in_jupyterlab_a_view_is_a_live_widget_and_the_saved_notebook_exports_its_last_state(
        tmp_path: Path, chromium: cdpnb.Backend, site: ScenarioServer) -> None:
    folder = tmp_path / "lab"
    folder.mkdir()
    source = folder / "lab.ipynb"
    nbformat.write(_notebook([
        "import asyncio, cdpnb\n"
        f"sup = await cdpnb.Supervisor.start({chromium.cdp_url!r}, dialog_timeout_s=300)\n"
        "view = sup.view()\n"
        "view",
        f"await sup.navigate({site.url('/two-site')!r})\n"
        "await sup.wait_for(lambda s: any(f.is_oopif and f.url.endswith('/child') "
        "for f in s.frames.values()), timeout=10)\n"
        "oopif = next(f for f in sup.snapshot().frame_tree.children if f.is_oopif)\n"
        # (with a terminal escape in it: the plain text shows it inert)
        "await sup.evaluate(\"setTimeout(() => { window.answer = prompt("
        f"'{HOSTILE} Your name?\\\\x1b]0;pwned\\\\x07', 'anon') }}, 0)\", "
        "frame_id=oopif.frame_id)\n"
        "dialog = await sup.wait_for_dialog(timeout=10)",
        "await sup.stop()",
    ]), source)
    with jupyterlab(folder, tmp_path) as port:
        lab = f"http://127.0.0.1:{port}/lab/tree/lab.ipynb?token={TOKEN}"
        saved = asyncio.run(_drive_jupyterlab(chromium, lab, source, tmp_path))
    live, after_stop = saved

    # Saved while the supervisor ran: the live widget, and a snapshot of what it
    # showed last (the prompt answered by its button), not of its first display.
    assert WIDGET_VIEW in live
    assert "accept &#x27;Ada Lovelace&#x27;" in live["text/html"]
    assert "OOPIF" in live["text/html"] and "connected" in live["text/html"]
    assert "&lt;img src=x onerror=alert(1)&gt; Your name?" in live["text/html"]
    assert "Your name?\\x1b]0;pwned\\x07" in live["text/plain"]
    assert "\x1b" not in live["text/plain"]
    # Saved after it stopped: the snapshot alone.
    assert WIDGET_VIEW not in after_stop
    assert "stopped" in after_stop["text/html"]
    assert "accept &#x27;Ada Lovelace&#x27;" in after_stop["text/html"]

    # The saved notebook (no widget state: JupyterLab's default) exports its last state.
    html = to_html(source)
    site.add("/lab-export-25", html)
    views, _, heights = asyncio.run(
        _open_and_shoot(chromium, site.url("/lab-export-25"), tmp_path / "lab-export.png",
                        progress=False))
    [view] = views
    assert view.startswith("cdpnb supervisor stopped") and heights[0] > 100
    assert "accept 'Ada Lovelace'" in view and f"{HOSTILE} Your name?" in view


async def _drive_jupyterlab(backend: cdpnb.Backend, url: str, source: Path,
                            folder: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """Open the notebook in JupyterLab, run its cells as a user would, answer the prompt
    with the view's own text box and button, save; stop the supervisor, save again.
    Returns the first cell's saved output bundle both times."""
    sup = await cdpnb.Supervisor.start(backend.cdp_url)
    deadline = time.monotonic() + 120

    async def until(expression: str, what: str) -> Any:
        return await until_shown(sup, expression, what, deadline)

    async def run_cell(index: int) -> None:
        await sup.evaluate(f"(() => {{ const nb = jupyterapp.shell.currentWidget.content; "
                           f"nb.activeCellIndex = {index}; "
                           "return jupyterapp.commands.execute('notebook:run-cell'); })()")

    async def save() -> dict[str, Any]:
        await sup.evaluate("jupyterapp.commands.execute('docmanager:save')")
        await until("!jupyterapp.shell.currentWidget.context.model.dirty", "the save")
        return dict(nbformat.read(source, as_version=4).cells[0].outputs[0]["data"])

    output = "jupyterapp.shell.currentWidget.content.widgets[0].outputArea.node"
    try:
        await sup.cdp("Emulation.setDeviceMetricsOverride", {
            "width": 1300, "height": 1000, "deviceScaleFactor": 1, "mobile": False})
        await sup.navigate(url)
        await until("window.jupyterapp && jupyterapp.shell.currentWidget && jupyterapp.shell"
                    ".currentWidget.sessionContext.session?.kernel?.connectionStatus === "
                    "'connected' && jupyterapp.shell.currentWidget.sessionContext.session"
                    ".kernel.status === 'idle'", "an idle kernel")
        await run_cell(0)
        # First shown as its snapshot; the live widget once the widget manager answered.
        await until(f"{output}.querySelector('.widget-vbox') && "
                    f"!{output}.querySelector('.cdpnb-static')", "the live widget")
        await run_cell(1)
        await until(f"[...{output}.querySelectorAll('button')].some(b => "
                    "b.innerText.includes('Accept'))", "the prompt's Accept button")
        await _screenshot(sup, folder / "lab-live.png")
        # Type an answer into the view's box (real key input) and click Accept.
        await sup.evaluate(f"(() => {{ const box = {output}.querySelector('.widget-text input');"
                           " box.focus(); box.select(); })()")
        await sup.cdp("Input.insertText", {"text": "Ada Lovelace"})
        await sup.evaluate(f"[...{output}.querySelectorAll('button')].find(b => "
                           "b.innerText.includes('Accept')).click()")
        await until(f"{output}.innerText.includes(\"accept 'Ada Lovelace'\")",
                    "the answered prompt in the view")
        # The snapshot follows once the view is quiet.
        await asyncio.sleep(snapshot_wait())
        live = await save()
        await run_cell(2)
        await until(f"{output}.querySelector('.cdpnb-static') && "
                    f"{output}.innerText.includes('stopped')", "the final snapshot")
        await _screenshot(sup, folder / "lab-stopped.png")
        after_stop = await save()
        return live, after_stop
    finally:
        await sup.stop()


def snapshot_wait() -> float:
    from cdpnb.notebook.snapshot import QUIET_S

    return QUIET_S + 1.5


async def _screenshot(sup: cdpnb.Supervisor, png: Path) -> None:
    shot = await sup.cdp("Page.captureScreenshot", {"format": "png"})
    await asyncio.to_thread(_keep, png, shot["data"])


def _keep(png: Path, data: str) -> None:
    """A screenshot written to ``png``, and copied to $CDPNB_SCREENSHOTS when set."""
    png.write_bytes(base64.b64decode(data))
    if SHOTS:
        shutil.copy(png, Path(SHOTS) / png.name)
