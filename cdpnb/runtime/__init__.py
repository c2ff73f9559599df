"""Where cdpnb's work runs: the engine loop in its daemon thread (``engine``), the
blocking face's drive of a call on the caller's thread (``drive``: the one module that
touches private asyncio), daemon threads that die with their owner (``threads``), the
one wait cdpnb's code uses (``waits.wait_for``) and ``Closing``.

Below the transport: it knows asyncio and threads, nothing of protocols or browsers.
"""

from cdpnb.runtime.engine import Engine, engine
from cdpnb.runtime.threads import in_own_thread
from cdpnb.runtime.waits import wait_for

__all__ = ["Engine", "engine", "in_own_thread", "wait_for"]
