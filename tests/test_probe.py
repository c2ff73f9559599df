"""The probe, the CLI main job, and the README's two commands."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import cdpnb
from cdpnb.backends import chromium as chromium_module
from cdpnb.cli import main
from cdpnb.probes import CHECKS

ROOT = Path(__file__).resolve().parent.parent


async def test_probe_both_builds_finds_every_capability() -> None:
    result = await cdpnb.probe(["chromium", "headless-shell"])
    checks = result.checks()
    assert len(checks) == 2 * len(CHECKS)
    failed = checks[checks.status != "ok"]
    assert failed.empty, failed[["backend", "check", "detail"]].to_string()
    matrix = result.matrix()
    assert list(matrix.index) == ["chromium", "headless-shell"]
    latency = matrix.pop("command RTT ms").astype(float)
    assert (latency > 0).all() and (latency < 50).all()
    assert (matrix == "✓").all().all()
    assert result.backends["headless-shell"]["version"].startswith("HeadlessChrome/")
    assert str(checks["run"].dtype) == "Int64"
    assert "| chromium | Chrome/" in result.to_markdown()


async def test_a_missing_backend_is_a_row_of_reasons_not_a_crash(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(chromium_module.KINDS, "headless-shell",
                        chromium_module._Kind(("/nonexistent/headless-shell",),
                                              "chromium-headless-shell"))
    monkeypatch.delenv("CDPNB_CHROMIUM", raising=False)
    result = await cdpnb.probe(["headless-shell"])
    row = result.matrix().loc["headless-shell"]
    assert all(cell.startswith("✗") for cell in row)
    assert "apt-get install chromium-headless-shell" in row.iloc[0]


async def test_probe_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="unknown backend"):
        await cdpnb.probe(["firefox-nightly"])
    with pytest.raises(ValueError, match="repeat must be an int >= 1"):
        await cdpnb.probe(["chromium"], repeat=0)


def test_cli_probe_prints_the_matrix_and_writes_results(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    assert main(["probe", "--backends", "headless-shell", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "| headless-shell | HeadlessChrome/" in out
    saved = json.loads((tmp_path / "probe.json").read_text())
    assert {r["status"] for r in saved["results"]} == {"ok"}
    assert (tmp_path / "matrix.md").read_text().startswith("| backend |")


def test_cli_rejects_unknown_backends() -> None:
    proc = subprocess.run([sys.executable, "-m", "cdpnb.cli", "probe", "--backends", "nope"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "unknown backend(s): nope" in proc.stderr


def test_readme_has_exactly_two_setup_commands_and_ci_runs_the_test_one() -> None:
    readme = (ROOT / "README.md").read_text()
    commands = re.findall(r"^    (bash scripts/setup\.sh && .*)$", readme, flags=re.M)
    assert commands == ["bash scripts/setup.sh && .venv/bin/cdpnb probe",
                        "bash scripts/setup.sh && .venv/bin/python -m pytest"]
    ci = (ROOT / ".ci" / "run").read_text()
    assert "README.md" in ci and "pytest" in ci
