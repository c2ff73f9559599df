"""Probe experiments: scenario pages on loopback, checks, and the capability matrix."""

from cdpnb.probes.checks import CHECKS, Check
from cdpnb.probes.expected import EXPECTED, expected_status
from cdpnb.probes.run import (
    CheckResult,
    ProbeResult,
    RecordedSite,
    available_backends,
    probe,
    run_checks,
)
from cdpnb.probes.server import PAGES, ScenarioServer, scenarios
from cdpnb.probes.specs import BackendSpec, parse_backend, recorded_probes

__all__ = [
    "CHECKS",
    "EXPECTED",
    "PAGES",
    "BackendSpec",
    "Check",
    "CheckResult",
    "ProbeResult",
    "RecordedSite",
    "ScenarioServer",
    "available_backends",
    "expected_status",
    "parse_backend",
    "probe",
    "recorded_probes",
    "run_checks",
    "scenarios",
]
