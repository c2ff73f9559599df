"""What every program cdpnb starts has in common, whatever it is (Chromium, node).

Each runs in a session of its own, with a fresh temporary work directory that holds its
log (a browser's, which also holds its profile, in RAM: :func:`scratch_root`), serves
DevTools on loopback only, and is ended by its own pid or process group
(never by name) — by
``close()``, at interpreter exit, or by its reaper when this Python dies without
either (SIGKILL, the OOM killer). A work directory whose owner is dead and whose reaper
did not finish either is removed by the next launch (:func:`sweep_stale_workdirs`).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, NamedTuple, Self, TypeVar

from cdpnb.backends import reaper
from cdpnb.errors import BrowserNotFound, BrowserStartError

__all__ = ["OWNER_FILE", "RAM_DIR_ENV", "RAM_SCRATCH", "WORKDIR_PREFIX", "Executable",
           "LocalProcess", "Reaper", "Spawned", "chosen_binary", "found_binary",
           "guard_started", "new_workdir", "port_in_output", "read_output", "scratch_root",
           "spawn", "sweep_stale_workdirs", "threads_at_work", "uncoloured", "without_ansi",
           "ws_url_in_output"]

#: In each work directory: who owns it and which process group lives in it (JSON).
OWNER_FILE = "cdpnb-owner.json"
#: Every work directory is named ``cdpnb-<kind>-<random>`` in the temp dir, or for a
#: browser in :func:`scratch_root`.
WORKDIR_PREFIX = "cdpnb-"
#: Where a browser's work dir (its profile) goes when this is a writable directory with
#: ``_RAM_NEEDED`` free (None: never). Why RAM: a browser waits on its profile's disk
#: before it says where it listens. Firefox ESR 153 calls fsync about 200 times first
#: (strace: sqlite, IndexedDB, prefs, the profile dir), some on its main thread, and
#: Chromium writes its profile on the path of a navigation. With the disk throttled to
#: 3 write IOPS for the browser alone (a blkio cgroup), Firefox stayed silent 10 s, twice,
#: with 3 of its 57 threads waiting on the disk (the CI failure this reproduces), and 7
#: of 8 Chromium navigations to a page with an OOPIF got no reply in 30 s. With the
#: profile in /dev/shm and the same throttle: Firefox up in 0.75 s, the navigations
#: 0.11-0.21 s, as on an idle disk.
RAM_SCRATCH: str | None = "/dev/shm"
#: Names another directory for browsers' work dirs; set empty, keeps them in the temp dir
#: (a long crawl whose HTTP cache should not use RAM).
RAM_DIR_ENV = "CDPNB_RAM_DIR"
#: Below this much free space (a container's 64 MiB /dev/shm), profiles stay on disk.
_RAM_NEEDED = 1 << 30

T = TypeVar("T")
#: What a backend's ``start`` takes as ``executable``: a binary the caller chose, or None
#: for the environment variable's, else the one found on this machine.
Executable = str | os.PathLike[str] | None
log = logging.getLogger("cdpnb.backends")

#: Terminal escape sequences: CSI (colours: ``ESC [ … final``), OSC (hyperlinks,
#: titles: ``ESC ] … BEL`` or ``… ESC \``) and the two-byte ones. Bun 1.4.5 with
#: FORCE_COLOR=1 (as Jupyter kernels set it) prints its banner as
#: ``Listening:\n  ESC[2mws://127.0.0.1:PORT/pathESC[22m`` and an OSC 8 hyperlink.
_ANSI = re.compile(rb"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
#: What turns colour on whatever the output is: FORCE_COLOR wins over NO_COLOR in Bun
#: 1.4.5 (measured: coloured with both set; uncoloured with NO_COLOR alone) and in
#: node (its documentation says so); CLICOLOR_FORCE is the other convention's switch.
_COLOUR_FORCING = ("FORCE_COLOR", "CLICOLOR_FORCE")


def without_ansi(data: bytes) -> bytes:
    """``data`` with its terminal escape sequences removed (see ``_ANSI``)."""
    return _ANSI.sub(b"", data) if b"\x1b" in data else data


def read_output(log_path: Path) -> bytes:
    """A started program's output so far, escape sequences removed: what a banner is
    looked for in, so a program that colours it anyway (its environment is not the only
    say it has) is still understood."""
    return without_ansi(log_path.read_bytes())


def port_in_output(banner: re.Pattern[bytes]) -> Callable[[Path], int | None]:
    """A ``ready`` for :func:`spawn`: the port ``banner``'s first group names in the
    program's output (escapes removed), once it is there."""
    def port(log_path: Path) -> int | None:
        found = banner.search(read_output(log_path))
        return None if found is None else int(found[1])
    return port


def ws_url_in_output(banner: re.Pattern[bytes]) -> Callable[[Path], tuple[str, int] | None]:
    """A ``ready`` for :func:`spawn`: the WebSocket URL (``banner``'s first group) and
    port (its second) the program's inspector printed once it listens."""
    def ws_url(log_path: Path) -> tuple[str, int] | None:
        found = banner.search(read_output(log_path))
        return None if found is None else (found[1].decode(), int(found[2]))
    return ws_url


def uncoloured(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with colour off for the program it starts: NO_COLOR=1 and whatever would
    force colour removed (a Jupyter kernel sets FORCE_COLOR=1 for its children)."""
    plain = {k: v for k, v in env.items() if k not in _COLOUR_FORCING}
    plain["NO_COLOR"] = "1"
    return plain


_live: dict[int, LocalProcess] = {}
_live_lock = threading.Lock()


@dataclass(kw_only=True)
class LocalProcess:
    """A running program that cdpnb started; ``close()`` ends it by its own pid.

    ``cdp_url`` is the endpoint to connect to, whatever the ``protocol`` it speaks
    (``"cdp"``, or ``"bidi"`` for a WebDriver BiDi endpoint such as Firefox's).
    """

    kind: str
    executable: str
    process: subprocess.Popen[bytes]
    workdir: Path
    cdp_url: str
    http_url: str
    port: int
    args: tuple[str, ...]
    started_in_s: float
    reaper: Reaper | None = None
    version_info: dict[str, Any] = field(default_factory=dict)
    protocol: str = "cdp"
    #: ``time.monotonic()`` when the program was started, and when its endpoint was
    #: known (the port read): where a launch's time goes (``Backend.phases``).
    spawned_at: float = 0.0
    endpoint_at: float = 0.0

    @property
    def url(self) -> str:
        """The endpoint to connect to (``cdp_url`` by its protocol-neutral name)."""
        return self.cdp_url

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def version(self) -> str:
        """``Browser`` from ``/json/version``: ``Chrome/…``, ``node.js/v20.…``, …, or what
        a backend with no such endpoint put there (``Firefox/153.7.0esr``)."""
        return str(self.version_info.get("Browser", ""))

    @property
    def running(self) -> bool:
        return self.process.poll() is None

    @classmethod
    def adopt(cls, started: Spawned[Any], *, kind: str, executable: str, port: int,
              cdp_url: str, **more: Any) -> Self:
        """Wrap a process ``spawn`` started, and remember it so that interpreter exit
        ends it if nobody else did. ``more`` are the fields a subclass adds."""
        adopted = cls(kind=kind, executable=executable, process=started.process,
                      workdir=started.workdir, cdp_url=cdp_url,
                      http_url=f"http://127.0.0.1:{port}", port=port, args=started.args,
                      started_in_s=started.started_in_s, reaper=started.reaper,
                      spawned_at=started.spawned_at, endpoint_at=started.ready_at, **more)
        with _live_lock:
            _live[started.process.pid] = adopted
        return adopted

    @contextlib.contextmanager
    def closed_on_failure(self) -> Iterator[Self]:
        """Within it, a failure (also KeyboardInterrupt) ends the process and removes its
        work dir before it propagates: for what a start still reads once the process is
        adopted (its version), so a failed start leaves nothing running."""
        try:
            yield self
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """End the process by its pid and remove its work directory. Idempotent.

        The reaper is dismissed only once nothing of the program is left: a browser
        outlived two of six loaded test-suite runs with its reaper gone (dismissed) and
        its work dir removed, so whatever survives ``close`` now stays watched, and is
        ended when this Python exits, however it exits."""
        with _live_lock:
            _live.pop(self.process.pid, None)
        leader_start = None if self.reaper is None else self.reaper.pgid_start
        _end(self.process, leader_start)
        reaper.remove_workdir(str(self.workdir))
        if self.reaper is None:
            return
        left = _left_behind(self.process, leader_start)
        if left:
            log.warning("cdpnb: %s (pid %d) left %s running after being ended; its reaper "
                        "stays to end them when this Python exits", self.kind,
                        self.process.pid, ", ".join(map(str, left)))
            return
        self.reaper.dismiss()


def chosen_binary(executable: str | os.PathLike[str] | None, env_var: str) -> str | None:
    """The binary the caller chose, ``executable=`` before ``$env_var``, resolved on PATH;
    None when neither is set. A choice that is no executable raises BrowserNotFound
    naming where it came from, so a typo is not silently replaced by the default."""
    chosen = executable if executable is not None else os.environ.get(env_var)
    if not chosen:
        return None
    path = shutil.which(os.fspath(chosen))
    if path is None:
        source = "executable=" if executable is not None else f"${env_var}"
        raise BrowserNotFound(f"{source} names {os.fspath(chosen)!r}, which is not an "
                              "executable file")
    return path


def found_binary(executable: Executable, env_var: str, candidates: tuple[str, ...]) -> str | None:
    """The binary the caller chose (:func:`chosen_binary`), else the first of
    ``candidates`` found (a path, or a name looked up on PATH); None when none is, for
    the caller to say how to install it."""
    chosen = chosen_binary(executable, env_var)
    if chosen is not None:
        return chosen
    return next((path for path in map(shutil.which, candidates) if path is not None), None)


class Spawned(NamedTuple, Generic[T]):
    """A started process whose DevTools endpoint is up, before it is wrapped."""

    process: subprocess.Popen[bytes]
    workdir: Path
    args: tuple[str, ...]
    ready: T
    started_in_s: float
    reaper: Reaper | None
    #: ``time.monotonic()`` when the program was started and when ``ready`` said so.
    spawned_at: float
    ready_at: float


class Reaper:
    """The process that ends ``pgid`` and removes ``workdir`` if this Python dies first
    (see :mod:`cdpnb.backends.reaper`). It holds the read end of a pipe whose write end
    only we hold: the kernel closes it when we die, however we die."""

    def __init__(self, pgid: int, workdir: Path) -> None:
        #: When the group's leader started: a group id is someone else's once it differs.
        self.pgid_start = reaper.start_time(pgid)
        read_end, self._write_end = os.pipe()  # both non-inheritable (PEP 446)
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-I", "-S", reaper.__file__, str(os.getpid()), str(pgid),
                 self.pgid_start or "-", str(workdir)],
                stdin=read_end, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True)  # out of reach of the terminal's Ctrl-C and hangup
        except BaseException:
            os.close(self._write_end)
            raise
        finally:
            os.close(read_end)

    @property
    def pid(self) -> int:
        return self.process.pid

    def dismiss(self) -> None:
        """We ended the program ourselves: the reaper exits without touching anything."""
        if self._write_end < 0:
            return
        with contextlib.suppress(OSError):
            os.write(self._write_end, b"q")
        os.close(self._write_end)
        self._write_end = -1
        try:
            self.process.wait(5.0)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5.0)


def scratch_root(on_ram: bool = True) -> str:
    """The directory a new work dir goes in: for a browser (``on_ram``) ``$CDPNB_RAM_DIR``
    when set (empty: the temp dir), else :data:`RAM_SCRATCH` when it is a writable
    directory with 1 GiB free, else the temp dir, where every other program's goes.

    A ``$CDPNB_RAM_DIR`` that is no writable directory is an error naming it: the caller
    asked for that place."""
    temp = tempfile.gettempdir()
    if not on_ram:
        return temp
    chosen = os.environ.get(RAM_DIR_ENV)
    if chosen is not None:
        if not chosen:
            return temp
        if not _writable_dir(chosen):
            raise BrowserStartError(f"${RAM_DIR_ENV} names {chosen!r}, which is not a "
                                    "directory this process can write in (set it empty to "
                                    "keep browser profiles in the temp dir)")
        return os.path.abspath(chosen)  # (mkdtemp keeps a relative dir relative)
    if RAM_SCRATCH is None or not _writable_dir(RAM_SCRATCH):
        return temp
    room = os.statvfs(RAM_SCRATCH)
    return RAM_SCRATCH if room.f_bavail * room.f_frsize >= _RAM_NEEDED else temp


def _writable_dir(path: str) -> bool:
    return os.path.isdir(path) and os.access(path, os.W_OK | os.X_OK)


def _workdir_in(kind: str, on_ram: bool) -> Path:
    """A fresh work dir (mode 0700, ``mkdtemp``'s), owned by this process."""
    workdir = Path(tempfile.mkdtemp(prefix=f"{WORKDIR_PREFIX}{kind}-",
                                    dir=scratch_root(on_ram)))
    _write_owner(workdir, None)
    return workdir


#: /proc's one-letter thread states, as a person reads them.
_THREAD_STATES = {"R": "running", "S": "sleeping", "D": "waiting on the disk",
                  "T": "stopped", "t": "stopped", "Z": "zombie", "I": "idle"}


def threads_at_work(pid: int) -> str:
    """What the threads of ``pid`` are doing, from /proc: ``57 threads: 54 sleeping,
    3 waiting on the disk (in folio_wait_bit, submit_bio_wait)``. What a start that stays
    silent says, so the next stall names its cause; ``""`` when /proc cannot tell."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return ""
    counts: dict[str, int] = {}
    waits: list[str] = []
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/stat", "rb") as stat:
                # The state follows the command name's closing parenthesis.
                state = stat.read().rpartition(b")")[2].split()[0].decode()
        except (OSError, IndexError):
            continue
        name = _THREAD_STATES.get(state, state)
        counts[name] = counts.get(name, 0) + 1
        if state == "D":
            with contextlib.suppress(OSError), \
                    open(f"/proc/{pid}/task/{task}/wchan") as wchan:
                waits.append(wchan.read().strip() or "?")
    if not counts:
        return ""
    total = sum(counts.values())
    parts = ", ".join(f"{n} {name}" for name, n in sorted(counts.items(), key=lambda i: -i[1]))
    where = f" (in {', '.join(sorted(set(waits)))})" if waits else ""
    return f"{total} thread{'s' if total != 1 else ''}: {parts}{where}"


class _NotReadyInTime(BrowserStartError):
    """The program runs but has not said where it listens within the time it was given."""


def spawn(
    kind: str,
    binary: str,
    build_args: Callable[[Path], tuple[str, ...]],
    ready: Callable[[Path], T | None],
    evidence: str,
    timeout: float,
    env: Mapping[str, str] | None = None,
    *,
    restart_stalled_after: float | None = None,
    on_ram: bool = False,
) -> Spawned[T]:
    """Start ``build_args(workdir)`` in a fresh work dir and poll ``ready(log_path)`` until
    it returns something, which says where DevTools listens.

    Output goes to a file in the work dir, never a pipe: a pipe nobody reads fills up
    and stalls the program. On any failure (also KeyboardInterrupt) the process is
    ended and the work dir removed before the exception propagates.

    ``restart_stalled_after``: a program still silent after that many seconds is ended
    and started once more, in a fresh work dir, within what is left of ``timeout``
    (the first one's output goes to the log, and into the error if the second fails
    too).

    ``on_ram``: the work dir goes in :func:`scratch_root` (a browser's, whose profile
    writes must not wait on a slow disk).
    """
    def start(within: float) -> Spawned[T]:
        return _spawn_once(kind, binary, build_args, ready, evidence, within, env, on_ram)

    if restart_stalled_after is None or restart_stalled_after >= timeout:
        return start(timeout)
    began = time.monotonic()
    try:
        return start(restart_stalled_after)
    except _NotReadyInTime as stalled:
        log.warning("cdpnb: %s started but was still silent after %g s; ending it and "
                    "starting it once more: %s", binary, restart_stalled_after, stalled)
        try:
            return start(max(timeout - (time.monotonic() - began), 1.0))
        except _NotReadyInTime as again:
            raise BrowserStartError(
                f"{binary} did not open DevTools within {timeout:g} s, started twice (waited "
                f"for {evidence}). The first start, silent after {restart_stalled_after:g} "
                f"s: {stalled}\nThe second: {again}") from again


def _spawn_once(
    kind: str,
    binary: str,
    build_args: Callable[[Path], tuple[str, ...]],
    ready: Callable[[Path], T | None],
    evidence: str,
    timeout: float,
    env: Mapping[str, str] | None,
    on_ram: bool,
) -> Spawned[T]:
    workdir = _workdir_in(kind, on_ram)
    log_path = workdir / "output.log"
    began = time.monotonic()
    try:
        args = build_args(workdir)
        with open(log_path, "wb") as log_file:
            process = subprocess.Popen(
                args, stdin=subprocess.DEVNULL, stdout=log_file, stderr=log_file,
                start_new_session=True, env=None if env is None else dict(env),
            )
        spawned_at = time.monotonic()
    except OSError as exc:
        shutil.rmtree(workdir, ignore_errors=True)
        raise BrowserStartError(f"cannot run {binary}: {exc}") from exc
    except BaseException:
        shutil.rmtree(workdir, ignore_errors=True)
        raise
    guard: Reaper | None = None
    try:
        # The program is the leader of its own process group (a new session): the group
        # holds it and every helper it starts (Chromium 156's zygote, renderers, GPU and
        # network processes all stay in it, measured).
        _write_owner(workdir, process.pid)
        guard = Reaper(process.pid, workdir)
        # While the program starts: what dead owners left is cleared here, off the
        # launch's path (it took 20–40 ms with 1,400 other cdpnb-* folders in /tmp
        # before the program was even started: `spawned` 28–30 ms, now 2–8 ms).
        sweep_stale_workdirs()
        value = _wait_until_ready(process, log_path, ready, evidence, timeout, binary)
    except BaseException:
        _end(process, None if guard is None else guard.pgid_start)
        reaper.remove_workdir(str(workdir))
        if guard is not None:
            guard.dismiss()
        raise
    ready_at = time.monotonic()
    return Spawned(process, workdir, args, value, ready_at - began, guard, spawned_at, ready_at)


def new_workdir(kind: str, *, on_ram: bool = False) -> Path:
    """A fresh work dir for a program another library starts (Selenium's chromedriver),
    owned by this process, as ``spawn`` makes one (``on_ram`` as there)."""
    return _workdir_in(kind, on_ram)


def guard_started(process: subprocess.Popen[bytes], workdir: Path) -> Reaper:
    """Watch over a program another library started in a session of its own
    (``start_new_session=True``) in ``workdir``: its process group is written into the
    work dir's owner file and a reaper ends it if this Python dies first."""
    _write_owner(workdir, process.pid)
    return Reaper(process.pid, workdir)


def _write_owner(workdir: Path, pgid: int | None) -> None:
    """Say who owns ``workdir`` (this process, and when it started, so a reused pid is
    told apart) and which process group runs in it. Replaced atomically."""
    owner = os.getpid()
    data = {"owner": owner, "owner_start": reaper.start_time(owner), "pgid": pgid,
            "pgid_start": None if pgid is None else reaper.start_time(pgid),
            "pid_namespace": _pid_namespace()}
    staging = workdir / f".{OWNER_FILE}.new"
    staging.write_text(json.dumps(data))
    os.replace(staging, workdir / OWNER_FILE)


def _pid_namespace() -> str | None:
    """Which pid namespace this process is in: pids in an owner file written in another
    (a container sharing /tmp) say nothing about processes here."""
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return None


def _alive(pid: Any, started: Any) -> bool:
    """Whether ``pid`` is still the process that started at ``started``."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    now = reaper.start_time(pid)
    if now is None:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return started is None  # no /proc: a live pid is all we can tell
    return started is None or now == started


def sweep_stale_workdirs(where: str | os.PathLike[str] | None = None) -> list[Path]:
    """Remove the work directories (under ``where``, default both places work dirs go:
    the temp dir and :func:`scratch_root`) whose owner process is dead, after ending
    whatever process group still runs in them: what a reaper could not clean up (it was
    killed too, or the machine lost power). A directory with no owner file, or an owner
    still alive, is left alone. Returns the directories removed."""
    if where is None:
        return [removed for place in _scratch_places() for removed in _sweep_in(place)]
    return _sweep_in(Path(where))


def _scratch_places() -> list[Path]:
    """Every place a work dir may have been put, whether a launch would put one there
    today or not (a /dev/shm that has since filled up still holds what dead owners
    left): the temp dir, :data:`RAM_SCRATCH` and ``$CDPNB_RAM_DIR``, each once."""
    places = [tempfile.gettempdir(), RAM_SCRATCH, os.environ.get(RAM_DIR_ENV)]
    found = dict.fromkeys(os.path.abspath(p) for p in places if p and os.path.isdir(p))
    return [Path(p) for p in found]


def _sweep_in(base: Path) -> list[Path]:
    removed: list[Path] = []
    here = _pid_namespace()
    # Plain paths and scandir, not pathlib: the temp dir may hold many other cdpnb-*
    # folders (1,400 of `cdpnb probe`'s traces here: a median 24 ms against 40 ms,
    # 15 sweeps each, interleaved, load 10).
    try:
        with os.scandir(base) as entries:
            candidates = [e.path for e in entries if e.name.startswith(WORKDIR_PREFIX)]
    except OSError:
        return removed
    for path in candidates:
        if not _made_by_this_user(path):
            continue  # another user's (or a link planted in a shared dir): never judged
        try:
            descriptor = os.open(os.path.join(path, OWNER_FILE), os.O_RDONLY | os.O_NOFOLLOW)
            with open(descriptor, "rb") as owner_file:
                owner = json.loads(owner_file.read())
        except (OSError, ValueError):
            continue  # not ours to judge: being created right now, or not cdpnb's
        workdir = Path(path)
        if not isinstance(owner, dict) or owner.get("pid_namespace") != here \
                or _alive(owner.get("owner"), owner.get("owner_start")):
            continue  # another container's pids mean nothing here; a live owner cleans up
        pgid, pgid_start = owner.get("pgid"), owner.get("pgid_start")
        if isinstance(pgid, int) and not isinstance(pgid, bool) and pgid > 0 \
                and isinstance(pgid_start, str):
            # Only a group whose leader's start time we know: never a stranger's.
            reaper.end_group(pgid, pgid_start)
        reaper.remove_workdir(str(workdir))
        removed.append(workdir)
    return removed


def _made_by_this_user(path: str) -> bool:
    """A real directory (not a link to one) owned by this process's user: the temp dir
    and /dev/shm are everyone's, and an owner file another user planted there must not
    make the sweep end our processes or remove what a link points to."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid()


def _wait_until_ready(process: subprocess.Popen[bytes], log_path: Path,
                      ready: Callable[[Path], T | None], evidence: str, timeout: float,
                      binary: str) -> T:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            err = read_output(log_path).decode(errors="replace")[-800:]
            raise BrowserStartError(f"{binary} exited with code {process.returncode} before "
                                    f"opening DevTools:\n{err}")
        value = ready(log_path)
        if value is not None:
            return value
        # A look is a stat or a read of a small file: every 5 ms costs nothing, and the
        # endpoint is known 2.5 ms sooner on average than at the 10 ms steps before.
        time.sleep(0.005)
    err = read_output(log_path).decode(errors="replace")[-800:]
    threads = threads_at_work(process.pid)
    raise _NotReadyInTime(f"{binary} did not open DevTools within {timeout:g} s "
                          f"(waited for {evidence}); "
                          f"{f'its {threads}; ' if threads else ''}its output so far:\n{err}")


def _end(process: subprocess.Popen[bytes], leader_start: str | None) -> None:
    """End the program by its pid, then whatever of its process group outlived it (a
    helper still writing the profile would bring the removed work dir back); the group
    only when we know when its leader started, so a reused group id is left alone."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(3.0)
        except subprocess.TimeoutExpired:
            process.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(10.0)  # (what still runs after is _left_behind's to say)
    if leader_start is not None:
        reaper.end_group(process.pid, leader_start)


def _left_behind(process: subprocess.Popen[bytes], leader_start: str | None) -> list[int]:
    """The pids of the program, or of its process group, still running after _end."""
    left = [process.pid] if process.poll() is None else []
    if leader_start is not None:
        left += [pid for pid in reaper.members(process.pid) if pid != process.pid]
    return left


@atexit.register
def _end_all_at_exit() -> None:
    with _live_lock:
        processes = list(_live.values())
    for process in processes:
        process.close()
