#!/usr/bin/env bash
# Installs the Debian packages tierflow needs, and only those that are missing.
# Idempotent: every package is checked with `dpkg -s` first, `apt-get update`
# runs at most once and only when something is missing. Used by `make`,
# `make test`, `make demo`, `make bench` and `make fuzz`, so a fresh Debian 12
# machine (as root) needs nothing else.
#
#   scripts/deps.sh GROUP...     groups: build test demo bench fuzz browser
set -euo pipefail

declare -A GROUP
GROUP[build]="build-essential pkg-config libpcap-dev libnl-3-dev libnl-route-3-dev libnl-genl-3-dev libmicrohttpd-dev libjansson-dev libcurl4-openssl-dev libgnutls28-dev"
# frr: the emulated fabric routes with eBGP, one zebra + bgpd per switch
# (tests/lab/lab; --routing static does without).
# etcd-server, etcd-client: the HA suites elect a leader on a real etcd (docs/ha.md).
# mandoc: the man pages' lint (tests/install/test_manpages.sh).
# prometheus: the only Debian 12 package that ships promtool (`promtool check
# metrics` lints /metrics in tests/http/test_metrics.sh); about 96 MB installed.
# iptables: silent loss for the gray-failure suites (`-m statistic --mode random
# -j DROP` moves no interface counter; the kernel has xt_statistic, netem is absent).
GROUP[test]="libcmocka-dev iproute2 iperf3 iputils-ping procps curl jq openssl frr exabgp etcd-server etcd-client mandoc prometheus iptables"
GROUP[demo]="iproute2 iperf3 procps curl jq frr"
GROUP[bench]="softflowd pmacct wrk iproute2 time jq frr"
GROUP[fuzz]="clang libclang-rt-14-dev"
GROUP[browser]="chromium"

want=()
for g in "${@:-build}"; do
  [ -n "${GROUP[$g]+x}" ] || { echo "deps.sh: unknown group '$g' (build test demo bench fuzz browser)" >&2; exit 2; }
  for p in ${GROUP[$g]}; do
    dpkg -s "$p" >/dev/null 2>&1 || want+=("$p")
  done
done
# npm packages, pinned by a package-lock.json, that a group's tests run:
# browser, the dashboard tests' playwright-core (tests/browser); test, the
# OpenAPI linter (@redocly/cli, tests/openapi).
declare -A NPM_DIR
NPM_DIR[browser]=tests/browser
NPM_DIR[test]=tests/openapi
npm_dirs=()
for g in "${@:-build}"; do [ -n "${NPM_DIR[$g]+x}" ] && npm_dirs+=("${NPM_DIR[$g]}"); done
# Node.js may come from elsewhere (with npm bundled); only install Debian's
# when there is no npm at all.
[ ${#npm_dirs[@]} -gt 0 ] && ! command -v npm >/dev/null 2>&1 && want+=(nodejs npm)
# `npm ci` runs in a folder only when its node_modules is missing or older
# than its lock file, under a lock so parallel runs agree.
npm_install() {
  local root d
  root="$(cd "$(dirname "$0")/.." && pwd)"
  for d in "${npm_dirs[@]}"; do
    d="$root/$d"
    [ -f "$d/package-lock.json" ] || continue
    stale() { [ ! -f "$d/node_modules/.package-lock.json" ] || [ "$d/package-lock.json" -nt "$d/node_modules/.package-lock.json" ]; }
    stale || continue
    exec 9>"${TMPDIR:-/tmp}/tierflow-npm-$(id -u).lock"
    flock 9
    if stale; then
      echo "deps.sh: npm ci in ${d#"$root"/}" >&2
      (cd "$d" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
    fi
    exec 9>&-
  done
}
[ ${#want[@]} -eq 0 ] && { npm_install; exit 0; }

# Deduplicate while keeping order.
mapfile -t want < <(printf '%s\n' "${want[@]}" | awk '!seen[$0]++')
if [ "$(id -u)" -ne 0 ]; then
  echo "deps.sh: missing Debian packages: ${want[*]}; run as root or install them" >&2
  exit 1
fi
echo "deps.sh: installing ${want[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends "${want[@]}" >/dev/null
npm_install
