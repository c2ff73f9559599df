"""Every public exception class survives pickling whole (type, message, attributes):
errors cross Dask workers and processes. The table of instances below must name every
public exception class of the package, so a new one cannot skip the round trip."""

from __future__ import annotations

import importlib
import inspect
import pickle
import pkgutil
from collections.abc import Callable

import pytest

import cdpnb
from cdpnb import errors
from cdpnb.campaign.run import CampaignInterrupted, ClusterUnusable
from cdpnb.campaign.worker import BackendEnded, CellFailed
from cdpnb.probes.checks import NotSupported
from cdpnb.protocol.classic import ClassicFailure
from cdpnb.proxy.faults import FaultRuleError
from cdpnb.session.driver import SessionHeld
from cdpnb.testing import ScriptedError
from cdpnb.trace.compressed import Damaged
from cdpnb.trace.format import TraceFormatError
from cdpnb.trace.reader import TraceTruncatedWarning
from cdpnb.trace.sources import Refused
from cdpnb.transport.webdriver_http import ServerGone, WebDriverError

#: A representative instance of each public exception class, made as cdpnb makes it.
INSTANCES: dict[type[BaseException], Callable[[], BaseException]] = {
    errors.BackendNotStarted: lambda: errors.BackendNotStarted("not started"),
    errors.BlockedByDialog: lambda: errors.BlockedByDialog("alert open", dialog_id="d-1"),
    errors.BrowserNotFound: lambda: errors.BrowserNotFound("install chromium"),
    errors.BrowserStartError: lambda: errors.BrowserStartError("no endpoint"),
    errors.CDPError: lambda: errors.CDPError(-32000, "Not allowed", "Page.navigate",
                                             "S-1", {"detail": [1, 2]}),
    errors.CdpnbError: lambda: errors.CdpnbError("base"),
    errors.CdpnbWarning: lambda: errors.CdpnbWarning("advice"),
    errors.CommandTimeout: lambda: errors.CommandTimeout("no reply in 10 s"),
    errors.ConnectionLost: lambda: errors.ConnectionLost("closed"),
    errors.DialogError: lambda: errors.DialogError("dialog"),
    errors.DialogNotAnswerable: lambda: errors.DialogNotAnswerable(
        "cannot answer", dialog_id="d-2", reason="handle held", answerable="d-1"),
    errors.DialogResponseFailed: lambda: errors.DialogResponseFailed("failed"),
    errors.ElementNotClickable: lambda: errors.ElementNotClickable("no box"),
    errors.EndpointError: lambda: errors.EndpointError("unreachable"),
    errors.EvaluateError: lambda: errors.EvaluateError("boom", "at <anonymous>:1:7"),
    errors.EvaluateTimeout: lambda: errors.EvaluateTimeout(
        "outlived 2 s", budget=2.0, elapsed=2.5, ended_by="terminateExecution",
        session_id="S-2"),
    errors.FrameNotRoutable: lambda: errors.FrameNotRoutable("in-process frame"),
    errors.NavigationError: lambda: errors.NavigationError("net::ERR_ABORTED"),
    errors.NoPendingDialog: lambda: errors.NoPendingDialog("none open"),
    errors.NoSuchElement: lambda: errors.NoSuchElement("no #x", selector="#x",
                                                       frame_id=None),
    errors.PageBlocked: lambda: errors.PageBlocked("blocked", target_id="T-1"),
    errors.PicklesWhole: lambda: errors.PicklesWhole("whole"),
    errors.ProtocolMismatch: lambda: errors.ProtocolMismatch("use bidi()"),
    errors.ReplayDiverged: lambda: errors.ReplayDiverged("command 3 differs"),
    errors.SeveralPendingDialogs: lambda: errors.SeveralPendingDialogs("two open"),
    errors.StaleRef: lambda: errors.StaleRef("e12", "node gone"),
    errors.SupervisorStopped: lambda: errors.SupervisorStopped("stopped"),
    errors.TargetGone: lambda: errors.TargetGone("target ended"),
    errors.UnknownDialog: lambda: errors.UnknownDialog("d-9"),
    errors.UnknownFrame: lambda: errors.UnknownFrame("F-9"),
    errors.UnknownPage: lambda: errors.UnknownPage("no page P", page="P",
                                                   existing=("T-1", "T-2")),
    errors.WaitTimeout: lambda: errors.WaitTimeout("no dialog in 5 s"),
    CampaignInterrupted: lambda: CampaignInterrupted("3 cells saved"),
    ClusterUnusable: lambda: ClusterUnusable("no workers"),
    BackendEnded: lambda: BackendEnded("chromium ended"),
    CellFailed: lambda: CellFailed("attempt failed"),
    NotSupported: lambda: NotSupported("no Page domain"),
    ClassicFailure: lambda: ClassicFailure("no such alert", "none open", 404),
    SessionHeld: lambda: SessionHeld("session held"),
    ScriptedError: lambda: ScriptedError(-32601, "no such method"),
    TraceFormatError: lambda: TraceFormatError("line 3: not JSON"),
    TraceTruncatedWarning: lambda: TraceTruncatedWarning("cut at line 9"),
    Refused: lambda: Refused("unusual block"),
    Damaged: lambda: Damaged("the gzip data does not inflate (invalid code lengths set)",
                             4096, b'{"seq":1}\n{"se'),
    WebDriverError: lambda: WebDriverError("unexpected alert open", "alert", 500),
    ServerGone: lambda: ServerGone("GET http://127.0.0.1:9/status: the connection was refused"),
    FaultRuleError: lambda: FaultRuleError("delay=200: longer than 60 s"),
}


def public_exception_classes() -> set[type[BaseException]]:
    """Every exception class a cdpnb module defines under a public name."""
    found: set[type[BaseException]] = set()
    for info in pkgutil.walk_packages(cdpnb.__path__, "cdpnb."):
        if info.name.endswith("__main__"):  # running it is what importing it does
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if (inspect.isclass(value) and issubclass(value, BaseException)
                    and value.__module__ == info.name and not name.startswith("_")):
                found.add(value)
    return found


def test_the_table_covers_every_public_exception_class() -> None:
    in_all = {value for name in errors.__all__
              if isinstance(value := getattr(errors, name), type)
              and issubclass(value, BaseException)}
    assert in_all <= set(INSTANCES), sorted(c.__name__ for c in in_all - set(INSTANCES))
    public = public_exception_classes()
    assert set(INSTANCES) == public, (
        "missing: " + ", ".join(sorted(c.__qualname__ for c in public - set(INSTANCES)))
        + "; stale: " + ", ".join(sorted(c.__qualname__ for c in set(INSTANCES) - public)))


@pytest.mark.parametrize("cls", list(INSTANCES), ids=lambda cls: cls.__name__)
def test_pickles_whole(cls: type[BaseException]) -> None:
    error = INSTANCES[cls]()
    assert type(error) is cls
    error.add_note("a note travels too")
    for protocol in range(pickle.DEFAULT_PROTOCOL, pickle.HIGHEST_PROTOCOL + 1):
        back = pickle.loads(pickle.dumps(error, protocol=protocol))
        assert type(back) is cls
        assert str(back) == str(error)
        assert back.args == error.args
        assert vars(back) == vars(error)
