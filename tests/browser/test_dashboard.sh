#!/usr/bin/env bash
# timeout: 180
# The web dashboard in a real browser (Debian's chromium driven by
# playwright-core): tests/browser/dashboard.test.mjs starts the sanitizer
# tierflowd, posts probe reports and prints TAP. It never skips: a missing
# tierflowd, chromium or node_modules is a failure.
set -u
cd "$(dirname "$0")"
: "${TF_ROOT:=$(cd ../.. && pwd)}" "${TF_BIN:=$TF_ROOT/build/san/bin}"
export TF_ROOT TF_BIN

. ./run_node.sh
run_node dashboard.test.mjs
