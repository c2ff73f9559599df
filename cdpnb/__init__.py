"""cdpnb: a notebook-first research library for the Chrome DevTools Protocol."""

from cdpnb import sync
from cdpnb.backends import Backend, launch
from cdpnb.errors import (
    BrowserNotFound,
    BrowserStartError,
    CDPError,
    CdpnbError,
    CommandTimeout,
    ConnectionLost,
    DialogError,
    DialogResponseFailed,
    EndpointError,
    EvaluateError,
    FrameNotRoutable,
    NavigationError,
    NoPendingDialog,
    SeveralPendingDialogs,
    SupervisorStopped,
    UnknownDialog,
    UnknownFrame,
    WaitTimeout,
)
from cdpnb.state import DialogRecord, FrameTree, PendingDialog, Snapshot
from cdpnb.supervisor import Supervisor
from cdpnb.supervisor.registry import registry

__version__ = "0.1.0"

__all__ = [
    "Backend",
    "BrowserNotFound",
    "BrowserStartError",
    "CDPError",
    "CdpnbError",
    "CommandTimeout",
    "ConnectionLost",
    "DialogError",
    "DialogRecord",
    "DialogResponseFailed",
    "EndpointError",
    "EvaluateError",
    "FrameNotRoutable",
    "FrameTree",
    "NavigationError",
    "NoPendingDialog",
    "PendingDialog",
    "SeveralPendingDialogs",
    "Snapshot",
    "Supervisor",
    "SupervisorStopped",
    "UnknownDialog",
    "UnknownFrame",
    "WaitTimeout",
    "__version__",
    "launch",
    "registry",
    "sync",
]
