"""An X server of cdpnb's own (Xvfb) for a browser with no headless mode.

WebKitGTK's MiniBrowser (2.50) has no headless mode: with no display,
WebKitWebDriver's ``POST /session`` never answers (measured). So the ``webkit``
backend runs it under an Xvfb cdpnb starts: on a display number Xvfb finds free
itself (``-displayfd``: it writes the number once it accepts clients, 0.3 s here),
reachable through its local socket only (``-nolisten tcp``), in a process group and
work dir of its own, ended by its pid, and by its reaper if this Python dies first.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from cdpnb.backends.process import Executable, LocalProcess, found_binary, spawn
from cdpnb.errors import BrowserNotFound

__all__ = ["PACKAGE", "XvfbProcess", "find_xvfb"]

PACKAGE = "xvfb"
ENV_VAR = "CDPNB_XVFB"
_CANDIDATES = ("/usr/bin/Xvfb", "Xvfb")
#: ``-displayfd 1``: the display number, alone on a line of the server's output.
_DISPLAY = re.compile(rb"^(\d+)\n", re.MULTILINE)
#: Big enough for a desktop page; 24-bit, as browsers expect.
SCREEN = "1280x1024x24"


def find_xvfb(executable: str | os.PathLike[str] | None = None) -> str:
    """Xvfb: ``executable``, ``$CDPNB_XVFB``, or Debian's; BrowserNotFound naming the
    package when there is none."""
    found = found_binary(executable, ENV_VAR, _CANDIDATES)
    if found is not None:
        return found
    raise BrowserNotFound(f"no Xvfb found (looked for {', '.join(_CANDIDATES)}); install it "
                          f"with `apt-get install {PACKAGE}`, or set {ENV_VAR}")


@dataclass(kw_only=True)
class XvfbProcess(LocalProcess):
    """A running Xvfb: ``display`` is what ``DISPLAY`` must say (``":3"``). It serves no
    DevTools endpoint: ``cdp_url`` is empty and ``port`` 0."""

    display: str

    @classmethod
    def start(cls, executable: Executable = None, timeout: float = 20.0) -> XvfbProcess:
        binary = find_xvfb(executable)

        def build_args(workdir: Path) -> tuple[str, ...]:
            # Its output goes to the work dir's log (spawn): fd 1 is that file.
            return (binary, "-displayfd", "1", "-nolisten", "tcp", "-screen", "0", SCREEN)

        def display(log_path: Path) -> str | None:
            found = _DISPLAY.search(log_path.read_bytes())
            return None if found is None else f":{found[1].decode()}"

        started = spawn("xvfb", binary, build_args, display,
                        "its display number on stdout (-displayfd 1)", timeout)
        return cls.adopt(started, kind="xvfb", executable=binary, port=0, cdp_url="",
                         display=started.ready)
