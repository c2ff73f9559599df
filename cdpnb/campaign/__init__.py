"""Probe campaigns: backends × scenarios × repeats, here or on a Dask cluster.

``cdpnb.campaign`` is both the call and its namespace::

    result = cdpnb.campaign(["chromium", "headless-shell"], ["dialog.*.main"], repeats=50,
                            out="campaigns/dialogs", client="tcp://127.0.0.1:8786")
    result.summary()                       # n, success rate (Wilson CI), median / p95 (CIs)
    result.compare("chromium", "headless-shell")   # beyond the run-to-run noise?
    cdpnb.campaign.load("campaigns/dialogs")       # one row per cell, as a DataFrame

The call is :func:`~cdpnb.campaign.run.run_campaign` (its parameters are
``cdpnb.campaign``'s); results are a Parquet dataset (``cdpnb.campaign.layout``)
that DuckDB queries in place (``CampaignResult.sql``).
"""

from __future__ import annotations

import inspect
import sys
from types import ModuleType
from typing import TYPE_CHECKING

from cdpnb.campaign.cells import Cell, resolve_scenarios
from cdpnb.campaign.dataset import CampaignResult, RunSummary, load
from cdpnb.campaign.progress import CampaignProgress
from cdpnb.campaign.run import (
    CampaignInterrupted,
    ClusterUnusable,
    default_concurrency,
    run_campaign,
)
from cdpnb.campaign.stats import Comparison, compare_samples, wilson_interval

__all__ = [
    "CampaignInterrupted",
    "CampaignProgress",
    "CampaignResult",
    "Cell",
    "ClusterUnusable",
    "Comparison",
    "RunSummary",
    "compare_samples",
    "default_concurrency",
    "load",
    "resolve_scenarios",
    "run_campaign",
    "wilson_interval",
]


class CampaignModule(ModuleType):
    """The type of ``cdpnb.campaign``: a module that runs a campaign when called.

    (A function cannot be the package its helpers live in; a module can be called
    once its type says how.)
    """

    __call__ = staticmethod(run_campaign)

    if TYPE_CHECKING:  # __all__ again, for ``cdpnb.campaign.<name>`` in typed code
        # (Held to __all__, name by name and object by object, by
        # tests/test_campaign_module.py; at run time the module's own names answer.)
        CampaignInterrupted = CampaignInterrupted
        CampaignProgress = CampaignProgress
        CampaignResult = CampaignResult
        Cell = Cell
        ClusterUnusable = ClusterUnusable
        Comparison = Comparison
        RunSummary = RunSummary
        compare_samples = staticmethod(compare_samples)
        default_concurrency = staticmethod(default_concurrency)
        load = staticmethod(load)
        resolve_scenarios = staticmethod(resolve_scenarios)
        run_campaign = staticmethod(run_campaign)
        wilson_interval = staticmethod(wilson_interval)


# Swapped: cdpnb.campaign is a call and a namespace, and only its type makes a module callable.
sys.modules[__name__].__class__ = CampaignModule
# inspect.signature (and so help() and a notebook's ``cdpnb.campaign?``) reads this.
__signature__ = inspect.signature(run_campaign)

if TYPE_CHECKING:
    #: How mypy sees ``cdpnb.campaign`` (``cdpnb/__init__.py`` imports this name):
    #: the module itself, callable.
    campaign: CampaignModule
