"""Launch node with its inspector on loopback: a runtime-only CDP endpoint.

Node serves one target per process and no browser endpoint: ``Runtime``, ``Debugger``,
``Profiler``, ``HeapProfiler`` and friends work, while ``Page.*``, ``Target.*`` and
``Fetch.*`` answer -32601. It is the backend on which a probe should find nearly
every capability missing, and say why instead of crashing.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from cdpnb.backends.process import (
    Executable,
    LocalProcess,
    found_binary,
    spawn,
    uncoloured,
    ws_url_in_output,
)
from cdpnb.errors import BrowserNotFound

__all__ = ["NodeProcess", "find_node", "keepalive_script"]

def keepalive_script(parent_pid: int) -> str:
    """The script node runs: nothing but a timer, so the process stays up for the
    inspector.

    The timer also ends node once ``parent_pid`` (this Python) is no longer its parent:
    node runs in a session of its own, and a Python killed with SIGKILL runs no atexit
    handler. The pid is passed in rather than read as ``process.ppid`` at start, since
    node prints its inspector URL before it runs the script, and a parent killed in
    between would already be gone. The timer also gives ``Debugger.pause`` a statement
    to stop at within a second. An evaluated promise that rejects with nobody awaiting it
    (``Promise.reject(...)`` without ``awaitPromise``) would end node 20 ("unhandled
    rejection") once the client has gone: the handler keeps it up, as deno's and bun's
    keepalives do, and as a page survives it.
    """
    return ("process.on('unhandledRejection', () => {});\n"
            f"setInterval(() => {{ if (process.ppid !== {int(parent_pid)}) process.exit(0); }},"
            " 1000);")


# node prints this on stderr once the inspector listens; with port 0 it is the only
# place that says which port the kernel chose.
_LISTENING = re.compile(rb"Debugger listening on (ws://127\.0\.0\.1:(\d+)/[0-9a-fA-F-]+)\s")


def find_node(executable: str | os.PathLike[str] | None = None) -> str:
    """The node binary: ``executable``, ``$CDPNB_NODE``, or ``node`` on PATH; a missing
    one raises BrowserNotFound naming the Debian package."""
    found = found_binary(executable, "CDPNB_NODE", ("node",))
    if found is None:
        raise BrowserNotFound("no node binary found on PATH; install it with "
                              "`apt-get install nodejs`, or pass executable= / set CDPNB_NODE")
    return found


@dataclass(kw_only=True)
class NodeProcess(LocalProcess):
    """A running ``node --inspect`` that cdpnb started. ``cdp_url`` is the endpoint of
    its one target; ``close()`` ends it by its own pid."""

    @classmethod
    def start(cls, executable: Executable = None, extra_args: tuple[str, ...] = (),
              timeout: float = 20.0) -> NodeProcess:
        binary = find_node(executable)
        # NODE_OPTIONS from the caller's environment (a second --inspect, a --require)
        # would change what is being studied, or fight over the inspector.
        # Colour off, as for Bun: node 20.20.2 left this banner plain with FORCE_COLOR=1
        # (measured), but FORCE_COLOR wins over NO_COLOR in node's rules.
        env = uncoloured({k: v for k, v in os.environ.items() if k != "NODE_OPTIONS"})

        def build_args(workdir: Path) -> tuple[str, ...]:
            return (binary, "--inspect=127.0.0.1:0", *extra_args, "-e",
                    keepalive_script(os.getpid()))

        started = spawn("node", binary, build_args, ws_url_in_output(_LISTENING),
                        "'Debugger listening on ws://…' on stderr", timeout, env)
        ws_url, port = started.ready
        return cls.adopt(started, kind="node", executable=binary, port=port, cdp_url=ws_url)
