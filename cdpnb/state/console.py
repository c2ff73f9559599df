"""Console reducer: console.error calls and uncaught exceptions, in a ring buffer."""

from __future__ import annotations

from typing import Any

from cdpnb.protocol import Event
from cdpnb.state.changes import Change, ConsoleError
from cdpnb.state.models import BrowserState, ConsoleEntry

__all__ = ["CONSOLE_ERRORS_KEPT", "MAX_TEXT", "append_entry"]

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
