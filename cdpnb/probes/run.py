"""``cdpnb.probe(backends)``: run every check against every backend; ``ProbeResult``.

A backend is a kind cdpnb can launch (``chromium``, ``headless-shell``,
``chromium+playwright``, ``node``, ``deno``, ``bun``, ``chromium+puppeteer``,
``lightpanda``, ``chromium+bidi``, ``firefox``), any CDP, WebDriver BiDi or WIP URL (``ws://``, ``wss://``,
``http://host:port``), or a recorded probe (``replay:<trace or folder>``). Each
backend gets two supervisors in turn, one without the dialog bridge (what the
backend itself does) and one with it, each recorded as a trace.
"""

from __future__ import annotations

import contextlib
import json
import platform
import re
import sys
import tempfile
import time
import warnings
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pandas as pd

from cdpnb.backends import LAUNCHABLE, backend_available, kind_protocol, launch
from cdpnb.errors import BrowserNotFound, CdpnbError, CdpnbWarning
from cdpnb.playback.backend import replay
from cdpnb.probes.checks import (
    CHECKS,
    FRAME_UNKNOWN,
    RENAMED,
    Check,
    NotSupported,
    Site,
    stretched,
)
from cdpnb.probes.expected import EXPECTED, engine_kind, expected_status, race_between
from cdpnb.probes.progress import Progress, progress_for
from cdpnb.probes.server import ScenarioServer
from cdpnb.probes.specs import BackendSpec, parse_backend
from cdpnb.protocol import PROTOCOL_SPECS, Note, protocol_spec, recorded_protocol
from cdpnb.protocol.credentials import redact_url
from cdpnb.runtime.waits import wait_for
from cdpnb.session.options import check_timeout
from cdpnb.supervisor import Supervisor
from cdpnb.terminal_text import inert
from cdpnb.trace import Trace
from cdpnb.trace.dtypes import with_text_dtype
from cdpnb.trace.private_files import make_private_dirs, write_private_text
from cdpnb.transport.discovery import browser_of
from cdpnb.views import REPORTS, VIEWS

if TYPE_CHECKING:
    from pandas.io.formats.style import Styler

__all__ = ["PROTOCOLS", "STATUSES", "CheckResult", "MatrixRows", "ProbeResult", "RecordedSite",
           "available_backends", "launch_timeout", "probe", "run_checks", "step_budget"]

#: A step's budget on a quiet machine: connecting, setting up a session, a command's
#: reply. The probe fits it to the machine (:func:`step_budget`); ``timeout=`` sets it.
STEP_BUDGET_S = 10.0
#: A launch that took ``t`` seconds stretches every budget to at least this many ``t``:
#: a machine that slows a launch slows the rest alike. Measured on the 2-core VM under
#: two CPU-bound processes (load ~16): Firefox ESR 153's launch went from 2.9 to 6-9 s
#: and its ``session.new`` from 0.4 s to over 5 s (the old fixed budget).
LAUNCH_STRETCH = 5.0
#: A check may take this many step budgets (30 s on a quiet machine).
CHECK_STEPS = 3
#: No check may take longer than this on a quiet machine, whatever the backend does.
CHECK_TIMEOUT_S = CHECK_STEPS * STEP_BUDGET_S
#: A launch may take this long with the fitted budgets (it is timed, then fits them).
LAUNCH_TIMEOUT_S = 60.0
MODES = ("native", "bridge")
#: Why every bridge check fails over WebDriver classic, without a supervisor to try it.
NO_CLASSIC_BRIDGE = ("no dialog bridge over WebDriver classic: it cannot intercept "
                     "requests (dialogs are polled and answered natively)")
#: A capability's status in ``matrix()``, best first (ordered: ``max`` is the worst).
STATUSES = ("ok", "partial", "fail")
#: What the rows of :meth:`ProbeResult.matrix` are: capabilities (as every display
#: shows them), or backends (a typed column per capability).
MatrixRows = Literal["capability", "backend"]
#: What a backend's endpoint speaks: the matrix's ``protocol`` column (``wip``: the
#: WebKit Inspector Protocol, Bun's; ``classic``: WebDriver classic), the specs' names.
PROTOCOLS: tuple[str, ...] = tuple(spec.name for spec in PROTOCOL_SPECS)


@dataclass(frozen=True)
class CheckResult:
    backend: str
    version: str
    check: str
    capability: str
    run: int
    status: str
    detail: str
    value: float | None
    seconds: float
    #: The status the measured facts predict, or for a check that answers with a word
    #: (site isolation) the word; ``ok|partial`` where either was measured (a race in
    #: the backend that no page can steer).
    expected: str | None = None
    #: Every measurement behind ``value`` (ms), for the latency checks.
    samples: tuple[float, ...] = ()
    #: The word a check with ``answers`` found (``yes`` / ``no`` / ``unknown``).
    finding: str | None = None
    #: For a dialog check: who closed the dialog (``agent``: the probe answered it;
    #: ``remote``: another client or the browser did) and how long after it opened (ms):
    #: the record of a race where one is (``cdpnb.probes.expected.RACES``).
    dialog_closed_by: str | None = None
    dialog_open_ms: float | None = None

    @property
    def observed(self) -> str:
        """What ``expected`` is compared with: the finding where one is expected."""
        if self.expected is not None and not set(self.expected.split("|")) <= set(STATUSES):
            return self.finding or self.status
        return self.status

    @property
    def as_expected(self) -> bool | None:
        """Whether what was observed is (one of) what the facts predict; None if they
        predict nothing."""
        if self.expected is None:
            return None
        return self.observed in self.expected.split("|")


@dataclass
class ProbeResult:
    """What every check found on every backend, and the traces behind each cell.

    >>> from cdpnb.cli import DATASETS
    >>> result = ProbeResult.from_json((DATASETS / "probe.json").read_text())
    >>> result.matrix().loc[["dialogs cross-site", "bridge cross-site"],
    ...                     "chromium+playwright"].tolist()
    ['partial', 'ok']
    >>> result.matrix_text(reasons=False).loc["dialogs main", ["node", "firefox"]].tolist()
    ['✗', '✓']
    >>> result.matrix().loc[["protocol", "site isolation"],
    ...                     ["chromium", "lightpanda", "firefox"]].to_numpy().tolist()
    [['cdp', 'cdp', 'bidi'], ['yes', 'no', 'unknown']]
    >>> result.matrix(rows="backend")["dialogs main"].max()  # typed: the worst status
    'fail'
    >>> result.surprises().empty, result.unreachable()
    (True, {})
    """

    results: list[CheckResult] = field(default_factory=list)
    backends: dict[str, dict[str, Any]] = field(default_factory=dict)
    traces: dict[str, dict[str, str]] = field(default_factory=dict)
    started_at: float = field(default_factory=time.time)

    def checks(self) -> pd.DataFrame:
        """One row per check and run, with the expected status and whether it held."""
        frame = pd.DataFrame([asdict(r) for r in self.results],
                             columns=list(CheckResult.__dataclass_fields__))
        for column in ("backend", "check", "capability", "status", "expected"):
            frame[column] = frame[column].astype("category")
        frame["run"] = frame["run"].astype("Int64")
        frame["value"] = frame["value"].astype("Float64")
        frame["as_expected"] = pd.array(
            [pd.NA if r.as_expected is None else r.as_expected for r in self.results],
            dtype="boolean")
        return with_text_dtype(frame)

    def surprises(self) -> pd.DataFrame:
        """The checks whose status differs from what the measured facts predict.

        A check that could not run (its backend could not be probed: see
        :meth:`unprobed`) is no finding about the backend, so it is not a surprise."""
        checks = self.checks()
        differs = checks["as_expected"].eq(False).fillna(False)
        unprobed = pd.Series([self._unprobed_check(r) for r in self.results],
                             index=checks.index, dtype=bool)
        return checks[differs & ~unprobed]

    def unprobed(self) -> dict[str, str]:
        """What could not be probed and why: a backend (nothing ran; as
        :meth:`unreachable`), or ``backend (bridge checks)`` when one mode's supervisor
        could not start after the other ran. Its checks are ✗ with the reason and are
        not surprises; ``cdpnb probe --backends NAME --timeout S`` tries again."""
        found: dict[str, str] = dict(self.unreachable())
        for name, info in self.backends.items():
            if name in found:
                continue
            for mode, reason in (info.get("unprobed") or {}).items():
                found[f"{name} ({mode} checks)"] = str(reason)
        return found

    def _unprobed_check(self, result: CheckResult) -> bool:
        info = self.backends.get(result.backend, {})
        if info.get("unreachable"):
            return True
        modes = info.get("unprobed") or {}
        return bool(modes) and result.detail in {str(v) for v in modes.values()}

    def races(self) -> pd.DataFrame:
        """Every dialog check's race between the probe's answer and anyone else's: who
        closed the dialog (``agent``: the probe; ``remote``: another client or the
        browser) and ``open_ms`` after it opened, one row per check and run, with
        ``race`` True where the measured facts say the outcome is a race
        (``cdpnb.probes.expected.RACES``) and what races there."""
        rows = []
        for r in self.results:
            if r.dialog_closed_by is None:
                continue
            info = self.backends.get(r.backend, {})
            kind = next((info[k] for k in ("expected_as", "recorded_kind", "kind")
                         if info.get(k)), "")
            what = race_between(str(kind), r.check)
            rows.append((r.backend, r.check, r.run, r.dialog_closed_by, r.dialog_open_ms,
                         r.status, what is not None, what or ""))
        frame = pd.DataFrame(rows, columns=["backend", "check", "run", "closed_by", "open_ms",
                                            "status", "race", "between"])
        for column in ("backend", "check", "closed_by", "status"):
            frame[column] = frame[column].astype("category")
        frame["run"] = frame["run"].astype("Int64")
        frame["open_ms"] = frame["open_ms"].astype("Float64")
        frame["race"] = frame["race"].astype("boolean")
        return with_text_dtype(frame)

    def capabilities(self) -> dict[str, list[str]]:
        """Each capability and the checks behind it, in matrix order."""
        grouped: dict[str, list[str]] = {}
        for check in CHECKS:
            grouped.setdefault(check.capability, []).append(check.name)
        return grouped

    def latency_capabilities(self) -> list[str]:
        """The capabilities that are a measurement in ms, not a yes/no."""
        return [c for c, names in self.capabilities().items()
                if all(n.startswith("latency.") for n in names)]

    def answer_capabilities(self) -> dict[str, tuple[str, ...]]:
        """The capabilities that answer with a word (site isolation: yes / no /
        unknown), each with the words it may answer: how the engine does something,
        not whether it can."""
        return {check.capability: check.answers for check in CHECKS if check.answers}

    def protocol(self, backend: str) -> str | None:
        """What the backend's endpoint speaks: ``cdp``, ``bidi``, or None if unknown
        (an endpoint that could not be reached)."""
        value = self.backends.get(backend, {}).get("protocol")
        return value if value in PROTOCOLS else None

    def matrix(self, *, rows: MatrixRows = "capability") -> pd.DataFrame:
        """The matrix as every display shows it: one row per capability (its
        ``protocol`` first), one column per backend.

        A capability's cell is its status, ``ok`` / ``partial`` / ``fail``; a latency
        capability's the median in ms (a float); one that answers with a word (``site
        isolation``) the word found; ``protocol`` is ``cdp`` / ``bidi`` / ``classic`` /
        ``wip``; NA where there is none (not measured, could not tell, not reached).
        A backend's column mixes them, so it is of dtype ``object``.

        ``rows="backend"``: one row per backend and a typed column per capability
        instead, for analysis: ``protocol`` a categorical of :data:`PROTOCOLS`, a
        status an ordered categorical of :data:`STATUSES` (``max`` is the worst), a
        latency ``Float64``, a word a categorical of its words. The reasons are in
        :meth:`matrix_text` and :meth:`checks`.
        """
        _check_rows(rows)
        latency = set(self.latency_capabilities())
        answers = self.answer_capabilities()
        backends = list(self.backends)
        if rows == "capability":
            cells: dict[str, list[Any]] = {"protocol": [self.protocol(b) for b in backends]}
            for capability in self.capabilities():
                found = [self._cells(backend, capability) for backend in backends]
                cell_of = (_median if capability in latency else
                           _finding if capability in answers else _status)
                cells[capability] = [cell_of(c) for c in found]
            frame = pd.DataFrame.from_dict(cells, orient="index", columns=backends,
                                           dtype=object)
            frame = frame.map(lambda v: pd.NA if v is None else v)
            return frame.rename_axis(index="capability", columns="backend")
        columns: dict[str, Any] = {"protocol": pd.Categorical(
            [self.protocol(b) for b in backends], categories=PROTOCOLS)}
        for capability in self.capabilities():
            found = [self._cells(backend, capability) for backend in backends]
            if capability in latency:
                columns[capability] = pd.array([_median(c) for c in found], dtype="Float64")
            elif capability in answers:
                columns[capability] = pd.Categorical([_finding(c) for c in found],
                                                     categories=answers[capability])
            else:
                columns[capability] = pd.Categorical([_status(c) for c in found],
                                                     categories=STATUSES, ordered=True)
        return with_text_dtype(pd.DataFrame(columns, index=pd.Index(backends,
                                                                     name="backend")))

    def matrix_text(self, *, reasons: bool = True,
                    rows: MatrixRows = "capability") -> pd.DataFrame:
        """The matrix as text, as the CLI shows it (a row per capability, a column per
        backend; ``rows="backend"`` the other way round): the protocol, then ``✓``,
        ``✗ why``, ``partial: check: why``, the word a finding answers, or the median
        latency; ``reasons=False`` keeps only the mark (``✓``, ``✗``, ``~``), the
        words and the figures."""
        _check_rows(rows)
        columns: dict[str, dict[str, str]] = {}
        for backend in self.backends:
            column = {"protocol": self.protocol(backend) or "—"}
            column.update({capability: _cell(self._cells(backend, capability), reasons)
                           for capability in self.capabilities()})
            columns[backend] = column
        frame = pd.DataFrame(columns, index=["protocol", *self.capabilities()], dtype=object)
        frame = frame.rename_axis(index="capability", columns="backend")
        return with_text_dtype(frame.T if rows == "backend" else frame)

    def _cells(self, backend: str, capability: str) -> list[CheckResult]:
        return [r for r in self.results if r.backend == backend and r.capability == capability]

    def unreachable(self) -> dict[str, str]:
        """The backends that could not be probed at all (not installed, nothing
        listening, no CDP there), with the reason."""
        return {name: str(info["unreachable"]) for name, info in self.backends.items()
                if info.get("unreachable")}

    def latency_samples(self) -> pd.DataFrame:
        """Every latency measurement: backend, capability, check, run, ``ms``. A
        result recorded before samples were kept gives its medians (``median_only``)."""
        rows = []
        for r in self.results:
            if not r.check.startswith("latency.") or r.status != "ok" or r.value is None:
                continue
            values = r.samples or (r.value,)
            rows += [(r.backend, r.capability, r.check, r.run, float(v), not r.samples)
                     for v in values]
        frame = pd.DataFrame(rows, columns=["backend", "capability", "check", "run", "ms",
                                            "median_only"])
        for column in ("backend", "capability", "check"):
            frame[column] = frame[column].astype("category")
        frame["run"] = frame["run"].astype("Int64")
        return with_text_dtype(frame)

    def to_markdown(self, *, reasons: bool = False, footnotes: bool = False) -> str:
        """The matrix as a Markdown table, one row per backend; ``reasons=True`` keeps
        the whole ✗ text. ``footnotes=True``: the table for a paper instead, one row
        per capability, each cell that is not ✓ with a footnote number and the
        numbered footnotes below saying why (``cdpnb matrix --format md``)."""
        if footnotes:
            from cdpnb.probes.paper import markdown_table
            return markdown_table(self)
        matrix = self.matrix_text(rows="backend")
        header = ["backend", "version", *matrix.columns]
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        for backend, row in matrix.iterrows():
            cells = [str(backend), self.version_label(str(backend)),
                     *(_short(str(v), reasons) for v in row)]
            # An endpoint's words (its version, an error) are inert: matrix.md gets read
            # with cat; a line break would end the row.
            lines.append("| " + " | ".join(inert(c).replace("|", "/").replace("\n", " ")
                                           for c in cells) + " |")
        return "\n".join(lines)

    def to_latex(self, *, standalone: bool = False) -> str:
        r"""The matrix as a LaTeX table for a paper (``cdpnb matrix --format tex``):
        one row per capability, each cell that is not ✓ with a footnote number, the
        numbered footnotes below saying why; every word escaped. It needs
        ``\usepackage{amssymb,graphicx}``; ``standalone=True`` makes a whole document."""
        from cdpnb.probes.paper import latex_table
        return latex_table(self, standalone=standalone)

    def report(self, path: str | Path | None = None) -> str | Path:
        """A self-contained HTML report of this result: the matrix, every cell a link to
        its evidence (the check's messages from its trace, the reason, the expected
        outcome), the runs' spread, the same scenario across protocols. Returns the HTML,
        or with ``path`` writes it there (0600) and returns the path. See
        :func:`cdpnb.report.report_html`; ``cdpnb report`` is the command."""
        report: str | Path = REPORTS.make(self, path)  # cdpnb.report, above probes
        return report

    def version_label(self, backend: str) -> str:
        """What the backend said it was, and when it was recorded if replayed."""
        info = self.backends.get(backend, {})
        version = str(info.get("version", ""))
        if info.get("replayed"):
            version = f"{version} (replayed, recorded {info.get('recorded_on', '?')})"
        return version

    def to_json(self) -> str:
        return json.dumps({"started_at": self.started_at, "backends": self.backends,
                           "machine": platform.platform(), "traces": self.traces,
                           "results": [asdict(r) for r in self.results]}, indent=1)

    @classmethod
    def from_json(cls, text: str) -> ProbeResult:
        data = json.loads(text)
        results = [CheckResult(**{**r, "samples": tuple(r.get("samples", ()))})
                   for r in data["results"]]
        return cls(results, data["backends"], data.get("traces", {}), data["started_at"])

    def save(self, directory: str | Path) -> Path:
        """Write ``probe.json`` and ``matrix.md`` to ``directory``, 0600 (missing folders
        0700): they sit beside the probe's traces and are the owner's as those are."""
        out = Path(directory)
        make_private_dirs(out)
        write_private_text(out / "probe.json", self.to_json())
        write_private_text(out / "matrix.md", self.to_markdown(reasons=True) + "\n")
        return out

    def view(self) -> Any:
        """An ipywidgets grid of the matrix; choosing a cell shows its checks' detail."""
        return VIEWS.make(self)  # cdpnb.notebook, loaded on use

    @property
    def style(self) -> Styler:
        """:meth:`matrix` as a pandas Styler (as ``DataFrame.style``), for a notebook:
        cells coloured as in the HTML repr, latencies to two decimals, and a cell with
        no value showing what the CLI and ``view()`` show (``✗`` failed, ``—`` not run)
        instead of ``nan``. Chain Styler calls on it as usual."""
        from cdpnb.probes.display import probe_styler
        return probe_styler(self)

    def _repr_html_(self) -> str:
        from cdpnb.probes.display import probe_html
        return probe_html(self)

    def __repr__(self) -> str:
        bad = sum(r.status != "ok" for r in self.results)
        return (f"<ProbeResult {len(self.backends)} backends, {len(self.results)} checks, "
                f"{bad} not ok>")


def _check_rows(rows: object) -> None:
    if rows not in ("capability", "backend"):
        raise ValueError(f"rows must be 'capability' or 'backend', got {rows!r}")


def _short(cell: str, reasons: bool) -> str:
    if reasons or len(cell) <= 60:
        return cell
    return cell[:57] + "…"


def _status(cells: list[CheckResult]) -> str | None:
    if not cells:
        return None
    if all(c.status == "ok" for c in cells):
        return "ok"
    if all(c.status == "fail" for c in cells):
        return "fail"
    return "partial"


def _finding(cells: list[CheckResult]) -> str | None:
    """The word every run found, or None (none found, or runs disagree)."""
    found = {c.finding for c in cells}
    return found.pop() if len(found) == 1 else None


def _median(cells: list[CheckResult]) -> float | None:
    values = sorted(c.value for c in cells if c.status == "ok" and c.value is not None)
    return values[len(values) // 2] if values else None


def _cell(cells: list[CheckResult], reasons: bool = True) -> str:
    status = _status(cells)
    if status is None:
        return "—"
    if status != "fail" and any(c.finding for c in cells):
        return "/".join(dict.fromkeys(c.finding for c in cells if c.finding))
    if status == "ok":
        median = _median(cells)
        return f"{median:.2f}" if median is not None and cells[0].check.startswith(
            "latency.") else "✓"
    worst = next(c for c in cells if c.status != "ok")
    if status == "partial" and all(c.detail.startswith(FRAME_UNKNOWN) for c in cells
                                   if c.status != "ok"):
        # Seen and answered, but the protocol names no frame for a dialog: neither "seen
        # with its frame" (✓) nor "not seen" (✗).
        return FRAME_UNKNOWN if not reasons else f"{FRAME_UNKNOWN}: {worst.check}: " + (
            worst.detail[len(FRAME_UNKNOWN):].strip(" (").split(")", 1)[0])
    if not reasons:
        return "✗" if status == "fail" else "~"
    if status == "fail":
        return "✗ " + cells[0].detail
    return f"partial: {worst.check}: {worst.detail}"


def available_backends() -> dict[str, str | None]:
    """Each launchable kind, and None if it can start here or why it cannot."""
    return {kind: backend_available(kind) for kind in LAUNCHABLE}


# -- sites --------------------------------------------------------------------------------


@dataclass(frozen=True)
class RecordedSite:
    """The scenario origins a recorded probe used: replays must ask for the same URLs."""

    site_a: str
    site_b: str
    site_https: str = ""

    def url(self, path: str, site: str = "a") -> str:
        origins = {"a": self.site_a, "b": self.site_b, "https": self.site_https}
        return origins[site] + path


# -- one backend --------------------------------------------------------------------------


def step_budget(timeout: float | None, launch_s: float | None = None) -> float:
    """The budget of one step (connecting, setting up a session, a command's reply).

    ``timeout`` given: exactly that. None: fitted to the machine, ``STEP_BUDGET_S``
    or ``LAUNCH_STRETCH`` times how long the backend took to launch, whichever is
    longer, so a machine busy enough to slow the launch gets budgets that fit it.

    >>> step_budget(None), step_budget(None, 0.4), step_budget(None, 6.0), step_budget(3.0, 6.0)
    (10.0, 10.0, 30.0, 3.0)
    """
    if timeout is not None:
        return timeout
    return max(STEP_BUDGET_S, LAUNCH_STRETCH * (launch_s or 0.0))


def launch_timeout(timeout: float | None) -> float:
    """How long a launch may take: with fitted budgets only bounded against a hang
    (the launch is timed, and its time fits the rest); else four step budgets."""
    return LAUNCH_TIMEOUT_S if timeout is None else max(20.0, 4 * timeout)


@dataclass
class _Target:
    """An open backend: where to connect and what to call it in the matrix."""

    connect: Any  # a launched or replayed backend, or a URL string
    info: dict[str, Any]
    site: Site
    recorded: dict[str, Trace] = field(default_factory=dict)
    #: Whose expected outcomes apply (a LAUNCHABLE kind); None until known, or for an
    #: engine the facts do not cover.
    kind: str | None = None
    #: Whether ``kind`` is settled, or waits for what the first supervisor learns.
    identified: bool = False
    #: A step's budget for this backend (s): see :func:`step_budget`.
    budget: float = STEP_BUDGET_S


class _Unprobed(Exception):
    """Nothing of a backend could be probed (no check ran): why, and whether another
    attempt could do better (a launch or a session set-up that ran out of time may;
    a backend that is not installed or a recording without the mode will not)."""

    def __init__(self, reason: str, *, retryable: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retryable = retryable


@contextlib.asynccontextmanager
async def _opened(spec: BackendSpec, site: ScenarioServer,
                  timeout: float | None) -> AsyncIterator[_Target]:
    if spec.kind == "launch":
        began = time.monotonic()
        async with launch(spec.name, timeout=launch_timeout(timeout)) as backend:
            launched_s = time.monotonic() - began
            info = backend.describe()
            budget = step_budget(timeout, launched_s)
            info["budget_s"] = round(budget, 3)
            yield _Target(backend, info, site, kind=spec.name, identified=True, budget=budget)
    elif spec.kind == "url":
        budget = step_budget(timeout)
        yield _Target(spec.url, {"kind": "url", "version": "", "protocol": None,
                                 "cdp_url": redact_url(spec.url), "budget_s": budget}, site,
                      budget=budget)
    else:
        traces = {mode: Trace.load(path) for mode, path in spec.traces.items()}
        first = next(iter(traces.values()))
        meta = first.header.get("meta", {}).get("probe", {})
        recorded_site = RecordedSite(meta.get("site_a", site.site_a),
                                     meta.get("site_b", site.site_b),
                                     meta.get("site_https", site.site_https))
        recorded_kind = first.backend.get("kind")
        # The launched backend's own word first: Lightpanda's Browser.getVersion says
        # Chrome/124, its /json/version (kept by launch) Lightpanda/1.0.
        info = {"kind": "replay", "recorded_kind": recorded_kind, "protocol": first.protocol,
                "version": first.backend.get("version") or first.browser.get("Browser", ""),
                "replayed": True, "traces": {m: str(p) for m, p in spec.traces.items()},
                "recorded_on": time.strftime("%Y-%m-%d", time.gmtime(first.started_at))}
        target = _Target(None, info, recorded_site, traces, budget=step_budget(timeout))
        # The live probe noted it in the first mode's trace.
        identity = next((note for note in (_probe_note(t, "probe.backend")
                                           for t in traces.values()) if note), None)
        if recorded_kind in LAUNCHABLE:
            target.kind, target.identified = str(recorded_kind), True
        elif identity is not None:  # a URL backend: what the live probe made of it
            named = identity.get("expected_as")  # a trace's word: only a kind we know
            target.kind = named if isinstance(named, str) and named in EXPECTED else None
            target.identified = True
            info.update({k: identity[k] for k in ("version", "expected_as", "expected")
                         if k in identity})
        yield target


async def _identify(target: _Target, sup: Supervisor) -> None:
    """Settle whose expectations a URL backend gets from what it says it is, and note
    it in the trace (``probe.backend``), so its replay gets the same."""
    if target.identified:
        return
    target.identified = True
    info = target.info
    info["protocol"] = sup.protocol
    browser = ""
    # (Where /json/version is there to say it: not over WebDriver BiDi nor classic.)
    if "version" in protocol_spec(sup.protocol).json_endpoints \
            and isinstance(target.connect, str):
        browser = await browser_of(target.connect, target.budget)
    browser = (sup.state.engine or browser or str(sup.browser_version.get("product", "")))
    # chromium-bidi 17 swaps browserName and browserVersion: "Chrome/156.…/@<revision>".
    browser = browser.partition("/@")[0]
    target.kind = engine_kind(sup.protocol, browser)
    info["version"] = browser
    info["expected_as"] = target.kind
    if target.kind is None:
        info["expected"] = (f"none: {browser or 'the endpoint'} is no engine the measured "
                            "facts cover")
    with contextlib.suppress(CdpnbError):
        await sup.annotate("probe.backend", {k: info[k] for k in (
            "protocol", "version", "expected_as", "expected") if k in info})


async def _supervise(target: _Target, mode: str, trace_path: Path | None,
                     meta: dict[str, Any]) -> contextlib.AbstractAsyncContextManager[Any]:
    if target.recorded:
        @contextlib.asynccontextmanager
        async def replayed() -> AsyncIterator[Supervisor]:
            async with replay(target.recorded[mode]) as backend:
                sup = await Supervisor.start(backend, bridge=mode == "bridge",
                                             dialog_timeout_s=30, reconnect_attempts=0)
                async with sup:
                    await _identify(target, sup)
                    yield sup
        return replayed()
    sup = await Supervisor.start(target.connect, bridge=mode == "bridge", dialog_timeout_s=30,
                                 connect_timeout_s=target.budget,
                                 command_timeout_s=target.budget,
                                 reconnect_attempts=0, record=trace_path, record_meta=meta)
    try:
        await _identify(target, sup)
    except BaseException:
        await sup.stop()
        raise
    return sup


async def _probe_backend(spec: BackendSpec, repeat: int, site: ScenarioServer, out: Path,
                         result: ProbeResult, progress: Callable[[str], None],
                         timeout: float | None) -> None:
    """Probe one backend; one that could not be probed at all is tried once more with
    budgets twice as long (a busy machine), and its info says so (``retried``)."""
    name = spec.label
    first_reason = ""
    for attempt in (1, 2):
        try:
            await _run_backend(spec, repeat, site, out, result, progress, timeout)
        except _Unprobed as exc:
            if attempt == 1 and exc.retryable:
                first_reason = exc.reason
                used = result.backends.get(name, {}).get("budget_s")
                base = float(used) if isinstance(used, int | float) else step_budget(timeout)
                timeout = 2 * base
                continue
            info = result.backends.setdefault(name, {
                "kind": spec.name if spec.kind == "launch" else spec.kind, "version": "",
                "protocol": kind_protocol(spec.name) if spec.kind == "launch" else None})
            info["unreachable"] = exc.reason
            info["error"] = exc.reason
            kind = spec.name if spec.kind == "launch" else info.get("expected_as")
            _fail_all(result, name, _Target(None, info, site, kind=kind), list(CHECKS),
                      repeat, exc.reason, progress)
        if first_reason:
            result.backends[name]["retried"] = (
                f"the first attempt could not probe it ({first_reason}); tried again with "
                f"{timeout:g} s budgets")
        return


async def _run_backend(spec: BackendSpec, repeat: int, site: ScenarioServer, out: Path,
                       result: ProbeResult, progress: Callable[[str], None],
                       timeout: float | None) -> None:
    """Run every check on one backend; raises _Unprobed when none could run."""
    name = spec.label
    try:
        async with _opened(spec, site, timeout) as target:
            result.backends[name] = target.info
            run = _BackendRun(name, target, repeat, result, progress)
            for mode in MODES:
                checks = _mode_checks(run, mode)
                if checks is None:
                    continue
                if run.unprobed:  # the endpoint failed once; do not wait on it again
                    run.give_up(mode, checks)
                    continue
                await _run_mode(run, mode, checks, site, out)
    except _Unprobed:
        raise
    except BrowserNotFound as exc:
        if any(r.backend == name for r in result.results):
            raise  # pragma: no cover - launch is the only source, before any check
        raise _Unprobed(f"not installed ({exc})", retryable=False) from None
    except (CdpnbError, OSError) as exc:
        if not any(r.backend == name for r in result.results):
            raise _Unprobed(str(exc), retryable=spec.kind != "replay") from None
        # Lost after some checks ran: the rest fail with the reason; nothing is retried.
        info = result.backends[name]
        info.setdefault("unprobed", {})["rest"] = str(exc)
        done = {(r.check, r.run) for r in result.results if r.backend == name}
        missing = [c for c in CHECKS if (c.name, 0) not in done]
        kind = spec.name if spec.kind == "launch" else info.get("expected_as")
        _fail_all(result, name, _Target(None, info, site, kind=kind), missing, repeat,
                  str(exc), progress)


@dataclass
class _BackendRun:
    """What the modes of one backend's run share (see :func:`_run_backend`)."""

    name: str
    target: _Target
    repeat: int
    result: ProbeResult
    progress: Callable[[str], None]
    #: Why the endpoint could not be supervised ("" while it could).
    unprobed: str = ""

    def fail(self, checks: list[Check], reason: str) -> None:
        _fail_all(self.result, self.name, self.target, checks, self.repeat, reason,
                  self.progress)

    def give_up(self, mode: str, checks: list[Check]) -> None:
        """``mode``'s checks fail, and its info says why: the endpoint could not be
        supervised."""
        self.fail(checks, self.unprobed)
        self.target.info.setdefault("unprobed", {})[mode] = self.unprobed


def _mode_checks(run: _BackendRun, mode: str) -> list[Check] | None:
    """``mode``'s checks to run (on a recording: those it holds, the others counted
    done), or None when none can run: they fail, saying why."""
    target = run.target
    checks = [c for c in CHECKS if c.mode == mode]
    # (None until a URL backend's first supervisor says it: the bridge is
    # then tried, as over CDP.)
    said = recorded_protocol(target.info.get("protocol"))
    if mode == "bridge" and not said.dialog_bridge:
        run.fail(checks, NO_CLASSIC_BRIDGE)
        return None
    if target.recorded and mode in target.recorded:
        recorded = _recorded_checks(target, mode, checks)
        for _ in range(run.repeat):  # (not run, and so done: the progress's count)
            for check in checks:
                if check not in recorded:
                    run.progress(f"{run.name}: {check.name}")
        checks = recorded
    if target.recorded and mode not in target.recorded:
        run.fail(checks, f"no {mode} trace was recorded")
        return None
    return checks


async def _run_mode(run: _BackendRun, mode: str, checks: list[Check], site: ScenarioServer,
                    out: Path) -> None:
    """Supervise the target in ``mode`` (a live one recorded to a trace in ``out``) and
    run ``checks``, ``repeat`` times; when it cannot be supervised they fail, or in the
    first mode (nothing at all could be probed) _Unprobed is raised."""
    name, target, result = run.name, run.target, run.result
    path = out / f"{_slug(name)}.{mode}.jsonl.gz"
    meta = {"probe": {"backend": name, "mode": mode, "site_a": site.site_a,
                      "site_b": site.site_b, "site_https": site.site_https,
                      "repeat": run.repeat, "budget_s": target.budget,
                      "checks": [c.name for c in checks]}}
    try:
        supervising = await _supervise(target, mode, path, meta)
    except (CdpnbError, OSError) as exc:
        run.unprobed = f"cannot supervise: {exc}"
        if mode == MODES[0]:  # nothing at all could be probed
            raise _Unprobed(run.unprobed, retryable=not target.recorded) from None
        run.give_up(mode, checks)
        return
    if not target.recorded:
        result.traces.setdefault(name, {})[mode] = str(path)
    with warnings.catch_warnings():
        # What the supervisor advises about this backend is a finding of the
        # probe (kept with the backend), not a warning for whoever runs it.
        warnings.simplefilter("ignore", CdpnbWarning)
        async with supervising as sup:
            version = str(target.info.get("version", ""))
            for i in range(run.repeat):
                for check in checks:
                    outcome = await _run_check(name, version, target.kind, check, i, sup,
                                               target)
                    result.results.append(outcome)
                    run.progress(f"{name}: {check.name}")
        hints = result.backends[name].setdefault("hints", [])
        hints.extend(h for h in sup.hints if h not in hints)


def _fail_all(result: ProbeResult, name: str, target: _Target, checks: list[Check],
              repeat: int, reason: str, progress: Callable[[str], None]) -> None:
    version = str(target.info.get("version", ""))
    for run in range(repeat):
        for check in checks:
            result.results.append(CheckResult(name, version, check.name, check.capability, run,
                                              "fail", reason, None, 0.0,
                                              expected_status(target.kind, check.name)))
            progress(f"{name}: {check.name}")


async def _run_check(name: str, version: str, kind: str | None, check: Check, run: int,
                     sup: Supervisor, target: _Target) -> CheckResult:
    began = time.monotonic()
    value: float | str | None
    limit = CHECK_STEPS * target.budget
    try:
        with stretched(target.budget / STEP_BUDGET_S):
            status, detail, value = await wait_for(check.driver(sup, target.site), limit)
    except TimeoutError:
        status, detail, value = "fail", f"no outcome within {limit:g} s", None
    except NotSupported as exc:
        status, detail, value = "fail", str(exc), None
    except (CdpnbError, AssertionError, StopIteration, KeyError) as exc:
        status, detail, value = "fail", f"{type(exc).__name__}: {exc}", None
    finding = value if isinstance(value, str) else None
    samples: tuple[float, ...] = tuple(getattr(value, "samples", ()))
    closed_by: str | None = getattr(value, "closed_by", None)
    open_ms: float | None = getattr(value, "open_ms", None)
    value = None if value is None or finding is not None else float(value)
    if target.recorded and check.name.startswith("latency."):
        # Timing a replay measures the replay server: show what was measured live.
        recorded = _recorded_outcome(target.recorded[check.mode], check.name, run)
        if recorded is not None:
            status, detail, value, samples = recorded
            detail = f"recorded: {detail}"
    note: dict[str, Any] = {"check": check.name, "run": run, "status": status,
                            "detail": detail, "value": value}
    if samples:
        note["samples"] = [round(s, 4) for s in samples]
    if finding is not None:
        note["finding"] = finding
    if closed_by is not None:
        note["dialog_closed_by"] = closed_by
        note["dialog_open_ms"] = open_ms
    with contextlib.suppress(CdpnbError):
        await sup.annotate("probe.check", note)
    return CheckResult(name, version, check.name, check.capability, run, status, detail, value,
                       time.monotonic() - began, expected_status(kind, check.name), samples,
                       finding, closed_by, open_ms)


async def run_checks(connect: Any, checks: Sequence[Check], site: Site, *, backend: str,
                     kind: str | None, version: str = "", run: int = 0,
                     record: Path | None = None, record_meta: dict[str, Any] | None = None,
                     timeout: float | None = None) -> list[CheckResult]:
    """Run ``checks`` (all of one mode) once, under one supervisor of ``connect`` (a
    launched backend or an endpoint URL), as :func:`probe` runs them: for callers that
    run some checks at a time on a backend they manage themselves (``cdpnb.campaign``).

    ``backend`` labels the results, ``kind`` picks the expected outcomes (None: the
    engine a URL says it is, as the probe does), ``run`` is the results' run number;
    the supervisor records to ``record``; ``timeout`` is a step's budget as in
    :func:`probe` (None: ``STEP_BUDGET_S``, or stretched by how long ``connect`` took
    to launch when it says so). A supervisor that cannot start raises (CdpnbError or
    OSError); what a check finds is its result.
    """
    modes = {check.mode for check in checks}
    if len(modes) != 1:
        raise ValueError(f"run_checks needs checks of one mode, got {sorted(modes)}")
    launched_s = getattr(connect, "started_in_s", None)
    budget = step_budget(check_timeout("timeout", timeout, allow_none=True),
                         launched_s if isinstance(launched_s, int | float) else None)
    target = _Target(connect, {"kind": kind, "version": version}, site, kind=kind,
                     identified=kind is not None or not isinstance(connect, str),
                     budget=budget)
    supervising = await _supervise(target, modes.pop(), record, record_meta or {})
    async with supervising as sup:
        version = version or str(target.info.get("version", ""))
        return [await _run_check(backend, version, target.kind, check, run, sup, target)
                for check in checks]


def _recorded_checks(target: _Target, mode: str, checks: list[Check]) -> list[Check]:
    """The ``checks`` a recording's probe ran (its header's ``meta.probe.checks``, old
    names as their new ones): a replay answers only the commands it recorded, so a
    check added since cannot run on it. Those it lacks are left out, ``—`` in the
    matrix, and named in the backend's info (``not_recorded``). A recording that does
    not say which checks it ran gets them all."""
    listed = target.recorded[mode].header.get("meta", {}).get("probe", {}).get("checks")
    if not isinstance(listed, list):
        return checks
    ran = {RENAMED.get(str(name), str(name)) for name in listed}
    lacking = [c.name for c in checks if c.name not in ran]
    if lacking:
        target.info.setdefault("not_recorded", []).extend(lacking)
    return [c for c in checks if c.name in ran]


def _probe_note(trace: Trace, method: str) -> dict[str, Any] | None:
    """The params of the first ``method`` note in ``trace`` (the probe's own notes)."""
    return next((dict(r.params) for r in trace.records
                 if isinstance(r, Note) and r.method == method), None)


def _recorded_outcome(trace: Trace, check: str, run: int
                      ) -> tuple[str, str, float | None, tuple[float, ...]] | None:
    for record in trace.records:
        if (isinstance(record, Note) and record.method == "probe.check"
                and record.params.get("check") == check and record.params.get("run") == run):
            p = record.params
            return (str(p.get("status")), str(p.get("detail")), p.get("value"),
                    tuple(float(v) for v in p.get("samples") or ()))
    return None


def _callers_level() -> int:
    """The ``stacklevel`` of the first frame outside cdpnb and asyncio, from the caller
    of this function: a coroutine runs under asyncio's own frames, and a warning at
    ``asyncio/events.py`` would not say whose line asked for it."""
    frame, level = sys._getframe(1), 1
    while (frame.f_back is not None
           and str(frame.f_globals.get("__name__", "")).split(".")[0] in ("cdpnb", "asyncio")):
        frame, level = frame.f_back, level + 1
    return level


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9.+-]+", "_", name).strip("_")[:80] or "backend"


async def probe(
    backends: Sequence[str] = ("chromium", "headless-shell"),
    repeats: int = 1,
    progress: Progress = True,
    out: str | Path | None = None,
    timeout: float | None = None,
    *,
    into: ProbeResult | None = None,
    repeat: int | None = None,
) -> ProbeResult:
    """Run every probe check against each backend in turn (one browser at a time),
    ``repeats`` times each (``repeat=`` is the old name of it: it still works, with a
    DeprecationWarning; ``--repeats`` on the command line, as on ``campaign``).

    ``progress=True`` shows a bar (a widget in a notebook, a text bar on stderr
    elsewhere); ``False`` none; a callable gets one label per finished check.
    Traces go to ``out`` (a temporary folder if not given); ``result.traces`` has
    their paths.

    ``timeout`` is the budget (s) of each step: connecting, setting up a session, a
    command's reply; a check gets ``CHECK_STEPS`` of them and its own waits grow alike.
    None (the default) fits it to the machine: ``STEP_BUDGET_S``, or ``LAUNCH_STRETCH``
    times the backend's launch if that is longer (:func:`step_budget`). A backend that
    could not be probed at all is tried once more with budgets twice as long; its
    ``result.backends[name]["retried"]`` says why.

    ``into`` is an empty result to fill (a new one if None), each check appended as it
    finishes: a caller that interrupts the probe (cancels it, or Ctrl-C under
    ``asyncio.run``) keeps in it what finished before (``cdpnb probe`` prints that
    as a partial matrix). A check cut short by the interrupt is not in it.
    """
    if into is not None and not isinstance(into, ProbeResult):
        raise TypeError(f"into must be a ProbeResult or None, got {type(into).__name__}")
    if into is not None and (into.results or into.backends):
        # (filling a result that holds checks would count them twice: it is not a resume)
        raise ValueError(f"into must be an empty ProbeResult, got {into!r}")
    timeout = check_timeout("timeout", timeout, allow_none=True)
    if isinstance(backends, str):
        backends = [backends]
    specs = [parse_backend(b) for b in backends]
    if repeat is not None:
        warnings.warn("cdpnb.probe(repeat=...) is deprecated: use repeats=... (as "
                      "cdpnb.campaign and cdpnb probe --repeats)", DeprecationWarning,
                      stacklevel=_callers_level())
        if repeats != 1:
            raise TypeError("give repeats= only (repeat= is its old name), not both")
        repeats = repeat
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be an int >= 1, got {repeats!r}")
    folder = Path(out) if out is not None else Path(tempfile.mkdtemp(prefix="cdpnb-probe-"))
    make_private_dirs(folder)  # (0700: it holds the probe's traces)
    result = ProbeResult() if into is None else into
    with (ScenarioServer() as site,
          progress_for(progress, len(specs) * len(CHECKS) * repeats) as tick):
        for spec in specs:
            await _probe_backend(spec, repeats, site, folder, result, tick, timeout)
    return result
