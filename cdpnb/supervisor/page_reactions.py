"""What a supervisor does, on the engine loop, about pages opening, closing or turning
hazardous, and about a native dialog some other client closed within milliseconds."""

from __future__ import annotations

from cdpnb.playback.script import is_replay_url
from cdpnb.protocol import Message
from cdpnb.protocol.credentials import redact_url
from cdpnb.session.driver import PROTOCOL_NAMES
from cdpnb.state import Change, DialogRecord
from cdpnb.state.changes import PageClosed, PageHazard, PageOpened
from cdpnb.supervisor.context import SupervisorContext
from cdpnb.supervisor.recovery import Recovery

__all__ = ["PageReactions"]


class PageReactions:
    """Subscribed to PageHazard, PageClosed and PageOpened; told of fast remote closes."""

    CHANGES = (PageHazard, PageClosed, PageOpened)

    def __init__(self, context: SupervisorContext, recovery: Recovery) -> None:
        self.context = context
        self.core = context.core
        self.driver = context.driver
        self.recovery = recovery
        self.options = context.options
        self.hint = context.hint

    def __call__(self, message: Message, changes: tuple[Change, ...]) -> None:
        for change in changes:
            if type(change) is PageHazard:
                assert isinstance(change, PageHazard)
                self.recovery.on_hazard(change.page)
            elif type(change) is PageClosed:
                assert isinstance(change, PageClosed)
                self._page_closed(change)
            elif type(change) is PageOpened:
                assert isinstance(change, PageOpened)
                self.driver.page_opened(change.page)

    def _page_closed(self, change: PageClosed) -> None:
        if not change.page.main or change.reason not in ("closed", "requested") \
                or self.context.stopped:
            return
        asked = change.reason == "requested"  # close_page(): no advice, it was asked for
        if self.options.reopen_page:
            if not asked:
                self.hint(f"the supervisor's page {change.page.target_id} was closed by "
                          "someone else; a fresh page replaces it (reopen_page=True).")
            self.core.spawn(self.driver.open_page(), name="cdpnb-reopen-page")
        elif not asked:
            self.hint(f"the supervisor's page {change.page.target_id} was closed by someone "
                      "else; calls on it raise TargetGone (start with reopen_page=True to "
                      "get a fresh page instead).")

    def fast_remote_close(self, record: DialogRecord) -> None:
        """A native dialog closed by someone else within milliseconds: the browser's own
        closes (supersession, navigation, frame removal) are attributed to the browser
        by the reducers, so this one is an auto-dismissing client."""
        bridge = self.driver.bridge
        if bridge.enabled or is_replay_url(self.core.ws_url or ""):
            # A replay plays closes as fast as it is asked to: its timings are not a client's.
            return
        hint = (f"{record.id} ({record.type}) was closed by someone else {record.open_ms:.1f} ms "
                f"after it opened: a client on {redact_url(self.core.url)} auto-dismisses "
                "native dialogs (Playwright with no dialog handler, a cloud CDP proxy, a "
                "Selenium command that met it: Selenium dismisses a dialog its command "
                "meets).")
        if not self.driver.has_bridge:
            hint += (f" {PROTOCOL_NAMES[self.driver.name]} has no dialog bridge to answer "
                     "them first.")
        elif self.options.bridge == "auto":
            hint += " The dialog bridge is now on; dialogs from here on are answered through it."
            bridge.switch_on("fast-remote-dismissal")
        else:
            hint += " Start the supervisor with bridge=True to answer them yourself."
        if not self.hint.any_saying("auto-dismisses native dialogs"):
            self.hint(hint)
