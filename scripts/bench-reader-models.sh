#!/usr/bin/env bash
# The reader models against the client they model: `slowlab load --reader
# streamreader` and an asyncio client written as the original describes
# its own (lab/python/slowlab_reference_reader.py), back to back against
# real Gunicorn sync x2 with 2 slow readers at the original's load, on the
# host's loopback and in a namespace whose tcp_wmem max is 16 MiB. Prints
# each run's /fast p95, app_send_s, first reads and the app's socket
# peaks, and the ratio of the medians of the p95s (streamreader / asyncio).
# A benchmark of many runs, not a test: a handful of runs is decided by a
# race (the book, "The load generator and the reader models").
#
#   scripts/bench-reader-models.sh            # 2 pairs on the host, 8 in the namespace
#   PAIRS=20 scripts/bench-reader-models.sh   # 20 pairs in each
#
# Needs root (the namespace), Debian's python3, and `slowlab prepare`d
# Gunicorn (SLOWLAB_HOME, else .slowlab).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --bin slowlab
exec cargo test --release --quiet -p harness --test real \
    reader_models::streamreader_against -- --ignored --nocapture --test-threads=1
