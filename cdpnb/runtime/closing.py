"""``with`` and ``async with`` for anything that has ``close()`` and ``aclose()``; and
``Starting``, a start to await or to enter (``async with Supervisor.start(url) as sup``)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine, Generator
from types import TracebackType
from typing import Any, Generic, ParamSpec, Protocol, Self, TypeVar

__all__ = ["Closing", "Starting", "makes_starting", "starting"]


class Closing:
    """A mixin: the block ends with ``close()`` (or ``await aclose()``)."""

    def close(self) -> None:
        raise NotImplementedError

    async def aclose(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()


class Exits(Protocol):
    """What a started object must have for ``async with`` to end it: ``__aexit__``."""

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> object: ...


T = TypeVar("T", bound=Exits)
P = ParamSpec("P")


class Starting(Coroutine[Any, Any, T], Generic[T]):
    """The start of a ``T``: ``await`` it for the ``T``, or ``async with`` it (the ``T``
    started on entering and its own ``__aexit__`` run on leaving).

    It is the start's coroutine itself, wrapped, not a second one: one start, run once
    (a second ``await`` is the coroutine's own RuntimeError), a start never awaited is
    Python's "never awaited" warning, and whatever takes a coroutine
    (``asyncio.create_task``, ``run_coroutine_threadsafe``, cdpnb's engine, the
    blocking face's ``constructor``) takes this as it took the coroutine.
    """

    __slots__ = ("_start_coroutine", "_started")

    def __init__(self, coro: Coroutine[Any, Any, T]) -> None:
        self._start_coroutine = coro
        self._started: T | None = None

    # -- awaited: the coroutine, delegated ------------------------------------------------
    def __await__(self) -> Generator[Any, None, T]:
        return self._start_coroutine.__await__()

    def send(self, value: Any) -> Any:
        return self._start_coroutine.send(value)

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> Any:
        if val is None and tb is None:
            return self._start_coroutine.throw(typ)  # the one-argument form (3.12 deprecates three)
        return self._start_coroutine.throw(typ, val, tb)

    def close(self) -> None:
        self._start_coroutine.close()

    # -- entered ------------------------------------------------------------------------
    async def __aenter__(self) -> T:
        self._started = await self._start_coroutine
        return self._started

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        started, self._started = self._started, None
        if started is not None:
            await started.__aexit__(exc_type, exc, tb)

    def __repr__(self) -> str:
        name = getattr(self._start_coroutine, "__qualname__", "start")
        return f"<{name}(…): await it, or use it in `async with`>"


#: The mark :func:`starting` leaves on what it makes (read by :func:`makes_starting`).
_MARK = "_cdpnb_starting"


def starting(make: Callable[P, Coroutine[Any, Any, T]]) -> Callable[P, Starting[T]]:
    """Decorator: the coroutine function ``make`` returns a :class:`Starting` (its
    signature and ``__wrapped__`` kept, and marked for the blocking face's derivation,
    to which it is no coroutine function any more)."""

    @functools.wraps(make)
    def start(*args: P.args, **kwargs: P.kwargs) -> Starting[T]:
        return Starting(make(*args, **kwargs))

    start.__dict__[_MARK] = True
    return start


def makes_starting(function: object) -> bool:
    """Whether ``function`` (or a method bound to it) was made by :func:`starting`: its
    call is a start to block on in the blocking face, as a coroutine function's is."""
    return getattr(function, _MARK, False) is True
