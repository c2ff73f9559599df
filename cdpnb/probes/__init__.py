"""Probe experiments: scenario pages on loopback, checks, and the capability matrix."""

from cdpnb.probes.checks import CHECKS, Check
from cdpnb.probes.run import CheckResult, ProbeResult, available_backends, probe
from cdpnb.probes.server import PAGES, ScenarioServer

__all__ = [
    "CHECKS",
    "PAGES",
    "Check",
    "CheckResult",
    "ProbeResult",
    "ScenarioServer",
    "available_backends",
    "probe",
]
