"""The load harness (``python -m cdpnb.testing.busy``): spinners that load the CPU, ended by
their pids, gone with their owner; the command's exit status passed through."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from cdpnb.testing.busy import busy_processes, main


def _gone(pids: list[int], within_s: float = 10.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if not any(psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE
                   for p in pids):
            return True
        time.sleep(0.05)
    return False


def test_spinners_use_the_cpu_and_end_with_the_block() -> None:
    with busy_processes(2) as pids:
        assert len(pids) == 2
        spinners = [psutil.Process(p) for p in pids]
        # Each spins: it keeps taking CPU time (how much a second depends on what else
        # runs here, so only that it takes some is asserted).
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not all(
                sum(s.cpu_times()[:2]) > 0.2 for s in spinners):
            time.sleep(0.05)
        assert all(sum(s.cpu_times()[:2]) > 0.2 for s in spinners)
        assert all(s.status() in (psutil.STATUS_RUNNING, psutil.STATUS_SLEEPING)
                   for s in spinners)
    assert _gone(pids)


def test_none_is_a_quiet_round_and_bad_counts_are_refused() -> None:
    with busy_processes(0) as pids:
        assert pids == []
    for bad in (-1, 1.5, True, "2"):
        with (pytest.raises(ValueError, match="count must be an int >= 0"),
              busy_processes(bad)):  # type: ignore[arg-type]
            pass


def test_the_command_runs_beside_them_and_its_status_is_the_harness_s() -> None:
    assert main(["-n", "1", "--", sys.executable, "-c", "raise SystemExit(3)"]) == 3
    assert main(["-n", "0", "--", sys.executable, "-c", "pass"]) == 0


def test_no_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["-n", "1"])
    assert exited.value.code == 2
    assert "no command given" in capsys.readouterr().err


def test_spinners_leave_when_their_owner_is_killed() -> None:
    owner = subprocess.Popen(
        [sys.executable, "-m", "cdpnb.testing.busy", "-n", "2", "--", sys.executable, "-c",
         "import time; time.sleep(60)"], stderr=subprocess.PIPE, text=True)
    command: list[psutil.Process] = []
    try:
        deadline = time.monotonic() + 30
        spinners: list[int] = []
        while time.monotonic() < deadline and len(spinners) < 2:
            spinners = [c.pid for c in psutil.Process(owner.pid).children()
                        if "-c" in c.cmdline() and "getppid" in " ".join(c.cmdline())]
            time.sleep(0.05)
        assert len(spinners) == 2
        command = [c for c in psutil.Process(owner.pid).children() if c.pid not in spinners]
        os.kill(owner.pid, signal.SIGKILL)  # no clean-up runs in the owner
        owner.wait()
        assert _gone(spinners), "a spinner outlived its killed owner"
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()
        for child in command:  # the command itself is the test's to end, by its pid
            with contextlib.suppress(psutil.NoSuchProcess):
                child.kill()
