"""Ends a launched program (its whole process group) and removes its work directory
once the Python that launched it is gone, however it went, SIGKILL included.

cdpnb starts one reaper per launched program, as ``python -I -S reaper.py OWNER PGID
PGID_START WORKDIR`` with a pipe on stdin whose other end only the owner holds. The
reaper waits for the pipe to close (the kernel closes it when the owner dies) or for
its parent to change; then it kills the process group and removes the directory. An
owner that ends the program itself writes ``q`` first, and the reaper just exits.

Why not ``prctl(PR_SET_PDEATHSIG)`` on the browser: the signal fires when the *thread*
that forked the child exits, and cdpnb launches from short-lived worker threads (so
that a notebook's event loop never blocks), which would kill the browser at once.

Standalone on purpose: stdlib only, run in isolated mode, so it starts in ~20 ms
and needs nothing from the environment it watches over. Linux (/proc) is where it
can check a group leader's start time before killing: a process group id is only
reused once every member of the old group is gone, and then the leader's start time
differs, so the reaper never signals a stranger.
"""

from __future__ import annotations

import contextlib
import glob
import os
import select
import shutil
import signal
import sys
import time

__all__ = ["end_group", "main", "members", "remove_workdir", "start_time"]


def start_time(pid: int) -> str | None:
    """When ``pid`` started (clock ticks since boot, from /proc); None if it is gone or
    this system has no /proc."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            text = stat.read()
    except OSError:
        return None
    # pid (comm) state ppid ... : comm may hold spaces and parens; field 22 is starttime.
    return text[text.rindex(b")") + 2:].split()[19].decode()


def members(pgid: int) -> list[int]:
    """Live, non-zombie processes in process group ``pgid``."""
    found: list[int] = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != b"Z" and int(fields[2]) == pgid:
            found.append(int(entry))
    return found


def end_group(pgid: int, pgid_start: str | None, timeout: float = 5.0) -> bool:
    """SIGKILL process group ``pgid`` if its leader is still the process that started at
    ``pgid_start`` (or is gone, leaving members); wait until no member is left.
    False when the group id now belongs to someone else (nothing is signalled)."""
    now = start_time(pgid)
    if now is not None and pgid_start is not None and now != pgid_start:
        return False
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
    deadline = time.monotonic() + timeout
    while members(pgid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return True


def remove_workdir(path: str, timeout: float = 2.0) -> None:
    """Remove a work dir and what its browser made outside it; again while it reappears
    (a browser's helper can outlive it by a few milliseconds and still write its
    profile: seen once in a few dozen chromium+playwright launches).

    Chromium 156 puts its singleton socket in ``/tmp/org.chromium.Chromium.XXXXXX``,
    linked from ``<profile>/SingletonSocket``, and leaves that directory behind even when
    ended with SIGTERM (measured). Moving it into the work dir with ``TMPDIR`` is no way
    out: the socket's path must fit in 108 bytes or Chromium aborts ("Socket path too
    long").
    """
    for link in glob.glob(os.path.join(glob.escape(path), "*", "SingletonSocket")):
        with contextlib.suppress(OSError):
            singleton = os.path.dirname(os.readlink(link))
            if os.path.basename(singleton).startswith("org.chromium.Chromium."):
                shutil.rmtree(singleton, ignore_errors=True)
    deadline = time.monotonic() + timeout
    while True:
        shutil.rmtree(path, ignore_errors=True)
        if not os.path.exists(path) or time.monotonic() > deadline:
            return
        time.sleep(0.02)


def _owner_gone(owner: int) -> bool:
    """Wait for the owner to go (True) or to say it ended the program itself (False)."""
    while True:
        ready, _, _ = select.select([0], [], [], 1.0)
        if ready:
            data = os.read(0, 64)
            if not data:
                return True  # the pipe closed: the owner is dead
            if b"q" in data:
                return False
        if os.getppid() != owner:
            # Reparented: the owner died, yet someone it forked still holds the pipe.
            return True


def main(argv: list[str]) -> int:
    owner, pgid, pgid_start, workdir = int(argv[1]), int(argv[2]), argv[3], argv[4]
    # A Ctrl-C or a closed terminal is meant for the notebook, not for its reaper.
    for sig in (signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    if _owner_gone(owner):
        end_group(pgid, pgid_start if pgid_start != "-" else None)
        remove_workdir(workdir)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
