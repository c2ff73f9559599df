"""npm ``puppeteer-core`` attached to cdpnb's Chromium with no dialog handler, in a
node process of its own: the client in front that leaves dialogs alone.

``js/puppeteer_attach.mjs`` runs ``puppeteer.connect({browserURL})`` and stays
attached until it is ended. Measured with puppeteer-core 25.16.0 over Chromium 156
(on node 20.20, although its package.json asks for node >= 22.12: ``connect`` and
everything it does at attach time works): Puppeteer auto-attaches to every target,
also to pages other clients create later, and with no ``dialog`` listener it never
answers a native dialog, so a supervisor beside it sees and answers dialogs as on
plain Chromium.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from cdpnb.backends import npm
from cdpnb.backends.node import find_node
from cdpnb.backends.process import LocalProcess, read_output, spawn, uncoloured

__all__ = ["PACKAGES", "PuppeteerProcess"]

PACKAGES = ("puppeteer-core",)
SCRIPT = npm.SCRIPTS / "puppeteer_attach.mjs"

_ATTACHED = re.compile(rb"cdpnb: puppeteer-core (\S+) attached to (ws://\S+)")


@dataclass(kw_only=True)
class PuppeteerProcess(LocalProcess):
    """The node process holding Puppeteer's connection; ``cdp_url`` is the browser
    endpoint it attached to. ``close()`` ends it by its pid (it disconnects; the
    browser is not its to close)."""

    puppeteer_version: str

    @classmethod
    def attach(cls, http_url: str, port: int, timeout: float = 20.0) -> PuppeteerProcess:
        """Start node, attach Puppeteer to the browser at ``http_url`` and wait until it
        says so (blocking; at most ``timeout`` s)."""
        modules = npm.require(PACKAGES)
        node = find_node()

        def build_args(workdir: Path) -> tuple[str, ...]:
            return (node, str(SCRIPT), str(modules), http_url, str(os.getpid()))

        def attached(log_path: Path) -> tuple[str, str] | None:
            found = _ATTACHED.search(read_output(log_path))
            return None if found is None else (found[1].decode(), found[2].decode())

        # Colour off as for node itself (the line is the script's own, plain text).
        env = uncoloured({k: v for k, v in os.environ.items() if k != "NODE_OPTIONS"})
        started = spawn("puppeteer", node, build_args, attached,
                        "'cdpnb: puppeteer-core … attached' on stdout", timeout, env)
        version, ws_url = started.ready
        return cls.adopt(started, kind="puppeteer", executable=node, port=port,
                         cdp_url=ws_url, puppeteer_version=version)
