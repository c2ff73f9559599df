"""One deadline for a whole call, and the share of it an in-page timeout leaves for its
reply (every driver's evaluate, click and wait is given one ``Budget``)."""

from __future__ import annotations

import time

__all__ = ["HEADROOM_S", "REPLY_SHARE", "Budget", "reply_margin"]

#: How long past the budget the cleanup (terminateExecution) may take.
HEADROOM_S = 0.5
#: The share of what is left of a budget that the in-page timeout leaves for its reply
#: to come back in (at most ``HEADROOM_S``): see :func:`reply_margin`.
REPLY_SHARE = 0.2


class Budget:
    """One deadline for a whole call: context wait, reply wait, retries."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.started = time.monotonic()
        self.deadline = self.started + seconds

    def left(self) -> float:
        return max(0.0, self.deadline - time.monotonic())

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def in_page_ms(self) -> int:
        """Runtime.evaluate's ``timeout`` for what is left, less the reply's margin
        (0 would mean "at once")."""
        left = self.left()
        return max(1, int((left - reply_margin(left)) * 1000))


def reply_margin(left: float) -> float:
    """How long before the deadline (``left`` seconds away) the in-page timeout fires,
    so that its reply comes back inside the budget: ``REPLY_SHARE`` of it, at most
    ``HEADROOM_S``.

    Measured on Chromium 156.0.8078.108 (Debian), 2 cores: the reply of an in-page
    timeout reaches cdpnb a median 7-11 ms after the timeout, but beside two to four
    CPU-bound processes over 50 ms in about 1 call in 20 (up to 170 ms), however long
    the timeout. A fixed 50 ms margin lost that race to cdpnb's own deadline there: a
    synchronous hang was then ended by a needless terminateExecution, and ``ended_by``
    changed with the machine's load. A share grows with the budget (a 2.5 s one keeps
    0.5 s, three times the worst seen); a tiny budget still leaves most of itself to
    the script.

    >>> reply_margin(0.5), reply_margin(2.5), reply_margin(30.0)
    (0.1, 0.5, 0.5)
    """
    return min(HEADROOM_S, left * REPLY_SHARE)
