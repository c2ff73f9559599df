#!/usr/bin/env bash
# The peer libraries the benchmarks compare cdpnb with, in an environment of their own
# (their websockets and aiohttp versions are theirs): benchmarks/.peers (git-ignored).
# bench_contenders.py runs benchmarks/contenders/contender.py with its python for
# cdp-use, pydoll and zendriver (and, for --bidi, Selenium's BiDi client); without it
# those contenders are listed as skipped.
set -euo pipefail
cd "$(dirname "$0")"
python3 -m venv .peers
.peers/bin/pip install -q --disable-pip-version-check cdp-use pydoll-python zendriver
# Selenium 4.52 asks for certifi>=2026.10.23, newer than some mirrors have (this
# machine's had 2026.10.19.post1 on 2026-11-26). certifi is its CA bundle for HTTPS; the
# benchmark's BiDi socket is loopback ws://, so with no such certifi Selenium goes in
# without that pin and its other requirements as it states them.
if ! .peers/bin/pip install -q --disable-pip-version-check "selenium==4.52.*" 2>/dev/null; then
  .peers/bin/pip install -q --disable-pip-version-check --no-deps "selenium==4.52.*"
  .peers/bin/pip install -q --disable-pip-version-check certifi "trio>=0.31.0,<1.0" \
    "trio-websocket>=0.12.2,<1.0" "typing_extensions>=4.15.0,<5.0" \
    "urllib3[socks]>=2.6.3,<3.0" "websocket-client>=1.8.0,<2.0"
fi
echo "peers: $(.peers/bin/pip list 2>/dev/null \
  | grep -iE '^(cdp-use|pydoll-python|zendriver|selenium|websockets) ' | tr -s ' ' \
  | tr '\n' ' ')"
