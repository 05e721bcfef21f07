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

. ./run_node.sh
run_node scale.test.mjs
