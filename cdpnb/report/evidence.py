"""A matrix cell's evidence (HTML): why it is not ✓, what each of its checks was held
against, the runs' spread, and each check's messages from its trace: the dialog's
steps in the common vocabulary, then the timeline.

A check that ran many times shows the timelines of a few runs: the first, and the
first of each other outcome (the runs that say why it flakes). Every string from a
result or a trace is escaped by :mod:`cdpnb.render`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from cdpnb.probes import CheckResult
from cdpnb.probes.display import cell_kind
from cdpnb.render import table, text
from cdpnb.report.cells import ResultView
from cdpnb.report.lifecycle import Step, lifecycle
from cdpnb.report.plots import latency_svg, outcomes_svg
from cdpnb.report.repeats import spread
from cdpnb.report.sources import Source, TraceCache
from cdpnb.report.spans import Span, TraceIndex
from cdpnb.report.timeline import messages_html, steps_html
from cdpnb.trace import Trace

__all__ = ["RUNS_SHOWN", "Evidence"]

#: Timelines shown per check: the first run and the first of each other outcome.
RUNS_SHOWN = 3


class Evidence:
    """Reads each trace once and renders cells' evidence from it."""

    def __init__(self) -> None:
        self._traces = TraceCache()
        self._indexes: dict[Path, TraceIndex | str] = {}
        self._spans: dict[tuple[Path, str, int], Span | None] = {}
        #: by the span's id (the span kept beside its steps, so the id stays its own)
        self._steps: dict[int, tuple[Span, list[Step]]] = {}

    def index(self, path: Path) -> TraceIndex | str:
        """The trace at ``path`` indexed by check, or why it cannot be."""
        key = path.resolve()
        if key not in self._indexes:
            loaded = self._traces.get(path)
            self._indexes[key] = TraceIndex(loaded) if isinstance(loaded, Trace) else loaded
        return self._indexes[key]

    def span(self, source: Source, result: CheckResult) -> tuple[Span | None, str, str]:
        """(the check's span, the trace's file name, why there is no span)."""
        path = source.trace_path(result)
        if path is None:
            return None, "", "no trace of this check was found"
        index = self.index(path)
        if isinstance(index, str):
            return None, path.name, index
        key = (path.resolve(), result.check, result.run)
        if key not in self._spans:
            self._spans[key] = index.span(result.check, result.run)
        found = self._spans[key]
        if found is None:
            return None, path.name, (f"{path.name} notes no outcome of {result.check} run "
                                     f"{result.run} (the check did not finish, or its "
                                     "backend could not be probed)")
        return found, path.name, ""

    def steps(self, span: Span | None) -> list[Step]:
        """The dialog steps of ``span`` (each span's worked out once: the evidence and
        the protocols' comparison both show them)."""
        if span is None:
            return []
        key = id(span)
        if key not in self._steps:
            self._steps[key] = (span, lifecycle(span))
        return self._steps[key][1]

    def cell_html(self, view: ResultView, backend: str, capability: str, prefix: str) -> str:
        """The evidence of one cell; its anchors start with ``prefix``."""
        mark, why = view.mark(backend, capability), view.why(backend, capability)
        kind = cell_kind(mark)
        info = view.source.result.backends.get(backend, {})
        parts = [f'<p class="meta">{text(view.label, 80)} · protocol '
                 f'{text(info.get("protocol") or "—", 10)} · '
                 f"{text(view.source.result.version_label(backend), 120)}</p>",
                 f'<p>cell: <span class="mk {kind}">{text(mark, 40)}</span>']
        if kind in ("fail", "partial"):
            parts.append(f" — why it is not ✓: {text(why, 600)}")
        parts.append("</p>")
        checks: dict[str, list[CheckResult]] = {}
        for r in view.checks(backend, capability):
            checks.setdefault(r.check, []).append(r)
        for k, (name, runs) in enumerate(checks.items()):
            parts.append(self._check_html(view, name, runs, f"{prefix}-k{k}"))
        if not checks:
            parts.append('<p class="quiet">No check of this capability ran here.</p>')
        return "".join(parts)

    def _check_html(self, view: ResultView, name: str, runs: Sequence[CheckResult],
                    prefix: str) -> str:
        first = runs[0]
        expected = first.expected or "nothing (no facts about this engine)"
        held = ("as expected" if all(r.as_expected is not False for r in runs) else
                "NOT as expected" if any(view.surprising(r) for r in runs) else
                "not as expected (its backend could not be probed: no finding)")
        parts = [f"<h4>{text(name, 80)}</h4>",
                 f'<p>held against: expected <b>{text(expected, 40)}</b> — '
                 f'<span class="{"sur" if "NOT" in held else "quiet"}">{held}</span>']
        race = view.race(first.backend, name)
        if race:
            parts.append(f"<br>a race, so either outcome is expected: {text(race, 300)}")
        parts.append("</p>")
        if len(runs) > 1:
            parts.append(self._spread_html(runs))
        else:
            parts.append(_outcome_html(first))
        plot = _latency_plot(runs)
        if plot:
            parts.append(f'<div class="lat">{plot}</div>')
        for run in _shown_runs(runs):
            parts.append(self._run_html(view.source, run, f"{prefix}-run{run.run}",
                                        opened=run is runs[0]))
        return f'<div class="chk">{"".join(parts)}</div>'

    def _spread_html(self, runs: Sequence[CheckResult]) -> str:
        found = spread(runs)
        rows = [(r.run, r.status, r.detail, "" if r.value is None else f"{r.value:.3g}")
                for r in sorted(runs, key=lambda r: r.run)]
        return (f'<p>{outcomes_svg(found.statuses)}<br>{text(found.describe(), 200)}</p>'
                + table(["run", "status", "detail", "value"], rows, max_rows=12))

    def _run_html(self, source: Source, result: CheckResult, anchor: str,
                  opened: bool) -> str:
        span, trace_name, missing = self.span(source, result)
        head = (f'<h5 id="{anchor}">run {result.run}: <span class="mk '
                f'{_status_kind(result.status)}">{text(result.status, 20)}</span>'
                f" — {text(result.detail, 400)}</h5>")
        if span is None:
            return f'{head}<p class="quiet">{text(missing, 300)}</p>'
        steps = self.steps(span)
        redacted = (f" · redacted when recorded: {text(', '.join(span.redacted), 120)}"
                    if span.redacted else "")
        return (f"{head}<p class=\"meta\">{len(span)} messages from "
                f"{text(trace_name, 120)} ({span.protocol}), from "
                f"{span.start_s:.3f} s into the trace{redacted}</p>"
                f"{steps_html(steps)}"
                f"<details{' open' if opened else ''}><summary>the messages</summary>"
                f"{messages_html(span, steps)}</details>")


def _status_kind(status: str) -> str:
    return {"ok": "ok", "partial": "partial"}.get(status, "fail")


def _outcome_html(result: CheckResult) -> str:
    facts = [f"{result.seconds * 1000:.0f} ms to run"]
    if result.value is not None:
        facts.append(f"value {result.value:.3g}")
    if result.finding:
        facts.append(f"found: {result.finding}")
    if result.dialog_closed_by:
        facts.append(f"dialog closed by {result.dialog_closed_by}"
                     + (f" {result.dialog_open_ms:.1f} ms after it opened"
                        if result.dialog_open_ms is not None else ""))
    return f'<p class="meta">{text(" · ".join(facts), 300)}</p>'


def _latency_plot(runs: Sequence[CheckResult]) -> str:
    measured = [list(r.samples) or ([r.value] if r.value is not None else [])
                for r in runs if r.check.startswith("latency.") and r.status == "ok"]
    if not any(measured) and len(runs) > 1:
        measured = [[r.dialog_open_ms] for r in runs if r.dialog_open_ms is not None]
    return latency_svg(measured) if any(measured) else ""


def _shown_runs(runs: Sequence[CheckResult]) -> list[CheckResult]:
    shown: list[CheckResult] = []
    statuses: set[str] = set()
    for run in sorted(runs, key=lambda r: r.run):
        if run.status not in statuses and len(shown) < RUNS_SHOWN:
            shown.append(run)
            statuses.add(run.status)
    return shown
