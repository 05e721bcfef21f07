#!/usr/bin/env bash
# controller/openapi.json passes Redocly CLI's recommended rules (pinned in
# package-lock.json, installed by scripts/deps.sh test) with no error, and a
# real tierflowd answers as the document says: for every path, a method it
# does not list gets 405 with an Allow header naming exactly the methods the
# document has for that path (HEAD beside GET); a write without the token
# gets 401 with the WWW-Authenticate challenge documented; the operations
# marked public (security: []) answer without a token.
# timeout: 60
set -u
. "$(dirname "$0")/../lib/tap.sh"
R=$TF_ROOT/tests/openapi/node_modules/.bin/redocly
D=$TF_BIN/tierflowd
SPEC=$TF_ROOT/controller/openapi.json
[ -x "$R" ] || { t_skip all "no $R: scripts/deps.sh test installs it (npm ci)"; t_done; }
[ -x "$D" ] || { t_skip all "needs $D (make san)"; t_done; }
. "$TF_ROOT/tests/lib/daemon.sh"

export REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true NO_COLOR=1
"$R" lint "$SPEC" --format=summary >"$W/lint" 2>&1; rc=$?
sed -n '/^validating/,$p' "$W/lint" | sed 's/^/# /'
t_eq "redocly lint (recommended rules) exits 0" 0 "$rc"
t_check "redocly lint reports no error" sh -c "! grep -qE '^error ' '$W/lint'"

ops='.paths | to_entries[] | .key as $p | .value | to_entries[]
     | select(.key|IN("get","put","post","delete","patch","head","options")) | {p: $p, m: .key, o: .value}'
t_eq "every operation has an operationId" "" "$(jq -r "$ops | select(.o.operationId|not) | \"\(.m) \(.p)\"" "$SPEC")"
t_eq "operationIds are unique" "" "$(jq -r "[$ops | .o.operationId] | group_by(.) | map(select(length>1)[0])[]" "$SPEC")"
t_eq "every operation says who may call (security)" "" \
  "$(jq -r "$ops | select(.o.security|type != \"array\") | \"\(.m) \(.p)\"" "$SPEC")"
t_eq "every operation documents 405" "" "$(jq -r "$ops | select(.o.responses[\"405\"]|not) | \"\(.m) \(.p)\"" "$SPEC")"
t_check "405 documents Allow" jqf '.components.responses.MethodNotAllowed.headers.Allow' "$SPEC"
t_eq "every token operation documents 401 and 503" "" \
  "$(jq -r "$ops | select(.o.security|length>0) | select((.o.responses|has(\"401\") and has(\"503\"))|not) | \"\(.m) \(.p)\"" "$SPEC")"
t_check "401 documents WWW-Authenticate" jqf '.components.responses.Unauthorized.headers["WWW-Authenticate"]' "$SPEC"

# ---- the live daemon against the document --------------------------------
P=18301
echo spec-token >"$W/token"; chmod 600 "$W/token"
mkdir "$W/web"; echo '<html></html>' >"$W/web/index.html"
U=http://127.0.0.1:$P
"$D" --topology leafspine:leaves=2,spines=2,hosts=2,gbps=100 --listen 127.0.0.1:$P --backend none \
     --token-file "$W/token" --interval 3600 --web-dir "$W/web" 2>"$W/log" & PID=$!
wait_up "$U" || { t_fail "tierflowd starts" "$(tail -3 "$W/log")"; t_done; }

bad_allow="" bad_public="" n=0
while IFS=$'\t' read -r path methods public; do
  url=$U${path//\{id\}/job1}
  want=$(echo "$methods" | tr ',' '\n' | sed 's/^get$/get\nhead/' | tr a-z A-Z | sort | paste -sd,)
  curl -s -o /dev/null -D "$W/h" -X PATCH "$url"
  st=$(awk 'NR==1{print $2}' "$W/h")
  got=$(tr -d '\r' <"$W/h" | awk -F': ' 'tolower($1)=="allow"{print $2}' | tr -d ' ' | tr ',' '\n' | sort | paste -sd,)
  [ "$st" = 405 ] && [ "$got" = "$want" ] || bad_allow+="PATCH $path: $st, Allow '$got', document '$want'; "
  for m in ${public//,/ }; do
    [ "$m" = get ] || continue
    st=$(curl -s -o /dev/null -w '%{http_code}' "$url")
    case "$st" in 401|403) bad_public+="GET $path: $st; " ;; esac
  done
  n=$((n + 1))
done < <(jq -r '.paths | to_entries[] | [.key,
           ([.value | keys[] | select(IN("get","put","post","delete"))] | join(",")),
           ([.value | to_entries[] | select((.value|type) == "object" and .value.security == []) | .key]
            | join(","))] | @tsv' "$SPEC")
t_ge "checked every documented path live" "$n" 10
t_eq "405 with Allow = the document's methods, on every path" "" "$bad_allow"
t_eq "public operations answer without a token" "" "$bad_public"

st=$(curl -s -o "$W/body" -D "$W/h" -X POST -H 'Content-Type: application/json' -d '{}' "$U/api/v1/rebalance" -w '%{http_code}')
t_eq "a write without the token: 401" 401 "$st"
t_check "401 carries WWW-Authenticate: Bearer realm=\"tierflow\"" grep -qi '^WWW-Authenticate: Bearer realm="tierflow"' "$W/h"
t_check "401 body is the documented Error object" jqf '.error.code and .error.message' "$W/body"
t_done
