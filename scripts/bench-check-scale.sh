#!/usr/bin/env bash
# What `slowlab check` answers at scale for the lab's own servers (issue
# "check tells the truth at any scale"): one line per check with its
# answer, its exit status, and at its largest level the p95 of /fast, when
# the fast calls began (the wait for the readers' first bytes), the server's
# CPU at its busiest second and the load generator's CPU (the peer measured
# in the same run: the tester must stay far below the server it checks).
#
#   scripts/bench-check-scale.sh    # about 5 minutes on a 2-core machine
#
# An event loop (uvicorn, rust-async) must be held up to 1,024 or
# inconclusive, never denied; sync workers denied from their handlers.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --bin slowlab
B=$PWD/target/release/slowlab
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
printf '%-18s %-5s %-4s %-34s %9s %9s %10s %10s\n' server max exit answer p95_ms began_s app_peak loadgen
for spec in uvicorn:1024 rust-async:1024 gunicorn-sync2:16 gunicorn-gthread4:16; do
    server=${spec%%:*}
    max=${spec##*:}
    rc=0
    "$B" check --server "$server" --max-slow "$max" --out "$work/$server" --json \
        >"$work/$server.json" 2>"$work/$server.err" || rc=$?
    python3 - "$work/$server.json" "$server" "$max" "$rc" <<'PY'
import json, sys
path, server, most, rc = sys.argv[1:]
r = json.load(open(path))["routes"][0]
if r["denied_from"] is not None:
    answer = f"denied from {r['denied_from']}"
elif r["inconclusive_from"] is not None:
    answer = f"inconclusive from {r['inconclusive_from']}"
else:
    answer = f"held up to {r['held_up_to']}"
top = max(r["levels"], key=lambda l: l["slow_readers"])
cell = lambda v, f: "-".rjust(int(f.split(".")[0])) if v is None else format(v, f)
print(f"{server:<18} {most:<5} {rc:<4} {answer:<34} {cell(top['p95_ms'], '9.3f')} "
      f"{cell(top['fast_began_s'], '9.3f')} {cell(top['app_cpu_peak_cores'], '10.3f')} "
      f"{cell(top['loadgen_cpu_cores'], '10.3f')}")
PY
done
