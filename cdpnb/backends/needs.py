"""What a backend kind needs on this machine, each a value that says whether it is
there and, if not, how to install it (``backend_available``'s reasons)."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from dataclasses import dataclass

from cdpnb.backends import npm
from cdpnb.errors import BrowserNotFound

__all__ = ["Need", "NpmPackages", "Program", "PythonPackage"]


@dataclass(frozen=True, slots=True)
class Program:
    """A program ``find`` finds (``$env_var`` names another), installed by ``install``."""

    find: Callable[[], str]
    env_var: str
    #: How to install it: ``"apt-get install nodejs"``.
    install: str

    def missing(self) -> str | None:
        try:
            self.find()
        except BrowserNotFound as exc:
            # A wrong override is a different problem from a missing package: say which.
            return str(exc) if os.environ.get(self.env_var) else f"not installed: {self.install}"
        return None


@dataclass(frozen=True, slots=True)
class PythonPackage:
    """A Python package imported as ``module``, installed by ``install``."""

    module: str
    install: str

    def missing(self) -> str | None:
        found = importlib.util.find_spec(self.module) is not None
        return None if found else f"not installed: {self.install}"


@dataclass(frozen=True, slots=True)
class NpmPackages:
    """npm packages cdpnb's scripts run, in ``node_modules`` (:mod:`cdpnb.backends.npm`)."""

    names: tuple[str, ...]

    def missing(self) -> str | None:
        absent = npm.missing(self.names)
        return f"not installed: {npm.INSTALL_HINT} ({', '.join(absent)})" if absent else None


#: One thing a kind needs; its ``missing()`` is None when it is there, else why not.
Need = Program | PythonPackage | NpmPackages
