"""Launch Deno with its inspector on loopback: a runtime-only CDP endpoint, as node's.

Deno 2.9.8 (PyPI ``deno``: ``deno.find_deno_bin()``) speaks V8's inspector protocol
like node: one target, ``/json/version`` says ``Deno/2.9.8`` (and gives no
``webSocketDebuggerUrl``), ``/json/list`` names the target, and ``Page.*``,
``Target.*`` and ``Fetch.*`` answer -32601. It prints ``Debugger listening on
ws://127.0.0.1:PORT/<uuid>`` on stderr, the one place that says which port it chose.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from cdpnb.backends.process import (
    Executable,
    LocalProcess,
    chosen_binary,
    spawn,
    uncoloured,
    ws_url_in_output,
)
from cdpnb.errors import BrowserNotFound

__all__ = ["INSTALL_HINT", "DenoProcess", "find_deno", "keepalive_script"]

#: How to get the binary cdpnb finds (the PyPI package ships it).
INSTALL_HINT = "pip install deno"
#: The flags that keep a run to the script it is given: no config file or lock file
#: picked up from the working directory, no remote or npm module resolved, and a
#: missing permission an error rather than a prompt on a terminal nobody reads.
ISOLATING_FLAGS = ("--no-prompt", "--no-config", "--no-lock", "--no-remote", "--no-npm")

# Deno prints this on stderr once the inspector listens (as node does).
_LISTENING = re.compile(rb"Debugger listening on (ws://127\.0\.0\.1:(\d+)/[0-9a-fA-F-]+)\s")


def keepalive_script(parent_pid: int) -> str:
    """The script deno runs: a timer that keeps the inspector up, and ends deno once
    ``parent_pid`` (this Python) is no longer its parent (``Deno.ppid`` needs no
    permission).

    Measured on Deno 2.9.8: an expression evaluated over the inspector whose promise
    rejects with nobody awaiting it (``Runtime.evaluate`` of ``Promise.reject(...)``
    without ``awaitPromise``) ends the process ("Uncaught (in promise)"), taking the
    inspector with it; the handler keeps the runtime up, as a page survives it.
    """
    return ('globalThis.addEventListener("unhandledrejection", (event) => '
            "event.preventDefault());\n"
            f"setInterval(() => {{ if (Deno.ppid !== {int(parent_pid)}) Deno.exit(0); }}, 1000);\n")


def find_deno(executable: str | os.PathLike[str] | None = None) -> str:
    """The deno binary: ``executable``, ``$CDPNB_DENO``, the one the PyPI package
    ``deno`` ships, or ``deno`` on PATH; a missing one raises BrowserNotFound saying how
    to install it."""
    chosen = chosen_binary(executable, "CDPNB_DENO")
    if chosen is not None:
        return chosen
    try:
        import deno  # type: ignore[import-untyped]  # (PyPI deno has no type hints)
    except ImportError:
        pass
    else:
        shipped = str(deno.find_deno_bin())
        if os.access(shipped, os.X_OK):
            return shipped
    path = shutil.which("deno")
    if path is None:
        raise BrowserNotFound(f"no deno binary found; install it with `{INSTALL_HINT}` "
                              "(scripts/setup.sh does), or pass executable= / set CDPNB_DENO")
    return path


@dataclass(kw_only=True)
class DenoProcess(LocalProcess):
    """A running ``deno run --inspect`` that cdpnb started. ``cdp_url`` is the endpoint
    of its one target; ``close()`` ends it by its own pid."""

    @classmethod
    def start(cls, executable: Executable = None, extra_args: tuple[str, ...] = (),
              timeout: float = 20.0) -> DenoProcess:
        binary = find_deno(executable)
        env = _environment()

        def build_args(workdir: Path) -> tuple[str, ...]:
            # Deno writes its caches (v8 code, module analysis: sqlite files, measured)
            # into DENO_DIR as it runs even this script: a fresh one in the work dir.
            # (spawn copies env for the program after calling build_args.)
            env["DENO_DIR"] = str(workdir / "deno-dir")
            script = workdir / "keepalive.js"
            script.write_text(keepalive_script(os.getpid()))
            return (binary, "run", "--inspect=127.0.0.1:0", *ISOLATING_FLAGS, *extra_args,
                    str(script))

        started = spawn("deno", binary, build_args, ws_url_in_output(_LISTENING),
                        "'Debugger listening on ws://…' on stderr", timeout, env)
        ws_url, port = started.ready
        return cls.adopt(started, kind="deno", executable=binary, port=port, cdp_url=ws_url)


def _environment() -> dict[str, str]:
    """The caller's environment, less what would change the run (V8 flags, tokens for
    remote modules, a node option), and no update check: Deno otherwise looks one up
    online. Colour off (Deno 2.9.8 left its banner plain with FORCE_COLOR=1, measured;
    Bun did not)."""
    env = uncoloured({k: v for k, v in os.environ.items()
                      if k not in ("DENO_AUTH_TOKENS", "NODE_OPTIONS")
                      and not k.startswith("DENO_V8")})
    env["DENO_NO_UPDATE_CHECK"] = "1"
    return env
