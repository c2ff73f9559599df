"""At ``stop()`` of a supervisor that adopted a page: the dialogs open in the pages left
open are dismissed (nobody could answer them afterwards)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable

from cdpnb.errors import CdpnbError
from cdpnb.runtime.waits import wait_for
from cdpnb.state import BrowserState
from cdpnb.supervisor.dialogs import DialogControl

__all__ = ["LET_GO_TIMEOUT_S", "let_go_of_dialogs"]


#: How long stop() gives each dismissal of a dialog in a page it leaves open.
LET_GO_TIMEOUT_S = 2.0


async def let_go_of_dialogs(state: BrowserState, dialogs: DialogControl,
                            left: Iterable[str]) -> int:
    """Dismiss the open dialogs of the pages in ``left`` (target ids) before the
    supervisor lets go of them (``closed_by="cdpnb"``, ``reason="detached"``): a dialog
    its session held stays open on chromium after the session goes, and no client
    attached later can answer it (measured). Returns how many were dismissed."""
    targets = set(left)
    sessions = {p.session_id for p in state.pages.values() if p.target_id in targets}
    doomed = [d for d in state.pending_dialogs
              if d.page_session_id in sessions and d.answerable and d.answering is None]
    dismissed = 0
    for dialog in doomed:
        with contextlib.suppress(CdpnbError, TimeoutError):
            await wait_for(dialogs.answer(dialog, False, None, "cdpnb", reason="detached"),
                           LET_GO_TIMEOUT_S)
            dismissed += 1
    return dismissed
