"""The notebook layer: live widgets and plots over the layers below.

Nothing here is imported by ``import cdpnb``; ``sup.view()``, ``result.view()`` and
``trace.view()`` load it on first use.
"""

from cdpnb.notebook.plots import latencies, plot_dialogs, plot_latencies
from cdpnb.notebook.probe_view import ProbeView
from cdpnb.notebook.supervisor_view import DialogRow, SupervisorView
from cdpnb.notebook.trace_view import TraceView

__all__ = ["DialogRow", "ProbeView", "SupervisorView", "TraceView", "latencies",
           "plot_dialogs", "plot_latencies"]
