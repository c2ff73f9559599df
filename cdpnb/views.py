"""The one way up the layers: what shows an object (``view()``) or writes its report
(``report()``) is looked up here, never imported by the object's own room.

A room low in the layers (the supervisor, a trace, a probe result, the proxy, a
campaign) has a ``view()`` and a ``report()``, but widgets live in ``cdpnb.notebook``
and reports in ``cdpnb.report``, both above it. So the layer above registers one
factory per class when it is imported, and :meth:`Shelf.make` imports that layer by
its module name on first use: the way pandas finds its plotting backend by name
(``pandas.plotting._core._get_plot_backend``). No room below names the room above in
an import, and ``import cdpnb`` loads neither ipywidgets nor the report.

A leaf: the standard library only.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

__all__ = ["REPORTS", "VIEWS", "Shelf"]

Factory = Callable[..., Any]


class Shelf:
    """Factories by class for one way of showing things, filled by the module
    ``provider`` when it is imported."""

    def __init__(self, what: str, provider: str) -> None:
        self.what = what
        self.provider = provider
        self._factories: dict[type, Factory] = {}

    def register(self, cls: type, factory: Factory) -> None:
        """``factory(obj, *args, **kwargs)`` makes the ``what`` of a ``cls`` (and of its
        subclasses that have none of their own)."""
        self._factories[cls] = factory

    def factory_for(self, cls: type) -> Factory | None:
        """The factory of ``cls`` or of its nearest base class that has one."""
        return next((self._factories[base] for base in cls.__mro__
                     if base in self._factories), None)

    def make(self, obj: object, *args: Any, **kwargs: Any) -> Any:
        """``obj``'s ``what``, made by the factory its class was registered with; the
        provider is imported first if it has not been (which registers its factories).
        A TypeError names the class when nothing shows it."""
        factory = self.factory_for(type(obj))
        if factory is None:
            importlib.import_module(self.provider)
            factory = self.factory_for(type(obj))
        if factory is None:
            raise TypeError(f"{self.provider} registers no {self.what} for "
                            f"{type(obj).__qualname__} objects")
        return factory(obj, *args, **kwargs)

    def __repr__(self) -> str:
        names = sorted(cls.__qualname__ for cls in self._factories)
        return f"<Shelf {self.what} from {self.provider}: {', '.join(names) or 'none yet'}>"


#: ``view()``: live widgets, registered by ``cdpnb.notebook``.
VIEWS = Shelf("view", "cdpnb.notebook")
#: ``report()``: the self-contained HTML report, registered by ``cdpnb.report``.
REPORTS = Shelf("report", "cdpnb.report")
