"""Races that break clients, as named scenarios: the real client's ordinary script, a
fault rule that provokes the race, and what came of it, measured over runs.

Each scenario reproduces one class of failure reported against a client (the issue it
cites), with Playwright (Python, unmodified) as the client, through ``cdpnb.proxy``
in front of a launched backend. A run is classified by what the client saw and what
its recording says (``closed_by`` of each dialog, the proxy's fault notes), never by
a timing: ``race(...)`` reports each outcome's rate with its Wilson interval, so a
race that goes both ways is shown going both ways.

>>> sorted(RACES)[:3]
['auto-dismiss-vs-handler', 'beforeunload-then-close', 'dialog-event-twice']
"""

from __future__ import annotations

import asyncio
import math
import tempfile
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cdpnb.proxy.running import proxy
from cdpnb.runtime.waits import wait_for

if TYPE_CHECKING:
    import pandas as pd

    from cdpnb.backends import Backend
    from cdpnb.trace import Trace

__all__ = ["ALWAYS_POSSIBLE", "RACES", "Race", "RaceResult", "race", "race_grid"]

#: A client script: (the proxy's http URL, the page server's base URL) -> what it saw.
Script = Callable[[str, str], Awaitable[dict[str, Any]]]
#: An outcome: (what the client saw, the recording) -> a short name.
Classify = Callable[[dict[str, Any], "Trace"], str]

#: Outcomes any scenario can have: the client's script raised (its first line is kept
#: in the run's ``client_error``), or did not finish within RUN_BUDGET_S.
ALWAYS_POSSIBLE = ("client error", "client stalled")

#: How long one run's client may take before the run counts as ``stalled``.
RUN_BUDGET_S = 60.0

_PAGE = """<!doctype html><title>race</title><body><h1>race</h1>
<iframe id=child src="{B}/child"></iframe></body>"""
_BEFOREUNLOAD = """<!doctype html><title>leaving</title><body>
<script>addEventListener('beforeunload', e => { e.preventDefault(); e.returnValue = ''; });
</script></body>"""


@dataclass(frozen=True)
class Race:
    name: str
    #: The reported failure it reproduces (tracker and number), and how.
    reproduces: str
    faults: tuple[str, ...]
    script: Script
    classify: Classify
    #: Every outcome the scenario can have (a run outside them is a finding: ``other``).
    outcomes: tuple[str, ...]
    #: Pages the run serves on the loopback scenario server (path -> template).
    pages: dict[str, str] = field(default_factory=dict)


async def _connect(url: str) -> tuple[Any, Any, Any]:
    from playwright.async_api import async_playwright

    manager = async_playwright()
    playwright = await manager.__aenter__()
    browser = await playwright.chromium.connect_over_cdp(url)
    page = await browser.contexts[0].new_page()
    page.set_default_timeout(15_000)  # a stalled action fails the run, not the budget
    return manager, browser, page


async def _done(manager: Any, browser: Any, page: Any) -> None:
    try:
        if not page.is_closed():
            await page.close()
        await browser.close()
    finally:
        await manager.__aexit__(None, None, None)


async def _accept_quietly(dialog: Any) -> None:
    """Accept; a dialog (or page) gone meanwhile is part of the race, not an error."""
    try:
        await dialog.accept()
    except Exception:
        return


def _closers(trace: Trace) -> list[str]:
    dialogs = trace.dialogs()
    return [str(c) for c in dialogs["closed_by"]] if len(dialogs) else []


# -- the scenarios ------------------------------------------------------------------------

async def _auto_dismiss(url: str, base: str) -> dict[str, Any]:
    """Playwright's handler answers 10 ms after the dialog opens; the remote dismisses
    it 10 ms after it opens."""
    manager, browser, page = await _connect(url)
    try:
        async def answer(dialog: Any) -> None:
            await asyncio.sleep(0.010)
            try:
                await dialog.accept("Ada")
            except Exception:  # the dialog was gone
                return

        page.on("dialog", lambda d: asyncio.ensure_future(answer(d)))
        await page.goto(base + "/race")
        got = await page.evaluate("prompt('name?')")
        await asyncio.sleep(0.1)  # let a late answer land before the page closes
        return {"page_got": got}
    finally:
        await _done(manager, browser, page)


def _auto_dismiss_outcome(seen: dict[str, Any], trace: Trace) -> str:
    closers = _closers(trace)
    if closers == ["client"] and seen["page_got"] == "Ada":
        return "client answered"
    if closers == ["fault"] and seen["page_got"] is None:
        return "remote dismissed first"
    return "other"


async def _twice(url: str, base: str) -> dict[str, Any]:
    """The dialog's opening event comes twice (chromium-bidi #3143's doubled events);
    Playwright's handler accepts whatever it is given."""
    manager, browser, page = await _connect(url)
    calls: list[str] = []
    refused: list[str] = []
    try:
        async def answer(dialog: Any) -> None:
            calls.append(dialog.message)
            try:
                await dialog.accept("Ada")
            except Exception as exc:
                refused.append(str(exc).splitlines()[0][:120])

        page.on("dialog", lambda d: asyncio.ensure_future(answer(d)))
        await page.goto(base + "/race")
        got = await page.evaluate("prompt('name?')")
        await asyncio.sleep(0.2)
        next_ok = await page.evaluate("1 + 1") == 2
        return {"page_got": got, "handler_calls": len(calls), "refused": refused,
                "next_ok": next_ok}
    finally:
        await _done(manager, browser, page)


def _twice_outcome(seen: dict[str, Any], trace: Trace) -> str:
    if seen["page_got"] != "Ada" or not seen["next_ok"]:
        return "other"
    if seen["handler_calls"] >= 2:
        return "handler ran twice" + (", one answer refused" if seen["refused"] else "")
    return "handler ran once"


async def _detach(url: str, base: str) -> dict[str, Any]:
    """The page's target is detached the moment a dialog opens (WebdriverIO #14295: a
    dialog opens and closes at once, then the frame is gone)."""
    manager, browser, page = await _connect(url)
    try:
        page.on("dialog", lambda d: asyncio.ensure_future(_accept_quietly(d)))
        await page.goto(base + "/race")
        try:
            await wait_for(page.evaluate("alert('hi')"), 15)
            said = "returned"
        except TimeoutError:
            said = "stalled"
        except Exception as exc:
            said = "error: " + str(exc).splitlines()[0][:100]
        return {"evaluate": said, "page_closed": page.is_closed()}
    finally:
        await _done(manager, browser, page)


def _detach_outcome(seen: dict[str, Any], trace: Trace) -> str:
    said = str(seen["evaluate"])
    if said == "stalled":
        return "client stalled"
    if said.startswith("error"):
        return "client told (error)"
    return "evaluate returned"


async def _late_popup(url: str, base: str) -> dict[str, Any]:
    """A popup opened from a cross-site iframe, its attach held 300 ms (Playwright
    #28536: popups from iframes)."""
    manager, browser, page = await _connect(url)
    try:
        await page.goto(base + "/race")
        child = next(f for f in page.frames if f.url.endswith("/child"))
        try:
            async with page.context.expect_page(timeout=10_000) as popup_info:
                await child.evaluate("window.open('/blank')")
            popup = await popup_info.value
            await popup.wait_for_load_state()
            seen = popup.url.rsplit("/", 1)[-1]
            await popup.close()
        except Exception as exc:
            seen = "error: " + str(exc).splitlines()[0][:100]
        return {"popup": seen}
    finally:
        await _done(manager, browser, page)


def _late_popup_outcome(seen: dict[str, Any], trace: Trace) -> str:
    popup = str(seen["popup"])
    return "popup seen" if popup == "blank" else "popup missed"


async def _beforeunload_close(url: str, base: str) -> dict[str, Any]:
    """``page.close(run_before_unload=True)`` on a page that asks first, the remote
    dismissing its beforeunload dialog (Playwright #37597: beforeunload, then close)."""
    manager, browser, page = await _connect(url)
    try:
        page.on("dialog", lambda d: asyncio.ensure_future(_accept_quietly(d)))
        await page.goto(base + "/leaving")
        await page.mouse.click(5, 5)  # a user activation: beforeunload fires only after one
        await page.close(run_before_unload=True)
        closed = False
        for _ in range(50):
            if page.is_closed():
                closed = True
                break
            await asyncio.sleep(0.05)
        return {"closed": closed}
    finally:
        await _done(manager, browser, page)


def _beforeunload_outcome(seen: dict[str, Any], trace: Trace) -> str:
    closers = _closers(trace)
    if seen["closed"]:
        return "page closed" + (" (the remote dismissed first)" if "fault" in closers else "")
    return "page left open" + (" (the remote dismissed first)" if "fault" in closers else "")


RACES: dict[str, Race] = {race.name: race for race in (
    Race("auto-dismiss-vs-handler",
         "hermes-agent #14540 (a remote browser auto-dismisses dialogs in ≈10 ms) and "
         "#80319: a handler that answers 10 ms after the opening races the remote's "
         "dismissal 10 ms after it",
         ("dismiss-dialogs=10ms",), _auto_dismiss, _auto_dismiss_outcome,
         ("client answered", "remote dismissed first"), {"/race": _PAGE}),
    Race("dialog-event-twice",
         "chromium-bidi #3143 (events twice) and WebdriverIO #14211 (a handler fired "
         "more than once): the opening event duplicated, the handler answering each",
         ("duplicate:Page.javascriptDialogOpening",), _twice, _twice_outcome,
         ("handler ran twice, one answer refused", "handler ran twice", "handler ran once"),
         {"/race": _PAGE}),
    Race("target-detached-at-dialog",
         "WebdriverIO #14295 (a dialog opens and closes at once, then 'no such frame'): "
         "the page's target detached the moment its dialog opens",
         ("detach:Page.javascriptDialogOpening",), _detach, _detach_outcome,
         ("client told (error)", "client stalled", "evaluate returned"), {"/race": _PAGE}),
    Race("late-target-attach",
         "Playwright #28536 (popups from iframes: a target that attaches late): every "
         "Target.attachedToTarget held 300 ms, then a popup opened by a cross-site "
         "iframe. Measured with Playwright 1.65: its own new_page fails first, 'Cannot "
         "read properties of undefined (reading _page)', every run: it takes the page "
         "from the attach that, from Chromium, always comes before createTarget's reply",
         ("delay:Target.attachedToTarget=300ms",), _late_popup, _late_popup_outcome,
         ("popup seen", "popup missed"), {"/race": _PAGE, "/blank": "<title>blank</title>"}),
    Race("beforeunload-then-close",
         "Playwright #37597 (beforeunload, then close): close with run_before_unload "
         "while the remote dismisses the beforeunload dialog",
         ("dismiss-dialogs=10ms",), _beforeunload_close, _beforeunload_outcome,
         ("page left open (the remote dismissed first)", "page closed",
          "page closed (the remote dismissed first)", "page left open"),
         {"/leaving": _BEFOREUNLOAD}),
)}


# -- running them -------------------------------------------------------------------------

@dataclass
class RaceResult:
    """The runs of one scenario: each run's outcome, what the client saw and the
    recording that shows it; ``rates()`` with Wilson intervals."""

    race: Race
    backend: str
    runs: list[dict[str, Any]]

    def table(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame(self.runs)

    def counts(self) -> Counter[str]:
        return Counter(str(run["outcome"]) for run in self.runs)

    def rates(self) -> pd.DataFrame:
        """Each outcome seen: its count, rate and 95% Wilson interval."""
        import pandas as pd

        n = len(self.runs)
        rows = []
        for outcome, count in self.counts().most_common():
            low, high = _wilson(count, n)
            rows.append({"race": self.race.name, "backend": self.backend, "outcome": outcome,
                         "runs": n, "count": count, "rate": count / n if n else math.nan,
                         "low": low, "high": high})
        return pd.DataFrame(rows)

    def __repr__(self) -> str:
        said = ", ".join(f"{o} {c}/{len(self.runs)}" for o, c in self.counts().most_common())
        return f"<RaceResult {self.race.name} on {self.backend}: {said}>"


def _wilson(successes: int, n: int) -> tuple[float, float]:
    if n == 0:
        return math.nan, math.nan
    from scipy.stats import binomtest

    interval = binomtest(successes, n).proportion_ci(confidence_level=0.95, method="wilson")
    return float(interval.low), float(interval.high)


def _check(name: str, runs: int) -> Race:
    if name not in RACES:
        raise ValueError(f"no race named {name!r}; choose from {sorted(RACES)}")
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise ValueError(f"runs must be a whole number >= 1, got {runs!r}")
    return RACES[name]


async def _run_once(scenario: Race, backend: str | Backend, run: int, seed: int,
                    folder: Path, base_url: str) -> dict[str, Any]:
    """One run: a fresh browser for a kind, a fresh proxy, the client's script, the
    outcome read from what it saw and its recording."""
    from cdpnb.backends import launch
    from cdpnb.trace import Trace

    file = folder / f"{scenario.name}.{run}.jsonl"
    # A kind gets a fresh browser each run: a race can leave a page stuck behind a
    # dialog nobody can answer (its session detached), and Playwright's next
    # connect_over_cdp then waits on that page until its own 30 s timeout (measured:
    # target-detached-at-dialog's second run on a shared browser).
    owned = await launch(backend) if isinstance(backend, str) else None
    target = owned if owned is not None else backend
    try:
        async with proxy(target, record=file, faults=scenario.faults, seed=seed) as px:
            try:
                seen = await wait_for(scenario.script(px.url, base_url), RUN_BUDGET_S)
            except TimeoutError:
                seen = {"stalled": True}
            except Exception as exc:  # the client failed: what it said is the finding
                seen = {"client_error": str(exc).splitlines()[0][:200]}
    finally:
        if owned is not None:
            await owned.aclose()
    trace = Trace.load(file, strict=False)
    if seen.get("stalled"):
        outcome = "client stalled"
    elif "client_error" in seen:
        outcome = "client error"
    else:
        outcome = scenario.classify(seen, trace)
    if outcome not in (*scenario.outcomes, *ALWAYS_POSSIBLE):
        outcome = "other"
    return {"run": run, "outcome": outcome, **seen, "dialogs_closed_by": _closers(trace),
            "trace": str(file)}


def _run_in_worker(name: str, backend: str, run: int, seed: int, folder: str) -> dict[str, Any]:
    """One run as a Dask task (a process of the cluster's): its own page server."""
    from cdpnb.probes import scenarios

    scenario = RACES[name]
    with scenarios() as site:
        for path, page in scenario.pages.items():
            site.add(path, page)
        return asyncio.run(_run_once(scenario, backend, run, seed, Path(folder), site.site_a))


async def race(name: str, *, runs: int = 10, backend: str | Backend = "chromium",
               seed: int = 0, record: str | Path | None = None,
               client: Any = None) -> RaceResult:
    """Run scenario ``name`` ``runs`` times (each a fresh client connection through a
    fresh proxy, seeded ``seed + i``) and classify each. ``record``: the folder for the
    recordings (one per run; a private temporary folder by default). ``client``: a
    ``dask.distributed.Client`` to run the runs as tasks on its cluster (each launches
    its own browser; ``backend`` must then be a kind)."""
    scenario = _check(name, runs)
    folder = Path(record) if record is not None else Path(tempfile.mkdtemp(prefix="cdpnb-race-"))
    kind = backend if isinstance(backend, str) else str(getattr(backend, "kind", "url"))
    if client is not None:
        if not isinstance(backend, str):
            raise ValueError("a race on a Dask cluster launches its browsers there: "
                             "backend must be a kind such as 'chromium'")
        futures = [client.submit(_run_in_worker, name, backend, i + 1, seed + i, str(folder),
                                 pure=False) for i in range(runs)]
        results = await asyncio.to_thread(client.gather, futures)
        return RaceResult(scenario, kind, sorted(results, key=lambda r: int(r["run"])))
    from cdpnb.probes import scenarios

    site = scenarios()
    try:
        for path, page in scenario.pages.items():
            site.add(path, page)
        results = [await _run_once(scenario, backend, i + 1, seed + i, folder, site.site_a)
                   for i in range(runs)]
        return RaceResult(scenario, kind, results)
    finally:
        site.close()


async def race_grid(names: list[str] | None = None, backends: tuple[str, ...] = ("chromium",),
                    *, runs: int = 10, seed: int = 0, record: str | Path | None = None,
                    client: Any = None) -> pd.DataFrame:
    """Every race × backend, ``runs`` each: one table of outcome rates with their
    Wilson intervals (clients × faults × backends; ``client`` spreads the runs over a
    Dask cluster)."""
    import pandas as pd

    chosen = sorted(RACES) if names is None else list(names)
    for name in chosen:
        _check(name, runs)
    tables = []
    for backend in backends:
        for name in chosen:
            folder = None if record is None else Path(record) / backend
            result = await race(name, runs=runs, backend=backend, seed=seed, record=folder,
                                client=client)
            tables.append(result.rates())
    return pd.concat(tables, ignore_index=True)
