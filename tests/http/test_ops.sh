#!/usr/bin/env bash
# tierflowd operations against a real daemon (sanitizer build) on loopback:
# SIGHUP reload (valid new topology and policy take effect; an invalid
# topology or policy keeps the old ones, records reload_failed, and the
# routes stay), HTTPS with a throwaway self-signed certificate (or, if this
# libmicrohttpd lacks TLS, the daemon says so), and openapi.json installed by
# `make install` and served by the installed daemon from there.
# timeout: 900
set -u
. "$(dirname "$0")/../lib/tap.sh"
D=$TF_BIN/tierflowd; G=$TF_TOOLS/report_gen
[ -x "$D" ] && [ -x "$G" ] || { t_skip all "needs $D and $G (make san tools)"; t_done; }
. "$(dirname "$0")/../lib/daemon.sh"
# Polls until the events list has n events of kind k (the reload runs on the main loop).
wait_event() { for i in $(seq 100); do [ "$(curl -s "$U/api/v1/events" | jq "[.events[]|select(.kind==\"$1\")]|length")" -ge "$2" ] && return 0; sleep 0.1; done; return 1; }

# ---- SIGHUP reload -------------------------------------------------------
PORT=$(port); U=http://127.0.0.1:$PORT
"$G" --topology leafspine:leaves=2,spines=4,hosts=4,gbps=100 --emit-topology "$W/topo.json"
cp "$W/topo.json" "$W/topo-2x4.json"
echo '{"classes": [{"name": "storage", "match": {"proto": [6], "dport": [3260]}}]}' > "$W/policy.json"
"$D" --topology "$W/topo.json" --policy "$W/policy.json" --listen 127.0.0.1:$PORT --backend none \
     --interval 3600 2>"$W/log" & PID=$!
wait_up "$U" || { t_fail "daemon starts" "$(tail -3 "$W/log")"; t_done; }
# A collision, resolved, so that there are routes to keep.
"$G" --topology "$W/topo.json" --flows 4 --congest L1-S1 --post $U/api/v1/reports >/dev/null
curl -s -X POST "$U/api/v1/rebalance" >/dev/null
curl -s "$U/api/v1/routes" > "$W/routes.before"
t_check "routes to keep" jq -e '(.switches|length) >= 1' "$W/routes.before"

# New valid files: 3 leaves, and another class.
"$G" --topology leafspine:leaves=3,spines=4,hosts=4,gbps=100 --emit-topology "$W/topo.json"
echo '{"classes": [{"name": "bulk", "match": {"dscp": [8]}}]}' > "$W/policy.json"
kill -HUP $PID
t_check "reload event" wait_event reload 1
t_eq "new topology in effect" 3 "$(curl -s $U/api/v1/topology | jq '[.nodes[]|select(.tier=="leaf")]|length')"
t_check "new policy in effect" sh -c "curl -s $U/api/v1/classes | jq -e '([.classes[].name]|index(\"bulk\")) and ([.classes[].name]|index(\"storage\")|not)' >/dev/null"
curl -s "$U/api/v1/routes" > "$W/routes.mid"

# An invalid topology: the old one stays, the failure is an event, routes stay.
echo '{"name": "broken", "tiers": ["host"' > "$W/topo.json"
kill -HUP $PID
t_check "bad topology: reload_failed event" wait_event reload_failed 1
t_check "bad topology: event names the file" sh -c "curl -s $U/api/v1/events | jq -e '[.events[]|select(.kind==\"reload_failed\")][0].message|contains(\"topo.json\")' >/dev/null"
t_eq "bad topology: old topology kept" 3 "$(curl -s $U/api/v1/topology | jq '[.nodes[]|select(.tier=="leaf")]|length')"
t_check "bad topology: routes unchanged" sh -c "curl -s $U/api/v1/routes | cmp -s - '$W/routes.mid'"

# A valid topology with an invalid policy: nothing changes either.
cp "$W/topo-2x4.json" "$W/topo.json"
echo '{"classes": [{"name": "x", "match": {"dscp": [99]}}]}' > "$W/policy.json"
kill -HUP $PID
t_check "bad policy: reload_failed event" wait_event reload_failed 2
t_eq "bad policy: old topology kept" 3 "$(curl -s $U/api/v1/topology | jq '[.nodes[]|select(.tier=="leaf")]|length')"
t_check "bad policy: old policy kept" sh -c "curl -s $U/api/v1/classes | jq -e '[.classes[].name]|index(\"bulk\")' >/dev/null"
t_check "bad policy: routes unchanged" sh -c "curl -s $U/api/v1/routes | cmp -s - '$W/routes.mid'"
t_check "still serving after failed reloads" curl -sf "$U/api/v1/status" -o /dev/null
kill -TERM $PID; wait $PID; rc=$?; PID=
t_eq "SIGTERM after reloads exits 0" 0 $rc

# ---- HTTPS ---------------------------------------------------------------
if ! command -v openssl >/dev/null; then
  t_skip https "openssl missing (scripts/deps.sh test)"
else
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$W/key.pem" -out "$W/cert.pem" -days 1 \
          -subj /CN=127.0.0.1 -addext "subjectAltName=IP:127.0.0.1" 2>/dev/null
  PORT=$(port); U=https://127.0.0.1:$PORT
  "$D" --topology "$W/topo-2x4.json" --listen 127.0.0.1:$PORT --backend none --interval 3600 \
       --tls-cert "$W/cert.pem" --tls-key "$W/key.pem" 2>"$W/tls.log" & PID=$!
  if wait_up "$U"; then
    t_check "https with --cacert" sh -c "curl -sf --cacert '$W/cert.pem' $U/api/v1/status | jq -e .version >/dev/null"
    t_check "https refuses an unknown CA" sh -c "! curl -sf $U/api/v1/status -o /dev/null"
    t_check "plain http on the TLS port fails" sh -c "! curl -sf http://127.0.0.1:$PORT/api/v1/status -o /dev/null"
  else
    wait $PID; PID=
    t_check "daemon says its libmicrohttpd lacks TLS" grep -q "built without TLS support" "$W/tls.log"
  fi
  stop
  PORT=$(port)
  "$D" --topology "$W/topo-2x4.json" --listen 127.0.0.1:$PORT --backend none --tls-cert "$W/nope.pem" \
       --tls-key "$W/key.pem" 2>"$W/tls2.log"; rc=$?
  t_eq "missing certificate: exit 1" 1 $rc
  t_check "missing certificate: named" grep -q "nope.pem" "$W/tls2.log"
fi

# ---- openapi.json installed and found there --------------------------------
# A build of its own with PREFIX inside $W, so that the daemon's share folder
# is where make install puts it; run from outside the source tree so that
# the source copy cannot be the one found. It starts from a copy of the
# optimised build: the new prefix must rebuild the one object that names it,
# or the installed daemon would look under the old one.
. "$(dirname "$0")/../lib/buildcopy.sh"
build_copy "$W/build" 2>"$W/copy.log" || t_fail "copy of the build" "$(head -3 "$W/copy.log")"
if make -C "$TF_ROOT" --no-print-directory O="$W/build" PREFIX="$W/prefix" SYSCONFDIR="$W/prefix/etc" install >"$W/install.log" 2>&1; then
  t_eq "make install compiles one object, the one naming the prefix" 1 "$(grep -c -- ' -c ' "$W/install.log")"
  t_check "make install puts openapi.json in SHAREDIR" cmp -s "$TF_ROOT/controller/openapi.json" "$W/prefix/share/tierflow/openapi.json"
  PORT=$(port); U=http://127.0.0.1:$PORT
  (cd "$W" && exec "$W/prefix/bin/tierflowd" --topology "$W/topo-2x4.json" --listen 127.0.0.1:$PORT --backend none \
       --interval 3600 2>"$W/inst.log") & PID=$!
  if wait_up "$U"; then
    t_eq "installed daemon serves openapi.json" 200 "$(curl -s -o "$W/oa" -w '%{http_code}' $U/api/v1/openapi.json)"
    t_check "the installed copy" cmp -s "$W/oa" "$W/prefix/share/tierflow/openapi.json"
    t_check "no 'not found' warning" sh -c "! grep -q 'openapi.json not found' '$W/inst.log'"
  else
    t_fail "installed daemon starts" "$(tail -3 "$W/inst.log")"
  fi
  stop
else
  t_fail "make install (own build, PREFIX in a temp folder)" "$(grep -E 'error|Error' "$W/install.log" | head -3)"
fi
t_done
