#!/usr/bin/env bash
# The HTTP fixes of issue 12, item 6, each against a real daemon (sanitizer
# build): integers are decimal (limit=010 is refused, not 8); Content-Length
# with leading zeros (086) is 86 bytes and reads nothing uninitialised
# (valgrind, on the optimised build); a crafted query cannot poison the
# response cache for the normal one; no symbolic link inside the web dir
# is followed; 401 carries WWW-Authenticate, a static 405 carries Allow; the
# auth scheme is case-insensitive; a token file others may read is refused.
# timeout: 240
set -u
. "$(dirname "$0")/../lib/tap.sh"
D=$TF_BIN/tierflowd; G=$TF_TOOLS/report_gen; R="python3 $(dirname "$0")/rawhttp.py"
[ -x "$D" ] && [ -x "$G" ] || { t_skip all "needs $D and $G (make san tools)"; t_done; }
. "$(dirname "$0")/../lib/daemon.sh"
"$G" --topology leafspine:leaves=2,spines=4,hosts=4,gbps=100 --emit-topology "$W/topo.json"
echo fixes-token > "$W/token"; chmod 600 "$W/token"
A="Authorization: Bearer fixes-token"; J="Content-Type: application/json"
mkdir -p "$W/web/sub" "$W/outside"
echo '<html>web</html>' > "$W/web/index.html"; echo 'ok=1' > "$W/web/sub/in.js"
echo 'secret=1' > "$W/outside/secret.js"; echo 'secret=2' > "$W/outside.js"
ln -s "$W/outside" "$W/web/linkdir"          # a directory link leading out of the root
ln -s "$W/web/sub" "$W/web/innerlink"        # a directory link staying inside
ln -s "$W/outside.js" "$W/web/file.js"       # a file link (refused before, still)
mkfifo "$W/web/fifo.js"

PORT=$(port); U=http://127.0.0.1:$PORT
"$D" --topology "$W/topo.json" --listen 127.0.0.1:$PORT --backend none --token-file "$W/token" --interval 3600 \
     --web-dir "$W/web" 2>"$W/log" & PID=$!
wait_up "$U" || { t_fail "daemon starts" "$(tail -3 "$W/log")"; t_done; }
"$G" --topology "$W/topo.json" --probes hosts --flows 3 --post $U/api/v1/reports --token-file "$W/token" >/dev/null

# ---- decimal integers ---------------------------------------------------------
t_eq "limit=010: 400 (was read as octal 8)" 400 "$(code "$U/api/v1/flows?limit=010")"
t_check "the 400 names limit" jqf '.error.message|startswith("limit: '"'"'010'"'"'")' "$W/body"
t_eq "limit=0x10: 400" 400 "$(code "$U/api/v1/flows?limit=0x10")"
t_eq "offset=+1: 400" 400 "$(code "$U/api/v1/flows?offset=%2B1")"
t_eq "events limit=08: 400" 400 "$(code "$U/api/v1/events?limit=08")"
t_eq "limit=10: 200, 10 flows" "200 10" "$(code "$U/api/v1/flows?limit=10") $(jq .returned "$W/body")"
t_eq "limit=0: 200" 200 "$(code "$U/api/v1/flows?limit=0")"
# (A prefix "/024", once read as /20, is refused by tf_parse_u64: tests/unit/test_util.c.)

# ---- Content-Length: 086 --------------------------------------------------------
body='{"probe":"L1","links":[{"if":"S1","tx_bps":5}],"flows":[]}'
body=$body$(printf '%*s' $((86 - ${#body})) '')
t_eq "the body is 86 bytes" 86 "${#body}"
printf 'POST /api/v1/reports HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer fixes-token\r\nContent-Type: application/json\r\nContent-Length: 086\r\nConnection: close\r\n\r\n%s' "$body" > "$W/cl086"
$R send $PORT "$W/cl086" > "$W/cl086.out"
t_check "Content-Length: 086 is 86 bytes: 200, one probe accepted" sh -c "head -1 '$W/cl086.out' | grep -q ' 200 ' && grep -q '\"accepted\":1' '$W/cl086.out'"

# ---- the response cache -----------------------------------------------------------
# The crafted query's one argument "limit=1&fat" = "true" used to make the
# same cache key as limit=1&fat=true; rendered first (200, unfiltered, 100
# flows), it was then served for the real query.
t_eq "crafted query: 200" 200 "$(code "$U/api/v1/flows?limit%3D1%26fat=true")"
t_check "crafted query renders the unfiltered page" jqf '.returned > 1' "$W/body"
t_eq "the real query right after: 200" 200 "$(code "$U/api/v1/flows?limit=1&fat=true")"
t_check "the real query gets its own rendering (1 flow)" jqf '.returned == 1' "$W/body"
t_eq "?fat (no value): 200, unfiltered" 200 "$(code "$U/api/v1/flows?fat")"
t_eq "?fat= right after: 400, not the cached ?fat page" 400 "$(code "$U/api/v1/flows?fat=")"

# ---- static files: symbolic links ----------------------------------------------------
t_eq "a file in a subdirectory: 200" 200 "$(code $U/sub/in.js)"
t_eq "through a directory link out of the web dir: 404" 404 "$(code $U/linkdir/secret.js)"
t_check "and the file's content was not served" sh -c "! grep -q secret '$W/body'"
t_eq "through a directory link inside the web dir: 404 (no link is followed)" 404 "$(code $U/innerlink/in.js)"
t_eq "a file link: 404" 404 "$(code $U/file.js)"
t_eq "a FIFO: 404 at once (no worker stalls on it)" 404 "$(code --max-time 3 $U/fifo.js)"

# ---- WWW-Authenticate, Allow, the auth scheme ----------------------------------------
curl -s -D "$W/h401" -o /dev/null -X POST "$U/api/v1/rebalance?dry_run=true"
t_check "401 without a token: WWW-Authenticate: Bearer realm=\"tierflow\"" grep -qi '^WWW-Authenticate: Bearer realm="tierflow"' "$W/h401"
curl -s -D "$W/h401b" -o /dev/null -X POST -H 'Authorization: Bearer wrong' "$U/api/v1/rebalance?dry_run=true"
t_check "401 with a wrong token: error=\"invalid_token\"" grep -qi '^WWW-Authenticate: Bearer realm="tierflow", error="invalid_token"' "$W/h401b"
curl -s -D "$W/h405" -o "$W/body" -X POST -H "$J" -d '{}' "$U/index.html"
t_check "static POST: 405" grep -q '^HTTP/1.1 405' "$W/h405"
t_check "static 405 says Allow: GET, HEAD" grep -qi '^Allow: GET, HEAD' "$W/h405"
curl -s -D "$W/h405a" -o /dev/null -X DELETE "$U/api/v1/status"
t_check "API 405 says Allow: GET, HEAD" grep -qi '^Allow: GET, HEAD' "$W/h405a"
t_eq "scheme 'bearer' (lower case): 200" 200 "$(code -X POST -H 'Authorization: bearer fixes-token' "$U/api/v1/rebalance?dry_run=true")"
t_eq "scheme 'BEARER': 200" 200 "$(code -X POST -H 'Authorization: BEARER fixes-token' "$U/api/v1/rebalance?dry_run=true")"
t_eq "scheme 'Basic': 401" 401 "$(code -X POST -H 'Authorization: Basic fixes-token' "$U/api/v1/rebalance?dry_run=true")"
t_eq "the token itself stays case-sensitive: 401" 401 "$(code -X POST -H 'Authorization: Bearer FIXES-token' "$U/api/v1/rebalance?dry_run=true")"
stop

# ---- token file permissions ---------------------------------------------------------------
cp "$W/token" "$W/token644"; chmod 644 "$W/token644"
"$D" --topology "$W/topo.json" --token-file "$W/token644" --check-config 2>"$W/tf.err"; rc=$?
t_eq "a world-readable token file: refused (exit 2)" 2 $rc
t_check "the refusal names the file and its mode" grep -q "token_file $W/token644: mode 0644 lets group or others read it; chmod 600" "$W/tf.err"
cp "$W/token" "$W/token620"; chmod 620 "$W/token620"
"$D" --topology "$W/topo.json" --token-file "$W/token620" --check-config 2>"$W/tf.err"; rc=$?
t_eq "a group-writable token file: refused" 2 $rc
t_check "says 'change'" grep -q "mode 0620 lets group or others change it" "$W/tf.err"
t_check "mode 600 accepted" "$D" --topology "$W/topo.json" --token-file "$W/token" --check-config
"$D" --topology "$W/topo.json" --token-file "$W/nope" --check-config 2>"$W/tf.err"; rc=$?
t_eq "a missing token file: refused" 2 $rc
t_check "names it" grep -q "token_file $W/nope: No such file" "$W/tf.err"

"$D" --topology "$W/topo.json" --set limits.max_body_inflight=4096 --check-config 2>"$W/cc.err"; rc=$?
t_eq "limits.max_body_inflight below limits.max_body: refused" 2 $rc
t_check "names both keys" grep -q "limits.max_body_inflight (4096) < limits.max_body (8388608)" "$W/cc.err"

# ---- Content-Length: 086 under valgrind (the uninitialised read) --------------------------
OD=${TF_OPT_BIN:-}/tierflowd
if ! command -v valgrind >/dev/null || [ ! -x "$OD" ]; then
  t_skip valgrind "needs valgrind and the optimised build ($OD)"
else
  PORT=$(port); U=http://127.0.0.1:$PORT
  valgrind -q --error-exitcode=99 --track-origins=yes --log-file="$W/vg.log" "$OD" --topology "$W/topo.json" \
    --listen 127.0.0.1:$PORT --backend none --token-file "$W/token" --interval 3600 2>"$W/vlog" & PID=$!
  if wait_up "$U"; then
    $R send $PORT "$W/cl086" > "$W/vg.out"
    t_check "under valgrind: Content-Length: 086 answered 200" grep -q ' 200 ' "$W/vg.out"
    kill -TERM $PID; wait $PID; rc=$?; PID=
    t_eq "valgrind: no error (no uninitialised read)" 0 $rc
    t_check "valgrind log clean" sh -c "! grep -q 'uninitialised' '$W/vg.log'"
  else
    t_fail "tierflowd starts under valgrind" "$(tail -3 "$W/vlog")"
  fi
fi
t_done
