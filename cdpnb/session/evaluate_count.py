"""One ``cdpnb.evaluated {ms}`` note per evaluate call, the same on every protocol.

Every driver's ``evaluate`` (and ``evaluate_on``) runs inside :func:`counted`: a call
that ended (answered, thrown, timed out) is one note with how long it took, which
``stats()`` counts (``evaluate-calls``, ``evaluate-ms-total``, ``evaluate-ms-max``, the
duration buckets; ``cdpnb.state.counting``); a call the connection's end or ``stop()``
cut short is not one. The note is folded soon (``Core.note_soon``): after the caller
has the call's value, before anything else is folded or the state is read.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

from cdpnb.errors import ConnectionLost, SupervisorStopped
from cdpnb.session.core import Core

__all__ = ["counted"]


@contextlib.contextmanager
def counted(core: Core) -> Iterator[None]:
    """Count the evaluate call run inside, with its duration, once it ended."""
    started = time.monotonic()
    try:
        yield
    except (ConnectionLost, SupervisorStopped):
        raise
    except BaseException:
        _evaluated(core, started)
        raise
    _evaluated(core, started)


def _evaluated(core: Core, started: float) -> None:
    ms = int((time.monotonic() - started) * 1000)
    core.note_soon("cdpnb.evaluated", {"ms": ms})
