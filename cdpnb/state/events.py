"""The events a supervisor fires, as a table from the fold's changes.

``sup.on(name, handler)`` and ``sup.events(...)`` deliver one event per change the
reducers report, named here and nowhere else, so a replayed trace (whose messages go
through the same fold) fires exactly the events the live run fired. The names follow
Playwright's and Puppeteer's page events (``dialog``, ``frameattached``,
``framenavigated``, ``framedetached``, ``console``; Playwright's context-level
``page``), made supervisor-wide: they cover every supervised page, popups included.
"""

from __future__ import annotations

from typing import Literal

from cdpnb.state.changes import (
    Change,
    ConsoleError,
    DialogClosed,
    DialogOpened,
    FrameAdded,
    FrameNavigated,
    FrameRemoved,
    FrameSwapped,
    PageClosed,
    PageOpened,
)

__all__ = ["EVENT_NAMES", "EVENT_OF", "EventName", "event_name"]

EventName = Literal["dialog", "dialogclosed", "frameattached", "framenavigated",
                    "framedetached", "frameswapped", "page", "pageclosed", "console"]

#: Which change fires which event (a change type missing here fires none).
EVENT_OF: dict[type[Change], EventName] = {
    DialogOpened: "dialog",              # a dialog opened (native, or a bridged call)
    DialogClosed: "dialogclosed",        # ... and closed: the record says by whom, why
    FrameAdded: "frameattached",
    FrameNavigated: "framenavigated",    # a new document (or a same-document move)
    FrameRemoved: "framedetached",       # reason: remove, navigated or session_gone
    FrameSwapped: "frameswapped",        # became an OOPIF or came back in-process
    PageOpened: "page",                  # the supervisor's page, a popup, a replacement
    PageClosed: "pageclosed",            # reason: closed, requested, crashed, replaced
    ConsoleError: "console",             # console.error/assert, exceptions, browser errors
}

#: Every event name, in the table's order.
EVENT_NAMES: tuple[EventName, ...] = tuple(dict.fromkeys(EVENT_OF.values()))


def event_name(change: Change) -> EventName | None:
    """The event ``change`` fires, or None."""
    return EVENT_OF.get(type(change))
