# Sourced by the browser suites' wrappers: installs the npm packages when
# they are missing or older than the lock file (scripts/deps.sh browser),
# checks node, then runs the suite's node script, which prints TAP. The
# suites never skip: what is missing is a failure.
#   run_node SCRIPT.mjs
run_node() {
  if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    "$TF_ROOT/scripts/deps.sh" browser >&2 || { echo "not ok 1 - npm packages for the browser test (scripts/deps.sh browser failed)"; echo "1..1"; exit 1; }
  fi
  if ! command -v node >/dev/null; then
    echo "not ok 1 - node is installed (scripts/deps.sh browser installs it)"; echo "1..1"; exit 1
  fi
  exec node "$1"
}
