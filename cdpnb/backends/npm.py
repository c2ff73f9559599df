"""The npm packages two backends run under node, and cdpnb's scripts that run them.

``package.json`` and ``package-lock.json`` at the repository root pin them;
``scripts/setup.sh`` installs them with ``npm ci`` into ``node_modules/`` beside
``cdpnb/``. ``$CDPNB_NODE_MODULES`` names another ``node_modules`` directory (an
installed cdpnb has no repository around it). Nothing here downloads a browser:
``puppeteer-core`` never does, and chromium-bidi is pointed at Debian's Chromium.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from cdpnb.errors import BrowserNotFound

__all__ = ["INSTALL_HINT", "NODE_MODULES_ENV", "SCRIPTS", "missing", "node_modules",
           "package_version", "require"]

NODE_MODULES_ENV = "CDPNB_NODE_MODULES"
#: Run in the repository root (where package-lock.json is).
INSTALL_HINT = "npm ci"
#: cdpnb's own node scripts (shipped as package data).
SCRIPTS = Path(__file__).resolve().parent / "js"


def node_modules() -> Path:
    """``$CDPNB_NODE_MODULES``, else ``node_modules`` in the repository cdpnb runs from."""
    chosen = os.environ.get(NODE_MODULES_ENV)
    if chosen:
        return Path(chosen).resolve()
    return Path(__file__).resolve().parents[2] / "node_modules"


def package_version(name: str) -> str | None:
    """The installed version of npm package ``name``, or None when it is missing."""
    try:
        data = json.loads((node_modules() / name / "package.json").read_text())
    except (OSError, ValueError):
        return None
    version = data.get("version") if isinstance(data, dict) else None
    return version if isinstance(version, str) else None


def missing(names: tuple[str, ...]) -> list[str]:
    """Which of ``names`` are not installed."""
    return [name for name in names if package_version(name) is None]


def require(names: tuple[str, ...]) -> Path:
    """The ``node_modules`` directory, once every one of ``names`` is in it; else
    BrowserNotFound saying which are missing and how to install them."""
    absent = missing(names)
    if absent:
        where = node_modules()
        source = f"${NODE_MODULES_ENV}" if os.environ.get(NODE_MODULES_ENV) else "the repository"
        raise BrowserNotFound(
            f"not installed: {INSTALL_HINT} ({', '.join(absent)}) — the npm packages are "
            f"missing from {where} ({source}); run `{INSTALL_HINT}` in cdpnb's repository "
            f"root (scripts/setup.sh does), or set {NODE_MODULES_ENV}")
    return node_modules()
