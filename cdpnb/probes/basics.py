"""What every probe check is made of: its outcome, where the scenario pages are, how its
waits stretch on a busy machine, and the waits and refusals the checks share
(``cdpnb.probes.checks`` and ``cdpnb.probes.page_checks`` build on them)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Protocol

from cdpnb.errors import CdpnbError, WaitTimeout
from cdpnb.state import BrowserState
from cdpnb.supervisor import Supervisor

__all__ = ["FRAMES_WAIT_S", "NotSupported", "Outcome", "Site", "frame_at", "needs_page",
           "stretched", "until", "within"]

#: (status, detail, value): value is a latency (ms), a word a check ``answers``, or None.
Outcome = tuple[str, str, float | str | None]

#: How long a check waits for the probe page's frames.
FRAMES_WAIT_S = 5.0


#: How much longer than on a quiet machine a check's waits may be: the probe sets it
#: for each backend from its budgets (``cdpnb.probes.run.step_budget``), 1 when quiet.
_STRETCH: ContextVar[float] = ContextVar("cdpnb_probe_stretch", default=1.0)


def within(seconds: float) -> float:
    """``seconds`` (a wait that suffices on a quiet machine), stretched as the probe
    says for this backend: a busy machine must not turn a slow answer into a finding."""
    return seconds * _STRETCH.get()


@contextlib.contextmanager
def stretched(factor: float) -> Iterator[None]:
    """Run the checks started inside with every wait ``factor`` times longer (>= 1)."""
    token = _STRETCH.set(max(1.0, factor))
    try:
        yield
    finally:
        _STRETCH.reset(token)


class Site(Protocol):
    """Where the scenario pages are: a live ScenarioServer, or the recorded origins."""

    def url(self, path: str, site: str = "a") -> str: ...


class NotSupported(CdpnbError):
    """The backend lacks a domain the check needs."""


def needs_page(sup: Supervisor) -> None:
    """NotSupported where the backend has no Page domain (a runtime: node, Deno, Bun)."""
    if "Page.enable" in sup.unsupported:
        raise NotSupported(f"no Page domain ({sup.unsupported['Page.enable']})")


async def until(sup: Supervisor, predicate: Callable[[BrowserState], bool],
                timeout: float, what: str) -> BrowserState:
    """The supervisor's state once ``predicate`` holds, within ``timeout`` stretched;
    CdpnbError saying ``what`` did not happen otherwise."""
    limit = within(timeout)
    try:
        return await sup.wait_for(predicate, limit)
    except WaitTimeout:
        raise CdpnbError(f"{what} did not happen within {limit:g} s") from None


async def frame_at(sup: Supervisor, url: str, what: str) -> str:
    """The id of the child frame at ``url``, once the supervisor's state has it."""
    def found(state: BrowserState) -> str | None:
        return next((f.frame_id for f in state.frames.values()
                     if f.url == url and f.parent_frame_id), None)

    frame_id = found(await until(sup, lambda s: found(s) is not None, FRAMES_WAIT_S, what))
    assert frame_id is not None
    return frame_id
