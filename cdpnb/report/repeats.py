"""A check's spread over its runs: the outcomes in order, the success rate and the
flake rate, each with a Wilson interval (``cdpnb.campaign.stats``).

A run *flakes* when its outcome is not the check's most common one: a check that
passes 47 times in 50 has a flake rate of 3/50, whatever the outcome it usually has.
Ties go to the better outcome (``ok`` before ``partial`` before ``fail``), so a check
split evenly counts its failures as the flakes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from cdpnb.campaign.stats import wilson_interval
from cdpnb.probes import CheckResult

__all__ = ["Spread", "spread"]

_ORDER = {"ok": 0, "partial": 1, "fail": 2}


@dataclass(frozen=True)
class Spread:
    """One check's runs on one backend."""

    statuses: tuple[str, ...]
    ok: int
    usual: str
    flakes: int
    ok_interval: tuple[float, float]
    flake_interval: tuple[float, float]

    @property
    def runs(self) -> int:
        return len(self.statuses)

    @property
    def flake_rate(self) -> float:
        return self.flakes / self.runs if self.runs else 0.0

    def describe(self) -> str:
        """``ok 47/50 (95% CI 83.8%–97.9%) · usually ok · flake rate 6% (95% CI
        2.06%–16.2%)``."""
        low, high = self.ok_interval
        f_low, f_high = self.flake_interval
        return (f"ok {self.ok}/{self.runs} (95% CI {_pct(low)}–{_pct(high)}) · usually "
                f"{self.usual} · flake rate {_pct(self.flake_rate)} "
                f"(95% CI {_pct(f_low)}–{_pct(f_high)})")


def _pct(value: float) -> str:
    return f"{100 * value:.3g}%" if value == value else "—"


def spread(results: Sequence[CheckResult]) -> Spread:
    """The spread of one check's runs (``results``, any order: sorted by run here)."""
    ordered = sorted(results, key=lambda r: r.run)
    statuses = tuple(r.status for r in ordered)
    counts = Counter(statuses)
    usual = min(counts, key=lambda s: (-counts[s], _ORDER.get(s, 3))) if counts else "—"
    ok = counts.get("ok", 0)
    flakes = len(statuses) - counts.get(usual, 0)
    return Spread(statuses, ok, usual, flakes, wilson_interval(ok, len(statuses)),
                  wilson_interval(flakes, len(statuses)))
