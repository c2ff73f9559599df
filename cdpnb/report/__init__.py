"""``cdpnb report``: a capability report as one self-contained HTML file, every matrix
cell a link to its evidence.

::

    from cdpnb.report import load_source, report_html, write_report
    write_report([load_source("datasets/probes")], "report.html")   # 0600
    result.report("report.html")                                     # a ProbeResult's
    write_report([load_source("monday"), load_source("tuesday")], "diff.html")

Given two or more results, the cells that changed come first, both proofs side by
side; a result with repeats (a campaign folder, ``probe --repeats``) shows each check's
outcomes over the runs, its flake rate with an interval and its latencies. The file
loads nothing and runs no script (see :mod:`cdpnb.report.page`); every string from a
result or a trace is escaped, and a trace recorded with ``redact=`` is shown as it was
written (its hidden values stay hidden).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from cdpnb.campaign import CampaignResult
from cdpnb.probes import ProbeResult
from cdpnb.report.cells import ResultView
from cdpnb.report.diff import Change, changes
from cdpnb.report.evidence import Evidence
from cdpnb.report.page import document
from cdpnb.report.sources import Source, campaign_source, load_source, source_of
from cdpnb.trace.private_files import write_private_text
from cdpnb.views import REPORTS

__all__ = ["Change", "Source", "campaign_source", "changed_cells", "load_source",
           "report_html", "write_report"]


def _views(results: Sequence[ProbeResult | Source]) -> list[ResultView]:
    if isinstance(results, ProbeResult | Source):
        results = [results]
    if not results:
        raise ValueError("a report needs at least one result")
    sources = [source_of(r, f"result {i + 1}" if len(results) > 1 else "result")
               for i, r in enumerate(results)]
    labels = [s.label for s in sources]
    for i, source in enumerate(sources):  # two results of one name: tell them apart
        if labels.count(source.label) > 1:
            source.label = f"{source.label} ({i + 1})"
    return [ResultView(source, i) for i, source in enumerate(sources)]


def report_html(results: Sequence[ProbeResult | Source]) -> str:
    """The report of ``results`` (ProbeResults, or :class:`Source` s from
    :func:`load_source` that know where their traces lie), compared in order."""
    return document(_views(results), Evidence())


def write_report(results: Sequence[ProbeResult | Source],
                 path: str | os.PathLike[str]) -> Path:
    """Write the report of ``results`` to ``path``, readable by its owner only (0600,
    as the traces it quotes are); returns the path."""
    out = Path(path)
    write_private_text(out, report_html(results))
    return out


def changed_cells(results: Sequence[ProbeResult | Source]) -> list[Change]:
    """The cells whose outcome changed from each result to the next (as the report's
    "What changed" names them)."""
    views = _views(results)
    return [c for i in range(1, len(views)) for c in changes(views[i - 1], views[i])[0]]


def _report_of(results: Sequence[ProbeResult | Source],
               path: str | os.PathLike[str] | None) -> str | Path:
    """The HTML, or with ``path`` the file written there (0600)."""
    return report_html(results) if path is None else write_report(results, path)


# What ProbeResult.report() and CampaignResult.report() make (see cdpnb.views).
REPORTS.register(ProbeResult, lambda result, path=None: _report_of([result], path))
REPORTS.register(CampaignResult, lambda campaign, path=None:
                 _report_of([campaign_source(campaign.path)], path))
