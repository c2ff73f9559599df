"""Advice for the user: kept, and issued once as a CdpnbWarning at the user's next call,
from the user's own thread and line (so ``warnings`` filters, ``catch_warnings`` and
``pytest.warns`` work as for any warning). When a call fails and a filter turns a hint
into an error (``-W error``, pytest's ``filterwarnings = error``), the hint goes on the
call's error as a note instead of replacing it: a lost connection's ``ConnectionLost``
must not become the "ended for good" warning that explains it."""

from __future__ import annotations

import sys
import threading
import warnings
from pathlib import Path

from cdpnb.errors import CdpnbWarning
from cdpnb.runtime.engine import engine

__all__ = ["Hints"]

#: cdpnb's own source: frames there are not the user's line.
_PACKAGE = str(Path(__file__).resolve().parents[1])


def _user_stacklevel() -> int:
    """The ``stacklevel`` of the innermost frame outside cdpnb, counted from the frame
    that calls ``warnings.warn`` (that is, from ``Hints.warn_pending``)."""
    frame = sys._getframe(1)  # (warn_pending's: stacklevel 1)
    level = 1
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame = frame.f_back
        level += 1
    return level


class Hints:
    """One supervisor's hints (any thread may add one)."""

    def __init__(self) -> None:
        #: Every hint given, in order, each once.
        self.given: list[str] = []
        self._unwarned: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, text: str) -> None:
        with self._lock:
            if text in self.given:
                return
            self.given.append(text)
            self._unwarned.append(text)

    def any_saying(self, words: str) -> bool:
        with self._lock:
            return any(words in given for given in self.given)

    def warn_pending(self, failing: BaseException | None = None) -> None:
        """Issue the hints not issued yet, at the user's line. Not on the engine's
        thread (a blocking call from a thread whose loop runs, a notebook's, runs there):
        a warning there is nobody's, so they wait for the blocking face to issue them on
        the caller's thread when the call returns. ``failing``: the error the user's call
        is ending with; a hint a filter raises goes on it as a note."""
        if engine.in_engine():
            return
        with self._lock:
            pending, self._unwarned = self._unwarned, []
        if pending:
            level = _user_stacklevel()
            for text in pending:
                try:
                    warnings.warn(text, CdpnbWarning, stacklevel=level)
                except Exception:
                    if failing is None:
                        raise
                    failing.add_note(f"cdpnb hint: {text}")
