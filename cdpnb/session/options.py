"""Validated supervisor options: bad arguments fail early and name themselves."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

__all__ = ["FIRST", "MAX_TIMEOUT_S", "NEW", "PAGE_CHOICES", "POLICIES", "Policy",
           "SupervisorOptions", "check_page", "check_timeout"]

Policy = Literal["must_respond", "auto_dismiss", "auto_accept"]
POLICIES: tuple[str, ...] = ("must_respond", "auto_dismiss", "auto_accept")
#: ``page=``: the supervisor creates its page (``"new"``), or attaches to the first
#: page the browser has (``"first"``); any other string is a page's target id.
#: ``start(page=...)``: a page of cdpnb's own, or the first the browser has.
NEW = "new"
FIRST = "first"
PAGE_CHOICES: tuple[str, ...] = (NEW, FIRST)
#: The longest budget any timeout of cdpnb takes, in seconds (an hour). Timeouts are in
#: seconds, Playwright's and Puppeteer's in milliseconds: ``timeout=30000`` meant as 30 s
#: would be an 8-hour wait, so it is refused, naming the seconds it meant.
MAX_TIMEOUT_S = 3600.0


def check_timeout(name: str, value: object, *, allow_none: bool = False) -> float | None:
    """A positive finite number of seconds up to ``MAX_TIMEOUT_S``, or a
    ValueError/TypeError naming ``name``.

    >>> check_timeout("timeout", 30000)
    Traceback (most recent call last):
    ...
    ValueError: timeout is in seconds: 30000 s is over 8 hours; did you mean 30? ...
    """
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number of seconds, got {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive number of seconds, got {value!r}")
    if value > MAX_TIMEOUT_S:
        hours = int(value // 3600)
        raise ValueError(f"{name} is in seconds: {value:g} s is over {hours} "
                         f"hour{'s' if hours != 1 else ''}; did you mean {value / 1000:g}? "
                         f"(the most is {MAX_TIMEOUT_S:g} s)")
    return float(value)


def check_page(value: object) -> str:
    """``"new"``, ``"first"`` or a page's target id (a browsing context id over
    WebDriver BiDi), or a TypeError/ValueError naming ``page``."""
    if not isinstance(value, str):
        raise TypeError(f"page must be 'new', 'first' or a page's target id (a str), "
                        f"got {value!r}")
    if not value or value != value.strip() or not value.isprintable():
        raise ValueError(f"page must be 'new', 'first' or a page's target id, got {value!r}")
    return value


@dataclass(frozen=True)
class SupervisorOptions:
    policy: Policy = "must_respond"
    dialog_timeout_s: float = 300.0
    command_timeout_s: float = 30.0
    connect_timeout_s: float = 10.0
    reconnect_attempts: int = 3
    reconnect_backoff_s: float = 0.25
    bridge: bool | Literal["auto"] = "auto"
    bypass_csp: bool = False
    popups: bool = True
    reopen_page: bool = False
    page: str = "new"

    def __post_init__(self) -> None:
        if self.policy not in POLICIES:
            raise ValueError(f"policy must be one of {', '.join(POLICIES)}; got {self.policy!r}")
        check_timeout("dialog_timeout_s", self.dialog_timeout_s)
        check_timeout("command_timeout_s", self.command_timeout_s)
        check_timeout("connect_timeout_s", self.connect_timeout_s)
        check_timeout("reconnect_backoff_s", self.reconnect_backoff_s)
        if self.bridge not in (True, False, "auto"):
            raise ValueError(f"bridge must be True, False or 'auto', got {self.bridge!r}")
        if not isinstance(self.bypass_csp, bool):
            raise TypeError(f"bypass_csp must be True or False, got {self.bypass_csp!r}")
        attempts = self.reconnect_attempts
        if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 0:
            raise ValueError(f"reconnect_attempts must be an int >= 0, got {attempts!r}")
        check_page(self.page)
