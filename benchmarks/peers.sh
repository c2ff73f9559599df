#!/usr/bin/env bash
# The peer libraries bench_cdp.py compares cdpnb with, in an environment of their own
# (their websockets and aiohttp versions are theirs): benchmarks/.peers (git-ignored).
set -euo pipefail
cd "$(dirname "$0")"
python3 -m venv .peers
.peers/bin/pip install -q --disable-pip-version-check cdp-use pydoll-python
echo "peers: $(.peers/bin/pip list 2>/dev/null | grep -iE '^(cdp-use|pydoll-python) ' | tr -s ' ' | tr '\n' ' ')"
