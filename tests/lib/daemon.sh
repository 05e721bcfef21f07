# Harness for suites that run a real tierflowd on loopback; source it after
# tap.sh, once the programs are checked.
#   W           a scratch folder, removed at exit
#   PID / stop  the daemon's PID (the suite sets it) / stop it and wait
#   BG          more PIDs the suite starts, killed at exit
#   port        a free TCP port on 127.0.0.1
#   wait_up URL until URL/api/v1/status answers (HTTP or HTTPS), or the
#               daemon died, or 30 s passed
#   jqf F FILE  jq -e F FILE, quietly
#   code ARGS   curl ARGS: prints the HTTP status, the body in $W/body
W=$(mktemp -d); PID=; BG=()
stop() { [ -n "$PID" ] && { kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null; }; PID=; }
trap 'stop; for p in "${BG[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$W"' EXIT
port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
wait_up() { for i in $(seq 300); do curl -sfk "$1/api/v1/status" >/dev/null && return 0; kill -0 $PID 2>/dev/null || return 1; sleep 0.1; done; return 1; }
jqf() { jq -e "$1" "$2" >/dev/null; }
code() { curl -s -o "$W/body" -w '%{http_code}' "$@"; }
