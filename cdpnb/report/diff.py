"""What changed between two results: the cells whose outcome differs, each with both
proofs side by side.

Results are compared in the order given, each with the one before it (two browser
versions, two days, two machines, native against a bridge). Backends are matched by
name, a replayed probe (``replay:chromium``) as the backend it recorded. A cell
*changed* when its kind of outcome did (✓, ~, ✗, a word, not run) or, for a cell that
is not a latency, its mark did (``yes`` to ``no``); a latency figure that moved is not
a change here (the runs' spread says whether it is beyond noise: ``cdpnb campaign``).
"""

from __future__ import annotations

from dataclasses import dataclass

from cdpnb.probes.display import cell_kind
from cdpnb.report.cells import ResultView, matching_name

__all__ = ["Change", "changes"]


@dataclass(frozen=True)
class Change:
    """One changed cell: ``before`` in result ``old`` (a view's index), ``after`` in
    ``new``; the backend as each names it."""

    old: int
    new: int
    backend_old: str
    backend_new: str
    capability: str
    before: str
    after: str

    @property
    def backend(self) -> str:
        return matching_name(self.backend_new)


def changes(old: ResultView, new: ResultView) -> tuple[list[Change], list[str], list[str]]:
    """The changed cells from ``old`` to ``new``, the backends only ``old`` has, and
    those only ``new`` has."""
    names_old = {matching_name(b): b for b in old.backends}
    names_new = {matching_name(b): b for b in new.backends}
    latency = set(new.source.result.latency_capabilities())
    found: list[Change] = []
    for name, backend_new in names_new.items():
        backend_old = names_old.get(name)
        if backend_old is None:
            continue
        for capability in new.capabilities:
            if capability not in old.capabilities:
                continue
            before = old.mark(backend_old, capability)
            after = new.mark(backend_new, capability)
            if cell_kind(before) != cell_kind(after) or (
                    capability not in latency and before != after):
                found.append(Change(old.index, new.index, backend_old, backend_new,
                                    capability, before, after))
    only_old = [b for n, b in names_old.items() if n not in names_new]
    only_new = [b for n, b in names_new.items() if n not in names_old]
    return found, only_old, only_new
