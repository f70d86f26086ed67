#!/usr/bin/env bash
# Schedule precision of `slowlab load`.
#
# Builds the release binary, starts `slowlab serve --model async` on a free
# loopback port, and runs the default load (2 slow readers, 72 /fast
# requests) RUNS times (default 1) uncapped and RUNS times with the load
# generator alone in a cgroup capped at 0.20 core (quota 2000 us per
# 10000 us period, as the original capped its controller). Prints, per run,
# the max and p99 schedule lag, the generator's own CPU time (getrusage) and
# the cgroup's throttling. The cgroup and the server are removed on exit.
#
# Needs root for the cgroup (cgroup v2 with the cpu controller, else the v1
# cpu hierarchy), and python3 to read the JSON summaries.
#
#   scripts/bench-load-timing.sh            # one run each
#   RUNS=3 scripts/bench-load-timing.sh     # three runs each
#   SLOWLAB_BIN=path/to/slowlab scripts/... # use that binary, build nothing
#   REALTIME=1 scripts/bench-load-timing.sh # pass --realtime (SCHED_FIFO
#       scheduler thread); a cgroup v1 child then gets cpu.rt_runtime_us
#       of 50 ms per second so that the policy is allowed inside it
#   SPIN=3ms scripts/bench-load-timing.sh   # pass --spin 3ms
#
# With cyclictest (rt-tests) installed it first prints the machine's floor:
# the wake-up lateness of a bare SCHED_FIFO timer thread over 10 s.
set -euo pipefail

cd "$(dirname "$0")/.."
RUNS=${RUNS:-1}
if [[ -n ${SLOWLAB_BIN:-} ]]; then
    BIN=$SLOWLAB_BIN
else
    export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target}
    cargo build --release --quiet -p harness --bin slowlab
    BIN=$CARGO_TARGET_DIR/release/slowlab
fi

work=$(mktemp -d)
server_pid=
cgroup=
cleanup() {
    if [[ -n $server_pid ]]; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    if [[ -n $cgroup && -d $cgroup ]]; then
        rmdir "$cgroup" 2>/dev/null || echo "warning: could not remove $cgroup" >&2
    fi
    rm -rf "$work"
}
trap cleanup EXIT

# --- the server ----------------------------------------------------------
"$BIN" serve --model async --listen 127.0.0.1:0 >"$work/serve.out" 2>"$work/serve.err" &
server_pid=$!
addr=
for _ in $(seq 300); do
    addr=$(sed -n 's/^listening on \([^ ]*\).*/\1/p' "$work/serve.out")
    [[ -n $addr ]] && break
    kill -0 "$server_pid" 2>/dev/null || { cat "$work/serve.err" >&2; exit 1; }
    sleep 0.1
done
[[ -n $addr ]] || { echo "server did not report its address" >&2; exit 1; }

# --- the cgroup ----------------------------------------------------------
# Prefer cgroup v2 where it has the cpu controller; else cgroup v1's cpu.
make_cgroup() {
    local name=slowlab-bench-$$ root
    for root in /sys/fs/cgroup /sys/fs/cgroup/unified; do
        if [[ -f $root/cgroup.controllers ]] && grep -qw cpu "$root/cgroup.controllers"; then
            grep -qw cpu "$root/cgroup.subtree_control" || echo +cpu >"$root/cgroup.subtree_control"
            cgroup=$root/$name
            mkdir "$cgroup"
            echo "2000 10000" >"$cgroup/cpu.max"
            cg_kind=v2
            return
        fi
    done
    if [[ -w /sys/fs/cgroup/cpu/cpu.cfs_quota_us || -w /sys/fs/cgroup/cpu ]]; then
        cgroup=/sys/fs/cgroup/cpu/$name
        mkdir "$cgroup"
        echo 10000 >"$cgroup/cpu.cfs_period_us"
        echo 2000 >"$cgroup/cpu.cfs_quota_us"
        if [[ -n ${REALTIME:-} && -f $cgroup/cpu.rt_runtime_us ]]; then
            echo 50000 >"$cgroup/cpu.rt_runtime_us"
        fi
        cg_kind=v1
        return
    fi
    echo "no writable cgroup with a cpu controller; run as root" >&2
    exit 1
}

# "nr_throttled throttled_ms" of the cgroup.
throttling() {
    awk -v kind="$cg_kind" '
        $1 == "nr_throttled" { n = $2 }
        kind == "v1" && $1 == "throttled_time" { ms = $2 / 1e6 }
        kind == "v2" && $1 == "throttled_usec" { ms = $2 / 1e3 }
        END { printf "%d %.1f", n, ms }' "$cgroup/cpu.stat"
}

# Host CPU time stolen by the hypervisor so far, in ms (/proc/stat "cpu"
# line, 8th value, in USER_HZ ticks). A stolen vCPU cannot run even a
# SCHED_FIFO thread, so steal during a run explains lag that no design can.
steal_ms() {
    awk -v hz="$(getconf CLK_TCK)" '$1 == "cpu" { printf "%.0f", $9 * 1000 / hz }' /proc/stat
}

# --- the runs ------------------------------------------------------------
report() { # condition, summary.json, throttling ("" when uncapped), steal ms
    python3 - "$1" "$2" "$3" "$4" <<'PY'
import json, sys
cond, path, thr, steal = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
s = json.load(open(path))
f, lag, cpu = s["fast"], s["fast"]["schedule_lag_ms"], s["cpu"]
thr = thr.split() if thr else ["-", "-"]
print(f"{cond:<11} {lag['max']:>10.3f} {lag['p99']:>10.3f} {cpu['total_s']:>8.3f} "
      f"{cpu['cores']:>7.4f} {f['ok']:>4}/{f['requests']:<3} {f['latency_ms']['p95'] or float('nan'):>8.3f} "
      f"{thr[0]:>9} {thr[1]:>11} {steal:>8} {s['scheduler']['policy']:>6} {s['scheduler']['spin_us']:>7}")
PY
}

# The machine's own floor: how late a SCHED_FIFO thread that does nothing
# but sleep 1 ms wakes up here (cyclictest, Debian package rt-tests). No
# scheduler can start requests more punctually than this.
machine_floor() {
    if ! command -v cyclictest >/dev/null; then
        echo "machine floor: not measured (cyclictest missing; apt-get install rt-tests)"
        return
    fi
    local s0 out
    s0=$(steal_ms)
    out=$(cyclictest -m -p 90 -t 1 -i 1000 -D 10 -q -h 20000 2>/dev/null) || {
        echo "machine floor: cyclictest failed"
        return
    }
    echo "$out" | awk -v steal=$(($(steal_ms) - s0)) '
        /^# Max Latencies/ { max = $4 + 0 }
        /^# Avg Latencies/ { avg = $4 + 0 }
        !/^#/ && $1 + 0 >= 1000 { late += $2 }
        END { printf "machine floor (cyclictest, SCHED_FIFO, 1 ms sleeps, 10 s): max %.3f ms, avg %.3f ms, %d wake-ups >= 1 ms late, steal %d ms\n", max / 1000, avg / 1000, late, steal }'
}

make_cgroup
sched=$(cat /proc/sys/kernel/osrelease)
echo "kernel $sched, tcp_wmem $(cat /proc/sys/net/ipv4/tcp_wmem | tr '\t' ' '), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "target http://$addr (slowlab serve --model async), default load, cgroup $cg_kind $cgroup"
machine_floor
printf '%-11s %10s %10s %8s %7s %8s %8s %9s %11s %8s %6s %7s\n' \
    condition max_lag_ms p99_lag_ms cpu_s cores ok/req p95_ms throttled throttled_ms steal_ms policy spin_us
extra=()
[[ -n ${REALTIME:-} ]] && extra+=(--realtime)
[[ -n ${SPIN:-} ]] && extra+=(--spin "$SPIN")
for i in $(seq "$RUNS"); do
    out=$work/uncapped-$i
    s0=$(steal_ms)
    "$BIN" load --target "http://$addr" --out "$out" "${extra[@]}" >/dev/null
    report uncapped "$out/summary.json" "" $(($(steal_ms) - s0))

    out=$work/capped-$i
    before=$(throttling)
    s0=$(steal_ms)
    # The shell moves itself into the cgroup, then becomes the load generator.
    sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$cgroup" \
        "$BIN" load --target "http://$addr" --out "$out" "${extra[@]}" >/dev/null
    after=$(throttling)
    delta=$(echo "$before $after" | awk '{printf "%d %.1f", $3 - $1, $4 - $2}')
    report "capped0.20" "$out/summary.json" "$delta" $(($(steal_ms) - s0))
done
python3 -c 'import json,sys; print("scheduler thread:", json.load(open(sys.argv[1]))["scheduler"])' \
    "$work/capped-1/summary.json"
