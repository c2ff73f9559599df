#!/usr/bin/env bash
# The peer libraries the benchmarks compare cdpnb with, in an environment of their own
# (their websockets and aiohttp versions are theirs): benchmarks/.peers (git-ignored).
# bench_contenders.py runs benchmarks/contenders/contender.py with its python for
# cdp-use, pydoll and zendriver; without it those contenders are listed as skipped.
set -euo pipefail
cd "$(dirname "$0")"
python3 -m venv .peers
.peers/bin/pip install -q --disable-pip-version-check cdp-use pydoll-python zendriver
echo "peers: $(.peers/bin/pip list 2>/dev/null \
  | grep -iE '^(cdp-use|pydoll-python|zendriver|websockets) ' | tr -s ' ' | tr '\n' ' ')"
