"""A result as a report lays it out: its backends and capabilities in matrix order,
each cell's mark and reason, its checks, and the anchors that link them.

Anchors are made of positions, never of names (a backend can be a URL): the matrix
of result ``s`` is ``#m{s}``, its cell ``#r{s}-b{b}-c{c}``, a check's run inside it
``…-k{k}-run{n}``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from cdpnb.probes import CHECKS, CheckResult, race_between
from cdpnb.probes.paper import short_version
from cdpnb.report.sources import Source

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ResultView", "matching_name", "short_version"]

_ORDER = {check.name: i for i, check in enumerate(CHECKS)}


def matching_name(backend: str) -> str:
    """The name a backend is matched by across results: a replayed probe
    (``replay:chromium``) is the backend it recorded."""
    return backend.removeprefix("replay:")


@dataclass
class ResultView:
    """One source of a report, laid out (see the module)."""

    source: Source
    index: int
    marks: pd.DataFrame = field(init=False)
    whys: pd.DataFrame = field(init=False)
    by_cell: dict[tuple[str, str], list[CheckResult]] = field(init=False)

    def __post_init__(self) -> None:
        result = self.source.result
        # (a row per backend: ``marks.at[backend, capability]``)
        self.marks = result.matrix_text(reasons=False, rows="backend")
        self.whys = result.matrix_text(reasons=True, rows="backend")
        self.by_cell = {}
        for r in result.results:
            self.by_cell.setdefault((r.backend, r.capability), []).append(r)
        for cell in self.by_cell.values():
            cell.sort(key=lambda r: (_ORDER.get(r.check, len(_ORDER)), r.run))
        self.unprobed = set(result.unprobed())

    @property
    def label(self) -> str:
        return self.source.label

    @property
    def backends(self) -> list[str]:
        return [str(b) for b in self.marks.index]

    @property
    def capabilities(self) -> list[str]:
        """Capabilities in matrix order: the yes/no ones, then the latencies."""
        latency = set(self.source.result.latency_capabilities())
        columns = [str(c) for c in self.marks.columns if c != "protocol"]
        return [c for c in columns if c not in latency] + [c for c in columns if c in latency]

    def matrix_id(self) -> str:
        return f"m{self.index}"

    def cell_id(self, backend: str, capability: str) -> str:
        b = self.backends.index(backend)
        c = list(self.marks.columns).index(capability)
        return f"r{self.index}-b{b}-c{c}"

    def mark(self, backend: str, capability: str) -> str:
        return str(self.marks.at[backend, capability])

    def why(self, backend: str, capability: str) -> str:
        return str(self.whys.at[backend, capability])

    def checks(self, backend: str, capability: str) -> list[CheckResult]:
        return self.by_cell.get((backend, capability), [])

    def kind(self, backend: str) -> str:
        """Whose expected outcomes the backend was held to (a launchable kind)."""
        info = self.source.result.backends.get(backend, {})
        return str(next((info[k] for k in ("expected_as", "recorded_kind", "kind")
                         if info.get(k)), ""))

    def race(self, backend: str, check: str) -> str | None:
        return race_between(self.kind(backend), check)

    def surprising(self, result: CheckResult) -> bool:
        """Not what the facts predict, and not because its backend could not be probed."""
        if result.as_expected is not False:
            return False
        info = self.source.result.backends.get(result.backend, {})
        unprobed = {str(v) for v in (info.get("unprobed") or {}).values()}
        return not info.get("unreachable") and result.detail not in unprobed

    def flaky(self, backend: str, capability: str) -> bool:
        """Some check of the cell had runs with different outcomes."""
        by_check: dict[str, set[str]] = {}
        for r in self.checks(backend, capability):
            by_check.setdefault(r.check, set()).add(r.status)
        return any(len(statuses) > 1 for statuses in by_check.values())

    def repeated(self) -> bool:
        """Whether any check ran more than once (a campaign, ``probe --repeats``)."""
        return any(r.run > 0 for r in self.source.result.results)
