#!/usr/bin/env bash
# timeout: 30
# The layout's include rules (docs/HACKING.md, Layout) on the real sources:
# no include circle between modules, no folder including a higher layer,
# every module's .c opening with its own header; then the checker on small
# made-up trees (the old topology family's circle, layer breaches, a family
# header over lower headers), so that a checker finding nothing fails too.
# The link side of the same layers is the Makefile's per-program archive
# lists. One python process, reading files only: a fraction of a second.
set -u
cd "$(dirname "$0")/../.."
exec python3 tests/static/layers.py --tap
