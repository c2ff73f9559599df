"""``cdpnb.probe(backends)``: run every check against every backend; ``ProbeResult``."""

from __future__ import annotations

import json
import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from cdpnb.backends import launch
from cdpnb.backends.chromium import KINDS, find_executable
from cdpnb.errors import BrowserNotFound, CdpnbError
from cdpnb.probes.checks import CHECKS, Check
from cdpnb.probes.server import ScenarioServer
from cdpnb.supervisor import Supervisor

__all__ = ["CheckResult", "ProbeResult", "available_backends", "probe"]

SYMBOLS = {"ok": "✓", "fail": "✗", "partial": "partial"}


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


@dataclass
class ProbeResult:
    """What every check found on every backend."""

    results: list[CheckResult] = field(default_factory=list)
    backends: dict[str, dict[str, Any]] = field(default_factory=dict)
    started_at: float = field(default_factory=time.time)

    def checks(self) -> pd.DataFrame:
        """One row per check and run."""
        frame = pd.DataFrame([asdict(r) for r in self.results],
                             columns=list(CheckResult.__dataclass_fields__))
        for column in ("backend", "check", "capability", "status"):
            frame[column] = frame[column].astype("category")
        frame["run"] = frame["run"].astype("Int64")
        frame["value"] = frame["value"].astype("Float64")
        return frame

    def matrix(self) -> pd.DataFrame:
        """One row per backend, one column per capability: ✓, ✗ or partial (why)."""
        rows: dict[str, dict[str, str]] = {}
        for backend in self.backends:
            mine = [r for r in self.results if r.backend == backend]
            row: dict[str, str] = {}
            for capability in dict.fromkeys(c.capability for c in CHECKS):
                cells = [r for r in mine if r.capability == capability]
                row[capability] = _cell(cells)
            rows[backend] = row
        return pd.DataFrame.from_dict(rows, orient="index").rename_axis("backend")

    def to_markdown(self) -> str:
        matrix = self.matrix()
        header = ["backend", "version", *matrix.columns]
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        for backend, row in matrix.iterrows():
            version = self.backends[str(backend)].get("version", "")
            cells = [str(backend), version, *(str(v).replace("|", "/") for v in row)]
            lines.append("| " + " | ".join(cells) + " |")
        return "\n".join(lines)

    def to_json(self) -> str:
        return json.dumps({"started_at": self.started_at, "backends": self.backends,
                           "machine": platform.platform(),
                           "results": [asdict(r) for r in self.results]}, indent=1)

    def save(self, directory: str | Path) -> Path:
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        (out / "probe.json").write_text(self.to_json())
        (out / "matrix.md").write_text(self.to_markdown() + "\n")
        return out


def _cell(cells: list[CheckResult]) -> str:
    if not cells:
        return "—"
    values = [c.value for c in cells if c.value is not None]
    if all(c.status == "ok" for c in cells):
        if values and cells[0].check.startswith("latency."):
            return f"{sorted(values)[len(values) // 2]:.2f}"
        return "✓"
    if all(c.status == "fail" for c in cells):
        return "✗ " + cells[0].detail
    worst = next(c for c in cells if c.status != "ok")
    return f"partial: {worst.check}: {worst.detail}"


def available_backends() -> dict[str, str | None]:
    """Each launchable kind and its binary, or None when it is not installed."""
    found: dict[str, str | None] = {}
    for kind in KINDS:
        try:
            found[kind] = find_executable(kind)
        except BrowserNotFound:
            found[kind] = None
    return found


async def _run_backend(kind: str, repeat: int, site: ScenarioServer, result: ProbeResult,
                       progress: Callable[[str], None]) -> None:
    try:
        async with launch(kind) as backend:
            result.backends[kind] = backend.describe()
            async with await Supervisor.start(backend.cdp_url, dialog_timeout_s=30) as sup:
                for run in range(repeat):
                    for check in CHECKS:
                        result.results.append(await _run_check(kind, backend.version, check,
                                                               run, sup, site))
                        progress(f"{kind}: {check.name}")
    except BrowserNotFound as exc:
        result.backends[kind] = {"kind": kind, "version": "", "error": str(exc)}
        for check in CHECKS:
            result.results.append(CheckResult(kind, "", check.name, check.capability, 0, "fail",
                                              f"not installed ({exc})", None, 0.0))
            progress(f"{kind}: {check.name}")


async def _run_check(kind: str, version: str, check: Check, run: int, sup: Supervisor,
                     site: ScenarioServer) -> CheckResult:
    began = time.monotonic()
    try:
        status, detail, value = await check.driver(sup, site)
    except (CdpnbError, TimeoutError, AssertionError) as exc:
        status, detail, value = "fail", f"{type(exc).__name__}: {exc}", None
    return CheckResult(kind, version, check.name, check.capability, run, status, detail, value,
                       time.monotonic() - began)


async def probe(
    backends: Sequence[str] = ("chromium", "headless-shell"),
    repeat: int = 1,
    progress: Callable[[str], None] | None = None,
) -> ProbeResult:
    """Run every probe check against each backend in turn (one browser at a time)."""
    if isinstance(backends, str):
        backends = [backends]
    unknown = [b for b in backends if b not in KINDS]
    if unknown:
        raise ValueError(f"unknown backend(s) {unknown}; choose from {', '.join(KINDS)}")
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise ValueError(f"repeat must be an int >= 1, got {repeat!r}")
    result = ProbeResult()
    with ScenarioServer() as site:
        for kind in backends:
            await _run_backend(kind, repeat, site, result, progress or (lambda _: None))
    return result
