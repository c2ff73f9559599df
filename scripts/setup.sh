#!/usr/bin/env bash
# Set up a fresh machine for cdpnb: Debian browsers (when missing) and a virtualenv.
# Idempotent: a second run only checks. Used by the README's two commands and by CI.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
[ -x /usr/lib/chromium/chromium ] || missing+=(chromium)
[ -x /usr/lib/chromium/chromium-headless-shell ] || missing+=(chromium-headless-shell)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then sudo=""; elif command -v sudo >/dev/null 2>&1; then sudo="sudo"; else sudo="none"; fi
  if [ "$sudo" = none ]; then
    echo "setup: cannot install ${missing[*]} (not root, no sudo); cdpnb will use what it finds" >&2
  else
    echo "setup: installing Debian packages: ${missing[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
fi

python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[dev]'
echo "setup: ready ($(.venv/bin/python --version), cdpnb $(.venv/bin/python -c 'import cdpnb; print(cdpnb.__version__)'))"
