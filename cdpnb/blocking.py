"""Deriving the blocking face from the async one, mechanically.

The async API is the source. Each helper here turns one async name into its
blocking twin, keeping the parameters as they are (``ParamSpec``), so mypy sees
the real signature of every blocking call, and the call runs on cdpnb's engine
loop thread (``engine.run_sync``): a blocking call never waits on the loop of the
thread it blocks, so it works in a notebook cell, a script, inside ``asyncio.run``
and after ``nest_asyncio.apply()``.

:func:`derive` fills in, at class creation, every public name of the async class
that a facade does not declare itself; :class:`Facade` forwards instance
attributes the same way. A name added to the async class is therefore in the
blocking face at once; declaring it with one line gives it its static type.
``tests/test_faces.py`` walks both faces and fails on any difference.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any, Concatenate, Generic, ParamSpec, TypeVar, overload

from cdpnb.errors import EvaluateError
from cdpnb.runtime.closing import makes_starting
from cdpnb.runtime.engine import engine
from cdpnb.runtime.interrupts import interrupted

__all__ = [
    "Delegated",
    "Facade",
    "Forward",
    "awaited",
    "blocking",
    "blocking_as",
    "blocking_function",
    "constructor",
    "derive",
    "forward",
    "forward_as",
    "public_names",
]

P = ParamSpec("P")
R = TypeVar("R")
A = TypeVar("A")
T = TypeVar("T")
W = TypeVar("W")
F = TypeVar("F", bound="type[Facade[Any]]")

#: Async dunders and the blocking ones they become.
CONTEXT_DUNDERS = {"__aenter__": "__enter__", "__aexit__": "__exit__"}
#: Dunders a facade forwards as they are (they never block).
PLAIN_DUNDERS = ("__contains__", "__len__", "__iter__")


def public_names(cls: type) -> list[str]:
    """The public API of ``cls``: names not starting with ``_``, plus the
    context-manager and container dunders it defines."""
    names = [n for n in dir(cls) if not n.startswith("_")]
    names += [n for n in (*CONTEXT_DUNDERS, *PLAIN_DUNDERS) if hasattr(cls, n)]
    return names


class Facade(Generic[A]):
    """The blocking face of one async object, ``aio``.

    Attributes the async object sets on itself (``hints``, ``url``, …) are read
    through from it; coroutine methods it gains later block like declared ones.
    """

    #: The async class this face mirrors (set by :func:`derive`).
    async_class: type[Any] = object
    #: Its coroutines may run on the calling thread's own loop (``engine.run_sync``'s
    #: ``here``): they leave nothing running on that loop when they return.
    run_here = False

    def __init__(self, aio: A) -> None:
        self.aio = aio

    if not TYPE_CHECKING:  # at run time only: mypy must not type unknown names as Any

        def __getattr__(self, name: str) -> Any:
            if name.startswith("_") or name == "aio":
                raise AttributeError(name)
            value = getattr(self.aio, name)
            if inspect.iscoroutinefunction(value):
                return _blocking_bound(value, type(self).run_here)
            return value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Facade) and type(other) is type(self) and other.aio is self.aio

    def __hash__(self) -> int:
        return hash(id(self.aio))

    def __repr__(self) -> str:
        text = repr(self.aio)
        return text.replace("<", "<sync.", 1) if text.startswith("<") else text


def _blocking_bound(method: Callable[..., Coroutine[Any, Any, Any]],
                    here: bool) -> Callable[..., Any]:
    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return engine.run_sync(method(*args, **kwargs), here=here)
        except EvaluateError as exc:
            raise exc.with_traceback(None)  # noqa: B904 (as in blocking's call)

    return call


def blocking(method: Callable[Concatenate[A, P], Coroutine[Any, Any, R]]
             ) -> Callable[Concatenate[Facade[A], P], R]:
    """An async method as a blocking one: ``evaluate = blocking(Supervisor.evaluate)``."""

    @functools.wraps(method)
    def call(self: Facade[A], /, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            result = engine.run_sync(method(self.aio, *args, **kwargs), here=type(self).run_here)
        except EvaluateError as exc:
            # The page's script threw: its message and JS stack are the error; the engine's
            # frames it came through would only bury them (Playwright shows the call too).
            # (Not ``from None``: an exception the caller was handling stays its context.)
            _warn_on_this_thread(self.aio, exc)
            raise exc.with_traceback(None)  # noqa: B904 (the caller's context stays)
        except KeyboardInterrupt as exc:
            # Ctrl-C while the call waited: one line (cdpnb.runtime.interrupts), the
            # engine's and concurrent.futures' frames cut; the call's waits have ended.
            _warn_on_this_thread(self.aio, exc)
            raise interrupted(exc.with_traceback(None), method.__name__) from None
        except BaseException as exc:
            _warn_on_this_thread(self.aio, exc)
            raise
        _warn_on_this_thread(self.aio)
        return result

    return call


def _warn_on_this_thread(aio: object, failing: BaseException | None = None) -> None:
    """Warnings a call left pending because it ran on the engine's thread (where a
    warning is nobody's), issued on the caller's thread: an object with something to
    say has a ``_warn_pending()`` (the supervisor's hints). ``failing``: the error the
    call ends with, which a warning raised by a filter must not replace
    (cdpnb.supervisor.hints)."""
    warn = getattr(aio, "_warn_pending", None)
    if callable(warn):
        warn(failing)


def blocking_as(method: Callable[Concatenate[A, P], Coroutine[Any, Any, T]],
                wrap: Callable[[T], W]) -> Callable[Concatenate[Facade[A], P], W]:
    """Like :func:`blocking`, with the result put into its blocking face by ``wrap``."""

    @functools.wraps(method)
    def call(self: Facade[A], /, *args: P.args, **kwargs: P.kwargs) -> W:
        try:
            result = wrap(engine.run_sync(method(self.aio, *args, **kwargs),
                                          here=type(self).run_here))
        except KeyboardInterrupt as exc:  # (as in blocking's call)
            _warn_on_this_thread(self.aio, exc)
            raise interrupted(exc.with_traceback(None), method.__name__) from None
        except BaseException as exc:
            _warn_on_this_thread(self.aio, exc)
            raise
        _warn_on_this_thread(self.aio)
        return result

    return call


def forward(method: Callable[Concatenate[A, P], R]) -> Callable[Concatenate[Facade[A], P], R]:
    """A method that never blocks (``snapshot``, ``view``), called on ``aio`` as it is."""

    @functools.wraps(method)
    def call(self: Facade[A], /, *args: P.args, **kwargs: P.kwargs) -> R:
        return method(self.aio, *args, **kwargs)

    return call


def forward_as(method: Callable[Concatenate[A, P], T],
               wrap: Callable[[T], W]) -> Callable[Concatenate[Facade[A], P], W]:
    """Like :func:`forward`, with the result put into its blocking face by ``wrap``."""

    @functools.wraps(method)
    def call(self: Facade[A], /, *args: P.args, **kwargs: P.kwargs) -> W:
        return wrap(method(self.aio, *args, **kwargs))

    return call


def constructor(make: Callable[P, Coroutine[Any, Any, T]],
                wrap: Callable[[T], W]) -> Callable[P, W]:
    """An async factory (``Supervisor.start``) as a blocking one returning a face."""

    @functools.wraps(make)
    def call(*args: P.args, **kwargs: P.kwargs) -> W:
        return wrap(engine.run_sync(make(*args, **kwargs)))

    return call


def blocking_function(function: Callable[P, Coroutine[Any, Any, R]]) -> Callable[P, R]:
    """A module-level coroutine function (``probe``) as a blocking one."""

    @functools.wraps(function)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        return engine.run_sync(function(*args, **kwargs))

    return call


async def _await(awaitable: Awaitable[R]) -> R:
    return await awaitable


def awaited(factory: Callable[P, Awaitable[R]]) -> Callable[P, R]:
    """A factory whose result is awaited (``backend = await cdpnb.launch(kind)``) as a
    blocking call returning what the ``await`` gives."""

    @functools.wraps(factory)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        return engine.run_sync(_await(factory(*args, **kwargs)))

    return call


class Forward(Generic[A, T]):
    """A property of the async class, read through: ``state = Forward(Supervisor.state)``.

    (mypy types a property read from its class as a function of the instance,
    which is what gives this descriptor its value type.)
    """

    def __init__(self, prop: Callable[[A], T]) -> None:
        getter = getattr(prop, "fget", prop)
        if not callable(getter):
            raise TypeError(f"Forward needs a property or a getter, got {prop!r}")
        self.getter: Callable[[A], T] = getter
        self.__doc__ = getattr(prop, "__doc__", None)
        self.__wrapped__ = getter

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> Forward[A, T]: ...
    @overload
    def __get__(self, obj: Facade[A], owner: type[Any]) -> T: ...
    def __get__(self, obj: Facade[A] | None, owner: type[Any]) -> T | Forward[A, T]:
        if obj is None:
            return self
        return self.getter(obj.aio)


class Delegated(Generic[T]):
    """An attribute the async object sets on itself: ``hints: Delegated[list[str]]``."""

    def __set_name__(self, owner: type[Any], name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> Delegated[T]: ...
    @overload
    def __get__(self, obj: Facade[Any], owner: type[Any]) -> T: ...
    def __get__(self, obj: Facade[Any] | None, owner: type[Any]) -> T | Delegated[T]:
        if obj is None:
            return self
        value: T = getattr(obj.aio, self.name)
        return value


def _wrap_for(facade: type[Facade[Any]]) -> Callable[[Any], Any]:
    """Results that are instances of the async class come back in their face."""

    def wrap(value: Any) -> Any:
        return facade(value) if isinstance(value, facade.async_class) else value

    return wrap


def _derived(facade: type[Facade[Any]], name: str, raw: Any) -> Any:
    """The blocking face of one class attribute ``raw`` of the async class."""
    wrap = _wrap_for(facade)
    if isinstance(raw, classmethod | staticmethod):
        bound = getattr(facade.async_class, name)
        # A start that is also an async context manager (``Supervisor.start``) is no
        # coroutine function, but blocks here all the same.
        if inspect.iscoroutinefunction(bound) or makes_starting(bound):
            return staticmethod(constructor(bound, wrap))
        return staticmethod(bound)
    if isinstance(raw, property) and raw.fget is not None:
        return Forward(raw.fget)
    if inspect.iscoroutinefunction(raw):
        return blocking_as(raw, wrap)
    if inspect.isfunction(raw):
        return forward_as(raw, wrap)
    return raw


def derive(async_class: type[Any]) -> Callable[[F], F]:
    """Class decorator: the facade mirrors ``async_class``; every public name it does
    not declare itself is derived (coroutine → blocking, property → read through,
    method → forwarded), and ``__aenter__``/``__aexit__`` become ``__enter__``/``__exit__``."""

    def fill(facade: F) -> F:
        facade.async_class = async_class
        for name in public_names(async_class):
            target = CONTEXT_DUNDERS.get(name, name)
            if target in facade.__dict__:
                continue
            raw = inspect.getattr_static(async_class, name)
            setattr(facade, target, _derived(facade, name, raw))
        return facade

    return fill
