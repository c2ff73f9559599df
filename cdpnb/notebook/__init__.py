"""The notebook layer: live widgets and plots over the layers below.

Nothing here is imported by ``import cdpnb``; the first ``sup.view()``,
``result.view()``, ``trace.view()`` or ``proxy.view()`` loads it (through
:mod:`cdpnb.views`), and it registers the view of each of those classes.
"""

from cdpnb.notebook.plots import latencies, plot_dialogs, plot_latencies
from cdpnb.notebook.probe_view import ProbeView
from cdpnb.notebook.proxy_view import ProxyView
from cdpnb.notebook.supervisor_view import DialogRow, SupervisorView
from cdpnb.notebook.trace_view import TraceView
from cdpnb.probes import ProbeResult
from cdpnb.proxy import Proxy
from cdpnb.supervisor import Supervisor
from cdpnb.trace import Trace
from cdpnb.views import VIEWS

__all__ = ["DialogRow", "ProbeView", "ProxyView", "SupervisorView", "TraceView",
           "latencies", "plot_dialogs", "plot_latencies"]

VIEWS.register(Supervisor, SupervisorView)
VIEWS.register(Trace, TraceView)
VIEWS.register(ProbeResult, ProbeView)
VIEWS.register(Proxy, ProxyView)
