"""List the CPythons that pyproject.toml claims and this machine has, one per minor version.

Prints ``3.12 /path/to/python3.12`` lines (found on PATH, then under pyenv's
versions folder), newest patch release first found; with ``--missing`` it prints, on
stderr, the claimed minor versions the machine does not have. Used by
``scripts/test-pythons.sh``; stdlib only.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: The newest minor version to look for when requires-python has no upper bound.
NEWEST_MINOR = 15


def claimed_minors() -> list[tuple[int, int]]:
    """The 3.x minor versions ``requires-python`` admits (``>=3.11`` and an optional
    ``<3.N`` upper bound; other specifiers are refused, to keep this honest)."""
    spec = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    low, high = None, (3, NEWEST_MINOR + 1)
    for part in (p.strip() for p in spec.split(",")):
        match = re.fullmatch(r"(>=|<)\s*3\.(\d+)", part)
        if match is None:
            raise SystemExit(f"scripts/pythons.py: cannot read requires-python {spec!r}")
        if match.group(1) == ">=":
            low = (3, int(match.group(2)))
        else:
            high = (3, int(match.group(2)))
    if low is None:
        raise SystemExit(f"scripts/pythons.py: requires-python {spec!r} has no lower bound")
    return [(3, minor) for minor in range(low[1], high[1])]


def candidates(minor: tuple[int, int]) -> list[str]:
    name = f"python{minor[0]}.{minor[1]}"
    found = []
    on_path = shutil.which(name)
    if on_path:
        found.append(on_path)
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    if root.is_dir():
        versions = sorted((p for p in root.glob(f"{minor[0]}.{minor[1]}.*")
                           if re.fullmatch(r"\d+\.\d+\.\d+", p.name)),
                          key=lambda p: [int(x) for x in p.name.split(".")], reverse=True)
        found += [str(p / "bin" / name) for p in versions]
    return found


def works(executable: str, minor: tuple[int, int]) -> bool:
    """It runs (a pyenv shim for a version that is not selected does not), is CPython of
    that minor version, and has venv."""
    try:
        out = subprocess.run(
            [executable, "-c", "import sys, venv, platform; "
                               "print(platform.python_implementation(), *sys.version_info[:2])"],
            capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and out.stdout.split() == ["CPython", *map(str, minor)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--missing", action="store_true",
                        help="also say (on stderr) which claimed versions are not here")
    args = parser.parse_args()
    missing = []
    for minor in claimed_minors():
        executable = next((c for c in candidates(minor) if works(c, minor)), None)
        if executable is None:
            missing.append(f"{minor[0]}.{minor[1]}")
        else:
            print(f"{minor[0]}.{minor[1]} {executable}")
    if args.missing and missing:
        print(f"pythons: claimed by pyproject.toml but not on this machine: "
              f"{', '.join(missing)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
