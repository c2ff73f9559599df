"""Launch Chromium or chromium-headless-shell on loopback, and end it by its pid."""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from cdpnb.backends.process import Executable, LocalProcess, found_binary, spawn
from cdpnb.backends.process import _live as _live  # where tests find leftover browsers
from cdpnb.errors import BrowserNotFound, BrowserStartError

__all__ = ["CHROMIUM_FLAGS", "KINDS", "BrowserProcess", "chromium_version", "command_line",
           "find_executable", "merged_flags", "sandbox_flags"]


def sandbox_flags(euid: int) -> tuple[str, ...]:
    """``--no-sandbox`` for root (Chromium refuses to run sandboxed as root), nothing
    for anyone else: their browser keeps its sandbox."""
    return ("--no-sandbox",) if euid == 0 else ()


#: Flags measured to start cleanly as root on a machine with no network.
CHROMIUM_FLAGS = (
    "--headless",
    *sandbox_flags(os.geteuid()),
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
    # A page's RTCPeerConnection must not announce or probe the machine's interfaces.
    # Measured on 156 (a data channel, createOffer, setLocalDescription): without these,
    # host candidates name every interface (as mDNS names) and the network service
    # joins mDNS (224.0.0.251). Chromium reads --webrtc-ip-handling-policy,
    # headless-shell --force-webrtc-ip-handling-policy (each ignores the other's);
    # disable_non_proxied_udp leaves no candidate at all. Turning off the mDNS feature
    # ends the multicast membership. What no flag changes: the network service still
    # binds two unconnected UDP sockets on 0.0.0.0 and :: (also with
    # iceTransportPolicy 'relay' or a 'default_public_interface_only' policy).
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
    # The names Chromium 156 looks up by itself with these flags (strace, 15-25 s
    # from its start, Debian's default profile): accounts.google.com,
    # clients2.google.com and update.googleapis.com at start-up, start.duckduckgo.com
    # (the default search engine, preconnected; --disable-features=PreconnectToSearch
    # did not stop it) once a window opens. Mapped to "not found", no DNS query leaves
    # the machine (measured: none in 15 s); every other name resolves as usual.
    "--host-resolver-rules=" + ", ".join(
        f"MAP {name} ~NOTFOUND" for name in ("accounts.google.com", "clients2.google.com",
                                             "update.googleapis.com",
                                             "start.duckduckgo.com")),
    # WebUI*: full chromium's headless window still preloads its omnibox popup, two
    # browser_ui targets (chrome://omnibox-popup.top-chrome/) in a renderer of their
    # own (--top-chrome-webui). Measured on 156 (2 cores): without them 1 target and
    # 8 processes instead of 3 and 9, and the browser's process group has used
    # 0.51–0.54 CPU s by the time cdpnb's page is ready, against 0.61–0.69 s with the
    # popup (interleaved launches, 10–15 of each, load 9–15). Puppeteer turns off the
    # same three. headless-shell has no such window: nothing changes there.
    "--disable-features=WebRtcHideLocalIpsWithMdns,WebUIOmniboxPopup,WebUIOmniboxAimPopup,"
    "WebUIReloadButton",
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


def find_executable(kind: str, executable: str | os.PathLike[str] | None = None) -> str:
    """The binary to run for ``kind``: ``executable``, ``$CDPNB_CHROMIUM``, or the
    Debian package's path; a missing one raises BrowserNotFound naming the package."""
    if kind not in KINDS:
        raise ValueError(f"unknown browser kind {kind!r}; choose one of {', '.join(KINDS)}")
    spec = KINDS[kind]
    found = found_binary(executable, "CDPNB_CHROMIUM", spec.candidates)
    if found is not None:
        return found
    raise BrowserNotFound(
        f"no {kind} binary found (looked for {', '.join(spec.candidates)}); install it with "
        f"`apt-get install {spec.package}`, or pass executable= / set CDPNB_CHROMIUM")


def chromium_version(binary: str, timeout: float = 10.0) -> str:
    """``Chrome/156.0.8078.79`` from ``binary --version`` (≈60 ms; no browser starts), in
    the form /json/version gives; what the binary printed when it has no version."""
    try:
        done = subprocess.run([binary, "--version"], capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BrowserStartError(f"{binary} --version failed: {exc}") from exc
    found = re.search(r"\b(\d+\.\d+\.\d+\.\d+)\b", done.stdout)
    return f"Chrome/{found[1]}" if found else done.stdout.strip()


#: Switches whose values are lists: given twice, Chromium keeps only the last one.
_LIST_SWITCHES = ("--disable-features=", "--enable-features=")


def command_line(binary: str, user_data_dir: str, extra_args: tuple[str, ...]) -> tuple[str, ...]:
    """The browser's arguments: CHROMIUM_FLAGS, the profile, the caller's flags, and
    ``about:blank``. A caller's ``--disable-features=`` / ``--enable-features=`` is
    merged into ours rather than replacing it (Chromium keeps the last of a switch)."""
    return (binary, *merged_flags([*CHROMIUM_FLAGS, user_data_dir], extra_args), "about:blank")


def merged_flags(ours: list[str], extra_args: tuple[str, ...]) -> list[str]:
    """``ours`` then the caller's flags, list switches merged into ours."""
    flags = list(ours)
    rest = []
    for arg in extra_args:
        switch = next((s for s in _LIST_SWITCHES if arg.startswith(s)), None)
        mine = next((i for i, f in enumerate(flags) if switch and f.startswith(switch)), None)
        if switch is None or mine is None:
            rest.append(arg)
            continue
        have = flags[mine][len(switch):].split(",")
        more = [v for v in arg[len(switch):].split(",") if v and v not in have]
        flags[mine] = switch + ",".join(have + more)
    return [*flags, *rest]


@dataclass(kw_only=True)
class BrowserProcess(LocalProcess):
    """A running browser that cdpnb started; ``close()`` ends it by its own pid."""

    user_data_dir: Path

    @classmethod
    def start(cls, kind: str, executable: Executable = None, extra_args: tuple[str, ...] = (),
              timeout: float = 20.0) -> BrowserProcess:
        binary = find_executable(kind, executable)

        # One fresh directory per launch holds the profile (and the browser's log).
        def build_args(workdir: Path) -> tuple[str, ...]:
            (workdir / "profile").mkdir()
            return command_line(binary, f"--user-data-dir={workdir / 'profile'}", extra_args)

        def port_and_path(log_path: Path) -> tuple[int, str] | None:
            # Port 0 lets the browser choose; it writes what it chose to this file.
            try:
                text = (log_path.parent / "profile" / "DevToolsActivePort").read_text()
            except FileNotFoundError:
                return None
            port, *rest = text.splitlines() or [""]
            return (int(port), rest[0].strip()) if rest and port.strip().isdigit() else None

        started = spawn(kind, binary, build_args, port_and_path,
                        "profile/DevToolsActivePort", timeout, on_ram=True)
        port, path = started.ready
        return cls.adopt(started, kind=kind, executable=binary, port=port,
                         cdp_url=f"ws://127.0.0.1:{port}{path}",
                         user_data_dir=started.workdir / "profile")
