"""A campaign's cells: backends × scenarios × repeats, each a task of its own.

A scenario is a probe check (``cdpnb.probes.CHECKS``), named exactly or by a glob
(``"dialog.*.cross_site"``), or a :class:`~cdpnb.probes.Check` of your own; the names
checks had before they stopped requiring out-of-process iframes (``dialog.*.oopif``)
still find them (``cdpnb.probes.checks.RENAMED``). A backend is a kind cdpnb launches
(``chromium``, ``headless-shell``, ``chromium+playwright``, ``node``, ``deno``,
``bun``, ``chromium+puppeteer``, ``lightpanda``, ``chromium+bidi``, ``firefox``) or an endpoint
URL; a recorded probe (``replay:``) is not: a campaign measures live backends, and a
replay would only repeat the recorded figures.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

from cdpnb.probes import CHECKS, BackendSpec, Check, parse_backend
from cdpnb.probes.checks import RENAMED

__all__ = ["Cell", "CellTask", "grid", "resolve_backends", "resolve_scenarios"]

_BUILT_IN = {check.name: check for check in CHECKS}


@dataclass(frozen=True, order=True)
class Cell:
    """One run of one scenario on one backend: the unit of work, retry and storage."""

    backend: str
    scenario: str
    repeat: int

    @property
    def label(self) -> str:
        return f"{self.backend} · {self.scenario} · #{self.repeat}"


@dataclass(frozen=True)
class CellTask:
    """What a worker needs to run a cell. A built-in check travels by name (the
    worker has the same cdpnb); only a check of your own travels as itself."""

    cell: Cell
    spec: BackendSpec
    custom_check: Check | None = None

    @property
    def check(self) -> Check:
        return self.custom_check or _BUILT_IN[self.cell.scenario]


def resolve_scenarios(scenarios: Iterable[str | Check] | str | Check | None) -> list[Check]:
    """The checks named by exact names, globs or Check objects, in the order given
    (each once); None means every probe check. ValueError names what matched nothing."""
    if scenarios is None:
        return list(CHECKS)
    if isinstance(scenarios, str | Check):
        scenarios = [scenarios]
    chosen: dict[str, Check] = {}
    for item in scenarios:
        if isinstance(item, Check):
            matched = [item]
        elif isinstance(item, str) and item.strip():
            pattern = item.strip()
            matched = [c for c in CHECKS if fnmatchcase(c.name, pattern)]
            if not matched:  # a name from before the rename: the check it became
                renamed = {new for old, new in RENAMED.items() if fnmatchcase(old, pattern)}
                matched = [c for c in CHECKS if c.name in renamed]
            if not matched:
                raise ValueError(f"scenario {item!r} matches no probe check; the checks are: "
                                 f"{', '.join(_BUILT_IN)}")
        else:
            raise ValueError(f"a scenario is a check name, a glob or a Check, got {item!r}")
        for check in matched:
            known = chosen.get(check.name)
            if known is not None and known is not check:
                raise ValueError(f"two different scenarios are named {check.name!r}")
            chosen[check.name] = check
    if not chosen:
        raise ValueError("a campaign needs at least one scenario")
    return list(chosen.values())


def resolve_backends(backends: Sequence[str] | str) -> list[BackendSpec]:
    """Each backend parsed once (ValueError says what is wrong), duplicates dropped."""
    if isinstance(backends, str):
        backends = [backends]
    specs: dict[str, BackendSpec] = {}
    for text in backends:
        spec = parse_backend(text)
        if spec.kind == "replay":
            raise ValueError(f"{text!r} is a recorded probe: a campaign measures live backends "
                             "(a launchable kind or a CDP URL)")
        specs.setdefault(spec.label, spec)
    if not specs:
        raise ValueError("a campaign needs at least one backend")
    return list(specs.values())


def grid(specs: Sequence[BackendSpec], checks: Sequence[Check], repeats: int
         ) -> list[CellTask]:
    """Every cell, repeat by repeat: each repeat visits every backend and scenario
    before the next begins, so a drift in the machine's load over the campaign touches
    every backend alike instead of whichever happened to run last."""
    tasks = []
    for repeat in range(repeats):
        for spec in specs:
            for check in checks:
                custom = None if _BUILT_IN.get(check.name) is check else check
                tasks.append(CellTask(Cell(spec.label, check.name, repeat), spec, custom))
    return tasks
