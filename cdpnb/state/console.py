"""Console reducer: console.error calls, uncaught exceptions and the browser's own error
messages, in a ring buffer.

Three CDP events feed it: ``Runtime.consoleAPICalled`` (the page's ``console.*``),
``Runtime.exceptionThrown`` and ``Log.entryAdded`` (what the browser itself reports:
a frame refused by ``X-Frame-Options``, a failed resource load, a CSP violation, an
intervention; ``kind="browser"`` with its ``source``). Measured on Chromium 156 and
headless-shell 156 with Runtime and Log both enabled: a ``console.error('x')``, a
``console.warn`` and an uncaught exception each come once, through Runtime only; Log
carries only the browser's messages, so nothing is counted twice. The refusal of an
``X-Frame-Options: deny`` cross-site frame comes on the frame's own (OOPIF) session:
``{source: "other", level: "error", url: "chrome-error://chromewebdata/", text:
"Refused to display '<origin>/' in a frame because it set 'X-Frame-Options' to
'deny'."}``.

WebDriver BiDi's ``log.entryAdded`` (``cdpnb.state.bidi``) says ``type: "console"`` or
``"javascript"``; Firefox (153 ESR) reports its own messages (the X-Frame-Options
refusal, a CSP violation) as ``javascript`` entries too, level error, with no stack
trace, so :func:`bidi_entry_kind` tells them from uncaught exceptions.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from cdpnb.protocol import Event
from cdpnb.state.changes import Change, ConsoleError
from cdpnb.state.models import BrowserState, ConsoleEntry

__all__ = ["CONSOLE_ERRORS_KEPT", "MAX_TEXT", "append_entry", "bidi_entry_kind", "log_entry"]

Out = list[Change]

CONSOLE_ERRORS_KEPT = 50
#: Console text is page-controlled; keep an entry bounded however much a page logs.
MAX_TEXT = 2000


def _describe(arg: dict[str, Any]) -> str:
    if "value" in arg:
        value = arg["value"]
        return value if isinstance(value, str) else repr(value)
    return str(arg.get("unserializableValue") or arg.get("description") or arg.get("type", ""))


def append_entry(state: BrowserState, entry: ConsoleEntry, out: Out) -> BrowserState:
    out.append(ConsoleError(entry))
    kept = (*state.console_errors, entry)[-CONSOLE_ERRORS_KEPT:]
    return state.evolve(console_errors=kept, console_errors_total=state.console_errors_total + 1)


def console_api_called(state: BrowserState, msg: Event, out: Out) -> BrowserState:
    level = msg.params["type"]
    if not isinstance(level, str):
        raise ValueError(f"console type must be a string, got {level!r}")
    if level not in ("error", "assert"):
        return state
    args = msg.params.get("args") or []
    text = " ".join(_describe(a) for a in args if isinstance(a, dict))
    frames = (msg.params.get("stackTrace") or {}).get("callFrames") or [{}]
    top = frames[0] if isinstance(frames[0], dict) else {}
    return append_entry(
        state,
        ConsoleEntry(
            kind="console",
            level=str(level),
            text=text[:MAX_TEXT],
            url=str(top.get("url", "")),
            line=top.get("lineNumber"),
            column=top.get("columnNumber"),
            session_id=msg.session_id,
            at=msg.wall,
        ),
        out,
    )


def exception_thrown(state: BrowserState, msg: Event, out: Out) -> BrowserState:
    details = msg.params["exceptionDetails"]
    exc = details.get("exception") or {}
    text = str(exc.get("description") or details.get("text") or "exception")
    return append_entry(
        state,
        ConsoleEntry(
            kind="exception",
            level="error",
            text=text[:MAX_TEXT],
            url=str(details.get("url", "")),
            line=details.get("lineNumber"),
            column=details.get("columnNumber"),
            session_id=msg.session_id,
            at=msg.wall,
        ),
        out,
    )


# -- the browser's own messages --------------------------------------------------------


def log_entry(params: Mapping[str, Any]) -> tuple[str, str, str, str, int | None]:
    """``Log.entryAdded``'s ``(level, source, text, url, line)``: the entry's own
    ``url`` and ``lineNumber``, else its stack trace's top frame (a violation may carry
    only the stack). Raises ``KeyError`` / ``ValueError`` on a malformed entry."""
    entry = params["entry"]
    if not isinstance(entry, dict):
        raise ValueError(f"Log.entryAdded entry must be an object, got {entry!r}")
    level, source, text = entry["level"], entry.get("source", ""), entry.get("text", "")
    if not isinstance(level, str) or not isinstance(source, str) or not isinstance(text, str):
        raise ValueError("Log.entryAdded level, source and text must be strings")
    stack = entry.get("stackTrace")
    frames = stack.get("callFrames") if isinstance(stack, dict) else None
    top = frames[0] if isinstance(frames, list) and frames and isinstance(frames[0], dict) \
        else {}
    url = entry.get("url") or top.get("url") or ""
    line = entry.get("lineNumber", top.get("lineNumber"))
    if not isinstance(line, int) or isinstance(line, bool):
        line = None
    return level, source, text, str(url), line


def log_entry_added(state: BrowserState, msg: Event, out: Out) -> BrowserState:
    """CDP ``Log.entryAdded`` at level error: a message of the browser's own."""
    level, source, text, url, line = log_entry(msg.params)
    if level != "error":
        return state
    return append_entry(state, ConsoleEntry(
        kind="browser", level=level, text=text[:MAX_TEXT], url=url, line=line,
        source=source or None, session_id=msg.session_id, at=msg.wall), out)


#: How an uncaught exception's text begins in a BiDi ``javascript`` log entry: its
#: error's name (``Error: m``, ``SyntaxError: m``, ``DOMException: m``) or, for a thrown
#: value that is no Error, Firefox's ``uncaught exception: v``.
_EXCEPTION_TEXT = re.compile(r"(?:uncaught exception|[A-Za-z_$][\w$]*): ")


def bidi_entry_kind(params: Mapping[str, Any]) -> Literal["console", "exception", "browser"]:
    """The ``ConsoleEntry.kind`` of a WebDriver BiDi ``log.entryAdded``.

    ``type: "console"`` is a console call. ``type: "javascript"`` is an uncaught
    exception or, in Firefox, a message of the browser's own: BiDi does not say which.
    Measured on Firefox 153 ESR: its browser messages (``The loading of “…” in a frame is
    denied by “X-Frame-Options“ directive set to “deny“.``, ``Content-Security-Policy:
    The page’s settings blocked …``) have no stack trace and no error name before their
    first colon; an uncaught exception has a stack trace, or (a syntax error, an
    unhandled rejection: no stack) its error's name or ``uncaught exception:`` first.
    chromium-bidi 17 sends exceptions only (every one with its error's text), never the
    browser's messages. Any other type is the browser's."""
    kind = params.get("type")
    if kind == "console":
        return "console"
    if kind == "javascript":
        stack = params.get("stackTrace")
        text = params.get("text")
        if (isinstance(stack, dict) and stack.get("callFrames")) or not isinstance(text, str) \
                or _EXCEPTION_TEXT.match(text):
            return "exception"
    return "browser"
