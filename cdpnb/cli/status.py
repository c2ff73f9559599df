"""The CLI's exit statuses, documented in ``--help`` (each command's own, in its
words: :data:`COMMAND_STATUSES`) and the README (:data:`EXIT_STATUSES`)."""

from __future__ import annotations

__all__ = ["COMMAND_STATUSES", "DIVERGED", "EXIT_STATUSES", "FAILED", "INTERRUPTED", "OK",
           "SURPRISES", "USAGE"]

OK = 0
FAILED = 1
USAGE = 2
SURPRISES = 3
DIVERGED = 4
INTERRUPTED = 130

_USAGE = "usage error (unknown option, bad value)"
_STRICT = "--strict, and a result differs from what the measured facts predict"

#: Each command's exit statuses in its own words: its ``-h`` lists these and no other
#: (``tests/test_cli_conventions.py`` drives every one of them). Ctrl-C is how
#: ``record`` and ``replay`` end (0); ``probe``, ``compare`` and ``campaign`` say 130.
COMMAND_STATUSES: dict[str, dict[int, str]] = {
    "probe": {
        OK: "every backend was probed",
        FAILED: "a backend could not be probed, even on a second attempt (not "
                "installed, nothing listening, no CDP or BiDi, no reply within the "
                "budgets: the line under the matrix says how to try again), no backend "
                "is installed and no recorded probe found, or --out cannot be written",
        USAGE: "usage error (unknown option or backend, bad value)",
        SURPRISES: _STRICT,
        INTERRUPTED: "interrupted by Ctrl-C: prints the matrix of the checks that "
                     "finished, marked partial (— not run)",
    },
    "record": {
        OK: "stopped by Ctrl-C, SIGTERM or --duration, and the trace holds every "
            "message recorded",
        FAILED: "the browser could not be launched or reached, the page could not "
                "load, or the trace could not be written (the message says how many "
                "messages the trace holds)",
        USAGE: "usage error (a URL, endpoint, file name or value it cannot use)",
    },
    "replay": {
        OK: "stopped by Ctrl-C, SIGTERM or --duration",
        FAILED: "the trace could not be read or served",
        USAGE: _USAGE,
    },
    "proxy": {
        OK: "stopped by Ctrl-C, SIGTERM or --duration (with --replay: every command a "
            "client sent was in the recording)",
        FAILED: "the browser could not be launched or reached, or the recording could "
                "not be read or written",
        USAGE: "usage error (a bad fault rule, option or value)",
        DIVERGED: "--replay: a client sent a command the recording has no answer for "
                  "(the first divergence is printed)",
    },
    "matrix": {
        OK: "shown: every backend in the result was probed, or the result is partial "
            "(an interrupted probe's probe.partial.json, which says so above the matrix)",
        FAILED: "the result could not be read, or a backend in it could not be probed",
        USAGE: _USAGE,
        SURPRISES: _STRICT,
    },
    "compare": {
        OK: "compared (a trace cut short is compared as far as it goes, with a warning)",
        FAILED: "a trace could not be read",
        USAGE: "usage error (fewer than two traces, one given twice, unknown option)",
        INTERRUPTED: "interrupted by Ctrl-C",
    },
    "campaign": {
        OK: "every cell ran, or was already in --out",
        FAILED: "cells failed every attempt (listed), no backend is installed, the "
                "campaign could not run (a scheduler not reached, --out not writable), "
                "or --compare names a backend with no cells in it",
        USAGE: "usage error (unknown option, backend or scenario, bad value)",
        INTERRUPTED: "interrupted by Ctrl-C: the cells that finished are kept in --out, "
                     "and the same command resumes",
    },
    "report": {
        OK: "the report was written to --out",
        FAILED: "a result could not be read, or --out could not be written",
        USAGE: "usage error (no result, no --out, --out a folder, a result given twice, "
               "unknown option)",
    },
}

#: Every status of every command, short: ``cdpnb -h`` and the README's table.
EXIT_STATUSES = {
    OK: "done (record, replay, proxy: stopped by Ctrl-C, SIGTERM or --duration)",
    FAILED: "failed: a backend could not be probed, a page could not load, a file or "
            "endpoint could not be used, campaign cells failed every attempt",
    USAGE: "usage error (unknown option or backend, bad value)",
    SURPRISES: _STRICT + " (probe, matrix)",
    DIVERGED: "a replayed client left its recording (proxy --replay)",
    INTERRUPTED: "interrupted by Ctrl-C (probe: prints the partial matrix; campaign: "
                 "keeps its cells, the same command resumes)",
}
