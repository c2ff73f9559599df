"""Probe experiments: scenario pages on loopback, checks, and the capability matrix."""

from cdpnb.probes.server import PAGES, ScenarioServer

__all__ = ["PAGES", "ScenarioServer"]
