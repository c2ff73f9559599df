"""Probe experiments: scenario pages on loopback, checks, and the capability matrix."""

from cdpnb.probes.checks import CHECKS, Check
from cdpnb.probes.expected import EXPECTED, RACES, expected_status, race_between
from cdpnb.probes.run import (
    CheckResult,
    ProbeResult,
    RecordedSite,
    available_backends,
    probe,
    run_checks,
    step_budget,
)
from cdpnb.probes.server import PAGES, ScenarioServer, scenarios
from cdpnb.probes.specs import BackendSpec, parse_backend, recorded_probes

__all__ = [
    "CHECKS",
    "EXPECTED",
    "PAGES",
    "RACES",
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
    "race_between",
    "recorded_probes",
    "run_checks",
    "scenarios",
    "step_budget",
]
