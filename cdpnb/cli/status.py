"""The CLI's exit statuses, documented in ``--help`` and the README."""

from __future__ import annotations

__all__ = ["EXIT_STATUSES", "FAILED", "INTERRUPTED", "OK", "SURPRISES", "USAGE"]

OK = 0
FAILED = 1
USAGE = 2
SURPRISES = 3
INTERRUPTED = 130

EXIT_STATUSES = {
    OK: "done: every backend was probed (record/replay: stopped by Ctrl-C, SIGTERM "
        "or --duration)",
    FAILED: "a backend could not be probed (not installed, nothing listening, no CDP), "
            "a file or endpoint could not be used, or campaign cells failed every attempt",
    USAGE: "usage error (unknown option or backend, bad value)",
    SURPRISES: "--strict, and a result differs from what the measured facts predict",
    INTERRUPTED: "probe or campaign interrupted by Ctrl-C",
}
