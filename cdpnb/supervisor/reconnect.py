"""After a dropped connection: reconnect with backoff, resume through the driver, or
give up. Written once above the protocol drivers (each resumes in its own words).

The connection's life is folded (``cdpnb.state.connection``): the core tells
``on_lost`` only of a loss that moves it to ``lost`` (the connection in use), never of
an older generation's or of the connection an attempt opened and has not made good
(that is the attempt's business: it fails, tries again or gives up), and news that
come after the giving up do not change why the supervisor is down.

A loss whose transport (or driver) knows what died behind it (``Core.gone``: a WebDriver
server or its session gone, the browser behind a mapper exited, a runtime that exited)
is given up at once: a reconnect cannot bring it back, and over WebDriver classic it
would make a new session and a new browser on a server whose first one died. Every
loss for good is said in a hint naming what ended, on every protocol alike.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from collections.abc import Callable

from cdpnb.errors import EndpointError
from cdpnb.protocol.credentials import redact_url
from cdpnb.session.driver import SessionHeld
from cdpnb.supervisor.context import SupervisorContext

__all__ = ["Reconnector"]

log = logging.getLogger("cdpnb.supervisor")


class Reconnector:
    """One supervisor's reconnects (its methods run on the engine loop)."""

    def __init__(self, context: SupervisorContext, *, dropped: Callable[[], None],
                 down_for_good: Callable[[], None]) -> None:
        self.context = context
        self.core = context.core
        self.driver = context.driver
        self.attempts = context.options.reconnect_attempts
        self.backoff_s = context.options.reconnect_backoff_s
        self.hint = context.hint
        #: Told of each loss that is news (per-connection work ends).
        self.dropped = dropped
        #: Told once nothing more will come (no reconnect, or it gave up).
        self.down_for_good = down_for_good
        self.task: concurrent.futures.Future[None] | None = None

    @property
    def reconnecting(self) -> bool:
        return self.task is not None and not self.task.done()

    def cancel(self) -> None:
        if self.task is not None:
            self.task.cancel()

    def on_lost(self, reason: str, generation: int) -> None:
        """``Core.on_lost``: the connection in use (``generation``) ended."""
        self.dropped()
        if self.context.stopped:
            return
        if self.core.gone is not None:
            self._give_up(reason)
            return
        if self.attempts == 0:
            self._say_lost(reason)
            self.down_for_good()
            return
        target = self.core.state.page_target_id
        self.task = self.core.spawn(self._reconnect(target), name="cdpnb-reconnect")

    async def _reconnect(self, target_id: str | None) -> None:
        core = self.core
        url = redact_url(core.url)
        dropped = core.last_disconnect_reason
        last = ""
        for attempt in range(self.attempts):
            await asyncio.sleep(self.backoff_s * 2**attempt)
            if self.context.stopped:
                return
            try:
                opened = await core.connect()
                if core.protocol != self.driver.name:
                    raise EndpointError(f"{url} spoke {self.driver.name} and now speaks "
                                        f"{core.protocol}")
                await self.driver.resume(target_id, adopted=self.context.adopted_page)
            except SessionHeld as exc:
                await core.end_connection()
                self._give_up(f"{dropped}; {exc}")
                return
            except Exception as exc:  # any failure to set up: close what it opened
                log.info("cdpnb: reconnect %d to %s failed: %s: %s", attempt + 1, url,
                         type(exc).__name__, exc)
                last = f"{type(exc).__name__}: {exc}"
                await core.end_connection()  # (opened, but not set up)
                continue
            if not core.connection_ready(opened):
                # Lost again as its last reply landed: that loss is this attempt's
                # business (the core did not tell on_lost): try again.
                log.info("cdpnb: reconnect %d to %s was lost as it finished", attempt + 1, url)
                continue
            log.info("cdpnb: reconnected to %s", url)
            return
        self._give_up(f"{dropped}; gave up after {self.attempts} reconnect attempts",
                      f" (the last: {last})" if last else "")

    def _give_up(self, reason: str, detail: str = "") -> None:
        self.core.give_up(reason)
        self._say_lost(reason + detail)
        self.down_for_good()

    def _say_lost(self, reason: str) -> None:
        """The hint of a loss for good: which connection, and what ended it."""
        self.hint(f"the supervisor's {self.core.link} ended for good: {reason}. `alive` is "
                  "False; start a new supervisor (a new backend if the browser died)")
