"""Launch Chromium or chromium-headless-shell on loopback, and end it by its pid."""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cdpnb.errors import BrowserNotFound, BrowserStartError

__all__ = ["CHROMIUM_FLAGS", "KINDS", "BrowserProcess", "find_executable"]

#: Flags measured to start cleanly as root on a machine with no network.
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    # Full chromium isolates sites by default, headless-shell does not: ask both for it
    # so a cross-site iframe is an OOPIF on either.
    "--site-per-process",
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
)


@dataclass(frozen=True)
class _Kind:
    candidates: tuple[str, ...]
    package: str


KINDS: dict[str, _Kind] = {
    "chromium": _Kind(("/usr/lib/chromium/chromium", "/usr/bin/chromium", "chromium"),
                      "chromium"),
    # /usr/bin/chromium-headless-shell is a shell wrapper that does not exec: its pid is
    # not the browser's, so launch the real binary.
    "headless-shell": _Kind(("/usr/lib/chromium/chromium-headless-shell",),
                            "chromium-headless-shell"),
}

_live: dict[int, BrowserProcess] = {}
_live_lock = threading.Lock()


def find_executable(kind: str, executable: str | os.PathLike[str] | None = None) -> str:
    """The binary to run for ``kind``: ``executable``, ``$CDPNB_CHROMIUM``, or the
    Debian package's path; a missing one raises BrowserNotFound naming the package."""
    if kind not in KINDS:
        raise ValueError(f"unknown browser kind {kind!r}; choose one of {', '.join(KINDS)}")
    spec = KINDS[kind]
    chosen = executable if executable is not None else os.environ.get("CDPNB_CHROMIUM")
    if chosen:
        path = shutil.which(os.fspath(chosen))
        if path is None:
            source = "executable=" if executable is not None else "$CDPNB_CHROMIUM"
            raise BrowserNotFound(f"{source} names {os.fspath(chosen)!r}, which is not an "
                                  "executable file")
        return path
    for candidate in spec.candidates:
        path = shutil.which(candidate)
        if path is not None:
            return path
    raise BrowserNotFound(
        f"no {kind} binary found (looked for {', '.join(spec.candidates)}); install it with "
        f"`apt-get install {spec.package}`, or pass executable= / set CDPNB_CHROMIUM")


@dataclass
class BrowserProcess:
    """A running browser that cdpnb started; ``close()`` ends it by its own pid."""

    kind: str
    executable: str
    process: subprocess.Popen[bytes]
    workdir: Path
    user_data_dir: Path
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
        return str(self.version_info.get("Browser", ""))

    @classmethod
    def start(
        cls,
        kind: str,
        executable: str | os.PathLike[str] | None = None,
        extra_args: tuple[str, ...] = (),
        timeout: float = 20.0,
    ) -> BrowserProcess:
        binary = find_executable(kind, executable)
        # One fresh directory per launch: the profile, and the browser's stderr in a
        # file (a pipe nobody reads would fill up and stall the browser).
        workdir = Path(tempfile.mkdtemp(prefix=f"cdpnb-{kind}-"))
        user_data_dir = workdir / "profile"
        user_data_dir.mkdir()
        log_path = workdir / "browser.log"
        args = (binary, *CHROMIUM_FLAGS, f"--user-data-dir={user_data_dir}", *extra_args,
                "about:blank")
        began = time.monotonic()
        try:
            with open(log_path, "wb") as log_file:
                process = subprocess.Popen(
                    args, stdin=subprocess.DEVNULL, stdout=log_file, stderr=log_file,
                    start_new_session=True,
                )
        except OSError as exc:
            shutil.rmtree(workdir, ignore_errors=True)
            raise BrowserStartError(f"cannot run {binary}: {exc}") from exc
        try:
            port, path = _wait_for_port_file(process, user_data_dir, log_path, timeout, binary)
        except BaseException:
            _end(process)
            shutil.rmtree(workdir, ignore_errors=True)
            raise
        browser = cls(
            kind=kind,
            executable=binary,
            process=process,
            workdir=workdir,
            user_data_dir=user_data_dir,
            cdp_url=f"ws://127.0.0.1:{port}{path}",
            http_url=f"http://127.0.0.1:{port}",
            port=port,
            args=args,
            started_in_s=time.monotonic() - began,
        )
        with _live_lock:
            _live[process.pid] = browser
        return browser

    def close(self) -> None:
        """End the browser by its pid and remove its profile directory. Idempotent."""
        with _live_lock:
            _live.pop(self.process.pid, None)
        _end(self.process)
        shutil.rmtree(self.workdir, ignore_errors=True)

    @property
    def running(self) -> bool:
        return self.process.poll() is None


def _wait_for_port_file(process: subprocess.Popen[bytes], user_data_dir: Path, log_path: Path,
                        timeout: float, binary: str) -> tuple[int, str]:
    port_file = user_data_dir / "DevToolsActivePort"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            err = log_path.read_bytes().decode(errors="replace")[-800:]
            raise BrowserStartError(f"{binary} exited with code {process.returncode} before "
                                    f"opening DevTools:\n{err}")
        try:
            lines = port_file.read_text().splitlines()
        except FileNotFoundError:
            lines = []
        if len(lines) >= 2 and lines[0].strip().isdigit():
            return int(lines[0]), lines[1].strip()
        time.sleep(0.01)
    raise BrowserStartError(f"{binary} did not write {port_file} within {timeout:g} s")


def _end(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(3.0)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(3.0)


@atexit.register
def _end_all_at_exit() -> None:
    with _live_lock:
        browsers = list(_live.values())
    for browser in browsers:
        browser.close()

