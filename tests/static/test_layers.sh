#!/usr/bin/env bash
# timeout: 30
# The layout's include rules (docs/HACKING.md, Layout) on the real sources:
# no include circle between modules, no folder including a higher layer;
# then the checker on small made-up trees (the old topology family's circle,
# a family header over lower headers, private headers, layer breaches, the
# known-circle list going stale, how functions are recognised), so that a
# checker finding nothing fails too. The link side of the same layers is
# tests/static/test_links.sh. One python process, reading files only: a
# fraction of a second.
set -u
cd "$(dirname "$0")/../.."
exec python3 tests/static/layers.py --tap
