"""The tree passes the tools the project holds itself to: ``ruff`` on the sources, the
tests, the benchmarks and the scripts, and ``mypy --strict`` on the package (a docstring
line too long once reached main because only a person ran them)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_finds_nothing() -> None:
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "cdpnb",
                           "tests", "benchmarks", "scripts"],
                          capture_output=True, text=True, cwd=ROOT, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_strict_finds_nothing_in_the_package(tmp_path: Path) -> None:
    # A cache of its own: a stale shared one must not hide an error (≈35 s cold here).
    done = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--cache-dir",
                           str(tmp_path / "mypy-cache"), "cdpnb"],
                          capture_output=True, text=True, cwd=ROOT, timeout=600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
