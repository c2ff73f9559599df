"""``cdpnb report`` (issue 41): a self-contained HTML capability report, every matrix
cell a link to its evidence; the matrix as tables for papers.

The browser test opens reports offline in headless Chromium (a file:// URL, over raw
CDP: no supervisor, which would answer a dialog the page must never open), clicks from
a cell to its evidence and back, and writes screenshots under tmp_path."""

from __future__ import annotations

import base64
import gzip
import html
import itertools
import json
import re
import stat
import time
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from websockets.sync.client import ClientConnection, connect

import cdpnb
from cdpnb.probes import ProbeResult
from cdpnb.probes.paper import latex_escape
from cdpnb.report import changed_cells, load_source, report_html, write_report

ROOT = Path(__file__).resolve().parent.parent
PROBES = ROOT / "datasets" / "probes"
HOSTILE = "<img src=x onerror=alert(1)></td></table><script>alert(2)</script>"
#: The check altered in the second result, and the cell it shows in.
ALTERED = ("chromium", "dialog.alert.cross_site", "dialogs cross-site")


def _rewrite(source: Path, target: Path, edit: Any) -> None:
    lines = gzip.decompress(source.read_bytes()).decode().splitlines(keepends=True)
    target.write_bytes(gzip.compress("".join(edit(line) for line in lines).encode()))


def altered_result(folder: Path) -> Path:
    """A fresh second result: datasets/probes with chromium's traces copied, one check's
    outcome altered (in its trace's note and in probe.json, as the probe writes both)
    and every dialog message in its native trace made hostile."""
    folder.mkdir(parents=True, exist_ok=True)
    hostile = json.dumps(HOSTILE)[1:-1]
    backend, check, _ = ALTERED

    def native(line: str) -> str:
        line = line.replace('"message":"probe"', f'"message":"{hostile}"')
        if '"probe.check"' in line and f'"{check}"' in line:
            line = line.replace('"status":"ok"', '"status":"fail"', 1)
        return line

    _rewrite(PROBES / "chromium.native.jsonl.gz", folder / "chromium.native.jsonl.gz", native)
    _rewrite(PROBES / "chromium.bridge.jsonl.gz", folder / "chromium.bridge.jsonl.gz",
             lambda line: line)
    data = json.loads((PROBES / "probe.json").read_text())
    data["traces"][backend] = {mode: str(folder / f"chromium.{mode}.jsonl.gz")
                               for mode in ("native", "bridge")}
    row = next(r for r in data["results"] if r["backend"] == backend and r["check"] == check)
    row.update(status="fail", detail="altered for the test: " + HOSTILE)
    (folder / "probe.json").write_text(json.dumps(data))
    return folder


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The report of datasets/probes, and of it against the altered result."""
    folder = tmp_path_factory.mktemp("reports")
    second = altered_result(folder / "altered")
    began = time.monotonic()
    one = write_report([load_source(PROBES)], folder / "probes.html")
    print(f"report of datasets/probes: {one.stat().st_size / 1024:.0f} KB in "
          f"{time.monotonic() - began:.1f} s")
    two = write_report([load_source(PROBES), load_source(second)], folder / "diff.html")
    return {"probes": one, "diff": two, "altered": second}


# -- the file ---------------------------------------------------------------------------

#: Hosts a report may name (as text): the scenario sites' loopback addresses, and the
#: dialog bridge's reserved host (``.invalid`` never resolves, RFC 6761).
LOOPBACK = re.compile(r"^(127(\.\d{1,3}){3}|localhost|\[::1\]|[a-z0-9.-]+\.invalid)(:\d+)?$")
#: The browser's own pages, named in its targets' info (``chrome://new-tab-page…``):
#: never fetched from a network.
BROWSER_SCHEMES = {"chrome", "chrome-untrusted", "devtools"}
#: Attributes that make a browser fetch or navigate.
FETCHING = {"src", "srcset", "action", "formaction", "poster", "data", "background", "ping",
            "xlink:href", "manifest", "codebase", "cite", "longdesc", "usemap"}
FETCHING_TAGS = {"script", "link", "img", "iframe", "object", "embed", "base", "form",
                 "video", "audio", "source", "frame", "track", "input", "image", "use"}


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.style = ""
        self._in_style = False
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))
        self._in_style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.style += data
        else:
            self.text.append(data)


def external_urls(document: str) -> list[str]:
    """What in ``document`` a browser would fetch or navigate to, or a URL to anywhere
    but loopback. Precisely: a tag that loads (script, img, link, iframe, …); an
    attribute that loads (src, srcset, action, …); an ``href`` that is not a fragment of
    this page (``#…``); a ``<meta http-equiv>`` other than the Content-Security-Policy;
    ``url(`` or ``@import`` in a style; and any ``scheme://`` in the file (text
    included) other than http(s)/ws(s) to a loopback host or a ``.invalid`` one (the
    traces' own scenario sites and the bridge's reserved host, shown as escaped text)
    or the browser's own pages (``chrome://``, as its targets name them)."""
    parser = _Tags()
    parser.feed(document)
    found = [f"<{tag}>" for tag, _ in parser.tags if tag in FETCHING_TAGS]
    for tag, attrs in parser.tags:
        for name, value in attrs:
            if name in FETCHING:
                found.append(f"<{tag} {name}={value!r}>")
            if name == "href" and not (value or "").startswith("#"):
                found.append(f"<{tag} href={value!r}>")
            if name == "style" and "url(" in (value or ""):
                found.append(f"<{tag} style={value!r}>")
            if tag == "meta" and name == "http-equiv" and value != "Content-Security-Policy":
                found.append(f"<meta http-equiv={value!r}>")
    if "url(" in parser.style or "@import" in parser.style:
        found.append("url( or @import in the style sheet")
    for match in re.finditer(r"([a-zA-Z][a-zA-Z0-9+.-]*)://([^/\s\"'<>&\\]*)", document):
        scheme, host = match.group(1).lower(), match.group(2)
        if scheme in BROWSER_SCHEMES:
            continue
        if scheme not in ("http", "https", "ws", "wss") or not _loopback(host):
            found.append(match.group(0))
    return found


def _loopback(host: str) -> bool:
    """A loopback or ``.invalid`` host, or one the report's clipping cut short (``…``)
    whose rest can only be the start of one (``http://1…``, ``http://local…``)."""
    if not host.endswith("…"):
        return bool(LOOPBACK.match(host))
    rest = host[:-1]
    return (any(whole.startswith(rest) for whole in ("localhost", "[::1]",
                                                     "cdpnb-bridge.invalid"))
            or re.fullmatch(r"1(2(7(\.\d{0,3}){0,3}(:\d*)?)?)?", rest) is not None
            or LOOPBACK.match(rest.rsplit(":", 1)[0] if ":" in rest else "") is not None)


def test_the_report_of_the_datasets_is_one_private_file_with_no_external_url(
        reports: dict[str, Path]) -> None:
    path = reports["probes"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    document = path.read_text(encoding="utf-8")
    assert external_urls(document) == []
    # the checker sees what it must refuse
    assert external_urls('<img src="x"><a href="https://example.com/">'
                         "http://evil.test/ http://127.0.0.1:9/ <style>a{b:url(x)}</style>"
                         "http://10.0.0.1… http://evil.…") == [
        "<img>", "<img src='x'>", "<a href='https://example.com/'>",
        "url( or @import in the style sheet", "https://example.com", "http://evil.test",
        "http://10.0.0.1…", "http://evil.…"]
    # every cell links to an evidence section that exists, and back to its matrix
    result = ProbeResult.from_json((PROBES / "probe.json").read_text())
    links = set(re.findall(r'<td class="[^"]*"><a href="#(r0-b\d+-c\d+)"', document))
    sections = set(re.findall(r'<section class="ev" id="(r0-b\d+-c\d+)"', document))
    assert len(links) == len(result.backends) * (len(result.capabilities()))
    assert links == sections
    assert document.count('href="#m0">↑ back to the matrix') == len(sections)
    # the evidence of a cell that is not ✓ says why, what was expected, and the dialog
    cell = _section(document, "chromium+playwright", "dialogs cross-site")
    assert "why it is not ✓" in cell and "expected <b>partial|ok</b>" in cell
    assert "Playwright&#x27;s auto-dismissal" in cell  # the race it is
    assert "Page.javascriptDialogOpening" in cell and "Page.javascriptDialogClosed" in cell
    # the scenario across protocols: chromium-bidi reports no nested prompt at all
    across = document[document.index('id="protocols"'):document.index('id="all"')]
    block = across[across.index("<b>dialog.prompt.nested</b>"):]
    block = block[:block.index("</details>")]
    row = block[block.index(">chromium+bidi<"):]
    assert "no dialog step at all" in row[:row.index("</tr>")]
    assert "usually opened → answered → closed" in block


def _section(document: str, backend: str, capability: str) -> str:
    start = document.index(f"<h2>{html.escape(backend)} · {html.escape(capability)}</h2>")
    return document[start:document.index("</section>", start)]


def test_the_diff_names_the_changed_cells_first_and_escapes_page_text(
        reports: dict[str, Path]) -> None:
    document = reports["diff"].read_text(encoding="utf-8")
    assert external_urls(document) == []
    backend, _, capability = ALTERED
    changed = changed_cells([load_source(PROBES), load_source(reports["altered"])])
    assert [(c.backend, c.capability, c.before, c.after) for c in changed] == [
        (backend, capability, "✓", "~")]
    listed = document[document.index('id="changed"'):document.index('id="m0"')]
    assert f"{backend} · {capability}</a>: ✓ → ~" in listed
    assert document.index('id="changed"') < document.index('id="m0"')  # first
    side = document[document.index('id="d0"'):]
    side = side[:side.index("</section>")]
    assert side.count('<div><h3>') == 2  # both proofs, side by side
    # hostile dialog text: escaped wherever it is shown, never markup
    assert HOSTILE not in document
    assert "<img" not in document and "<script" not in document
    assert html.escape(HOSTILE) in document


def test_a_redacted_trace_stays_redacted(tmp_path: Path) -> None:
    secret = "answer-42"
    redacted = tmp_path / "chromium.native.jsonl.gz"

    def hide(line: str) -> str:
        if line.startswith('{"cdpnb_trace"'):
            head = json.loads(line)
            head["redacted"] = ["prompt_text"]
            return json.dumps(head, separators=(",", ":")) + "\n"
        return line.replace(secret, "<redacted>")

    _rewrite(PROBES / "chromium.native.jsonl.gz", redacted, hide)
    data = json.loads((PROBES / "probe.json").read_text())
    data["backends"] = {"chromium": data["backends"]["chromium"]}
    data["results"] = [r for r in data["results"] if r["backend"] == "chromium"]
    data["traces"] = {"chromium": {"native": str(redacted)}}
    (tmp_path / "probe.json").write_text(json.dumps(data))
    document = report_html([load_source(tmp_path)])
    cell = _section(document, "chromium", "dialogs main")
    assert "redacted when recorded: prompt_text" in cell
    quoted = "".join(re.findall(r'<table class="(?:tl|st)">.*?</table>', cell))
    assert "&lt;redacted&gt;" in quoted and secret not in quoted


def test_a_result_with_repeats_shows_its_spread(tmp_path: Path) -> None:
    data = json.loads((PROBES / "probe.json").read_text())
    results = [r for r in data["results"] if r["backend"] == "chromium"]
    runs = []
    for run in range(5):
        for r in results:
            status = "fail" if (r["check"] == "dialog.alert.main" and run == 3) else r["status"]
            runs.append({**r, "run": run, "status": status})
    result = ProbeResult.from_json(json.dumps({**data, "results": runs,
                                               "backends": {"chromium": data["backends"]
                                                            ["chromium"]}}))
    document = result.report()
    assert isinstance(document, str)
    spread = document[document.index('id="runs"'):]
    assert "ok 4/5" in spread and "flake rate 20%" in spread
    assert spread.index("dialog.alert.main") < spread.index("dialog.confirm.main")  # flakiest
    assert "<svg" in spread
    path = result.report(tmp_path / "repeats.html")
    assert path == tmp_path / "repeats.html" and stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_campaign_reports_each_cell_from_its_own_trace(tmp_path: Path) -> None:
    import pyarrow as pa

    from cdpnb.campaign import CampaignResult
    from cdpnb.campaign.cells import Cell
    from cdpnb.campaign.layout import CHECKS_SCHEMA, Layout

    layout = Layout(tmp_path)
    layout.write_manifest({"runs": []})
    for repeat in range(5):
        cell = Cell("chromium", "dialog.alert.main", repeat)
        trace = layout.trace_file(cell)
        trace.parent.mkdir(parents=True, exist_ok=True)
        # (a cell's trace notes its check with its repeat as the run)
        _rewrite(PROBES / "chromium.native.jsonl.gz", trace, lambda line, n=repeat: line.replace(
            '"check":"dialog.alert.main","run":0', f'"check":"dialog.alert.main","run":{n}'))
        layout.write(layout.checks_file(cell), pa.Table.from_pylist([{
            "repeat": repeat, "capability": "dialogs main", "mode": "native",
            "kind": "chromium", "version": "Chrome/156.0.8078.108",
            "status": "fail" if repeat == 2 else "ok", "expected": "ok",
            "detail": "seen with its frame and answered", "value_ms": None,
            "check_seconds": 0.2, "trace": trace.name}], schema=CHECKS_SCHEMA))
    document = CampaignResult(tmp_path).report()
    assert isinstance(document, str)
    runs = document[document.index('id="runs"'):document.index('id="protocols"')]
    assert "ok 4/5" in runs and "flake rate 20%" in runs
    cell = _section(document, "chromium", "dialogs main")
    assert cell.count("Page.javascriptDialogOpening") >= 2  # runs 0 and 2 (the other outcome)
    column = 1 + list(ProbeResult().capabilities()).index("dialogs main")  # (protocol first)
    assert f'id="r0-b0-c{column}-k0-run2"' in cell
    assert load_source(tmp_path).result.protocol("chromium") == "cdp"


def test_a_report_needs_a_result() -> None:
    with pytest.raises(ValueError, match="at least one result"):
        report_html([])
    with pytest.raises(TypeError, match="ProbeResults"):
        report_html(["probe.json"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="not a probe result"):
        load_source(ROOT / "docs")


# -- tables for papers ------------------------------------------------------------------

def _balanced(tex: str) -> None:
    """Every \\begin{X} closed by its \\end{X}, in order; every unescaped brace paired."""
    stack: list[str] = []
    for kind, name in re.findall(r"\\(begin|end)\{([^}]*)\}", tex):
        if kind == "begin":
            stack.append(name)
        else:
            assert stack and stack.pop() == name, (name, stack)
    assert stack == []
    depth = 0
    for match in re.finditer(r"(?<!\\)[{}]", tex.replace("\\\\", "")):
        depth += 1 if match.group() == "{" else -1
        assert depth >= 0
    assert depth == 0


def test_the_matrix_as_tables_for_papers() -> None:
    result = ProbeResult.from_json((PROBES / "probe.json").read_text())
    markdown = result.to_markdown(footnotes=True)
    lines = markdown.splitlines()
    assert lines[0].startswith("| capability | chromium 156 | headless-shell 156 |")
    rows = lines[2:3 + len(result.capabilities())]  # (the protocol, then each capability)
    assert all(line.count(" | ") == lines[0].count(" | ") for line in rows)
    notes = [line for line in lines if re.match(r"\d+\. ", line)]
    unseen = next(n for n in notes if "no browsingContext.userPromptOpened" in n)
    nested = next(line for line in rows if line.startswith("| dialogs nested |"))
    number = unseen.split(".")[0].translate(str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹"))
    assert f"| ✗{number} |" in nested  # (chromium-bidi's, footnoted with why)
    assert any("WebDriver classic names no frame" in n for n in notes)
    tex = result.to_latex(standalone=True)
    _balanced(tex)
    assert r"\begin{tabular}{l" + "c" * len(result.backends) + "}" in tex
    assert r"\textsuperscript{" in tex and r"\begin{enumerate}" in tex
    assert re.search(r"[^\x00-\x7f]", tex) is None  # pdflatex's input, whatever it says
    hostile = "a_b & 50% #1 $x {y} ~z ^w \\ end"
    escaped = latex_escape(hostile)
    _balanced(escaped)
    assert escaped == (r"a\_b \& 50\% \#1 \$x \{y\} \textasciitilde{}z "
                       r"\textasciicircum{}w \textbackslash{} end")


# -- in a browser -----------------------------------------------------------------------

class _Page:
    """One page over raw CDP (flattened session), every event kept."""

    def __init__(self, socket: ClientConnection) -> None:
        self.socket = socket
        self.ids = itertools.count(1)
        self.events: list[dict[str, Any]] = []
        self.session: str | None = None
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget",
                                 {"targetId": target, "flatten": True})["sessionId"]

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        number = next(self.ids)
        message: dict[str, Any] = {"id": number, "method": method, "params": params or {}}
        if self.session is not None:
            message["sessionId"] = self.session
        self.socket.send(json.dumps(message))
        while True:
            reply = json.loads(self.socket.recv(timeout=60))
            if reply.get("id") == number:
                assert "error" not in reply, (method, reply["error"])
                result: dict[str, Any] = reply["result"]
                return result
            self.events.append(reply)

    def evaluate(self, expression: str) -> Any:
        reply = self.call("Runtime.evaluate", {"expression": expression,
                                               "returnByValue": True})
        assert "exceptionDetails" not in reply, reply
        return reply["result"].get("value")

    def open(self, path: Path) -> None:
        self.call("Page.navigate", {"url": path.as_uri()})
        self.wait(lambda: self.evaluate("document.readyState") == "complete", "the load")

    def wait(self, condition: Any, what: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            assert time.monotonic() < deadline, f"no {what} within {timeout} s"
            time.sleep(0.05)

    def click(self, selector: str) -> None:
        """A real mouse click at the middle of the element (scrolled into view)."""
        box = self.evaluate(f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
                            "e.scrollIntoView({block: 'center'}); const r = "
                            "e.getBoundingClientRect(); return [r.x + r.width / 2, "
                            "r.y + r.height / 2]; })()")
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", {"type": kind, "x": box[0], "y": box[1],
                                                   "button": "left", "clickCount": 1})

    def shown(self, element_id: str) -> bool:
        return bool(self.evaluate(
            f"(() => {{ const e = document.getElementById({json.dumps(element_id)}); "
            "return getComputedStyle(e).display !== 'none' && e.getBoundingClientRect()"
            ".height > 0; })()"))

    def screenshot(self, path: Path) -> None:
        data = self.call("Page.captureScreenshot", {"format": "png"})["data"]
        path.write_bytes(base64.b64decode(data))


@pytest.mark.browser
def test_the_reports_open_offline_in_headless_chromium(
        headless_shell: cdpnb.Backend, reports: dict[str, Path], tmp_path: Path) -> None:
    with connect(headless_shell.cdp_url, max_size=None) as socket:
        page = _Page(socket)
        for domain in ("Page", "Network", "Runtime"):
            page.call(f"{domain}.enable")
        page.call("Emulation.setDeviceMetricsOverride", {"width": 1280, "height": 900,
                                                         "deviceScaleFactor": 1,
                                                         "mobile": False})
        # the datasets' report: the matrix, a click to a cell's evidence and back
        page.open(reports["probes"])
        page.screenshot(tmp_path / "matrix.png")
        assert page.evaluate("document.querySelectorAll('table.m').length") == 1
        first = page.evaluate("document.querySelector('table.m td a').getAttribute('href')")
        assert not page.shown(first[1:])
        cell = page.evaluate(
            "(() => { const rows = [...document.querySelectorAll('table.m tr')];"
            "const row = rows.find(r => r.cells[0].textContent === 'dialogs cross-site');"
            "return row.cells[3].querySelector('a').getAttribute('href'); })()")
        page.click(f'table.m a[href="{cell}"]')
        page.wait(lambda: page.evaluate("location.hash") == cell, "hash of the cell")
        assert page.shown(cell[1:])
        heading = page.evaluate(f"document.getElementById({json.dumps(cell[1:])})"
                                ".querySelector('h2').textContent")
        assert heading == "chromium+playwright · dialogs cross-site"
        page.screenshot(tmp_path / "evidence.png")
        page.click(f"{cell} a.back")
        page.wait(lambda: page.evaluate("location.hash") == "#m0", "back to the matrix")
        assert not page.shown(cell[1:]) and page.shown("m0")
        # the diff: the changed cell named first, a click to both proofs side by side
        page.open(reports["diff"])
        listed = page.evaluate("[...document.querySelectorAll('#changed li')]"
                               ".map(e => e.textContent)")
        assert listed == ["chromium · dialogs cross-site: ✓ → ~"]
        page.click("#changed li a")
        page.wait(lambda: page.evaluate("location.hash") == "#d0", "the changed cell")
        assert page.shown("d0")
        assert page.evaluate("document.querySelectorAll('#d0 .side > div').length") == 2
        page.screenshot(tmp_path / "changed.png")
        # the hostile message is text in the page: no element, no script, no dialog
        page.evaluate("location.hash = '#all'")
        text = page.evaluate("document.body.textContent")
        assert HOSTILE in text
        assert page.evaluate("document.images.length + document.scripts.length") == 0
        page.screenshot(tmp_path / "all.png")
        methods = [e.get("method") for e in page.events]
        assert "Page.javascriptDialogOpening" not in methods
        # offline: the two files were the only requests
        requested = [e["params"]["request"]["url"] for e in page.events
                     if e.get("method") == "Network.requestWillBeSent"]
        assert requested == [reports["probes"].as_uri(), reports["diff"].as_uri()]
    for name in ("matrix", "evidence", "changed", "all"):
        assert (tmp_path / f"{name}.png").stat().st_size > 10_000
