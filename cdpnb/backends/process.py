"""What every program cdpnb starts has in common, whatever it is (Chromium, node).

Each runs in a session of its own, with a fresh temporary work directory that holds its
log, serves DevTools on loopback only, and is ended by its own pid (never by name) — by
``close()``, or at interpreter exit for whatever is still running.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, NamedTuple, Self, TypeVar

from cdpnb.errors import BrowserNotFound, BrowserStartError

__all__ = ["LocalProcess", "Spawned", "chosen_binary", "spawn"]

T = TypeVar("T")

_live: dict[int, LocalProcess] = {}
_live_lock = threading.Lock()


@dataclass(kw_only=True)
class LocalProcess:
    """A running program that cdpnb started; ``close()`` ends it by its own pid."""

    kind: str
    executable: str
    process: subprocess.Popen[bytes]
    workdir: Path
    cdp_url: str
    http_url: str
    port: int
    args: tuple[str, ...]
    started_in_s: float
    version_info: dict[str, Any] = field(default_factory=dict)

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def version(self) -> str:
        """``Browser`` from ``/json/version``: ``Chrome/…``, ``node.js/v20.…``, …"""
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
                      started_in_s=started.started_in_s, **more)
        with _live_lock:
            _live[started.process.pid] = adopted
        return adopted

    def close(self) -> None:
        """End the process by its pid and remove its work directory. Idempotent."""
        with _live_lock:
            _live.pop(self.process.pid, None)
        _end(self.process)
        _remove(self.workdir)


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


class Spawned(NamedTuple, Generic[T]):
    """A started process whose DevTools endpoint is up, before it is wrapped."""

    process: subprocess.Popen[bytes]
    workdir: Path
    args: tuple[str, ...]
    ready: T
    started_in_s: float


def spawn(
    kind: str,
    binary: str,
    build_args: Callable[[Path], tuple[str, ...]],
    ready: Callable[[Path], T | None],
    evidence: str,
    timeout: float,
    env: Mapping[str, str] | None = None,
) -> Spawned[T]:
    """Start ``build_args(workdir)`` in a fresh work dir and poll ``ready(log_path)`` until
    it returns something, which says where DevTools listens.

    Output goes to a file in the work dir, never a pipe: a pipe nobody reads fills up
    and stalls the program. On any failure (also KeyboardInterrupt) the process is
    ended and the work dir removed before the exception propagates.
    """
    workdir = Path(tempfile.mkdtemp(prefix=f"cdpnb-{kind}-"))
    log_path = workdir / "output.log"
    began = time.monotonic()
    try:
        args = build_args(workdir)
        with open(log_path, "wb") as log_file:
            process = subprocess.Popen(
                args, stdin=subprocess.DEVNULL, stdout=log_file, stderr=log_file,
                start_new_session=True, env=None if env is None else dict(env),
            )
    except OSError as exc:
        shutil.rmtree(workdir, ignore_errors=True)
        raise BrowserStartError(f"cannot run {binary}: {exc}") from exc
    except BaseException:
        shutil.rmtree(workdir, ignore_errors=True)
        raise
    try:
        value = _wait_until_ready(process, log_path, ready, evidence, timeout, binary)
    except BaseException:
        _end(process)
        _remove(workdir)
        raise
    return Spawned(process, workdir, args, value, time.monotonic() - began)


def _wait_until_ready(process: subprocess.Popen[bytes], log_path: Path,
                      ready: Callable[[Path], T | None], evidence: str, timeout: float,
                      binary: str) -> T:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            err = log_path.read_bytes().decode(errors="replace")[-800:]
            raise BrowserStartError(f"{binary} exited with code {process.returncode} before "
                                    f"opening DevTools:\n{err}")
        value = ready(log_path)
        if value is not None:
            return value
        time.sleep(0.01)
    raise BrowserStartError(f"{binary} did not open DevTools within {timeout:g} s "
                            f"(waited for {evidence})")


def _end(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(3.0)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(3.0)


def _remove(workdir: Path, timeout: float = 2.0) -> None:
    """Remove the work dir, trying again while it reappears or will not go: a browser's
    helper processes can outlive it by a few milliseconds and still write its profile
    (seen once in a few dozen chromium+playwright launches)."""
    deadline = time.monotonic() + timeout
    while True:
        shutil.rmtree(workdir, ignore_errors=True)
        if not workdir.exists() or time.monotonic() > deadline:
            return
        time.sleep(0.02)


@atexit.register
def _end_all_at_exit() -> None:
    with _live_lock:
        processes = list(_live.values())
    for process in processes:
        process.close()
