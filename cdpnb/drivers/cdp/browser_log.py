"""The browser's own console messages over CDP: the ``Log`` domain on each frame host.

A page's ``console.*`` calls come as ``Runtime.consoleAPICalled``; what the browser
itself reports (a frame refused by ``X-Frame-Options``, a resource that failed to
load, a CSP violation, an intervention or deprecation) comes only as
``Log.entryAdded``, once ``Log.enable`` is on that session. The console reducer
(``cdpnb.state.console``) folds both into ``console_errors``.

``Log.enable`` goes out with the other enables of a session (gathered, no round trip of
its own) and may fail without failing the attach: the console of the browser is worth
less than the session. An endpoint without the domain answers -32601, which the
reducers record in ``state.unsupported``; a replay of a recording made before cdpnb
asked for it answers that the recording has no reply.

Measured on headless-shell 156: ``Log.enable`` reports the messages the page had logged
before it (a second session attached to the page gets its earlier 404 at once), as
``Runtime.enable`` does with console calls. So a message logged before a session was set
up is not missed; after a reconnect, earlier ones come again, console calls and the
browser's alike.
"""

from __future__ import annotations

import logging

from cdpnb.errors import CDPError
from cdpnb.session.core import Core

__all__ = ["LOG_ENABLE", "enable_browser_log"]

log = logging.getLogger("cdpnb.supervisor")

LOG_ENABLE = "Log.enable"


async def enable_browser_log(core: Core, session_id: str | None) -> None:
    """``Log.enable`` on ``session_id``; a refusal is counted (``sup.stats``:
    ``log-enable-refused``, by the fold from the error reply) and logged at INFO, never
    raised. A session that went (``TargetGone``), a timeout or a lost connection are
    raised: the enables gathered beside it meet them too."""
    try:
        await core.send(LOG_ENABLE, session_id=session_id)
    except CDPError as exc:
        log.info("cdpnb: %s refused on session %s (browser console messages will not be "
                 "seen there): %s", LOG_ENABLE, session_id, exc)
