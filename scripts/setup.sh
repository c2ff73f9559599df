#!/usr/bin/env bash
# Set up a fresh machine for cdpnb: Debian browsers and drivers (when missing), a
# virtualenv, and the npm packages of package-lock.json (chromium-bidi, puppeteer-core,
# bun's platform binary; no browser download).
# Idempotent: a second run only checks. Used by the README's two commands and by CI.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
[ -x /usr/lib/chromium/chromium ] || missing+=(chromium)
[ -x /usr/lib/chromium/chromium-headless-shell ] || missing+=(chromium-headless-shell)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
[ -x /usr/lib/firefox-esr/firefox-esr ] || missing+=(firefox-esr)
# WebKit (WebDriver classic only, no headless mode: it runs under an Xvfb cdpnb starts)
# and chromedriver (classic and BiDi over the Debian Chromium).
command -v WebKitWebDriver >/dev/null 2>&1 || missing+=(webkit2gtk-driver)
command -v Xvfb >/dev/null 2>&1 || missing+=(xvfb)
command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
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

# PYTHON picks the interpreter, VENV the folder (scripts/test-pythons.sh makes one
# per CPython: .venv-3.12, .venv-3.13, ...).
python=${PYTHON:-python3}
venv=${VENV:-.venv}
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
# EXTRAS: the pip extras (scripts/test-pythons.sh leaves JupyterLab out of its venvs).
extras=${EXTRAS:-dev,lab}
echo "setup: installing cdpnb[$extras] into $venv (pip; a minute or two at first)"
# pip's progress, in lines that fit 80 columns (scripts/pip_status.py: one status line on
# a terminal, a line per phase elsewhere; an error or a warning as pip wrote it). pipefail
# keeps pip's exit status.
"$venv/bin/python" -m pip install --disable-pip-version-check --progress-bar off \
  -e ".[$extras]" 2>&1 | "$venv/bin/python" scripts/pip_status.py

# The node-backed backends (chromium+bidi, chromium+puppeteer) run the packages pinned in
# package-lock.json. --ignore-scripts: nothing of theirs runs at install time (the
# native websocket helpers ship prebuilt). Reinstalled only when the lock file changed.
if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
  if [ ! -f node_modules/.package-lock.json ] || ! cmp -s package-lock.json node_modules/.cdpnb-lock; then
    echo "setup: installing npm packages (npm ci)"
    npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
    cp package-lock.json node_modules/.cdpnb-lock
  fi
else
  echo "setup: node/npm not found; skipping npm ci (chromium+bidi and chromium+puppeteer will say so)" >&2
fi
echo "setup: ready ($("$venv/bin/python" --version) in $venv, cdpnb $("$venv/bin/python" -c 'import cdpnb; print(cdpnb.__version__)'))"
