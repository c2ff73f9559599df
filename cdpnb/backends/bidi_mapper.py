"""chromium-bidi's server (the WebDriver BiDi mapper Puppeteer uses) over Debian
Chromium, bound to loopback: ``cdpnb.launch("chromium+bidi")``.

cdpnb runs the server through its own wrapper, ``js/bidi_server.mjs`` (its comments
say what it changes and why). Measured with chromium-bidi 17.0.2 over Chromium 156:

- The server needs two of chromium-bidi's *dev* dependencies (``websocket`` and
  ``@puppeteer/browsers``), pinned in package.json, and listens on every interface
  unless wrapped; wrapped, ``ss -ltnp`` shows node on 127.0.0.1:PORT alone, and the
  Chromiums it starts listen on nothing (CDP goes over ``--remote-debugging-pipe``).
- It serves WebSocket connections on any path (``ws://127.0.0.1:PORT/session``
  is cdpnb's ``url``). No browser runs until a client sends ``session.new``; then
  each connection gets a Chromium of its own (≈0.4–0.5 s for ``session.new``), ended
  when that connection closes.
- ``session.new`` replies ``sessionId: "unknown"``, ``browserName:
  "Chrome/156.0.8078.79"`` and ``browserVersion: "@<revision>"`` (name and version
  swapped, the version a revision).
- A session created without ``unhandledPromptBehavior`` dismisses every dialog in
  every tab the moment it opens (``userPromptOpened`` with ``handler: "dismiss"``,
  then ``userPromptClosed {accepted: false}``; ``handleUserPrompt`` then fails with
  "no such alert"; chromium-bidi#3281). With ``{default: "ignore", beforeUnload:
  "ignore"}`` the dialog stays open (``handler: "ignore"``) until
  ``browsingContext.handleUserPrompt`` answers it.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from cdpnb.backends import npm
from cdpnb.backends.chromium import (
    CHROMIUM_FLAGS,
    chromium_version,
    find_executable,
    merged_flags,
)
from cdpnb.backends.node import find_node
from cdpnb.backends.process import Executable, LocalProcess, port_in_output, spawn, uncoloured

__all__ = ["BIDI_CHROMIUM_FLAGS", "PACKAGES", "ChromiumBidiProcess"]

#: What the wrapper needs from node_modules: the server and the dev dependencies it
#: imports.
PACKAGES = ("chromium-bidi", "websocket", "@puppeteer/browsers")
SCRIPT = npm.SCRIPTS / "bidi_server.mjs"

#: The flags of kind ``chromium`` (headless, --no-sandbox as root, no background
#: networking, sites isolated), less its DevTools port: the mapper talks to the
#: browser over a pipe, and a port would be a second, unsupervised way in.
BIDI_CHROMIUM_FLAGS = tuple(f for f in CHROMIUM_FLAGS if not f.startswith("--remote-debugging-"))

_LISTENING = re.compile(rb"cdpnb: chromium-bidi listening on ws://127\.0\.0\.1:(\d+)/session")


@dataclass(kw_only=True)
class ChromiumBidiProcess(LocalProcess):
    """The node process serving chromium-bidi; the Chromiums it launches run in its
    process group, so ending it (or its reaper) ends them too."""

    browser_executable: str
    chromium_bidi_version: str

    @classmethod
    def start(cls, executable: Executable = None, extra_args: tuple[str, ...] = (),
              timeout: float = 20.0) -> ChromiumBidiProcess:
        browser = find_executable("chromium", executable)
        modules = npm.require(PACKAGES)
        node = find_node()
        flags = merged_flags(list(BIDI_CHROMIUM_FLAGS), extra_args)

        def build_args(workdir: Path) -> tuple[str, ...]:
            return (node, str(SCRIPT), str(modules), str(workdir), str(os.getpid()),
                    json.dumps(flags))

        # NODE_OPTIONS from the caller's environment would change what runs here.
        # Colour off as for node itself (the line is the script's own, plain text).
        env = uncoloured({k: v for k, v in os.environ.items() if k != "NODE_OPTIONS"})
        env["BROWSER_BIN"] = browser
        started = spawn("chromium+bidi", node, build_args, port_in_output(_LISTENING),
                        "'cdpnb: chromium-bidi listening on ws://127.0.0.1:…' on stderr",
                        timeout, env, on_ram=True)  # (the Chromiums' profiles are in it)
        port = started.ready
        process = cls.adopt(started, kind="chromium+bidi", executable=node, port=port,
                            cdp_url=f"ws://127.0.0.1:{port}/session", protocol="bidi",
                            browser_executable=browser,
                            chromium_bidi_version=npm.package_version("chromium-bidi") or "?")
        with process.closed_on_failure():
            # From the binary: no session.new either, each one launches a Chromium.
            process.version_info = {"Browser": chromium_version(browser),
                                    "chromium-bidi": process.chromium_bidi_version,
                                    "Protocol": "WebDriver BiDi", "webSocketUrl": process.cdp_url}
        return process
