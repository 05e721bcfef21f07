#!/usr/bin/env bash
# Safe by default without a token (issue 12, item 5), against a real daemon
# (sanitizer build) with no token file: what a web page on the operator's
# machine could do before (post a fake report as text/plain; call the API
# under a rebinding DNS name) is refused with its reason, while curl, the
# probes' JSON posts and the dashboard's same-origin calls still work. And
# the warning at start when there is no token on a non-loopback address.
# timeout: 120
set -u
. "$(dirname "$0")/../lib/tap.sh"
D=$TF_BIN/tierflowd; G=$TF_TOOLS/report_gen
[ -x "$D" ] && [ -x "$G" ] || { t_skip all "needs $D and $G (make san tools)"; t_done; }
. "$(dirname "$0")/../lib/daemon.sh"
"$G" --topology leafspine:leaves=2,spines=4,hosts=4,gbps=100 --emit-topology "$W/topo.json"
REPORT='{"probe":"L1","links":[{"if":"S1","tx_bps":1,"oper":"down"}]}'
J="Content-Type: application/json"

PORT=$(port); U=http://127.0.0.1:$PORT
"$D" --topology "$W/topo.json" --listen 127.0.0.1:$PORT --backend none --interval 3600 \
     --set http.allowed_hosts=tierflow.example,ctl.example. \
     --set http.allowed_origins=https://dash.example:8443 2>"$W/log" & PID=$!
wait_up "$U" || { t_fail "daemon starts" "$(tail -3 "$W/log")"; t_done; }
t_check "no warning on loopback without a token" sh -c "! grep -q 'no token_file' '$W/log'"

# ---- Content-Type on writes ----------------------------------------------
# What a <form> or fetch(no-cors) from any page can send without a preflight.
t_eq "report as text/plain: 415" 415 "$(code -H 'Content-Type: text/plain' -d "$REPORT" $U/api/v1/reports)"
t_check "415 says why" jqf '.error.code=="unsupported_media_type" and (.error.message|contains("text/plain") and contains("application/json"))' "$W/body"
t_eq "report as a form: 415" 415 "$(code -d "$REPORT" $U/api/v1/reports)"
t_eq "report with no Content-Type: 415" 415 "$(code -H 'Content-Type:' -d "$REPORT" $U/api/v1/reports)"
t_check "no Content-Type named" jqf '.error.message|startswith("no Content-Type")' "$W/body"
t_eq "job PUT as text/plain: 415" 415 "$(code -X PUT -H 'Content-Type: text/plain' -d '{}' $U/api/v1/jobs/x)"
t_check "the fake report changed nothing (link still up)" sh -c \
  "curl -s $U/api/v1/topology | jq -e '[.links[].dirs[]|select(.from==\"L1\" and .to==\"S1\")][0].up' >/dev/null"
t_eq "report as application/json: 200" 200 "$(code -H "$J" -d '{"probe":"L1"}' $U/api/v1/reports)"
t_eq "application/json; charset=utf-8: 200" 200 "$(code -H 'Content-Type: Application/JSON; charset=utf-8' -d '{"probe":"L1"}' $U/api/v1/reports)"
t_eq "probe-style post (report_gen, JSON): accepted" 0 "$("$G" --topology "$W/topo.json" --flows 2 --post $U/api/v1/reports >/dev/null 2>&1; echo $?)"
t_eq "bodiless POST /rebalance without Content-Type (curl, dashboard): 200" 200 "$(code -X POST "$U/api/v1/rebalance?dry_run=true")"
t_eq "bodiless POST with a form Content-Type: 415" 415 "$(code -X POST -H 'Content-Type: application/x-www-form-urlencoded' "$U/api/v1/rebalance?dry_run=true")"
t_eq "GET needs no Content-Type" 200 "$(code -H 'Content-Type: text/plain' $U/api/v1/status)"

# ---- Origin on writes ------------------------------------------------------
t_eq "cross-origin write: 403" 403 "$(code -H 'Origin: http://evil.example' -X POST "$U/api/v1/rebalance?dry_run=true")"
t_check "403 names the Origin" jqf '.error.code=="forbidden_origin" and (.error.message|contains("http://evil.example"))' "$W/body"
t_eq "cross-origin JSON report: 403" 403 "$(code -H 'Origin: http://evil.example' -H "$J" -d "$REPORT" $U/api/v1/reports)"
t_eq "Origin null (sandboxed page): 403" 403 "$(code -H 'Origin: null' -X POST "$U/api/v1/rebalance?dry_run=true")"
t_eq "same-origin write (the dashboard): 200" 200 "$(code -H "Origin: http://127.0.0.1:$PORT" -X POST "$U/api/v1/rebalance?dry_run=true")"
t_eq "same-origin, other port: 403" 403 "$(code -H "Origin: http://127.0.0.1:1" -X POST "$U/api/v1/rebalance?dry_run=true")"
t_eq "origin in http.allowed_origins: 200" 200 "$(code -H 'Origin: https://dash.example:8443' -X POST "$U/api/v1/rebalance?dry_run=true")"
t_eq "cross-origin GET (not readable without CORS anyway): 200" 200 "$(code -H 'Origin: http://evil.example' $U/api/v1/status)"

# ---- Host (DNS rebinding) --------------------------------------------------
t_eq "Host of a rebinding name: 421" 421 "$(code -H 'Host: evil.example' $U/api/v1/status)"
t_check "421 names the Host and the key" jqf '.error.code=="misdirected_request" and (.error.message|contains("evil.example") and contains("http.allowed_hosts"))' "$W/body"
t_eq "rebinding name on a write: 421" 421 "$(code -H "Host: evil.example:$PORT" -H "$J" -d "$REPORT" $U/api/v1/reports)"
t_eq "rebinding name on the dashboard: 421" 421 "$(code -H 'Host: evil.example' $U/)"
t_eq "Host localhost (loopback listen): 200" 200 "$(code -H "Host: localhost:$PORT" $U/api/v1/status)"
t_eq "Host LOCALHOST. (case, final dot): 200" 200 "$(code -H 'Host: LOCALHOST.' $U/api/v1/status)"
t_eq "Host 127.0.0.1: 200" 200 "$(code -H "Host: 127.0.0.1:$PORT" $U/api/v1/status)"
t_eq "Host [::1] (loopback): 200" 200 "$(code -H "Host: [::1]:$PORT" $U/api/v1/status)"
t_eq "Host in http.allowed_hosts: 200" 200 "$(code -H 'Host: Tierflow.Example' $U/api/v1/status)"
t_eq "Host in http.allowed_hosts, listed with a final dot: 200" 200 "$(code -H 'Host: ctl.example' $U/api/v1/status)"
t_eq "Host 10.9.9.9 (not the loopback listen): 421" 421 "$(code -H 'Host: 10.9.9.9' $U/api/v1/status)"
t_eq "Host a.localhost.evil.example: 421" 421 "$(code -H 'Host: localhost.evil.example' $U/api/v1/status)"
printf 'GET /api/v1/status HTTP/1.0\r\n\r\n' > "$W/http10"
t_check "HTTP/1.0 without Host: served" sh -c "python3 '$(dirname "$0")/rawhttp.py' send $PORT '$W/http10' | head -1 | grep -q ' 200 '"
stop

# ---- warning at start ---------------------------------------------------------
t_check "bad http.allowed_origins refused at start, naming the key" sh -c \
  "! '$D' --topology '$W/topo.json' --set http.allowed_origins=evil.example --check-config 2>'$W/cc' && grep -q 'http.allowed_origins' '$W/cc'"
PORT=$(port)
"$D" --topology "$W/topo.json" --listen 0.0.0.0:$PORT --backend none --interval 3600 2>"$W/log2" & PID=$!
wait_up "http://127.0.0.1:$PORT" || t_fail "daemon starts on 0.0.0.0" "$(tail -3 "$W/log2")"
t_check "no token on 0.0.0.0: warning naming the listen address" grep -q "no token_file, and listen 0.0.0.0:$PORT is not a loopback" "$W/log2"
t_eq "wildcard listen: any address literal as Host" 200 "$(code -H 'Host: 192.0.2.7' http://127.0.0.1:$PORT/api/v1/status)"
t_eq "wildcard listen: a name still refused" 421 "$(code -H 'Host: evil.example' http://127.0.0.1:$PORT/api/v1/status)"
stop
t_done
