"""Browsers die with the Python that launched them, and leave nothing behind.

A Python killed with SIGKILL runs no atexit handler; before the reaper, Chromium, its
helpers and the profile stayed behind (all 9 chromium and 7 headless-shell processes
still alive 3 s later, measured). Processes are ended only by their own pid here.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

import cdpnb
from cdpnb.backends import process as process_mod
from cdpnb.backends import reaper

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import asyncio, json, sys, time
import psutil, cdpnb

async def main() -> None:
    started = []
    for kind in sys.argv[1:]:
        # async with's entry: the browser starts in a worker thread that then ends (so a
        # PR_SET_PDEATHSIG tied to that thread would be no guard at all).
        started.append(await cdpnb.launch(kind).__aenter__())
    await asyncio.sleep(0.5)  # let the first renderers come up: their pids count too
    info = []
    for backend in started:
        browser = backend._browser
        tree = psutil.Process(backend.pid).children(recursive=True)
        singleton = browser.workdir / "profile" / "SingletonSocket"
        info.append({"kind": backend.kind, "pids": [backend.pid, *(p.pid for p in tree)],
                     "workdir": str(browser.workdir), "reaper": browser.reaper.pid,
                     "singleton": str(singleton.readlink().parent)
                                  if singleton.is_symlink() else None})
    print(json.dumps(info), flush=True)
    time.sleep(600)

asyncio.run(main())
"""


def _alive(pid: int) -> bool:
    """Running, and not a zombie waiting for whoever inherited it to reap it."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _launch_in_a_child(kinds: list[str], tmp: Path | None = None) -> tuple[
        subprocess.Popen[str], list[dict[str, Any]]]:
    env = dict(os.environ)
    if tmp is not None:
        env["TMPDIR"] = env["CDPNB_RAM_DIR"] = str(tmp)
    child = subprocess.Popen([sys.executable, "-c", CHILD, *kinds], cwd=ROOT, env=env,
                             stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    line = child.stdout.readline()
    assert line, f"the child printed nothing (exit code {child.poll()})"
    return child, json.loads(line)


@pytest.fixture
def leftovers() -> Iterator[list[int]]:
    """Pids a failed test must not leave running: ended by their own pid afterwards."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


def _wait(predicate: Any, timeout: float) -> float:
    began = time.monotonic()
    while not predicate():
        if time.monotonic() - began > timeout:
            break
        time.sleep(0.05)
    return time.monotonic() - began


def test_browsers_die_with_the_python_that_launched_them(leftovers: list[int]) -> None:
    child, info = _launch_in_a_child(["chromium", "headless-shell"])
    for browser in info:
        leftovers += [*browser["pids"], browser["reaper"]]
    pids = [pid for browser in info for pid in browser["pids"]]
    workdirs = [Path(browser["workdir"]) for browser in info]
    singletons = [Path(b["singleton"]) for b in info if b["singleton"]]
    assert len(pids) >= 10 and all(_alive(pid) for pid in pids)
    assert all(d.is_dir() for d in workdirs)
    assert [b["kind"] for b in info if b["singleton"]] == ["chromium"]
    assert all(s.is_dir() for s in singletons)  # /tmp/org.chromium.Chromium.XXXXXX

    os.kill(child.pid, signal.SIGKILL)
    child.wait()

    def all_gone() -> bool:
        return not any(_alive(pid) for pid in pids) and not any(d.exists() for d in workdirs)

    took = _wait(all_gone, timeout=5.0)
    assert [pid for pid in pids if _alive(pid)] == []
    assert [d for d in workdirs if d.exists()] == []
    assert [s for s in singletons if s.exists()] == []
    assert took < 5.0
    _wait(lambda: not any(_alive(b["reaper"]) for b in info), timeout=2.0)
    assert [b["reaper"] for b in info if _alive(b["reaper"])] == []  # the reapers are done too


def test_a_closed_browser_dismisses_its_reaper_and_leaves_no_singleton_dir() -> None:
    with cdpnb.launch("chromium") as backend:
        browser = backend._browser
        assert browser.reaper is not None
        guard = browser.reaper.pid
        assert _alive(guard)
        singleton = (browser.workdir / "profile" / "SingletonSocket").readlink().parent
        assert singleton.is_dir()
    assert not _alive(guard)
    assert not singleton.exists()  # Chromium itself leaves it behind, even on SIGTERM
    assert not browser.workdir.exists()


@pytest.mark.logs_warnings
def test_a_browser_that_outlives_its_close_keeps_its_reaper(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """``close()`` dismisses the reaper only once nothing of the program is left: a
    browser once outlived a loaded suite run with its reaper dismissed, so nothing
    watched it. Here a helper of the group is said to survive (a stand-in pid): the
    reaper stays, a warning names it, and the reaper still ends the group if the
    owner dies (a later close that finds nothing left dismisses it)."""
    real_members = reaper.members
    with cdpnb.launch("chromium") as backend:
        browser = backend._browser
        assert browser.reaper is not None
        guard = browser.reaper
        monkeypatch.setattr(reaper, "members",
                            lambda pgid: [*real_members(pgid), 999_999_999])
        with caplog.at_level("WARNING", logger="cdpnb.backends"):
            browser.close()
        assert "left 999999999 running after being ended; its reaper stays" in caplog.text
        assert _alive(guard.pid) and not _alive(browser.pid)
        monkeypatch.setattr(reaper, "members", real_members)
    # closed again on the way out, with nothing left now: the reaper is dismissed
    assert not _alive(guard.pid)


def test_what_a_killed_reaper_left_is_swept_by_the_next_launch(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, leftovers: list[int]) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    child, info = _launch_in_a_child(["headless-shell"], tmp)
    (browser,) = info
    leftovers += [*browser["pids"], browser["reaper"]]
    # The reaper killed too (an OOM killer, a `kill -9` of the session): the browser
    # and its work dir outlive both.
    os.kill(browser["reaper"], signal.SIGKILL)
    _wait(lambda: not _alive(browser["reaper"]), timeout=2.0)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    time.sleep(0.5)
    assert _alive(browser["pids"][0]) and Path(browser["workdir"]).is_dir()

    # Directories the sweep must leave alone: no owner file (not cdpnb's, or being
    # made right now), and one whose owner is alive (this very process).
    foreign = tmp / "cdpnb-foreign-abc"
    foreign.mkdir()
    mine = tmp / "cdpnb-mine-abc"
    mine.mkdir()
    process_mod._write_owner(mine, None)

    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    monkeypatch.setenv("CDPNB_RAM_DIR", str(tmp))  # browsers' work dirs too
    with cdpnb.launch("headless-shell") as backend:  # its start sweeps stale work dirs
        assert backend.running
        assert [pid for pid in browser["pids"] if _alive(pid)] == []
        assert not Path(browser["workdir"]).exists()
        assert foreign.is_dir() and mine.is_dir()
        assert backend._browser.workdir.is_dir()


def test_the_sweep_never_signals_a_group_that_is_not_the_recorded_one(tmp_path: Path) -> None:
    # An owner file whose group leader's start time differs from the live process with
    # that pid (the pid was reused): the directory goes, the process is left alone.
    stranger = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        stale = tmp_path / "cdpnb-stale-abc"
        stale.mkdir()
        (stale / process_mod.OWNER_FILE).write_text(json.dumps({
            "owner": 2**22 + 12345, "owner_start": "1", "pgid": stranger.pid,
            "pgid_start": "1", "pid_namespace": os.readlink("/proc/self/ns/pid")}))
        assert reaper.start_time(stranger.pid) != "1"
        assert process_mod.sweep_stale_workdirs(tmp_path) == [stale]
        assert not stale.exists()
        assert stranger.poll() is None
    finally:
        stranger.kill()
        stranger.wait()
