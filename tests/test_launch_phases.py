"""Where a launch's time goes (``Backend.phases``), and what keeps it short without
breaking a promise: the omnibox popup's renderer off, the stale-dir sweep and Firefox's
``--version`` run while the browser starts, ``--no-sandbox`` only as root."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
from conftest import cdpnb_dirs
from test_launch import leaked_browsers
from websockets.sync.client import connect

import cdpnb
import cdpnb.backends.firefox as firefox_mod
import cdpnb.backends.process as process_mod
from cdpnb.backends.chromium import CHROMIUM_FLAGS, sandbox_flags


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``tempfile.gettempdir()`` only this test uses: its work dirs, and its alone."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    monkeypatch.setenv("CDPNB_RAM_DIR", str(tmp))  # browsers' work dirs too
    return tmp


def targets(backend: cdpnb.Backend) -> list[dict[str, str]]:
    with connect(backend.cdp_url, open_timeout=10) as ws:
        ws.send(json.dumps({"id": 1, "method": "Target.getTargets"}))
        while True:
            reply = json.loads(ws.recv(timeout=10))
            if reply.get("id") == 1:
                infos: list[dict[str, str]] = reply["result"]["targetInfos"]
                return infos


def group_command_lines(pgid: int) -> list[str]:
    lines = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if int(stat[stat.rindex(")") + 2:].split()[2]) == pgid:
            lines.append(cmdline)
    return lines


@pytest.mark.browser
def test_a_launch_says_where_its_time_went(any_browser: cdpnb.Backend) -> None:
    phases = any_browser.phases
    assert list(phases) == ["spawned", "endpoint", "usable"]
    assert 0 < phases["spawned"] <= phases["endpoint"] <= phases["usable"]
    assert phases["usable"] == any_browser.started_in_s


@pytest.mark.browser
def test_chromium_starts_no_omnibox_popup_renderer(any_browser: cdpnb.Backend) -> None:
    """Full chromium's headless window preloads its omnibox popup (two ``browser_ui``
    targets in a ``--top-chrome-webui`` renderer) unless the WebUI features are off."""
    assert "WebUIOmniboxPopup" in CHROMIUM_FLAGS[-1] and "WebUIOmniboxAimPopup" in \
        CHROMIUM_FLAGS[-1] and CHROMIUM_FLAGS[-1].startswith("--disable-features=")
    kinds = [info["type"] for info in targets(any_browser)]
    assert "browser_ui" not in kinds
    assert "page" in kinds  # the first tab is still there: page="first" finds it
    assert not [line for line in group_command_lines(any_browser.pid)
                if "--top-chrome-webui" in line]


def test_no_sandbox_only_as_root() -> None:
    assert sandbox_flags(0) == ("--no-sandbox",)
    assert sandbox_flags(1000) == ()
    assert ("--no-sandbox" in CHROMIUM_FLAGS) == (os.geteuid() == 0)


@pytest.mark.browser
def test_stale_work_dirs_are_swept_while_the_browser_starts(
        private_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The sweep runs once the browser is started, and is done when launch returns."""
    stale = private_tmp / "cdpnb-stale-abc"
    stale.mkdir()
    (stale / process_mod.OWNER_FILE).write_text(json.dumps({
        "owner": 2**22 + 12345, "owner_start": "1", "pgid": None, "pgid_start": None,
        "pid_namespace": os.readlink("/proc/self/ns/pid")}))
    browser_running_at_sweep: list[bool] = []
    real_sweep = process_mod.sweep_stale_workdirs

    def sweep(where: str | os.PathLike[str] | None = None) -> list[Path]:
        browser_running_at_sweep.append(bool(leaked_browsers(private_tmp)))
        return real_sweep(where)

    monkeypatch.setattr(process_mod, "sweep_stale_workdirs", sweep)
    with cdpnb.launch("headless-shell") as backend:
        assert not stale.exists()
        assert browser_running_at_sweep == [True]
        assert cdpnb_dirs(private_tmp) == [backend._browser.workdir.name]
    assert cdpnb_dirs(private_tmp) == []


@pytest.mark.browser
def test_firefox_whose_version_cannot_be_read_is_ended(
        private_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--version`` runs while Firefox starts; when it fails, the Firefox already
    started is ended and its work dir removed before the error reaches the caller."""
    def no_version(binary: str, timeout: float = 10.0) -> dict[str, str]:
        raise cdpnb.BrowserStartError(f"{binary} --version failed: stand-in")

    monkeypatch.setattr(firefox_mod, "firefox_version", no_version)
    with pytest.raises(cdpnb.BrowserStartError, match="--version failed: stand-in"), \
            cdpnb.launch("firefox"):
        pass
    assert leaked_browsers(private_tmp) == []
    assert cdpnb_dirs(private_tmp) == []
