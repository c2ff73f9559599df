"""The async supervisor: attach sequence, child sessions, dialogs, routed commands."""

from cdpnb.runtime.engine import Engine, engine
from cdpnb.session.options import POLICIES, Policy, SupervisorOptions
from cdpnb.supervisor.supervisor import Supervisor

__all__ = ["POLICIES", "Engine", "Policy", "Supervisor", "SupervisorOptions", "engine"]
