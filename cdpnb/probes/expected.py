"""What the measured facts (docs/architecture.md) predict each backend does, check by check.

A probe result that differs from this is a surprise worth a look (a new browser
version, a proxy that behaves differently), not a failure of cdpnb.
"""

from __future__ import annotations

from fnmatch import fnmatch

__all__ = ["EXPECTED", "expected_status"]

#: backend kind -> [(check name pattern, expected status)], first match wins.
EXPECTED: dict[str, list[tuple[str, str]]] = {
    "chromium": [
        ("finding.sandbox.native", "fail"),  # no allow-modals: the browser blocks it
        ("*", "ok"),
    ],
    "headless-shell": [
        ("finding.sandbox.native", "fail"),
        ("*", "ok"),
    ],
    "chromium+playwright": [
        # Playwright closes every native dialog within milliseconds.
        ("dialog.*", "partial"),
        ("finding.sandbox.native", "fail"),
        ("latency.dialog_closed", "fail"),
        ("*", "ok"),
    ],
    "node": [
        ("runtime.evaluate", "ok"),
        ("latency.command_rtt", "ok"),
        ("*", "fail"),  # no Page, Target or Fetch domain
    ],
}


def expected_status(kind: str | None, check: str) -> str | None:
    """The status the facts predict for ``check`` on ``kind``, or None if unknown."""
    for pattern, status in EXPECTED.get(kind or "", []):
        if fnmatch(check, pattern):
            return status
    return None
