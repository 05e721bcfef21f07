# What every gray-failure e2e suite sources (tests/e2e/test_gray*.sh): TAP,
# the lab, its traffic (which brings tests/lib/gray.sh), the failure
# harness (fail_init, fail_capacity) and daemon.sh (port). Needs TF_ROOT.
. "$TF_ROOT/tests/lib/tap.sh"
. "$TF_ROOT/tests/lab/lib.sh"
. "$TF_ROOT/tests/lab/traffic.sh"
. "$TF_ROOT/tests/lab/failures.sh"
. "$TF_ROOT/tests/lib/daemon.sh"
