"""What the controllers written once above the driver share (recovery, reconnects, page
reactions, page control): the connection, its driver, the options, the hints, and the
supervisor's own life. The ``Supervisor`` makes one and hands it to each controller, so
none takes a bundle of callbacks to read the same few facts."""

from __future__ import annotations

from dataclasses import dataclass

from cdpnb.session.core import Core
from cdpnb.session.driver import ProtocolDriver
from cdpnb.session.options import SupervisorOptions
from cdpnb.supervisor.hints import Hints

__all__ = ["SupervisorContext"]


@dataclass(eq=False)
class SupervisorContext:
    """One supervisor's connection, driver, options and hints, and whether it stopped."""

    core: Core
    driver: ProtocolDriver
    options: SupervisorOptions
    #: Advice for the user (``Supervisor.hints``; also issued as CdpnbWarning).
    hint: Hints
    #: ``stop()`` has begun (or a start failed): no reconnect, no reaction any more.
    stopped: bool = False
    #: The page cdpnb did not create (``start(page=...)``): a resume never replaces it
    #: as wedged, and ``stop()`` leaves it open.
    adopted_page: str | None = None
