"""What a report is made of: results (a probe's, a campaign's), each with a label and
the way to each check's trace.

A probe result names its traces per backend and mode (``result.traces``, or a
replayed backend's ``backends[name]["traces"]``), as written when it ran: often
relative to the folder the probe ran in (``datasets/probes/chromium.native.jsonl.gz``).
:meth:`Source.trace_path` finds such a path from wherever the report is made: as
written, beside the result's own file, or under a parent of the working folder. A
campaign keeps one trace per cell, named in its checks table.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cdpnb.probes import CHECKS, CheckResult, ProbeResult
from cdpnb.trace import Trace

__all__ = ["Source", "TraceCache", "campaign_source", "load_source", "source_of"]

_MODES = {check.name: check.mode for check in CHECKS}


@dataclass
class Source:
    """One result in a report: its ``label`` (the column or heading it gets), the
    result, the folder its file was in (``base``: where relative trace paths are
    looked for too), and for a campaign each cell's trace (``cell_traces``)."""

    label: str
    result: ProbeResult
    base: Path | None = None
    cell_traces: dict[tuple[str, str, int], Path] = field(default_factory=dict)

    def trace_path(self, check: CheckResult) -> Path | None:
        """The trace that holds ``check``'s messages, or None where none is known or
        the file is not found."""
        cell = self.cell_traces.get((check.backend, check.check, check.run))
        if cell is not None:
            return cell if cell.is_file() else None
        mode = _MODES.get(check.check, "native")
        named = (self.result.traces.get(check.backend, {}).get(mode)
                 or (self.result.backends.get(check.backend, {}).get("traces") or {}).get(mode))
        return _found(str(named), self.base) if named else None


def _found(written: str, base: Path | None) -> Path | None:
    path = Path(written)
    candidates = [path]
    if base is not None:
        candidates.append(base / path.name)
    if not path.is_absolute():
        here = Path.cwd()
        candidates += [parent / path for parent in here.parents]
    return next((c for c in candidates if c.is_file()), None)


class TraceCache:
    """Each trace loaded once for the whole report (a trace holds many checks)."""

    def __init__(self) -> None:
        self._loaded: dict[Path, Trace | str] = {}

    def get(self, path: Path) -> Trace | str:
        """The trace, or why it could not be read (a sentence)."""
        key = path.resolve()
        if key not in self._loaded:
            try:
                self._loaded[key] = Trace.load(key, strict=False)
            except (OSError, ValueError) as exc:
                self._loaded[key] = f"cannot read {path.name}: {exc}"
        return self._loaded[key]


def source_of(result: ProbeResult | Source, label: str | None = None) -> Source:
    """``result`` as a report's source (a :class:`Source` is kept as it is)."""
    if isinstance(result, Source):
        return result
    if not isinstance(result, ProbeResult):
        raise TypeError(f"a report is made of ProbeResults (or report Sources), got "
                        f"{type(result).__name__}")
    return Source(label or "result", result)


def load_source(path: str | os.PathLike[str], label: str | None = None) -> Source:
    """A saved result: ``probe.json`` (or ``probe.partial.json``), the folder that holds
    it, or a campaign folder (``campaign.json`` and its ``checks/``). ValueError says
    what the path is not."""
    path = Path(path)
    if path.is_dir() and (path / "campaign.json").is_file():
        return campaign_source(path, label)
    file = path / "probe.json" if path.is_dir() else path
    if path.is_dir() and not file.is_file() and (path / "probe.partial.json").is_file():
        file = path / "probe.partial.json"
    if not file.is_file():
        raise ValueError(f"{path} is not a probe result (probe.json or its folder) nor a "
                         "campaign folder (campaign.json)")
    try:
        result = ProbeResult.from_json(file.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise ValueError(f"{file} is not a probe result: {exc}") from None
    return Source(label or _label(file.parent if file.name.startswith("probe.") else file),
                  result, file.parent)


def _label(path: Path) -> str:
    return path.resolve().name or str(path)


def campaign_source(path: str | os.PathLike[str], label: str | None = None) -> Source:
    """A campaign's cells as a probe result (each cell one check's run: ``run`` is its
    repeat; a cell that could not run is ✗ with why), each with its own trace."""
    from cdpnb.campaign import CampaignResult
    from cdpnb.campaign.cells import Cell
    from cdpnb.campaign.layout import Layout

    root = Path(path)
    campaign = CampaignResult(root)
    checks = campaign.checks()
    latencies = campaign.latencies()
    samples: dict[tuple[str, str, int], list[float]] = {}
    sample: dict[str, Any]
    for sample in latencies.to_dict("records"):  # type: ignore[assignment]
        samples.setdefault((str(sample["backend"]), str(sample["scenario"]),
                            int(sample["repeat"])), []).append(float(sample["ms"]))
    layout = Layout(root)
    results: list[CheckResult] = []
    backends: dict[str, dict[str, Any]] = {}
    traces: dict[tuple[str, str, int], Path] = {}
    cache = TraceCache()
    row: dict[str, Any]
    for row in checks.to_dict("records"):  # type: ignore[assignment]
        row = {k: (None if _missing(v) else v) for k, v in row.items()}
        backend, scenario, repeat = str(row["backend"]), str(row["scenario"]), int(row["repeat"])
        status, detail = str(row["status"]), str(row["detail"] or "")
        if status == "error":  # the cell itself failed: no finding about the backend
            status, detail = "fail", f"the cell could not run: {detail}"
        value = None if row["value_ms"] is None else float(row["value_ms"])
        expected = None if row["expected"] is None else str(row["expected"])
        version = str(row["version"] or "")
        results.append(CheckResult(
            backend, version, scenario, str(row["capability"]), repeat, status, detail, value,
            float(row["check_seconds"] or 0.0), expected,
            tuple(samples.get((backend, scenario, repeat), ()))))
        info = backends.setdefault(backend, {"kind": str(row["kind"] or ""),
                                             "version": version})
        if row["trace"]:
            trace = layout.partition("checks", Cell(backend, scenario, repeat)) / str(row["trace"])
            traces[(backend, scenario, repeat)] = trace
            if "protocol" not in info and trace.is_file():
                loaded = cache.get(trace)
                if isinstance(loaded, Trace):
                    info["protocol"] = loaded.protocol
    return Source(label or _label(root), ProbeResult(results, backends), root, traces)


def _missing(value: Any) -> bool:
    """None, NaN or pandas' NA (a Parquet null, read back)."""
    import pandas as pd

    try:
        return value is None or bool(pd.isna(value))
    except (TypeError, ValueError):  # (a list: not a scalar, so not missing)
        return False
