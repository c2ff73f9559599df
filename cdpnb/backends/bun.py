"""Launch Bun with its inspector on loopback: a runtime that speaks the WebKit Inspector
Protocol (WIP), not CDP.

Measured on Bun 1.4.5 (npm ``bun``; its platform binary
``node_modules/@oven/bun-linux-x64/bin/bun``), ``bun --inspect=127.0.0.1:0/<path>``:

- it prints ``Listening:`` and ``ws://127.0.0.1:PORT/<path>`` once the inspector listens
  (the only place that says which port it chose); the path is the one asked for; with
  FORCE_COLOR=1 in its environment, NO_COLOR=1 or not, the URL comes wrapped in colour
  escapes (``ESC[2m…ESC[22m``) even into a file: cdpnb starts it with colour off and
  strips escapes before it reads the banner;
- ``/json/version`` says ``{"Browser": "Bun", "User-Agent": "Bun/1.4.5", "Bun-Version":
  ...}`` with no ``webSocketDebuggerUrl``; ``/json/list`` and ``/json`` are 404;
- the WebSocket speaks WIP: what differs from CDP is in :mod:`cdpnb.protocol.wip`;
  ``Page``, ``Target``, ``Browser`` and ``session`` are "domain was not found" (-32601);
- it exits on an unhandled promise rejection, also one made by an expression evaluated
  over the inspector, before ``Runtime.awaitPromise`` (WIP's way to await it) can
  reach it: the keepalive script handles them, so the runtime stays up, as a page does.
"""

from __future__ import annotations

import os
import platform
import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cdpnb.backends import npm
from cdpnb.backends.process import (
    Executable,
    LocalProcess,
    chosen_binary,
    spawn,
    uncoloured,
    ws_url_in_output,
)
from cdpnb.errors import BrowserNotFound

__all__ = ["INSTALL_HINT", "BunProcess", "bun_binaries", "find_bun", "keepalive_script",
           "named_version"]

#: package.json pins ``bun``, whose platform package (``@oven/bun-<os>-<arch>``) holds
#: the binary; ``npm ci`` in cdpnb's repository root installs it.
INSTALL_HINT = "npm ci"
#: The flags that keep a run to the script it is given: no package installed on the
#: fly (Bun auto-installs a missing import otherwise).
ISOLATING_FLAGS = ("--no-install",)
_MACHINES = {"x86_64": "x64", "amd64": "x64", "aarch64": "aarch64", "arm64": "aarch64"}

# Bun prints "Listening:" then the URL, indented, on its own line.
_LISTENING = re.compile(rb"Listening:\s+(ws://127\.0\.0\.1:(\d+)/cdpnb-[0-9a-f]+)\s")


def keepalive_script(parent_pid: int) -> str:
    """The script bun runs: a timer that keeps the inspector up and ends bun once
    ``parent_pid`` (this Python) is no longer its parent, and a handler that keeps an
    evaluated expression's unhandled rejection from ending the runtime (see above)."""
    return ('process.on("unhandledRejection", () => {});\n'
            f"setInterval(() => {{ if (process.ppid !== {int(parent_pid)}) process.exit(0); }},"
            " 1000);\n")


def bun_binaries() -> list[Path]:
    """Where npm puts Bun's binary for this machine, in the order cdpnb looks: the
    platform package of glibc, then of musl."""
    system = platform.system().lower()
    machine = _MACHINES.get(platform.machine().lower(), platform.machine().lower())
    where = npm.node_modules() / "@oven"
    return [where / f"bun-{system}-{machine}{libc}" / "bin" / "bun" for libc in ("", "-musl")]


def find_bun(executable: str | os.PathLike[str] | None = None) -> str:
    """The bun binary: ``executable``, ``$CDPNB_BUN``, or the one the npm package
    installed in ``node_modules`` (``$CDPNB_NODE_MODULES`` names another); a missing one
    raises BrowserNotFound saying how to install it."""
    chosen = chosen_binary(executable, "CDPNB_BUN")
    if chosen is not None:
        return chosen
    for path in bun_binaries():
        if os.access(path, os.X_OK):
            return str(path)
    raise BrowserNotFound(
        f"not installed: {INSTALL_HINT} (bun) — no bun binary in {npm.node_modules()}/@oven; "
        f"run `{INSTALL_HINT}` in cdpnb's repository root (scripts/setup.sh does), or pass "
        f"executable= / set CDPNB_BUN")


def named_version(info: dict[str, Any]) -> dict[str, Any]:
    """Bun's ``/json/version`` as cdpnb shows it: Bun 1.4.5's names no version in
    ``Browser`` (``"Bun"``); its ``User-Agent`` (``Bun/1.4.5``) does, so that is the
    ``Browser`` cdpnb shows. What Bun said is kept as ``Browser (served)``."""
    agent = info.get("User-Agent")
    if not isinstance(agent, str) or not agent.startswith("Bun/"):
        return info
    return {**info, "Browser": agent, "Browser (served)": info.get("Browser")}


@dataclass(kw_only=True)
class BunProcess(LocalProcess):
    """A running ``bun --inspect`` that cdpnb started. ``cdp_url`` is its inspector's
    WebSocket (WIP, despite the name); ``close()`` ends it by its own pid."""

    @classmethod
    def start(cls, executable: Executable = None, extra_args: tuple[str, ...] = (),
              timeout: float = 20.0) -> BunProcess:
        binary = find_bun(executable)
        # An unguessable path: the inspector answers at no other.
        path = f"cdpnb-{secrets.token_hex(8)}"
        # Colour off: with FORCE_COLOR=1 (Jupyter kernels set it) Bun colours its banner
        # even beside NO_COLOR=1; read_output below strips escapes all the same.
        env = uncoloured({k: v for k, v in os.environ.items()
                          if k not in ("NODE_OPTIONS", "BUN_OPTIONS")})
        # Bun uploads a crash report to bun.report unless told not to.
        env["DO_NOT_TRACK"] = "1"

        def build_args(workdir: Path) -> tuple[str, ...]:
            script = workdir / "keepalive.js"
            script.write_text(keepalive_script(os.getpid()))
            # --cwd: no bunfig.toml, package.json or node_modules from where Python runs.
            return (binary, f"--inspect=127.0.0.1:0/{path}", *ISOLATING_FLAGS,
                    f"--cwd={workdir}", *extra_args, str(script))

        started = spawn("bun", binary, build_args, ws_url_in_output(_LISTENING),
                        "'Listening: ws://…' in its output", timeout, env)
        ws_url, port = started.ready
        return cls.adopt(started, kind="bun", executable=binary, port=port, cdp_url=ws_url,
                         protocol="wip")
