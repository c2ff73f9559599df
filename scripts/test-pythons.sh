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
failed=()
passed=()
while read -r version executable; do
  [ -n "$version" ] || continue
  if [ "$version" = "$default" ]; then
    continue
  fi
  echo "test-pythons: CPython $version ($executable): tests without browsers, and the smoke"
  PYTHON="$executable" VENV=".venv-$version" EXTRAS=dev bash scripts/setup.sh
  if CDPNB_TESTS_WITHOUT_BROWSERS=1 ".venv-$version/bin/python" -m pytest -p no:cacheprovider \
      -m "not browser or smoke" "$@"; then
    passed+=("$version")
  else
    failed+=("$version")
  fi
done <<< "$legs"
echo "test-pythons: default $default (the whole suite, by the README's command); passed on:" \
  "${passed[*]:-none}; failed on: ${failed[*]:-none}"
[ ${#failed[@]} -eq 0 ]
