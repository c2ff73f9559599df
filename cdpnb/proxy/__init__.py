"""``cdpnb proxy``: any client's CDP or WebDriver BiDi session recorded as a cdpnb trace,
raced on purpose by fault rules, and replayed to the unmodified client offline.

``cdpnb.proxy`` is this module, and calling it opens a proxy (as ``cdpnb.campaign``
runs a campaign): ``async with cdpnb.proxy(backend, record=path) as px:``.

Rooms: ``faults`` (the rules, parsed; no I/O), ``relay`` (one connection relayed,
recorded and folded; no I/O), ``server`` (the loopback endpoint: discovery rewritten,
sockets pumped through relays; ``webdriver``: a WebDriver server's HTTP side forwarded),
``running`` (the opener on both faces; the replay is ``cdpnb.playback``'s server with
loose matching and a named divergence), ``races`` (named scenarios: a real client, a
fault rule, the outcome's rate over runs).
"""

from __future__ import annotations

import inspect
import sys
from types import ModuleType
from typing import TYPE_CHECKING

from cdpnb.proxy.faults import FaultRule, FaultRuleError, parse_fault, parse_faults
from cdpnb.proxy.races import RACES, Race, RaceResult, race
from cdpnb.proxy.relay import Relay
from cdpnb.proxy.running import Proxy, proxy
from cdpnb.proxy.server import ProxyServer

__all__ = ["RACES", "FaultRule", "FaultRuleError", "Proxy", "ProxyModule", "ProxyServer",
           "Race", "RaceResult", "Relay", "parse_fault", "parse_faults", "proxy", "race"]


class ProxyModule(ModuleType):
    """The type of ``cdpnb.proxy``: a module that opens a proxy when called (a function
    cannot be the package its rooms live in; a module can be called once its type says
    how)."""

    __call__ = staticmethod(proxy)

    if TYPE_CHECKING:  # __all__ again, for ``cdpnb.proxy.<name>`` in typed code
        RACES = RACES
        FaultRule = FaultRule
        FaultRuleError = FaultRuleError
        Race = Race
        RaceResult = RaceResult
        race = staticmethod(race)
        Proxy = Proxy
        ProxyServer = ProxyServer
        Relay = Relay
        parse_fault = staticmethod(parse_fault)
        parse_faults = staticmethod(parse_faults)
        proxy = proxy


sys.modules[__name__].__class__ = ProxyModule
__signature__ = inspect.signature(proxy)
