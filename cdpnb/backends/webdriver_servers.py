"""WebDriver servers on loopback: WebKitGTK's WebKitWebDriver (under cdpnb's own Xvfb)
and Debian's chromedriver (over Debian Chromium). Each session a client makes there
starts a browser of its own; cdpnb ends them all with the server's process group.

Measured on Debian 12 (WebKitGTK 2.50.6, chromedriver and Chromium 156.0.8078.108):

- ``WebKitWebDriver --port=0 --host=127.0.0.1`` binds 127.0.0.1 alone, on a port the
  kernel chooses and prints nowhere (cdpnb reads it from /proc:
  :mod:`cdpnb.backends.listeners`); without ``--host`` it binds 127.0.0.1 and ::1.
  Each ``POST /session`` starts ``MiniBrowser --automation`` (which listens on a
  loopback port of its own for the driver), and it its WebKitNetworkProcess and
  WebKitWebProcess, all in the driver's process group. MiniBrowser has no headless
  mode: with no display ``POST /session`` never answers, so the driver runs under an
  Xvfb of cdpnb's (:mod:`cdpnb.backends.xvfb`). Ended alone (SIGTERM), the driver
  leaves MiniBrowser and its helpers running: cdpnb ends the whole group. One session
  at a time: ``--replace-on-new-session`` lets a new one take the place of a client's
  that died. No WebDriver BiDi (``webSocketUrl: true`` is "session not created").
  It writes ``$XDG_CACHE_HOME`` (``~/.cache``: gstreamer-1.0, mesa_shader_cache,
  dconf), so HOME and the XDG folders point into the work dir.
  ``unhandledPromptBehavior`` defaults to "dismiss and notify"; with "ignore" an
  ``alert()`` stays open, ``GET /alert/text`` gives its text and any script command
  fails with "unexpected alert open" (its text in ``data.text``).
- ``chromedriver --port=0`` prints ``ChromeDriver was started successfully on port
  P.`` and binds 127.0.0.1:P and [::1]:P ("Only local connections are allowed"; no
  ``--allowed-ips``). Each ``POST /session`` starts the ``goog:chromeOptions.binary``
  with chromedriver's flags and ours, ``--remote-debugging-port=0`` (Chromium binds
  127.0.0.1; the session's ``goog:chromeOptions.debuggerAddress`` says
  ``localhost:PORT``), in chromedriver's process group; ``DELETE /session`` leaves
  Chromium's zygotes running for a moment, reparented. ``/usr/bin/chromium`` is
  Debian's wrapper script: the real binary is ``/usr/lib/chromium/chromium``. About
  one start in 40 (seen in issue 38's fault round, under load) it exits at once saying
  "IPv4 port not available. Exiting..." (the binary's own words; with ``--port=0`` it
  takes one address family's port, then asks for the same number in the other, which
  something else may hold by then): cdpnb starts it once more (a new port), and says so
  in the log.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import re
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cdpnb.backends.chromium import CHROMIUM_FLAGS, chromium_version, find_executable, merged_flags
from cdpnb.backends.listeners import listeners
from cdpnb.backends.process import (
    OWNER_FILE,
    Executable,
    LocalProcess,
    found_binary,
    port_in_output,
    spawn,
)
from cdpnb.backends.xvfb import XvfbProcess
from cdpnb.errors import BrowserNotFound, BrowserStartError

log = logging.getLogger("cdpnb.backends")

__all__ = ["CHROMEDRIVER_CHROMIUM_FLAGS", "OFFLINE_RESOLVER_RULES", "PROMPTS_IGNORED",
           "ChromedriverProcess", "WebKitWebDriverProcess", "chromedriver_version",
           "find_chromedriver", "find_webkitwebdriver", "webkit_version"]

#: cdpnb's sessions leave every prompt open for whoever answers it. Both servers
#: default to "dismiss and notify"; chromedriver's BiDi session, like chromium-bidi,
#: dismisses every prompt the moment it opens unless told "ignore" (measured).
PROMPTS_IGNORED: dict[str, str] = {"default": "ignore", "beforeUnload": "ignore"}

#: Chromium's resolver rules that keep it from looking up Google's and the default
#: search engine's names by itself (``cdpnb.backends.chromium.CHROMIUM_FLAGS``, measured
#: there), also for the Chromiums chromedriver and Selenium start.
OFFLINE_RESOLVER_RULES = next(f for f in CHROMIUM_FLAGS
                              if f.startswith("--host-resolver-rules="))

#: What chromedriver says as it exits when the port it chose for one address family is
#: taken in the other (``--port=0``; about one start in 40 under load): started once more.
PORT_TAKEN = "port not available"

#: The flags of kind ``chromium`` less its DevTools port (chromedriver adds
#: ``--remote-debugging-port=0`` itself and reads the port the browser chose).
CHROMEDRIVER_CHROMIUM_FLAGS = tuple(f for f in CHROMIUM_FLAGS
                                    if not f.startswith("--remote-debugging-port"))


@dataclass(frozen=True)
class _Program:
    name: str
    candidates: tuple[str, ...]
    package: str
    env_var: str

    def find(self, executable: Executable) -> str:
        found = found_binary(executable, self.env_var, self.candidates)
        if found is not None:
            return found
        raise BrowserNotFound(
            f"no {self.name} found (looked for {', '.join(self.candidates)}); install it "
            f"with `apt-get install {self.package}`, or set {self.env_var}")


WEBKITWEBDRIVER = _Program("WebKitWebDriver", ("/usr/bin/WebKitWebDriver", "WebKitWebDriver"),
                           "webkit2gtk-driver", "CDPNB_WEBKITWEBDRIVER")
CHROMEDRIVER = _Program("chromedriver", ("/usr/bin/chromedriver", "chromedriver"),
                        "chromium-driver", "CDPNB_CHROMEDRIVER")


def find_webkitwebdriver(executable: str | os.PathLike[str] | None = None) -> str:
    """WebKitWebDriver: ``executable``, ``$CDPNB_WEBKITWEBDRIVER`` or Debian's;
    BrowserNotFound naming the package (webkit2gtk-driver) when there is none."""
    return WEBKITWEBDRIVER.find(executable)


def find_chromedriver(executable: str | os.PathLike[str] | None = None) -> str:
    """chromedriver: ``executable``, ``$CDPNB_CHROMEDRIVER`` or Debian's;
    BrowserNotFound naming the package (chromium-driver) when there is none."""
    return CHROMEDRIVER.find(executable)


def _run(args: list[str], timeout: float = 10.0) -> str:
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout.strip()


def webkit_version(driver: str) -> str:
    """``WebKitGTK/2.50.6``: the upstream version of the Debian package that holds
    ``driver``. WebKitWebDriver has no ``--version`` (it prints its usage) and links no
    WebKit, so only its package says which WebKitGTK its MiniBrowser is; "" when dpkg
    does not know the file (a build of your own: its sessions' ``browserVersion``
    says)."""
    owner = _run(["dpkg-query", "-S", os.path.realpath(driver)])
    package = owner.split(":", 1)[0] if ":" in owner else ""
    if not package:
        return ""
    version = _run(["dpkg-query", "-W", "-f=${source:Upstream-Version}", package])
    return f"WebKitGTK/{version}" if version else ""


#: chromedriver's word that it listens, on stdout: the port it chose.
_STARTED = port_in_output(re.compile(rb"started successfully on port (\d+)"))
_CHROMEDRIVER_VERSION = re.compile(r"ChromeDriver\s+(\d[\d.]*)")


def chromedriver_version(binary: str) -> str:
    """``156.0.8078.108`` from ``chromedriver --version``; "" if it says none."""
    found = _CHROMEDRIVER_VERSION.search(_run([binary, "--version"]))
    return found[1] if found else ""


def _work_env(workdir: Path, env: dict[str, str]) -> None:
    """HOME and the XDG folders into ``workdir/home``: WebKitGTK's caches, GStreamer's
    registry and dconf land there, not in the user's home."""
    home = workdir / "home"
    for sub in ("cache", "config", "data", "state", "runtime"):
        (home / sub).mkdir(parents=True, mode=0o700)
    env.update(HOME=str(home), XDG_CACHE_HOME=str(home / "cache"),
               XDG_CONFIG_HOME=str(home / "config"), XDG_DATA_HOME=str(home / "data"),
               XDG_STATE_HOME=str(home / "state"), XDG_RUNTIME_DIR=str(home / "runtime"))


def _leader_port(log_path: Path) -> int | None:
    """The port the work dir's process-group leader listens on (read from /proc), once
    it does; its pid is in the work dir's owner file."""
    try:
        pid = json.loads((log_path.parent / OWNER_FILE).read_text()).get("pgid")
    except (OSError, ValueError):
        return None
    if not isinstance(pid, int):
        return None
    ports = [listener.port for listener in listeners([pid])]
    return ports[0] if ports else None


@dataclass(kw_only=True)
class WebKitWebDriverProcess(LocalProcess):
    """WebKitWebDriver on 127.0.0.1 under an Xvfb of its own: ``http_url`` (and
    ``cdp_url``) is the WebDriver server, ``protocol`` "classic". ``close()`` ends the
    driver's process group (every MiniBrowser and WebKit process a session started),
    then the Xvfb."""

    xvfb: XvfbProcess

    @property
    def webdriver_capabilities(self) -> dict[str, Any]:
        """What cdpnb's sessions ask for: prompts left open. MiniBrowser needs nothing
        more (``webkitgtk:browserOptions`` is left to the driver's default, MiniBrowser
        ``--automation``)."""
        return {"unhandledPromptBehavior": "ignore"}

    @classmethod
    def start(cls, executable: Executable = None, extra_args: tuple[str, ...] = (),
              timeout: float = 20.0) -> WebKitWebDriverProcess:
        binary = find_webkitwebdriver(executable)
        with ThreadPoolExecutor(1, thread_name_prefix="cdpnb-webkit-version") as pool:
            version = pool.submit(webkit_version, binary)
            xvfb = XvfbProcess.start(timeout=timeout)
            try:
                env = {k: v for k, v in os.environ.items() if k != "WAYLAND_DISPLAY"}
                env["DISPLAY"] = xvfb.display

                def build_args(workdir: Path) -> tuple[str, ...]:
                    # (spawn starts the program with env as it is after this call)
                    _work_env(workdir, env)
                    return (binary, "--port=0", "--host=127.0.0.1", "--replace-on-new-session",
                            *extra_args)

                started = spawn("webkit", binary, build_args, _leader_port,
                                "its listening port (/proc)", timeout, env, on_ram=True)
            except BaseException:
                xvfb.close()
                raise
        port = started.ready
        url = f"http://127.0.0.1:{port}"
        process = cls.adopt(started, kind="webkit", executable=binary, port=port, cdp_url=url,
                            protocol="classic", xvfb=xvfb)
        process.version_info = {"Browser": version.result(), "Protocol": "WebDriver classic",
                                "display": xvfb.display}
        return process

    def close(self) -> None:
        # The driver's group first (MiniBrowser would otherwise lose its display under
        # it), then the X server.
        try:
            super().close()
        finally:
            self.xvfb.close()


@dataclass(kw_only=True)
class ChromedriverProcess(LocalProcess):
    """chromedriver on loopback over Debian Chromium: ``http_url`` (and ``cdp_url``)
    is the WebDriver server; its log is ``chromedriver.log`` in the work dir.
    ``close()`` ends its process group: every Chromium a session started."""

    browser_executable: str
    chromium_args: tuple[str, ...]
    chromedriver_version: str
    _profiles: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _profiles_lock: threading.Lock = field(default_factory=threading.Lock)

    def fresh_profile(self) -> Path:
        """A profile folder in the work dir no session has used (Chromium makes it)."""
        with self._profiles_lock:
            return self.workdir / f"profile-{next(self._profiles)}"

    @property
    def webdriver_capabilities(self) -> dict[str, Any]:
        """What a session cdpnb makes here asks for: Debian's real Chromium binary with
        cdpnb's flags and a fresh profile in the work dir (each read names another), and
        prompts left open."""
        args = [*self.chromium_args, f"--user-data-dir={self.fresh_profile()}"]
        return {"browserName": "chrome", "unhandledPromptBehavior": dict(PROMPTS_IGNORED),
                "goog:chromeOptions": {"binary": self.browser_executable, "args": args}}

    @classmethod
    def start(cls, executable: Executable = None, extra_args: tuple[str, ...] = (),
              timeout: float = 20.0, *, kind: str = "chromium+chromedriver",
              protocol: str = "classic", chromedriver: Executable = None) -> ChromedriverProcess:
        """``executable`` is the browser's (as for kind ``chromium``), ``extra_args`` its
        flags; ``chromedriver`` the driver's (else ``$CDPNB_CHROMEDRIVER``)."""
        browser = find_executable("chromium", executable)
        binary = find_chromedriver(chromedriver)
        flags = tuple(merged_flags(list(CHROMEDRIVER_CHROMIUM_FLAGS), extra_args))

        def build_args(workdir: Path) -> tuple[str, ...]:
            return (binary, "--port=0", f"--log-path={workdir / 'chromedriver.log'}")

        with ThreadPoolExecutor(2, thread_name_prefix="cdpnb-chromedriver-version") as pool:
            driver_version = pool.submit(chromedriver_version, binary)
            browser_version = pool.submit(chromium_version, browser)
            try:
                started = spawn(kind, binary, build_args, _STARTED,
                                "'ChromeDriver was started successfully on port …' on stdout",
                                timeout, on_ram=True)  # (its sessions' profiles are in it)
            except BrowserStartError as exc:
                if PORT_TAKEN not in str(exc):
                    raise
                log.info("cdpnb: chromedriver could not bind its port (\"%s\"); starting it "
                         "once more, on a new port", PORT_TAKEN)
                started = spawn(kind, binary, build_args, _STARTED,
                                "'ChromeDriver was started successfully on port …' on stdout",
                                timeout, on_ram=True)  # (its sessions' profiles are in it)
        port = started.ready
        url = f"http://127.0.0.1:{port}"
        process = cls.adopt(started, kind=kind, executable=binary, port=port, cdp_url=url,
                            protocol=protocol, browser_executable=browser, chromium_args=flags,
                            chromedriver_version=driver_version.result())
        with process.closed_on_failure():
            process.version_info = {"Browser": browser_version.result(),
                                    "chromedriver": process.chromedriver_version,
                                    "Protocol": "WebDriver " + protocol}
        return process
