"""Filter for ``pip install``'s output (stdout and stderr merged) in scripts/setup.sh.

pip is silent with ``-q`` for the minute or two of a first install, and without it
prints a line per requirement, most past 80 columns. This prints what pip is doing in
lines that fit 80 columns: on a terminal one status line rewritten in place (the
package being collected, then "installing N packages"); elsewhere (CI, a pipe) a line
per phase. A line it does not recognise (an error, a warning) is printed as pip wrote
it, never cut: nothing pip has to say is hidden, except one warning this machine's pip
configuration makes pip repeat for every project, counted in one line at the end.
Standard library only: it runs with the virtualenv's Python before anything is
installed in it.
"""

from __future__ import annotations

import re
import shutil
import sys
from typing import TextIO

#: The widest line this prints (what a terminal at 80 columns shows whole).
WIDTH = 80
PREFIX = "setup: pip: "
#: From this many packages on, installing them takes a while with nothing to show (a
#: first install of cdpnb[dev,lab] here: 158 packages, 73 s for the whole pip step).
SLOW_INSTALL = 20

#: pip's own progress lines, by phase, matched at the line's start (as pip 23.2.1 writes
#: them, the pip of a fresh Python 3.11 venv; a line it does not match is printed whole).
_PHASES = (
    ("preparing", re.compile(r"\s*(Obtaining file:|Installing build dependencies|Checking if "
                             r"build backend|Getting requirements to build|Preparing "
                             r"(editable )?metadata|Looking in (indexes|links):)")),
    ("collecting", re.compile(r"\s*(Collecting|Requirement already satisfied:|Obtaining "
                              r"dependency information for|Using cached|Downloading|"
                              r"Processing|Ignoring)\s*(?P<what>\S*)")),
    ("building", re.compile(r"\s*(Building wheels? for|Building editable for|Created wheel "
                            r"for|Stored in directory:|Successfully built)")),
    ("installing", re.compile(r"\s*(Installing collected packages:|Attempting uninstall:|"
                              r"Found existing installation:|Uninstalling |Successfully "
                              r"uninstalled )")),
)
_ORDER = [phase for phase, _ in _PHASES]
_INSTALLING = "Installing collected packages:"
#: What pip says of each project it looks up in an index location of its configuration
#: that does not exist (here ``extra-index-url = file:///opt/pypi/simple
#: file:///opt/pypi-more/simple``: 173 such lines in a first install of cdpnb[dev,lab]).
#: pip 23.2.1 writes each on one line of ≈110 columns (not wrapped, measured also with
#: COLUMNS=60), which a terminal of 80 columns shows on two. It says nothing of cdpnb's
#: install: folded into one counted line (``Status.finish``).
_IGNORED_LOCATION = re.compile(r"WARNING: Location '[^']*' is ignored: it is neither a file "
                               r"nor a directory\.")
_INSTALLED = "Successfully installed "


def _fit(text: str, width: int = WIDTH) -> str:
    """``text`` cut at a space so it fits ``width`` (a status line: no token is cut)."""
    if len(text) <= width:
        return text
    cut = text.rfind(" ", 0, width - 1)
    return (text[:cut] if cut > 0 else text[:width - 1]) + "…"


def _packages(count: int) -> str:
    return f"{count} package" + ("" if count == 1 else "s")


class Status:
    """What pip is doing, shown on ``out``: in place on a terminal, a line per phase."""

    def __init__(self, out: TextIO, live: bool) -> None:
        self.out = out
        self.live = live
        self.width = min(WIDTH, shutil.get_terminal_size((WIDTH, 24)).columns) - 1
        self.phase = ""
        self.collected = 0
        self.shown = False  # a status line is on screen (live only)
        self.ignored_locations = 0  # _IGNORED_LOCATION lines, said once by finish()

    def _show(self, text: str) -> None:
        if self.live:
            self.out.write("\r\033[K" + _fit(text, self.width))
            self.shown = True
        else:
            self.out.write(_fit(text) + "\n")
        self.out.flush()

    def clear(self) -> None:
        if self.shown:
            self.out.write("\r\033[K")
            self.out.flush()
            self.shown = False

    def finish(self) -> None:
        """pip is done: the status line cleared, and the folded warnings counted."""
        self.clear()
        count = self.ignored_locations
        if count:
            locations = "index location" + ("" if count == 1 else "s")
            self.out.write(f"{PREFIX}{count} {locations} of this machine's pip "
                           "configuration ignored\n")
            self.out.flush()

    def line(self, raw: str) -> None:
        text = raw.rstrip("\r\n")
        if _IGNORED_LOCATION.fullmatch(text):
            self.ignored_locations += 1
            return
        if text.startswith(_INSTALLED):
            self.clear()
            names = text[len(_INSTALLED):].split()
            listed = " ".join(names) if len(names) <= 3 else _packages(len(names))
            self.out.write(_fit(f"{PREFIX}installed {listed}") + "\n")
            self.out.flush()
            return
        for phase, pattern in _PHASES:
            found = pattern.match(text)
            if found is None:
                continue
            if phase == "collecting":
                self.collected += text.lstrip().startswith(("Collecting", "Processing",
                                                            "Requirement already"))
                if self.live:
                    what = found.group("what").rstrip(",:")
                    if what.endswith((".whl", ".metadata", ".tar.gz", ".zip")):  # a file
                        what = what.rsplit("/", 1)[-1].split("-", 1)[0]  # (its project)
                    shown = f"{PREFIX}collecting {what} ({self.collected} so far)"
                    if len(shown) > self.width:  # (a name too long to show whole)
                        shown = f"{PREFIX}collecting ({self.collected} so far)"
                    self._show(shown)
            if text.lstrip().startswith(_INSTALLING):
                count = len(text.split(":", 1)[1].split(","))
                self.phase = phase
                slow = " (the slow part)" if count >= SLOW_INSTALL else ""
                self._show(f"{PREFIX}installing {_packages(count)}{slow}…")
            elif _ORDER.index(phase) > _ORDER.index(self.phase or _ORDER[0]) or not self.phase:
                # (forward only: a build dependency's resolution collects before the
                # project's metadata is ready, and a line back and forth says nothing)
                self.phase = phase
                if not (self.live and phase == "collecting"):
                    self._show(f"{PREFIX}{phase}…")
            return
        # Not progress (an error, a warning, a notice): as pip wrote it.
        self.clear()
        self.out.write(text + "\n")
        self.out.flush()


def main() -> int:
    status = Status(sys.stdout, sys.stdout.isatty())
    for raw in sys.stdin:
        status.line(raw)
    status.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
