"""``cdpnb.launch``: real Chromium and chromium-headless-shell, started and ended cleanly."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

import cdpnb
import cdpnb.backends.chromium as chromium_mod
import cdpnb.backends.process as process_mod

REAL = {
    "chromium": "/usr/lib/chromium/chromium",
    "headless-shell": "/usr/lib/chromium/chromium-headless-shell",
}
#: What /proc/PID/exe names for each: the paths above through any symlink a package
#: update may put there (chromium-driver 156.0.8078.114 did so with its binary).
EXE = {kind: os.path.realpath(path) for kind, path in REAL.items()}
VERSION = {
    "chromium": re.compile(r"^Chrome/\d+\.\d+\.\d+\.\d+$"),
    "headless-shell": re.compile(r"^HeadlessChrome/\d+\.\d+\.\d+\.\d+$"),
}
LISTEN = "0A"


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Make ``tempfile.gettempdir()`` a directory only this test uses, so leftovers of
    this test's launches can be told apart from other processes' ``cdpnb-*`` dirs."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    monkeypatch.setenv("CDPNB_RAM_DIR", str(tmp))  # browsers' work dirs too
    assert tempfile.gettempdir() == str(tmp)
    return tmp


def cdpnb_dirs(where: Path) -> list[str]:
    return sorted(p.name for p in where.iterdir() if p.name.startswith("cdpnb-"))


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists()


def session_members(sid: int) -> list[int]:
    """Live pids whose session id is ``sid`` (the browser runs in a session of its own).
    Zombies do not count: exited children reparented to pid 1 wait there to be reaped."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid pgrp session ...; comm may hold spaces and parens
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[3]) == sid and fields[0] != "Z":
            members.append(int(entry.name))
    return members


def wait_until_gone(pid: int, timeout: float = 15.0) -> list[int]:
    """Wait for the browser's pid and every process of its session to be gone;
    return whatever is still there at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        left = session_members(pid)
        if pid_alive(pid) and pid not in left:
            left.append(pid)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.02)


def listeners(port: int) -> list[tuple[str, str]]:
    """(table, local address in hex) of every LISTEN socket on ``port``."""
    found = []
    for table in ("tcp", "tcp6"):
        try:
            lines = Path(f"/proc/net/{table}").read_text().splitlines()[1:]
        except FileNotFoundError:
            continue
        for line in lines:
            fields = line.split()
            address, port_hex = fields[1].split(":")
            if int(port_hex, 16) == port and fields[3] == LISTEN:
                found.append((table, address))
    return found


def check_running(backend: cdpnb.Backend, kind: str) -> None:
    url = backend.cdp_url
    assert url.startswith("ws://127.0.0.1:")
    assert "/devtools/browser/" in url
    port = int(url.removeprefix("ws://127.0.0.1:").split("/", 1)[0])
    assert backend.http_url == f"http://127.0.0.1:{port}"
    assert backend._browser.port == port
    assert VERSION[kind].match(backend.version), backend.version
    assert backend.kind == kind
    assert backend.running
    # /json/version answers on http_url and names the same browser endpoint
    with urllib.request.urlopen(backend.http_url + "/json/version", timeout=5) as reply:
        info = reply.read().decode()
    assert backend.version in info
    assert url.split("/devtools/browser/")[1] in info

    pid = backend.pid
    assert pid_alive(pid)
    # the pid is the browser itself, not a wrapper script that forks it
    assert os.readlink(f"/proc/{pid}/exe") == EXE[kind]
    assert backend.executable == REAL[kind]

    # DevTools listens on loopback IPv4 only: never 0.0.0.0, never ::
    found = listeners(port)
    assert found, f"nothing listens on port {port}"
    assert found == [("tcp", "0100007F")], found

    workdir = backend._browser.workdir
    profile = backend._browser.user_data_dir
    assert workdir.is_dir()
    assert profile == workdir / "profile"
    assert profile.is_dir()
    assert f"--user-data-dir={profile}" in backend.args
    assert (profile / "DevToolsActivePort").read_text().splitlines()[0] == str(port)


def check_ended(pid: int, workdir: Path) -> None:
    assert wait_until_gone(pid) == []
    assert not pid_alive(pid)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert not workdir.exists()


@pytest.mark.browser
@pytest.mark.parametrize("kind", ["chromium", "headless-shell"])
async def test_async_with_launch(kind: str) -> None:
    async with cdpnb.launch(kind) as backend:
        check_running(backend, kind)
        pid, workdir = backend.pid, backend._browser.workdir
    assert not backend.running
    check_ended(pid, workdir)


@pytest.mark.browser
@pytest.mark.parametrize("kind", ["chromium", "headless-shell"])
def test_plain_with_launch(kind: str) -> None:
    with cdpnb.launch(kind) as backend:
        check_running(backend, kind)
        pid, workdir = backend.pid, backend._browser.workdir
    assert not backend.running
    check_ended(pid, workdir)


@pytest.mark.browser
async def test_async_with_cleans_up_when_the_block_raises() -> None:
    seen: dict[str, object] = {}
    with pytest.raises(ZeroDivisionError):
        async with cdpnb.launch("headless-shell") as backend:
            seen.update(pid=backend.pid, workdir=backend._browser.workdir)
            assert pid_alive(backend.pid)
            1 / 0  # noqa: B018
    pid, workdir = seen["pid"], seen["workdir"]
    assert isinstance(pid, int) and isinstance(workdir, Path)
    check_ended(pid, workdir)


@pytest.mark.browser
def test_plain_with_cleans_up_when_the_block_raises() -> None:
    seen: dict[str, object] = {}
    with pytest.raises(KeyError), cdpnb.launch("chromium") as backend:
        seen.update(pid=backend.pid, workdir=backend._browser.workdir)
        assert pid_alive(backend.pid)
        raise KeyError("boom")
    pid, workdir = seen["pid"], seen["workdir"]
    assert isinstance(pid, int) and isinstance(workdir, Path)
    check_ended(pid, workdir)


@pytest.mark.browser
async def test_each_launch_gets_a_fresh_user_data_dir() -> None:
    async with cdpnb.launch("headless-shell") as one, cdpnb.launch("headless-shell") as two:
        p1, p2 = one._browser.user_data_dir, two._browser.user_data_dir
        assert p1 != p2
        assert one._browser.workdir != two._browser.workdir
        assert one.pid != two.pid
        assert one.cdp_url != two.cdp_url
        assert one.http_url != two.http_url
        # the second profile did not inherit anything from the first
        marker = p1 / "cdpnb-test-marker"
        marker.write_text("x")
        assert not (p2 / "cdpnb-test-marker").exists()
        dirs = (one._browser.workdir, two._browser.workdir)
    assert not any(d.exists() for d in dirs)


def test_executable_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CDPNB_CHROMIUM", raising=False)
    real = REAL["headless-shell"]
    # kind "chromium", but the binary given explicitly is headless-shell: the override wins
    with cdpnb.launch("chromium", executable=real) as backend:
        assert backend.executable == real
        assert backend.args[0] == real
        assert os.readlink(f"/proc/{backend.pid}/exe") == EXE["headless-shell"]
        assert backend.version.startswith("HeadlessChrome/")
        pid, workdir = backend.pid, backend._browser.workdir
    check_ended(pid, workdir)


async def test_cdpnb_chromium_env_override(monkeypatch: pytest.MonkeyPatch) -> None:
    real = REAL["headless-shell"]
    monkeypatch.setenv("CDPNB_CHROMIUM", real)
    async with cdpnb.launch("chromium") as backend:
        assert backend.executable == real
        assert os.readlink(f"/proc/{backend.pid}/exe") == EXE["headless-shell"]
        assert backend.version.startswith("HeadlessChrome/")
        pid, workdir = backend.pid, backend._browser.workdir
    check_ended(pid, workdir)


async def test_missing_executable_names_the_argument(
    monkeypatch: pytest.MonkeyPatch, private_tmp: Path
) -> None:
    monkeypatch.delenv("CDPNB_CHROMIUM", raising=False)
    with pytest.raises(cdpnb.BrowserNotFound, match=r"executable=.*/nonexistent/chrome"), \
            cdpnb.launch("chromium", executable="/nonexistent/chrome"):
        pass
    with pytest.raises(cdpnb.BrowserNotFound, match=r"executable=.*/nonexistent/chrome"):
        async with cdpnb.launch("headless-shell", executable="/nonexistent/chrome"):
            pass
    assert cdpnb_dirs(private_tmp) == []


async def test_missing_env_binary_names_the_variable(
    monkeypatch: pytest.MonkeyPatch, private_tmp: Path
) -> None:
    monkeypatch.setenv("CDPNB_CHROMIUM", "/nonexistent/from-env/chrome")
    with pytest.raises(cdpnb.BrowserNotFound, match=r"\$CDPNB_CHROMIUM") as info:
        async with cdpnb.launch("chromium"):
            pass
    assert "/nonexistent/from-env/chrome" in str(info.value)
    with pytest.raises(cdpnb.BrowserNotFound, match=r"\$CDPNB_CHROMIUM"), \
            cdpnb.launch("headless-shell"):
        pass
    assert cdpnb_dirs(private_tmp) == []


@pytest.mark.parametrize(("kind", "package"), [("chromium", "chromium"),
                                               ("headless-shell", "chromium-headless-shell")])
async def test_no_browser_anywhere_names_the_debian_package(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, kind: str, package: str
) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv("CDPNB_CHROMIUM", raising=False)
    missing = {
        name: chromium_mod._Kind((f"/nonexistent/{name}/browser", f"no-such-{name}-binary"),
                                 spec.package)
        for name, spec in chromium_mod.KINDS.items()
    }
    monkeypatch.setattr(chromium_mod, "KINDS", missing)
    expected = f"apt-get install {package}`"
    with pytest.raises(cdpnb.BrowserNotFound) as info:
        async with cdpnb.launch(kind):
            pass
    assert expected in str(info.value)
    with pytest.raises(cdpnb.BrowserNotFound) as info, cdpnb.launch(kind):
        pass
    assert expected in str(info.value)
    assert f"/nonexistent/{kind}/browser" in str(info.value)
    # it is still a FileNotFoundError for callers who catch the builtin family
    assert isinstance(info.value, FileNotFoundError)


def test_unknown_kind_is_a_value_error_naming_it() -> None:
    with pytest.raises(ValueError, match=r"'firefox-nightly'"):
        cdpnb.launch("firefox-nightly")
    with pytest.raises(ValueError, match=r"'Chromium'"):
        cdpnb.launch("Chromium")


async def test_binary_that_exits_at_once_is_a_start_error(private_tmp: Path) -> None:
    began = time.monotonic()
    with pytest.raises(cdpnb.BrowserStartError, match=r"/bin/false.*exited with code 1"):
        async with cdpnb.launch("chromium", executable="/bin/false"):
            pass
    assert time.monotonic() - began < 3.0
    assert cdpnb_dirs(private_tmp) == []

    began = time.monotonic()
    with pytest.raises(cdpnb.BrowserStartError), \
            cdpnb.launch("headless-shell", executable="/bin/false"):
        pass
    assert time.monotonic() - began < 3.0
    assert cdpnb_dirs(private_tmp) == []


@pytest.mark.browser
async def test_cancelled_async_launch_leaves_no_browser_behind(private_tmp: Path) -> None:
    """A notebook user interrupts the cell, or a wait_for times out, while the browser
    is still starting: the browser must still be ended and its temp dir removed."""
    launcher = cdpnb.launch("chromium")
    try:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(launcher.__aenter__(), 0.01)
        assert launcher.backend is None
        # give the start a moment to have finished in its worker thread
        deadline = time.monotonic() + 3.0
        leaked = leaked_browsers(private_tmp)
        while (leaked or cdpnb_dirs(private_tmp)) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
            leaked = leaked_browsers(private_tmp)
        assert leaked == [], "the cancelled launch left its browser running"
        assert cdpnb_dirs(private_tmp) == []
    finally:
        for browser in list(chromium_mod._live.values()):
            if private_tmp in browser.workdir.parents:
                browser.close()


def leaked_browsers(where: Path) -> list[int]:
    """Live (non-zombie) pids whose command line names a directory under ``where``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if str(where) in cmdline:
            found.append(int(entry.name))
    return found


# -- a start that stays silent is started once more ----------------------------------------


def _stand_in(folder: Path, real: str, first: str, then: str) -> Path:
    """A program that answers ``--version`` as ``real`` does and runs ``first`` on its
    first start, ``then`` on every later one (``$REAL`` is the real binary)."""
    mark = folder / "started-once"
    script = folder / "stand-in"
    script.write_text(
        "#!/bin/sh\n"
        f"REAL={real}\n"
        'case "$1" in --version) exec "$REAL" "$@";; esac\n'
        f'if [ ! -e {mark} ]; then : > {mark}; {first}; fi\n'
        f"{then}\n")
    script.chmod(0o700)
    return script


@pytest.mark.browser
@pytest.mark.logs_warnings
def test_a_firefox_start_that_stays_silent_is_started_once_more(
        private_tmp: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Once in a few hundred starts (a CI run's README block) Firefox printed no BiDi
    line within 20 s: a stand-in stays silent on its first start and is the real
    Firefox after; the start succeeds within its timeout and the silent one is gone."""
    from cdpnb.backends.firefox import FirefoxProcess, find_firefox
    silent_pid = tmp_path / "silent.pid"
    stand_in = _stand_in(tmp_path, find_firefox(),
                         f'echo $$ > {silent_pid}; echo "warming up"; exec sleep 60',
                         'exec "$REAL" "$@"')
    began = time.monotonic()
    with caplog.at_level("WARNING", logger="cdpnb.backends"):
        process = FirefoxProcess.start(stand_in, timeout=8.0)
    try:
        assert process.running and time.monotonic() - began < 8.0
        said = [r.getMessage() for r in caplog.records if "still silent" in r.getMessage()]
        assert len(said) == 1 and "warming up" in said[0], said
        assert len(cdpnb_dirs(private_tmp)) == 1  # the silent start's work dir is gone
        assert not pid_alive(int(silent_pid.read_text()))  # and so is its process
    finally:
        process.close()
    assert cdpnb_dirs(private_tmp) == []


@pytest.mark.logs_warnings
def test_a_start_silent_twice_is_one_error_saying_both(private_tmp: Path,
                                                         tmp_path: Path) -> None:
    from cdpnb.backends.firefox import FirefoxProcess
    pids = tmp_path / "silent.pids"
    stand_in = _stand_in(tmp_path, "/bin/true", f'echo $$ >> {pids}; echo "first try"; '
                         "exec sleep 60", f'echo $$ >> {pids}; echo "second try"; exec sleep 60')
    began = time.monotonic()
    with pytest.raises(cdpnb.BrowserStartError) as raised:
        FirefoxProcess.start(stand_in, timeout=2.0)
    said = str(raised.value)
    assert "started twice" in said and "first try" in said and "second try" in said, said
    # Each stalled start says what its threads were doing (`exec sleep 60`: one, asleep).
    assert said.count("its 1 thread: 1 sleeping; its output so far") == 2, said
    assert time.monotonic() - began < 4.0  # within the timeout, and the 1 s floor
    assert cdpnb_dirs(private_tmp) == []
    started = [int(pid) for pid in pids.read_text().split()]
    assert len(started) == 2 and not any(pid_alive(pid) for pid in started)


# -- browsers' profiles in RAM -------------------------------------------------------------


def _files_under(where: Path) -> int:
    return sum(len(files) for _, _, files in os.walk(where))


@pytest.mark.browser
@pytest.mark.parametrize("kind", ["firefox", "chromium", "chromium+chromedriver",
                                  "chromium+bidi"])
async def test_a_browsers_profile_is_written_in_ram_and_removed_on_close(
        kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where /dev/shm has room (this machine: 24 GiB), a browser's work dir is there:
    private to its owner, the profile the browser writes is in it (for chromedriver and
    the mapper, the profile of the session cdpnb made), and it goes at close."""
    monkeypatch.delenv(process_mod.RAM_DIR_ENV, raising=False)
    shm = os.statvfs("/dev/shm")
    roomy = shm.f_bavail * shm.f_frsize >= 1 << 30  # (a container's 64 MiB one is not)
    assert process_mod.scratch_root() == ("/dev/shm" if roomy else tempfile.gettempdir())
    async with cdpnb.launch(kind) as backend:
        workdir = backend._browser.workdir
        assert workdir.parent == Path(process_mod.scratch_root())
        assert workdir.stat().st_mode & 0o777 == 0o700
        async with await cdpnb.Supervisor.start(backend) as sup:
            assert await sup.evaluate("6 * 7") == 42
            written = _files_under(workdir)
        # A profile is many files (Chromium 156: about 60; Firefox ESR: about 40).
        assert written > 10, sorted(os.listdir(workdir))
    assert not workdir.exists()


def test_the_ram_dir_is_left_for_the_temp_dir_when_it_cannot_be_used(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    temp = tempfile.gettempdir()
    monkeypatch.delenv(process_mod.RAM_DIR_ENV, raising=False)
    assert process_mod.scratch_root(on_ram=False) == temp  # node, deno, bun, lightpanda
    monkeypatch.setattr(process_mod, "RAM_SCRATCH", str(tmp_path / "absent"))
    assert process_mod.scratch_root() == temp
    monkeypatch.setattr(process_mod, "RAM_SCRATCH", None)
    assert process_mod.scratch_root() == temp
    monkeypatch.setattr(process_mod, "RAM_SCRATCH", str(tmp_path))
    assert process_mod.scratch_root() == str(tmp_path)
    monkeypatch.setattr(process_mod, "_RAM_NEEDED", 1 << 60)  # a container's 64 MiB /dev/shm
    assert process_mod.scratch_root() == temp


def test_cdpnb_ram_dir_names_the_place_or_keeps_profiles_on_disk(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(process_mod.RAM_DIR_ENV, str(tmp_path))
    assert process_mod.scratch_root() == str(tmp_path)
    made = process_mod.new_workdir("chromium+selenium", on_ram=True)
    assert made.parent == tmp_path and (made / process_mod.OWNER_FILE).is_file()
    monkeypatch.setenv(process_mod.RAM_DIR_ENV, "")
    assert process_mod.scratch_root() == tempfile.gettempdir()
    monkeypatch.setenv(process_mod.RAM_DIR_ENV, str(tmp_path / "nowhere"))
    with pytest.raises(cdpnb.BrowserStartError, match=r"CDPNB_RAM_DIR names .*nowhere"):
        process_mod.scratch_root()


_DEAD_OWNER = {"owner": 2**22 + 12345, "owner_start": "1", "pgid": None, "pgid_start": None}


def _stale(place: Path, name: str = "cdpnb-chromium-stale") -> Path:
    left = place / name
    left.mkdir()
    (left / process_mod.OWNER_FILE).write_text(json.dumps(
        {**_DEAD_OWNER, "pid_namespace": os.readlink("/proc/self/ns/pid")}))
    return left


def test_the_sweep_clears_stale_work_dirs_in_every_place_one_may_be(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The temp dir, the RAM dir and $CDPNB_RAM_DIR, whether a launch would put a work
    dir there today or not: a RAM dir that has since filled up still holds them."""
    disk, ram, chosen = tmp_path / "disk", tmp_path / "ram", tmp_path / "chosen"
    for place in (disk, ram, chosen):
        place.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(disk))
    monkeypatch.setattr(process_mod, "RAM_SCRATCH", str(ram))
    monkeypatch.setattr(process_mod, "_RAM_NEEDED", 1 << 60)  # no room there now
    monkeypatch.setenv(process_mod.RAM_DIR_ENV, str(chosen))
    stale = [_stale(place) for place in (disk, ram, chosen)]
    assert sorted(process_mod.sweep_stale_workdirs()) == sorted(stale)
    assert not any(left.exists() for left in stale)


def test_the_sweep_never_judges_another_users_dir_or_a_link(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """/dev/shm and /tmp are everyone's: an owner file another user planted there (a
    dead owner, a process group of ours) must not make the sweep end our processes, and
    a link must not make it remove what it points to."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(process_mod, "RAM_SCRATCH", None)
    monkeypatch.delenv(process_mod.RAM_DIR_ENV, raising=False)
    theirs = _stale(tmp_path, "cdpnb-chromium-theirs")
    os.chown(theirs, 12345, 12345)  # (the suite runs as root)
    target = _stale(tmp_path, "elsewhere")
    (tmp_path / "cdpnb-chromium-link").symlink_to(target)
    assert process_mod.sweep_stale_workdirs() == []
    assert theirs.is_dir() and target.is_dir()


def test_threads_at_work_says_what_a_process_is_doing() -> None:
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        deadline = time.monotonic() + 5
        while (said := process_mod.threads_at_work(sleeper.pid)) != "1 thread: 1 sleeping":
            assert time.monotonic() < deadline, said
            time.sleep(0.01)
    finally:
        sleeper.kill()
        sleeper.wait()
    assert process_mod.threads_at_work(sleeper.pid) == ""  # gone: /proc cannot tell
