"""Launch Debian's Firefox ESR headless with its WebDriver BiDi endpoint on loopback.

Measured on firefox-esr 153.7.0esr (Debian 12):

- ``--remote-debugging-port=0`` serves WebDriver BiDi only, on 127.0.0.1 alone (no
  ``::1``, nothing on 0.0.0.0: ``ss -ltnup`` lists one listener, and no UDP socket);
  ``/json/version`` is 404, there is no CDP. The chosen port is on stderr
  (``WebDriver BiDi listening on ws://127.0.0.1:PORT``) and in
  ``<profile>/WebDriverBiDiServer.json``; clients connect to ``ws://…:PORT/session``.
- Firefox allows ONE BiDi session per browser, so cdpnb creates none: the version
  comes from ``firefox-esr --version`` (≈0.16 s, a process of its own) and the build
  id from ``application.ini``, never from ``session.new``.
- Rarely a start stays silent: no BiDi line within 20 s (once in a CI run's ≈300
  starts, once in 360 starts here beside two CPU-bound processes, where every other
  start announced its port in 0.40–2.64 s). A start silent after half its timeout is
  ended and started once more with a fresh profile (``spawn``'s
  ``restart_stalled_after``).
- The pid stays the browser's (no relaunch with a fresh profile); its content
  processes are its children, in its process group.
- Where a launch's time goes: the BiDi port is known 0.4–0.8 s after the start (2
  cores, load 3–5), and ``session.new`` is answered only once the first window's idle
  start-up tasks are done (WebDriverBiDi.sys.mjs waits for
  ``browser-idle-startup-tasks-finished``): 1.8–2.4 s after the start, with ≈2 CPU s
  spent, most of it in the parent process. A bare client and Puppeteer wait as long.
  No preference tried changed it (new-tab preloading and process prelaunch off, push,
  sync, translations, search suggestions, Pocket, backups and ≈30 more), nor did a
  startupCache carried over from an earlier profile.
- Network: with a fresh profile and no prefs it looks up
  firefox.settings.services.mozilla.com (36 DNS queries in 25 s), aus5.mozilla.org and
  update.googleapis.com. With :data:`FIREFOX_PREFS` in ``user.js`` and
  ``MOZ_REMOTE_SETTINGS_DEVTOOLS=1`` (a release build honours
  ``services.settings.server`` only with it) strace saw no socket to anything but
  loopback in 30 s.
"""

from __future__ import annotations

import configparser
import json
import os
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cdpnb.backends.process import Executable, LocalProcess, found_binary, port_in_output, spawn
from cdpnb.errors import BrowserNotFound, BrowserStartError

__all__ = ["FIREFOX_ENV", "FIREFOX_PREFS", "FirefoxProcess", "find_firefox",
           "firefox_command_line", "firefox_version", "user_js"]

#: Where Firefox would reach the network, pointed at a loopback port nothing serves
#: (a refused connection at once, never a DNS query).
_NOWHERE = "http://127.0.0.1:1/cdpnb-offline"

#: Profile preferences: Puppeteer's ``defaultProfilePreferences`` (@puppeteer/browsers
#: 3.0.5, browser-data/firefox.js) with its dummy host replaced by ``_NOWHERE``, plus
#: what still reached for the network here (updates, telemetry, captive portal and
#: connectivity checks, region lookup, DNS over HTTPS, prefetch).
FIREFOX_PREFS: dict[str, str | int | bool] = {
    "app.normandy.api_url": "",
    "app.normandy.enabled": False,
    "app.update.auto": False,
    "app.update.checkInstallTime": False,
    "app.update.disabledForTesting": True,
    "app.update.url": f"{_NOWHERE}/update",
    "apz.content_response_timeout": 60000,
    "browser.contentblocking.features.standard": "-tp,tpPrivate,cookieBehavior0,-cryptoTP,-fp",
    "browser.newtabpage.activity-stream.feeds.system.topstories": False,
    "browser.newtabpage.enabled": False,
    "browser.pagethumbnails.capturing_disabled": True,
    "browser.region.network.url": "",
    "browser.region.update.enabled": False,
    "browser.safebrowsing.blockedURIs.enabled": False,
    "browser.safebrowsing.downloads.enabled": False,
    "browser.safebrowsing.malware.enabled": False,
    "browser.safebrowsing.phishing.enabled": False,
    "browser.search.update": False,
    "browser.sessionstore.resume_from_crash": False,
    "browser.shell.checkDefaultBrowser": False,
    "browser.startup.homepage": "about:blank",
    "browser.startup.homepage_override.mstone": "ignore",
    "browser.startup.page": 0,
    "browser.tabs.warnOnCloseOtherTabs": False,
    "browser.tabs.warnOnOpen": False,
    "browser.translations.automaticallyPopup": False,
    "browser.uitour.enabled": False,
    "browser.urlbar.suggest.searches": False,
    "browser.warnOnQuit": False,
    "captivedetect.canonicalURL": "",
    "datareporting.healthreport.documentServerURI": f"{_NOWHERE}/healthreport/",
    "datareporting.healthreport.logging.consoleEnabled": False,
    "datareporting.healthreport.service.enabled": False,
    "datareporting.healthreport.service.firstRun": False,
    "datareporting.healthreport.uploadEnabled": False,
    "datareporting.policy.dataSubmissionEnabled": False,
    "datareporting.policy.dataSubmissionPolicyBypassNotification": True,
    "devtools.jsonview.enabled": False,
    # Popups are part of what is studied: a blocked window.open would hide one.
    "dom.disable_open_during_load": False,
    "dom.ipc.reportProcessHangs": False,
    "dom.max_chrome_script_run_time": 0,
    "dom.max_script_run_time": 0,
    "extensions.autoDisableScopes": 0,
    "extensions.blocklist.enabled": False,
    "extensions.enabledScopes": 5,
    "extensions.getAddons.cache.enabled": False,
    "extensions.installDistroAddons": False,
    "extensions.update.enabled": False,
    "extensions.update.notifyUser": False,
    "extensions.webservice.discoverURL": f"{_NOWHERE}/discoveryURL",
    "focusmanager.testmode": True,
    "general.useragent.updates.enabled": False,
    "geo.provider.testing": True,
    "geo.wifi.scan": False,
    "hangmonitor.timeout": 0,
    "media.gmp-manager.updateEnabled": False,
    "media.gmp-manager.url": f"{_NOWHERE}/gmp",
    "media.sanity-test.disabled": True,
    "network.captive-portal-service.enabled": False,
    "network.connectivity-service.enabled": False,
    "network.dns.disablePrefetch": True,
    "network.http.speculative-parallel-limit": 0,
    "network.manage-offline-status": False,
    "network.prefetch-next": False,
    "network.sntp.pools": "127.0.0.1",
    "network.trr.mode": 5,  # DNS over HTTPS off, by choice
    "privacy.trackingprotection.enabled": False,
    "remote.bidi.dismiss_file_pickers.enabled": True,
    "screenshots.browser.component.enabled": False,
    "security.certerrors.mitm.priming.enabled": False,
    "security.notification_enable_delay": 0,
    "services.settings.server": f"{_NOWHERE}/blocklist/",
    "signon.autofillForms": False,
    "signon.rememberSignons": False,
    "startup.homepage_welcome_url": "about:blank",
    "startup.homepage_welcome_url.additional": "",
    "toolkit.cosmeticAnimations.enabled": False,
    "toolkit.startup.max_resumed_crashes": -1,
    "toolkit.telemetry.enabled": False,
    "toolkit.telemetry.server": f"{_NOWHERE}/telemetry",
}

#: Environment Firefox gets on top of ours.
FIREFOX_ENV = {
    # A release build ignores services.settings.server unless this is set (measured:
    # without it, the remote-settings lookups above go on despite the pref).
    "MOZ_REMOTE_SETTINGS_DEVTOOLS": "1",
    # No crash reporter and no report submission from a test machine.
    "MOZ_CRASHREPORTER_DISABLE": "1",
}

#: The Debian package's real binary first: /usr/bin/firefox-esr is a symlink to it.
_CANDIDATES = ("/usr/lib/firefox-esr/firefox-esr", "firefox-esr", "/usr/lib/firefox/firefox",
               "firefox")
PACKAGE = "firefox-esr"
ENV_VAR = "CDPNB_FIREFOX"

_LISTENING = re.compile(rb"WebDriver BiDi listening on ws://127\.0\.0\.1:(\d+)")
_VERSION = re.compile(r"Firefox\s+(\S+)")


def find_firefox(executable: str | os.PathLike[str] | None = None) -> str:
    """The Firefox binary: ``executable``, ``$CDPNB_FIREFOX``, or Debian's firefox-esr;
    a missing one raises BrowserNotFound naming the package."""
    found = found_binary(executable, ENV_VAR, _CANDIDATES)
    if found is not None:
        return found
    raise BrowserNotFound(f"no firefox binary found (looked for {', '.join(_CANDIDATES)}); "
                          f"install it with `apt-get install {PACKAGE}`, or pass executable= "
                          f"/ set {ENV_VAR}")


def user_js(prefs: dict[str, str | int | bool] = FIREFOX_PREFS) -> str:
    """``prefs`` as the lines of a profile's ``user.js``."""
    return "".join(f"user_pref({json.dumps(k)}, {json.dumps(v)});\n" for k, v in prefs.items())


def firefox_command_line(binary: str, profile: Path,
                         extra_args: tuple[str, ...] = ()) -> tuple[str, ...]:
    """Firefox's arguments: headless, ``profile`` (which holds :func:`user_js`), the
    WebDriver BiDi port the kernel chooses, the caller's flags, ``about:blank``."""
    return (binary, "--headless", "--no-remote", "--profile", str(profile),
            "--remote-debugging-port=0", *extra_args, "about:blank")


def firefox_version(binary: str, timeout: float = 10.0) -> dict[str, Any]:
    """What ``binary --version`` and its ``application.ini`` say, without starting a
    browser: ``{"Browser": "Firefox/153.7.0esr", "Product": "Mozilla Firefox
    153.7.0esr", "BuildID": "…"}``."""
    try:
        done = subprocess.run([binary, "--version"], capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BrowserStartError(f"{binary} --version failed: {exc}") from exc
    product = done.stdout.strip()
    found = _VERSION.search(product)
    info: dict[str, Any] = {"Browser": f"Firefox/{found[1]}" if found else product,
                            "Product": product}
    ini = configparser.ConfigParser()
    if ini.read(Path(binary).resolve().parent / "application.ini") and ini.has_section("App"):
        info["BuildID"] = ini.get("App", "BuildID", fallback=None)
    return info


@dataclass(kw_only=True)
class FirefoxProcess(LocalProcess):
    """A running Firefox that cdpnb started: ``cdp_url`` is its WebDriver BiDi endpoint
    (``ws://127.0.0.1:PORT/session``); ``close()`` ends it by its own pid."""

    profile_dir: Path

    @classmethod
    def start(cls, executable: Executable = None, extra_args: tuple[str, ...] = (),
              timeout: float = 20.0) -> FirefoxProcess:
        binary = find_firefox(executable)

        def build_args(workdir: Path) -> tuple[str, ...]:
            profile = workdir / "profile"
            profile.mkdir()
            (profile / "user.js").write_text(user_js())
            return firefox_command_line(binary, profile, extra_args)

        env = {**os.environ, **FIREFOX_ENV}
        # `--version` (a process of its own: 30 ms alone, 0.04–0.16 s after the port was
        # known beside a starting Firefox, 2 cores, load 5–7) runs while it starts.
        with ThreadPoolExecutor(1, thread_name_prefix="cdpnb-firefox-version") as pool:
            version = pool.submit(firefox_version, binary)
            started = spawn("firefox", binary, build_args, port_in_output(_LISTENING),
                            "'WebDriver BiDi listening on ws://127.0.0.1:…' on stderr",
                            timeout, env, restart_stalled_after=timeout / 2, on_ram=True)
        port = started.ready
        process = cls.adopt(started, kind="firefox", executable=binary, port=port,
                            cdp_url=f"ws://127.0.0.1:{port}/session", protocol="bidi",
                            profile_dir=started.workdir / "profile")
        with process.closed_on_failure():
            info = version.result()
        # Not from a BiDi session: Firefox has only one, and it is the client's.
        process.version_info = {**info, "Protocol": "WebDriver BiDi",
                                "webSocketUrl": process.cdp_url}
        return process
