#!/usr/bin/env bash
# Counts system calls per request, under the same wrk load as
# scripts/bench-serve.sh and scripts/bench-proxy.sh (GET /fast,
# `Connection: close`, a new connection per request), for NGINX's static
# `return 200`, `slowlab serve` (async 1 worker, sync 2 workers), NGINX's
# proxy and `slowlab proxy --threads 1` (buffering off and on) in front of
# `slowlab serve --model async --workers 1`.
#
# Each server is traced with `strace -f -c` (every thread) while wrk runs;
# each count is divided by the requests wrk completed. strace slows the
# traced process a great deal, so the req/s here mean nothing; the counts
# per request do not depend on speed, except those of calls made per
# wake-up rather than per connection (epoll_wait, and a read that finds
# EAGAIN), which a slower server batches more.
#
# Usage: scripts/bench-syscalls.sh     (WRK_DURATION=4s WRK_CONNS=8)
# Environment: SLOWLAB, NGINX as for scripts/bench-proxy.sh.
# Prints one table: a row per system call, a column per server; CALLS/ERRS
# where some calls failed (EAGAIN and the like), both per request.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/bench-nginx.sh
source scripts/bench-nginx.sh

WRK_DURATION=${WRK_DURATION:-4s}
WRK_CONNS=${WRK_CONNS:-8}
TARGET_DIR=${CARGO_TARGET_DIR:-target}
if [[ -z "${SLOWLAB:-}" ]]; then
    cargo build --release -q -p harness --bin slowlab
    SLOWLAB=$TARGET_DIR/release/slowlab
fi
NGINX=${NGINX:-$(command -v nginx || echo .slowlab/nginx/usr/sbin/nginx)}
[[ -x "$NGINX" ]] || { echo "bench-syscalls: no nginx at $NGINX" >&2; exit 1; }
for tool in wrk strace; do
    command -v "$tool" >/dev/null || { echo "bench-syscalls: $tool not found" >&2; exit 1; }
done

work=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# start_slowlab NAME ARGS...: sets PID and ADDR once the ready line is out.
start_slowlab() {
    local name=$1
    shift
    taskset -c 1 "$SLOWLAB" "$@" >"$work/$name.out" 2>"$work/$name.err" &
    PID=$!
    pids+=("$PID")
    for _ in $(seq 200); do
        ADDR=$(sed -n 's/^listening on \([^ ]*\).*/\1/p' "$work/$name.out" 2>/dev/null)
        [[ -n $ADDR ]] && return
        sleep 0.05
    done
    echo "bench-syscalls: $name did not start" >&2
    exit 1
}

# start_nginx NAME LOCATIONS: sets PID and ADDR once it answers.
start_nginx() {
    local dir="$work/$1" port
    port=$(free_port)
    mkdir -p "$dir"
    nginx_conf "$dir" "$port" "$2"
    env -u NGINX taskset -c 1 "$NGINX" -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log" &
    PID=$!
    pids+=("$PID")
    ADDR=127.0.0.1:$port
    for _ in $(seq 200); do
        curl -sf -o /dev/null "http://$ADDR/fast" && return
        sleep 0.05
    done
    echo "bench-syscalls: nginx $1 did not start" >&2
    exit 1
}

proxy_location() {
    echo "        location / {
            proxy_pass http://$1;
            proxy_buffering $2;
            proxy_buffer_size 16k;
            proxy_buffers 4 16k;
            proxy_busy_buffers_size 32k;
            proxy_max_temp_file_size 32m;
            proxy_temp_file_write_size 64k;
        }"
}

names=()
# trace NAME PID ADDR: strace -c of PID under wrk; writes $work/NAME.per
# ("syscall per_request" lines).
trace() {
    local name=$1 pid=$2 addr=$3 out n
    strace -f -c -q -o "$work/$name.strace" -p "$pid" &
    local st=$!
    sleep 0.5
    out=$(taskset -c 0 wrk -t1 -c"$WRK_CONNS" -d"$WRK_DURATION" -H 'Connection: close' "http://$addr/fast")
    kill -INT "$st"
    wait "$st" 2>/dev/null || true
    n=$(awk '/requests in/ { print $1 }' <<<"$out")
    # strace -c rows: % time, seconds, usecs/call, calls, [errors], syscall.
    awk -v n="$n" '$1 ~ /^[0-9.]+$/ && $NF != "total" {
        printf "%s %.2f", $NF, $4 / n
        if (NF == 6) printf "/%.2f", $5 / n
        printf "\n" }' "$work/$name.strace" >"$work/$name.per"
    echo "  $name: $n requests traced" >&2
    names+=("$name")
}

start_nginx nginx-static "        location = /fast {
            default_type application/json;
            return 200 '{\"ok\": true}';
        }"
trace nginx-static "$PID" "$ADDR"
kill "$PID"

start_slowlab serve-async1 serve --model async --workers 1 --listen 127.0.0.1:0
trace serve-async1 "$PID" "$ADDR"
kill "$PID"
start_slowlab serve-sync2 serve --model sync --workers 2 --listen 127.0.0.1:0
trace serve-sync2 "$PID" "$ADDR"
kill "$PID"

# The origin stays on CPU 0 beside wrk, as in bench-proxy.sh.
taskset -c 0 "$SLOWLAB" serve --model async --workers 1 --listen 127.0.0.1:0 >"$work/origin.out" 2>&1 &
pids+=("$!")
for _ in $(seq 200); do
    ORIGIN=$(sed -n 's/^listening on \([^ ]*\).*/\1/p' "$work/origin.out" 2>/dev/null)
    [[ -n $ORIGIN ]] && break
    sleep 0.05
done
for mode in off on; do
    start_nginx "nginx-$mode" "$(proxy_location "$ORIGIN" "$mode")"
    trace "nginx-proxy-$mode" "$PID" "$ADDR"
    kill "$PID"
    mkdir -p "$work/tmp-$mode"
    start_slowlab "pingora-$mode" proxy --listen 127.0.0.1:0 --upstream "$ORIGIN" \
        --buffering "$mode" --threads 1 --temp-path "$work/tmp-$mode"
    trace "pingora-$mode" "$PID" "$ADDR"
    kill "$PID"
done

echo "# system calls per request (strace -f -c under wrk -t1 -c$WRK_CONNS -d$WRK_DURATION -H 'Connection: close' /fast)"
header="syscall"
for name in "${names[@]}"; do header+=" $name"; done
{
    echo "$header"
    for name in "${names[@]}"; do awk '{ print $1 }' "$work/$name.per"; done | sort -u | while read -r call; do
        line=$call
        for name in "${names[@]}"; do
            line+=" $(awk -v c="$call" '$1 == c { v = $2 } END { print (v == "" ? "-" : v) }' "$work/$name.per")"
        done
        echo "$line"
    done
    line=total
    for name in "${names[@]}"; do
        line+=" $(awk '{ s += $2 } END { printf "%.2f", s }' "$work/$name.per")"  # a/b sums a
    done
    echo "$line"
} | column -t
