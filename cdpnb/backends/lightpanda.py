"""Launch Lightpanda (PyPI ``lightpanda``, which ships its own binary) as a CDP server
on loopback.

Measured on lightpanda 1.0.2:

- ``lightpanda serve --host 127.0.0.1 --port 0`` lets the kernel choose the port and
  says which on stderr, also at the default log level:
  ``$msg="server running" address=127.0.0.1:PORT``. One process (4 threads), one
  listening socket, on 127.0.0.1 only (it also serves ``/metrics`` there).
- ``/json/version``: ``{"Browser": "Lightpanda/1.0", "Protocol-Version": "1.3",
  "Lightpanda-Version": "1.0.2", "webSocketDebuggerUrl": "ws://127.0.0.1:PORT/"}``;
  ``/json/list`` is ``[]``. Each CDP connection is a browser of its own, with one
  target: a second ``Target.createTarget`` on it fails.
- Without ``--load-resources iframe`` an ``<iframe>`` is never loaded (the flag's
  values replace the default, which for ``serve`` is none of them).
- ``LIGHTPANDA_DISABLE_TELEMETRY=true`` turns its usage telemetry off
  (``$msg="telemetry status" disabled=true`` at log level info).
- It can also serve WebDriver BiDi (``--protocol webdriver``, on ``/session``); cdpnb
  launches the CDP server only.
"""

from __future__ import annotations

import importlib.util
import os
import re
from dataclasses import dataclass
from pathlib import Path

from cdpnb.backends.process import Executable, LocalProcess, chosen_binary, port_in_output, spawn
from cdpnb.errors import BrowserNotFound

__all__ = ["INSTALL_HINT", "LIGHTPANDA_ARGS", "LightpandaProcess", "find_lightpanda"]

INSTALL_HINT = "pip install lightpanda"
ENV_VAR = "CDPNB_LIGHTPANDA"

#: ``serve``'s flags: loopback, a port the kernel chooses, iframes loaded.
LIGHTPANDA_ARGS = ("serve", "--host", "127.0.0.1", "--port", "0", "--load-resources", "iframe")
LIGHTPANDA_ENV = {"LIGHTPANDA_DISABLE_TELEMETRY": "true"}

_LISTENING = re.compile(rb'msg="server running" address=127\.0\.0\.1:(\d+)')


def find_lightpanda(executable: str | os.PathLike[str] | None = None) -> str:
    """The Lightpanda binary: ``executable``, ``$CDPNB_LIGHTPANDA``, or the one the
    ``lightpanda`` package ships (not its ``lightpanda`` console script, a Python
    trampoline whose pid would not be the browser's)."""
    chosen = chosen_binary(executable, ENV_VAR)
    if chosen is not None:
        return chosen
    spec = importlib.util.find_spec("lightpanda")
    if spec is not None and spec.origin is not None:
        binary = Path(spec.origin).parent / "lightpanda"
        if binary.is_file() and os.access(binary, os.X_OK):
            return str(binary)
    raise BrowserNotFound(f"no lightpanda binary found (the PyPI package `lightpanda` ships "
                          f"it); install it with `{INSTALL_HINT}`, or pass executable= / set "
                          f"{ENV_VAR}")


@dataclass(kw_only=True)
class LightpandaProcess(LocalProcess):
    """A running ``lightpanda serve`` that cdpnb started; ``close()`` ends it by its pid."""

    @classmethod
    def start(cls, executable: Executable = None, extra_args: tuple[str, ...] = (),
              timeout: float = 20.0) -> LightpandaProcess:
        binary = find_lightpanda(executable)

        def build_args(workdir: Path) -> tuple[str, ...]:
            return (binary, *LIGHTPANDA_ARGS, *extra_args)

        env = {**os.environ, **LIGHTPANDA_ENV}
        started = spawn("lightpanda", binary, build_args, port_in_output(_LISTENING),
                        "'server running address=127.0.0.1:…' on stderr", timeout, env)
        port = started.ready
        # The real endpoint (with its path) comes from /json/version, read by launch.
        return cls.adopt(started, kind="lightpanda", executable=binary, port=port,
                         cdp_url=f"ws://127.0.0.1:{port}/")
