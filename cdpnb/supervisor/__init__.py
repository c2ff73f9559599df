"""The async supervisor: attach sequence, child sessions, dialogs, routed commands."""

from cdpnb.supervisor.options import POLICIES, Policy, SupervisorOptions
from cdpnb.supervisor.supervisor import Supervisor
from cdpnb.transport.engine import Engine, engine

__all__ = ["POLICIES", "Engine", "Policy", "Supervisor", "SupervisorOptions", "engine"]
