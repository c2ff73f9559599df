"""Shared fixtures: a loopback scenario server and real browsers."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shlex
import signal
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

import cdpnb
import cdpnb.backends.process as process_mod
from cdpnb.probes import ScenarioServer


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture(autouse=True)
def no_unexpected_cdpnb_log_warnings(request: pytest.FixtureRequest) -> Iterator[None]:
    """A WARNING (or worse) that cdpnb logs is something a user would see: a test that
    causes one on purpose says so (``@pytest.mark.logs_warnings``); anywhere else it
    fails the test, so expected cases (a frame gone during its set-up, a connection
    lost mid-call) stay at INFO."""
    collect = _Collect()
    logger = logging.getLogger("cdpnb")
    logger.addHandler(collect)
    try:
        yield
    finally:
        logger.removeHandler(collect)
    if collect.records and request.node.get_closest_marker("logs_warnings") is None:
        lines = "\n".join(f"{r.name} {r.levelname}: {r.getMessage()}" for r in collect.records)
        pytest.fail(f"cdpnb logged what a user would see:\n{lines}", pytrace=False)


#: Fixtures that start a browser (or node, or a mapper): a test that uses one, directly
#: or through another fixture, is a ``browser`` test.
BROWSER_FIXTURES = frozenset({"chromium", "headless_shell", "any_browser", "sup", "bridged",
                              "mapper", "firefox", "lightpanda", "probed", "local",
                              "every_path", "chromedriver_bidi", "selenium_chromium"})
#: Set by scripts/test-pythons.sh for the legs that run ``-m "not browser or smoke"`` on
#: the other Pythons. There, a test not marked ``browser`` gets a stand-in for every
#: browser and runtime binary (cdpnb's ``CDPNB_*`` overrides, inherited by the
#: subprocesses and notebook kernels a test starts): one that starts any of them fails,
#: naming itself, so the marker stays true by a check, not by care.
WITHOUT_BROWSERS = "CDPNB_TESTS_WITHOUT_BROWSERS"
_BINARIES = ("CDPNB_CHROMIUM", "CDPNB_FIREFOX", "CDPNB_LIGHTPANDA", "CDPNB_NODE", "CDPNB_DENO",
             "CDPNB_BUN", "CDPNB_WEBKITWEBDRIVER", "CDPNB_CHROMEDRIVER", "CDPNB_XVFB")


def pytest_configure(config: pytest.Config) -> None:
    """A suite started with SIGINT ignored (``nohup``, or ``pytest &`` in a script: a
    shell without job control starts background commands so) passes that on to every
    process it starts, and a child given Ctrl-C by a test then carries on (measured:
    ``cdpnb compare`` never ended, a campaign ran to its end and exited 0). The suite
    runs under Python's own handler, whose children start with the default, as
    they would from a terminal."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if BROWSER_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session", autouse=True)
def _browser_stand_in(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path | None]:
    """Without browsers: the stand-in, set for the whole session (so a module or session
    fixture that launches is caught too, in the first test that sets it up)."""
    if not os.environ.get(WITHOUT_BROWSERS):
        yield None
        return
    folder = tmp_path_factory.mktemp("no-browsers")
    log = folder / "started"
    stand_in = folder / "browser"
    stand_in.write_text(f'#!/bin/sh\necho "$0 $*" >> {shlex.quote(str(log))}\nexit 1\n')
    stand_in.chmod(0o755)
    saved = {variable: os.environ.get(variable) for variable in _BINARIES}
    os.environ.update({variable: str(stand_in) for variable in _BINARIES})
    try:
        yield log
    finally:
        for variable, value in saved.items():
            if value is None:
                os.environ.pop(variable, None)
            else:
                os.environ[variable] = value


@pytest.fixture(autouse=True)
def browsers_only_where_marked(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch,
                               _browser_stand_in: Path | None) -> Iterator[None]:
    log = _browser_stand_in
    if log is None:
        yield
        return
    if request.node.get_closest_marker("browser"):  # the smoke: the real binaries
        for variable in _BINARIES:
            monkeypatch.delenv(variable, raising=False)
        yield
        return
    before = log.stat().st_size if log.exists() else 0
    yield
    started = log.read_bytes()[before:].decode(errors="replace") if log.exists() else ""
    if started:
        pytest.fail(f"{request.node.nodeid} (or a fixture it sets up) starts a browser or "
                    "runtime but is not marked browser: mark it @pytest.mark.browser (or "
                    "list its fixture in BROWSER_FIXTURES) so the legs without browsers "
                    f"leave it out; it ran: {started[:300]}", pytrace=False)


@pytest.fixture(scope="session")
def site() -> Iterator[ScenarioServer]:
    with ScenarioServer() as server:
        yield server


#: The paths of the dialog contract: native CDP (two builds) and WebDriver BiDi (two).
PATHS = ("chromium", "headless-shell", "firefox", "chromium+bidi")


@pytest.fixture(scope="module", params=PATHS)
def every_path(request: pytest.FixtureRequest) -> Iterator[cdpnb.Backend]:
    """A browser of each path, once per module (pytest groups the tests by it)."""
    with cdpnb.launch(request.param) as backend:
        yield backend


@pytest.fixture(scope="session")
def chromium() -> Iterator[cdpnb.Backend]:
    with cdpnb.launch("chromium") as backend:
        yield backend


@pytest.fixture(scope="session")
def headless_shell() -> Iterator[cdpnb.Backend]:
    with cdpnb.launch("headless-shell") as backend:
        yield backend


@pytest.fixture(scope="session", params=["chromium", "headless-shell"])
def any_browser(request: pytest.FixtureRequest) -> cdpnb.Backend:
    """Both Debian Chromium builds, one after the other."""
    backend: cdpnb.Backend = request.getfixturevalue(request.param.replace("-", "_"))
    return backend


@pytest.fixture
async def sup(chromium: cdpnb.Backend) -> AsyncIterator[cdpnb.Supervisor]:
    supervisor = await cdpnb.Supervisor.start(chromium.cdp_url, dialog_timeout_s=30)
    yield supervisor
    await supervisor.stop()


async def settle(supervisor: cdpnb.Supervisor, predicate: Any, timeout: float = 20.0) -> None:
    """Wait until ``predicate(supervisor.state)`` holds (state arrives by events)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate(supervisor.state):
        if loop.time() > deadline:
            raise AssertionError(f"state did not settle within {timeout} s: "
                                 f"{supervisor.snapshot().to_dict()}")
        await asyncio.sleep(0.01)


def hint_saying(supervisor: cdpnb.Supervisor, words: str) -> str:
    """The supervisor's hint that says ``words``."""
    return next(h for h in supervisor.hints if words in h)


async def until_hinted(supervisor: cdpnb.Supervisor, words: str, timeout: float = 10.0) -> None:
    """Wait until the supervisor has given a hint that says ``words`` (hints come as
    what they tell of is handled, off the caller's loop: a recovery, a disconnect)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not any(words in h for h in supervisor.hints):
        if loop.time() > deadline:
            raise AssertionError(f"no hint with {words!r} within {timeout} s: "
                                 f"{supervisor.hints}")
        await asyncio.sleep(0.01)


async def open_two_site(supervisor: cdpnb.Supervisor, site: ScenarioServer) -> dict[str, str]:
    """Navigate to the two-site page; return the frame ids of main, srcdoc and oopif."""
    await supervisor.navigate(site.url("/two-site"))
    await settle(supervisor, lambda s: any(f.is_oopif and f.url.endswith("/child")
                                           for f in s.frames.values()))
    tree = supervisor.frame_tree()
    assert tree.top is not None
    oopif = next(c for c in tree.children if c.is_oopif)
    srcdoc = next(c for c in tree.children if c.url == "about:srcdoc")
    return {"main": tree.top.frame_id, "srcdoc": srcdoc.frame_id, "oopif": oopif.frame_id}


def js(value: Any) -> str:
    return json.dumps(value)


def page_targets(backend: cdpnb.Backend) -> list[str]:
    with urllib.request.urlopen(backend.http_url + "/json/list", timeout=5) as reply:
        return [t["id"] for t in json.loads(reply.read()) if t.get("type") == "page"]


def wait_target_closed(backend: cdpnb.Backend, target: str | None,
                       timeout: float = 15.0) -> bool:
    """Target.closeTarget answers before the browser has destroyed the target."""
    deadline = time.monotonic() + timeout
    while target in page_targets(backend):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def reports(site: ScenarioServer) -> dict[str, Any]:
    """What page JS reported to the scenario server's ``/report``, by frame name: the
    value its dialog call returned."""
    out: dict[str, Any] = {}
    for _, path in list(site.requests):
        parts = urllib.parse.urlsplit(path)
        if parts.path == "/report":
            query = urllib.parse.parse_qs(parts.query)
            out[query["frame"][0]] = json.loads(query["value"][0])
    return out


async def wait_report(site: ScenarioServer, name: str, timeout: float = 20.0) -> Any:
    """The value frame ``name`` reports, once it has (fails after ``timeout``)."""
    deadline = time.monotonic() + timeout
    while name not in reports(site):
        assert time.monotonic() < deadline, f"{name} reported nothing: {reports(site)}"
        await asyncio.sleep(0.02)
    return reports(site)[name]


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A ``tempfile.gettempdir()`` of this test's own, so its ``cdpnb-*`` dirs can be
    counted; whatever a failed test left running there is ended by its pid."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    monkeypatch.setenv("CDPNB_RAM_DIR", str(tmp))  # browsers' work dirs too
    yield tmp
    for started in list(process_mod._live.values()):
        if tmp in started.workdir.parents:
            started.close()


def private_dirs(tmp: Path) -> dict[str, str]:
    """The environment of a child whose work dirs (browsers' too) go in ``tmp``."""
    return {**os.environ, "TMPDIR": str(tmp), "CDPNB_RAM_DIR": str(tmp)}


def cdpnb_dirs(where: Path) -> list[str]:
    """The ``cdpnb-*`` working dirs (profiles, logs) left in ``where``."""
    return sorted(p.name for p in where.iterdir() if p.name.startswith("cdpnb-"))
