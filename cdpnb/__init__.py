"""cdpnb: a notebook-first research library for browser debugging protocols (the
Chrome DevTools Protocol, WebDriver BiDi, WebDriver classic and the WebKit Inspector
Protocol)."""

from typing import TYPE_CHECKING, Any

from cdpnb._version import __version__
from cdpnb.errors import (
    BackendNotStarted,
    BlockedByDialog,
    BrowserNotFound,
    BrowserStartError,
    CDPError,
    CdpnbError,
    CdpnbWarning,
    CommandTimeout,
    ConnectionLost,
    DialogError,
    DialogNotAnswerable,
    DialogResponseFailed,
    ElementNotClickable,
    EndpointError,
    EvaluateError,
    EvaluateTimeout,
    FrameNotRoutable,
    NavigationError,
    NoPendingDialog,
    NoSuchElement,
    PageBlocked,
    ProtocolMismatch,
    ReplayDiverged,
    SeveralPendingDialogs,
    StaleRef,
    SupervisorStopped,
    TargetGone,
    UnknownDialog,
    UnknownFrame,
    UnknownPage,
    WaitTimeout,
)
from cdpnb.state import DialogRecord, FrameTree, PageNode, PendingDialog, Snapshot
from cdpnb.state.events import EVENT_NAMES

if TYPE_CHECKING:
    from cdpnb import sync, testing
    from cdpnb.backends import Backend, launch
    from cdpnb.campaign import campaign
    from cdpnb.playback.backend import replay
    from cdpnb.probes import ProbeResult, ScenarioServer, probe, scenarios
    from cdpnb.proxy import Proxy
    from cdpnb.proxy import ProxyModule as _ProxyModule

    proxy: _ProxyModule
    from cdpnb.protocol.js_values import RemoteObject, Undefined
    from cdpnb.session.results import (
        ClickResult,
        ClosePageResult,
        NavigateResult,
        SetContentResult,
    )
    from cdpnb.supervisor import Supervisor
    from cdpnb.supervisor.events import EventStream, PendingAnswer, SupervisorEvent
    from cdpnb.supervisor.registry import registry
    from cdpnb.trace import Trace, compare

# The I/O layers load on first use, so `import cdpnb.protocol` (or cdpnb.state) stays
# free of asyncio and websockets, as the layering promises.
_LAZY = {
    "sync": ("cdpnb.sync", None),
    "testing": ("cdpnb.testing", None),
    # a module that runs a campaign when called: cdpnb.campaign(...), cdpnb.campaign.load
    "campaign": ("cdpnb.campaign", None),
    "Backend": ("cdpnb.backends", "Backend"),
    "launch": ("cdpnb.backends", "launch"),
    "Supervisor": ("cdpnb.supervisor", "Supervisor"),
    "SupervisorEvent": ("cdpnb.supervisor.events", "SupervisorEvent"),
    "EventStream": ("cdpnb.supervisor.events", "EventStream"),
    "PendingAnswer": ("cdpnb.supervisor.events", "PendingAnswer"),
    "registry": ("cdpnb.supervisor.registry", "registry"),
    "RemoteObject": ("cdpnb.protocol.js_values", "RemoteObject"),
    "NavigateResult": ("cdpnb.session.results", "NavigateResult"),
    "ClickResult": ("cdpnb.session.results", "ClickResult"),
    "SetContentResult": ("cdpnb.session.results", "SetContentResult"),
    "ClosePageResult": ("cdpnb.session.results", "ClosePageResult"),
    "Undefined": ("cdpnb.protocol.js_values", "Undefined"),
    "probe": ("cdpnb.probes", "probe"),
    "ProbeResult": ("cdpnb.probes", "ProbeResult"),
    "ScenarioServer": ("cdpnb.probes", "ScenarioServer"),
    "scenarios": ("cdpnb.probes", "scenarios"),
    "Trace": ("cdpnb.trace", "Trace"),
    "compare": ("cdpnb.trace", "compare"),
    "replay": ("cdpnb.playback.backend", "replay"),
    # a module that opens a proxy when called: cdpnb.proxy(...), cdpnb.proxy.parse_faults
    "proxy": ("cdpnb.proxy", None),
    "Proxy": ("cdpnb.proxy", "Proxy"),
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'cdpnb' has no attribute {name!r}")
    import importlib

    module_name, attr = _LAZY[name]
    module = importlib.import_module(module_name)
    value = module if attr is None else getattr(module, attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)



__all__ = [
    "EVENT_NAMES",
    "Backend",
    "BackendNotStarted",
    "BlockedByDialog",
    "BrowserNotFound",
    "BrowserStartError",
    "CDPError",
    "CdpnbError",
    "CdpnbWarning",
    "ClickResult",
    "ClosePageResult",
    "CommandTimeout",
    "ConnectionLost",
    "DialogError",
    "DialogNotAnswerable",
    "DialogRecord",
    "DialogResponseFailed",
    "ElementNotClickable",
    "EndpointError",
    "EvaluateError",
    "EvaluateTimeout",
    "EventStream",
    "FrameNotRoutable",
    "FrameTree",
    "NavigateResult",
    "NavigationError",
    "NoPendingDialog",
    "NoSuchElement",
    "PageBlocked",
    "PageNode",
    "PendingAnswer",
    "PendingDialog",
    "ProbeResult",
    "ProtocolMismatch",
    "Proxy",
    "RemoteObject",
    "ReplayDiverged",
    "ScenarioServer",
    "SetContentResult",
    "SeveralPendingDialogs",
    "Snapshot",
    "StaleRef",
    "Supervisor",
    "SupervisorEvent",
    "SupervisorStopped",
    "TargetGone",
    "Trace",
    "Undefined",
    "UnknownDialog",
    "UnknownFrame",
    "UnknownPage",
    "WaitTimeout",
    "__version__",
    "campaign",
    "compare",
    "launch",
    "probe",
    "proxy",
    "registry",
    "replay",
    "scenarios",
    "sync",
    "testing",
]
