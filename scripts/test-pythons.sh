#!/usr/bin/env bash
# The tests on every other CPython that pyproject.toml claims and this machine has
# (scripts/pythons.py finds them; the default one, .venv, runs the whole suite through
# the README's test command): on each, in its own .venv-3.N, every test that starts no
# browser, and the real-browser smoke (tests/test_smoke.py: a launch, an OOPIF prompt
# answered, a trace recorded and loaded, both faces). A test that launches a browser
# without being marked `browser` fails there (tests/conftest.py), so the selection
# stays honest. Extra arguments go to pytest. Exit status: 1 if any leg failed.
set -euo pipefail
cd "$(dirname "$0")/.."
default=$(.venv/bin/python -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null \
  || echo none)
legs=$(python3 scripts/pythons.py --missing)
# Each leg's venv is made first, one after another (pip and the editable install share
# the checkout); then the legs' tests run side by side, each to a log of its own shown
# whole when it ends: on 2 cores, two legs take about the time of one (each is mostly
# one Python thread) and the suite passes beside busy processes anyway.
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
versions=()
while read -r version executable; do
  [ -n "$version" ] || continue
  if [ "$version" = "$default" ]; then
    continue
  fi
  echo "test-pythons: CPython $version ($executable): setting up .venv-$version"
  PYTHON="$executable" VENV=".venv-$version" EXTRAS=dev bash scripts/setup.sh
  versions+=("$version")
done <<< "$legs"
pids=()
for version in "${versions[@]}"; do
  echo "test-pythons: CPython $version: tests without browsers, and the smoke (log follows when it ends)"
  CDPNB_TESTS_WITHOUT_BROWSERS=1 ".venv-$version/bin/python" -m pytest -p no:cacheprovider \
    -m "not browser or smoke" "$@" > "$logs/$version.log" 2>&1 &
  pids+=("$!")
done
failed=()
passed=()
for i in "${!versions[@]}"; do
  version=${versions[$i]}
  if wait "${pids[$i]}"; then
    passed+=("$version")
  else
    failed+=("$version")
  fi
  echo "test-pythons: CPython $version:"
  cat "$logs/$version.log"
done
echo "test-pythons: default $default (the whole suite, by the README's command); passed on:" \
  "${passed[*]:-none}; failed on: ${failed[*]:-none}"
[ ${#failed[@]} -eq 0 ]
