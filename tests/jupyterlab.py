"""A JupyterLab server for the tests that look at what a notebook shows in a real
browser (tests/test_notebook_export.py, tests/test_probe_display.py): on 127.0.0.1, on a
free port, with a token, its own config and runtime folders, ended by its own pid."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cdpnb

__all__ = ["TOKEN", "jupyterlab", "until_shown"]

TOKEN = "cdpnb-test-token"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _wait_listening(port: int, server: subprocess.Popen[bytes], timeout: float = 300) -> None:
    # (JupyterLab starts in 10-60 s, loaded or not: a generous bound.)
    deadline = time.monotonic() + timeout
    while True:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        assert server.poll() is None, "JupyterLab exited (see server.log)"
        assert time.monotonic() < deadline, "JupyterLab did not listen"
        time.sleep(0.2)


@contextlib.contextmanager
def jupyterlab(folder: Path, tmp_path: Path) -> Iterator[int]:
    """JupyterLab serving ``folder`` (its log in ``tmp_path/server.log``); its port,
    once it listens. Open ``/lab/tree/NAME?token=`` + :data:`TOKEN`."""
    port = _free_port()
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(tmp_path / "config"),
               JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"))
    command = [sys.executable, "-m", "jupyter", "lab", "--no-browser",
               "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
               f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={folder}",
               "--LabApp.expose_app_in_browser=True"]
    if os.geteuid() == 0:
        command.append("--allow-root")
    with (tmp_path / "server.log").open("wb") as log:
        server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        _wait_listening(port, server)
        yield port
    finally:
        server.terminate()
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(10)


async def until_shown(sup: cdpnb.Supervisor, expression: str, what: str,
                      deadline: float) -> Any:
    """``expression``'s value in the page once it is truthy (polled), failing by
    ``deadline`` (``time.monotonic()``) with what JupyterLab never showed."""
    while True:
        value = await sup.evaluate(expression)
        if value:
            return value
        assert time.monotonic() < deadline, f"JupyterLab never showed {what}"
        await asyncio.sleep(0.25)
