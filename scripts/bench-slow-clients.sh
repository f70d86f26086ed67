#!/usr/bin/env bash
# What slow clients cost the load generator (the engine, loadgen/src/engine):
# `slowlab load` against `slowlab serve --model async`, one case per line,
# each printing the load generator's CPU (cores, and µs per MiB read), its
# peak RSS, how late the readers ended against size/rate (median and worst,
# in % of the expected time), and the peer measured in the same run: the
# server's CPU for the same bytes (ratio load generator / server).
#
#   scripts/bench-slow-clients.sh            # the three cases below
#   CASES=1 scripts/bench-slow-clients.sh    # the first only
#
# Cases (issue "check tells the truth at any scale"):
#   1. 1,024 readers at 256KiB/s of 4 MiB (16 s), the experiment's buffers
#      (SO_RCVBUF 8KiB, reads of at most 16KiB);
#   2. the same with 64KiB buffers and reads: the cost per read is the
#      kernel's (loopback runs the server's transmit in the reader's recv);
#   3. 10,000 readers at 16KiB/s of 256 KiB (16 s).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --bin slowlab
B=$PWD/target/release/slowlab
CASES=${CASES:-3}
work=$(mktemp -d)
server=""
cleanup() {
    [ -n "$server" ] && kill "$server" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT INT TERM

# cpu seconds (user + system) of a pid
cpu_of() { awk '{ printf "%.3f\n", ($14 + $15) / '"$(getconf CLK_TCK)"' }' "/proc/$1/stat"; }

run_case() { # name readers rate body extra...
    local name=$1 readers=$2 rate=$3 body=$4
    shift 4
    local port
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    "$B" serve --listen "127.0.0.1:$port" --model async --large-bytes "$body" >"$work/serve.log" 2>&1 &
    server=$!
    for _ in $(seq 50); do
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
        sleep 0.1
    done
    local before
    before=$(cpu_of "$server")
    /usr/bin/time -f "%M" -o "$work/rss" "$B" load --target "http://127.0.0.1:$port" \
        --slow "$readers" --slow-rate "$rate" --fast-rate 8 --fast-duration 16s \
        --json --out "$work/$name" "$@" >"$work/$name.json"
    local after
    after=$(cpu_of "$server")
    kill "$server"
    wait "$server" 2>/dev/null || true
    server=""
    python3 - "$work/$name" "$work/$name.json" "$work/rss" "$before" "$after" "$name" <<'EOF'
import csv, json, sys
out, summary, rss, before, after, name = sys.argv[1:]
s = json.load(open(summary))
rows = list(csv.DictReader(open(f"{out}/large-responses.csv")))
ok = [r for r in rows if not r["error"]]
cpu = s["cpu"]
print(json.dumps({"ok": len(ok), "of": len(rows), "cpu_s": cpu["user_s"] + cpu["system_s"],
                  "cores": cpu["cores"], "user_s": cpu["user_s"], "system_s": cpu["system_s"],
                  "rss_kib": int(open(rss).read().split()[-1]),
                  "mib": sum(int(r["bytes"]) for r in ok) / 2**20,
                  "server_cpu_s": float(after) - float(before),
                  "receive_s": [float(r["receive_s"]) for r in ok]}))
EOF
}

report() { # name rate_bytes result.json
    python3 - "$1" "$2" "$3" <<'EOF'
import json, statistics, sys
d = json.load(open(sys.argv[3]))
rate = float(sys.argv[2])
size = d["mib"] * 2**20 / max(d["ok"], 1)
expected = size / rate
late = sorted((r / expected - 1) * 100 for r in d["receive_s"])
us_per_mib = d["cpu_s"] / max(d["mib"], 1e-9) * 1e6
ratio = d["cpu_s"] / d["server_cpu_s"] if d["server_cpu_s"] > 0 else float("nan")
print(f"{sys.argv[1]:<34} {d['ok']:>6}/{d['of']:<6} {d['cores']:>6.3f} {d['user_s']:>7.2f} {d['system_s']:>7.2f} "
      f"{us_per_mib:>9.0f} {d['rss_kib']/1024:>8.1f} {statistics.median(late):>8.3f} {late[-1]:>8.3f} "
      f"{d['server_cpu_s']:>8.2f} {ratio:>7.2f}")
EOF
}

# The environment the figures belong to.
echo "# $(uname -r), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), tcp_congestion_control $(sysctl -n net.ipv4.tcp_congestion_control), tcp_rmem $(sysctl -n net.ipv4.tcp_rmem | tr '\t' ' '), tcp_wmem $(sysctl -n net.ipv4.tcp_wmem | tr '\t' ' ')"
printf '%-34s %13s %6s %7s %7s %9s %8s %8s %8s %8s %7s\n' case ok cores user_s sys_s "us/MiB" rss_MiB "late%med" "late%max" srv_cpu "ld/srv"
run_case c1 1024 256KiB 4MiB >"$work/c1.result"
report "1024 x 256KiB/s, rcvbuf 8KiB" $((256 << 10)) "$work/c1.result"
if [ "$CASES" -ge 2 ]; then
    run_case c2 1024 256KiB 4MiB --rcvbuf 64KiB --read-chunk 64KiB >"$work/c2.result"
    report "1024 x 256KiB/s, rcvbuf 64KiB" $((256 << 10)) "$work/c2.result"
fi
if [ "$CASES" -ge 3 ]; then
    run_case c3 10000 16KiB 256KiB >"$work/c3.result"
    report "10000 x 16KiB/s, rcvbuf 8KiB" $((16 << 10)) "$work/c3.result"
fi
