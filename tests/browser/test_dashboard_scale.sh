#!/usr/bin/env bash
# timeout: 240
# The dashboard at 2x4, 8x8 and a 3-tier pod of 192 racks in a real browser
# (Debian's chromium driven by playwright-core): tests/browser/scale.test.mjs
# starts the sanitizer tierflowd on ports 18420-18422, posts probe reports
# and prints TAP. It never skips: a missing tierflowd, report_gen, chromium
# or node_modules is a failure.
set -u
cd "$(dirname "$0")"
: "${TF_ROOT:=$(cd ../.. && pwd)}" "${TF_BIN:=$TF_ROOT/build/san/bin}" "${TF_TOOLS:=$TF_ROOT/build/tools}"
export TF_ROOT TF_BIN TF_TOOLS

if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  "$TF_ROOT/scripts/deps.sh" browser >&2 || { echo "not ok 1 - npm packages for the browser test (scripts/deps.sh browser failed)"; echo "1..1"; exit 1; }
fi
if ! command -v node >/dev/null; then
  echo "not ok 1 - node is installed (scripts/deps.sh browser installs it)"; echo "1..1"; exit 1
fi
exec node scale.test.mjs
