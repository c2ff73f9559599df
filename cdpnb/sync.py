"""``cdpnb.sync``: the async API's names, as plain blocking calls.

Derived from the async face one line per name (``cdpnb.blocking``), so the
parameters are the async ones, and a name the async face gains is here at once.
A supervisor's call from a thread with no loop running (a script) runs on that
thread (driven by hand, on a private loop of the thread only if it must wait for one),
and a command it sends waits for its reply by blocking the thread; from a thread
whose loop is running (a notebook cell, inside ``asyncio.run``, after
``nest_asyncio.apply()``) every call runs on cdpnb's engine thread and this thread
waits for it.

>>> import cdpnb.sync
>>> cdpnb.sync.Supervisor.evaluate.__wrapped__ is cdpnb.Supervisor.evaluate
True
"""

from __future__ import annotations

import inspect
import weakref
from typing import TYPE_CHECKING, Any, ClassVar

import cdpnb
from cdpnb.backends import Backend
from cdpnb.backends import launch as _launch
from cdpnb.blocking import (
    Delegated,
    Facade,
    Forward,
    awaited,
    blocking,
    blocking_as,
    blocking_function,
    constructor,
    derive,
    forward,
    forward_as,
)
from cdpnb.playback.backend import ReplayBackend
from cdpnb.playback.backend import replay as _replay
from cdpnb.probes import ProbeResult
from cdpnb.probes import probe as _probe
from cdpnb.proxy.running import proxy as _proxy
from cdpnb.supervisor import Supervisor as AsyncSupervisor
from cdpnb.supervisor import SupervisorOptions
from cdpnb.supervisor.events import EventName, Handler
from cdpnb.supervisor.registry import Registry as AsyncRegistry
from cdpnb.supervisor.registry import registry as async_registry
from cdpnb.trace import Recorder

if TYPE_CHECKING:
    from types import TracebackType

    # Filled in below with the rest of what never needs a blocking twin: a campaign
    # blocks already, so cdpnb.sync.campaign is cdpnb.campaign itself.
    from cdpnb.campaign import campaign as campaign

__all__ = [
    "Backend",
    "ProbeResult",
    "Registry",
    "ReplayBackend",
    "Supervisor",
    "launch",
    "probe",
    "proxy",
    "registry",
    "replay",
]

A = AsyncSupervisor


@derive(AsyncSupervisor)
class Supervisor(Facade[AsyncSupervisor]):
    """Blocking face of :class:`cdpnb.Supervisor`; ``.aio`` is the async one.

    ``cdpnb.sync.Supervisor(sup)`` gives the blocking face of a running async
    supervisor (both drive the same connection).
    """

    _faces: ClassVar[weakref.WeakKeyDictionary[AsyncSupervisor, Supervisor]] = (
        weakref.WeakKeyDictionary())
    #: A supervisor's calls run on the calling thread when it has no loop running
    #: (``cdpnb.runtime.drive``): the command goes out from this thread, its reply wakes it.
    run_here = True

    @classmethod
    def of(cls, aio: AsyncSupervisor) -> Supervisor:
        """The (one) blocking face of ``aio``."""
        face = cls._faces.get(aio)
        if face is None:
            face = cls._faces[aio] = cls(aio)
        return face

    start = staticmethod(constructor(A.start, lambda aio: Supervisor.of(aio)))
    stop = blocking(A.stop)

    def __enter__(self) -> Supervisor:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    # -- commands (block until done) ----------------------------------------------------
    cdp = blocking(A.cdp)
    bidi = blocking(A.bidi)
    evaluate = blocking(A.evaluate)
    evaluate_on = blocking(A.evaluate_on)
    accessibility = blocking(A.accessibility)
    click = blocking(A.click)
    fill = blocking(A.fill)
    wait_for_selector = blocking(A.wait_for_selector)
    screenshot = blocking(A.screenshot)
    release_objects = blocking(A.release_objects)
    navigate = blocking(A.navigate)
    reload = blocking(A.reload)
    set_content = blocking(A.set_content)
    close_page = blocking(A.close_page)
    wait_for = blocking(A.wait_for)
    annotate = blocking(A.annotate)
    wait_for_dialog = blocking(A.wait_for_dialog)
    respond = blocking(A.respond)
    wait_for_event = blocking(A.wait_for_event)

    # -- events (never block): handlers run on the supervisor's event thread, as this
    # face's calls block the caller's thread (a handler may answer while one waits) ------
    def on(self, event: EventName, handler: Handler) -> Handler:
        """As :meth:`cdpnb.Supervisor.on`; the handler always runs on the supervisor's
        event thread (a blocking call here would hold the caller's own loop)."""
        self.aio._listen(event, handler, once=False, on_thread=True)
        return handler

    def once(self, event: EventName, handler: Handler) -> Handler:
        """As :meth:`cdpnb.Supervisor.once`, on the supervisor's event thread."""
        self.aio._listen(event, handler, once=True, on_thread=True)
        return handler

    off = forward(A.off)
    events = forward(A.events)

    # -- state (never blocks) ------------------------------------------------------------
    snapshot = forward(A.snapshot)
    frame_tree = forward(A.frame_tree)
    stats = forward(A.stats)
    view = forward(A.view)
    state = Forward(A.state)
    connected = Forward(A.connected)
    stopped = Forward(A.stopped)
    alive = Forward(A.alive)
    page_target_id = Forward(A.page_target_id)
    page_session_id = Forward(A.page_session_id)
    bridge_enabled = Forward(A.bridge_enabled)
    unsupported = Forward(A.unsupported)
    policy = Forward(A.policy)
    pages = Forward(A.pages)
    protocol = Forward(A.protocol)
    browser_version = Forward(A.browser_version)
    reconnects = Forward(A.reconnects)
    url = Forward(A.url)

    # -- attributes the async supervisor sets on itself ----------------------------------
    endpoint: Delegated[str] = Delegated()
    options: Delegated[SupervisorOptions] = Delegated()
    recorder: Delegated[Recorder | None] = Delegated()
    hints: Delegated[list[str]] = Delegated()


def _face_or_none(aio: AsyncSupervisor | None) -> Supervisor | None:
    return None if aio is None else Supervisor.of(aio)


@derive(AsyncRegistry)
class Registry(Facade[AsyncRegistry]):
    """Blocking face of ``cdpnb.registry``: one supervisor per task id."""

    get_or_start = blocking_as(AsyncRegistry.get_or_start, Supervisor.of)
    stop = blocking(AsyncRegistry.stop)
    stop_all = blocking(AsyncRegistry.stop_all)
    get = forward_as(AsyncRegistry.get, _face_or_none)
    task_ids = forward(AsyncRegistry.task_ids)
    __contains__ = forward(AsyncRegistry.__contains__)
    __len__ = forward(AsyncRegistry.__len__)


registry = Registry(async_registry)

#: ``backend = cdpnb.sync.launch("chromium")`` (also ``with cdpnb.sync.launch(...) as b``).
launch = awaited(_launch)
#: ``backend = cdpnb.sync.replay(trace)`` (also ``with``): a trace served as a CDP endpoint.
replay = awaited(_replay)
#: ``px = cdpnb.sync.proxy(backend, record=path)`` (also ``with``; ``replay=`` a recording):
#: the recording proxy, until ``px.close()``.
proxy = awaited(_proxy)
#: ``result = cdpnb.sync.probe(["chromium", "node"])``.
probe = blocking_function(_probe)


def _derive_module_name(name: str) -> Any:
    """A name of ``cdpnb`` this module does not declare: coroutine functions block,
    anything else (errors, models, ``Trace``, ``compare``) is the same object."""
    value = getattr(cdpnb, name)
    if inspect.iscoroutinefunction(value):
        return blocking_function(value)
    return value


# Everything else ``cdpnb`` exports is the same object here (it never blocks), and a
# name added to ``cdpnb`` later comes along without an edit.
_SAME = [n for n in cdpnb.__all__ if n not in __all__ and n not in ("sync", "__version__")]
globals().update({name: _derive_module_name(name) for name in _SAME})
__all__ += _SAME
