# build_copy DIR: copies the optimised build ($TF_BUILD's opt/, bin/ and
# stamps, timestamps kept) to DIR, for a `make install O=DIR PREFIX=...`
# that must not touch the build the other suites are running: a new PREFIX
# rebuilds tierflowd's entry point (the Makefile's sharedir.stamp) and
# relinks tierflowd, which in $TF_BUILD would replace a binary in use.
build_copy() {
  mkdir -p "$1" && cp -a "$TF_BUILD/opt" "$TF_BUILD/bin" "$TF_BUILD/version.stamp" "$TF_BUILD/sharedir.stamp" "$1/"
}
