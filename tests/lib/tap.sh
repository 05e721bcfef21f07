# TAP helpers for shell test suites; source this file.
#   t_check NAME CMD...   passes when CMD exits 0
#   t_eq NAME WANT GOT    passes when the strings are equal
#   t_ne NAME NOT GOT     passes when the strings differ
#   t_ge NAME A B         passes when number A >= number B (awk arithmetic)
#   t_pass NAME / t_fail NAME [WHY] / t_skip NAME WHY
#   t_need_root           skips the whole suite, loudly, when not root
#   t_replay NAME FILE    counts the results of another TAP stream (a part of
#                         this suite run as a child, FILE its output) as this
#                         suite's, comments kept; a stream without its plan
#                         (the child died) is one more failure
#   t_done                prints the plan and exits non-zero on any failure
# Output is TAP: tests/run.sh counts "ok", "not ok" and "# SKIP" lines.
_t_n=0 _t_failed=0
t_pass() { _t_n=$((_t_n + 1)); echo "ok $_t_n - $1"; }
t_fail() { _t_n=$((_t_n + 1)); _t_failed=$((_t_failed + 1)); echo "not ok $_t_n - $1"; [ -n "${2:-}" ] && echo "# $2"; return 0; }
t_skip() { _t_n=$((_t_n + 1)); echo "ok $_t_n # SKIP $1: $2"; echo "SKIPPED: $1: $2" >&2; }
t_check() { local n=$1; shift; if "$@"; then t_pass "$n"; else t_fail "$n" "command failed: $*"; fi; }
t_eq() { if [ "$2" = "$3" ]; then t_pass "$1"; else t_fail "$1" "want '$2', got '$3'"; fi; }
t_ne() { if [ "$2" != "$3" ]; then t_pass "$1"; else t_fail "$1" "want anything but '$2'"; fi; }
t_ge() { if awk -v a="$2" -v b="$3" 'BEGIN{exit !(a+0 >= b+0)}'; then t_pass "$1"; else t_fail "$1" "want $2 >= $3"; fi; }
t_need_root() {
  if [ "$(id -u)" -ne 0 ]; then t_skip "${1:-suite}" "needs root for network namespaces"; t_done; fi
}
t_replay() {
  local name=$1 line plan=0
  while IFS= read -r line; do
    case $line in
      "ok "*" # SKIP "*) _t_n=$((_t_n + 1)); echo "ok $_t_n # SKIP ${line#* # SKIP }" ;;
      "ok "*) t_pass "${line#ok * - }" ;;
      "not ok "*) t_fail "${line#not ok * - }" ;;
      1..*) plan=1 ;;
      *) echo "$line" ;;
    esac
  done < "$2"
  [ "$plan" = 1 ] || t_fail "$name ran to its end" "no TAP plan in its output: it died (the lines above are all it printed)"
}
t_done() { echo "1..$_t_n"; [ "$_t_failed" -eq 0 ]; exit $?; }
