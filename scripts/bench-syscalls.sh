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
# COUNTER=perf counts with `perf stat` on the `syscalls:sys_enter_*`
# tracepoints instead (Debian's linux-perf), which leaves the server at
# its speed: then the calls made per wake-up, and whether a connection's
# request is already there at its first read, are what they are without a
# tracer. Its errors are only the `EAGAIN`s of `recvfrom` and `accept4`
# (`sys_exit_*` filtered on `ret == -11`).
#
# KEEPALIVE=1: wrk reuses its connections and both proxies keep them open
# (NGINX with keepalive_timeout 75s, or NGINX_KEEPALIVE_TIMEOUT), as in
# `KEEPALIVE=1 scripts/bench-proxy.sh`; the servers (NGINX's static
# `return 200` too) still close after each response.
#
# Usage: scripts/bench-syscalls.sh     (WRK_DURATION=4s WRK_CONNS=8 COUNTER=strace KEEPALIVE=0)
# Environment: SLOWLAB, NGINX as for scripts/bench-proxy.sh.
# Prints one table: a row per system call, a column per server; CALLS/ERRS
# where some calls failed (EAGAIN and the like), both per request.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/bench-nginx.sh
source scripts/bench-nginx.sh

WRK_DURATION=${WRK_DURATION:-4s}
WRK_CONNS=${WRK_CONNS:-8}
COUNTER=${COUNTER:-strace}
# NGINX's static `return 200` closes as the `serve` servers do; the
# proxies keep client connections with KEEPALIVE=1 (client_connections).
client_connections
bench_binaries bench-syscalls
need_tool wrk
case $COUNTER in
    strace) need_tool strace ;;
    perf) need_tool perf linux-perf ;;
    *) echo "bench-syscalls: COUNTER is strace or perf, not $COUNTER" >&2; exit 2 ;;
esac

# shellcheck source=scripts/bench-procs.sh
source scripts/bench-procs.sh

names=()
# trace NAME PID ADDR: strace -c (or perf stat) of PID under wrk; writes
# $work/NAME.per ("syscall per_request" lines).
trace() {
    local name=$1 pid=$2 addr=$3 out n
    if [[ $COUNTER == perf ]]; then
        perf stat -x, -o "$work/$name.perf" -p "$pid" -e 'syscalls:sys_enter_*' \
            -e syscalls:sys_exit_recvfrom --filter 'ret == -11' \
            -e syscalls:sys_exit_accept4 --filter 'ret == -11' &
    else
        strace -f -c -q -o "$work/$name.strace" -p "$pid" &
    fi
    local st=$!
    sleep 0.5
    out=$(taskset -c 0 wrk -t1 -c"$WRK_CONNS" -d"$WRK_DURATION" "${WRK_HEADER[@]}" "http://$addr/fast")
    kill -INT "$st"
    wait "$st" 2>/dev/null || true
    n=$(awk '/requests in/ { print $1 }' <<<"$out")
    if [[ $COUNTER == perf ]]; then
        # perf stat -x, rows: count, unit, event, ...; the sys_exit rows are
        # the EAGAINs of their call.
        awk -F, -v n="$n" '$3 ~ /^syscalls:sys_(enter|exit)_/ && $1 ~ /^[0-9]+$/ && $1 > 0 {
                call = $3; sub(/^syscalls:sys_(enter|exit)_/, "", call)
                if ($3 ~ /sys_enter_/) calls[call] = $1; else errs[call] = $1 }
            END { for (c in calls) {
                printf "%s %.2f", c, calls[c] / n
                if (c in errs) printf "/%.2f", errs[c] / n
                printf "\n" } }' "$work/$name.perf" | sort >"$work/$name.per"
    else
        # strace -c rows: % time, seconds, usecs/call, calls, [errors], syscall.
        awk -v n="$n" '$1 ~ /^[0-9.]+$/ && $NF != "total" {
            printf "%s %.2f", $NF, $4 / n
            if (NF == 6) printf "/%.2f", $5 / n
            printf "\n" }' "$work/$name.strace" >"$work/$name.per"
    fi
    echo "  $name: $n requests counted ($COUNTER)" >&2
    names+=("$name")
}

NGINX_KEEPALIVE_TIMEOUT=0 start_nginx nginx-static "        location = /fast {
            default_type application/json;
            return 200 '{\"ok\": true}';
        }"
trace nginx-static "$PID" "$ADDR"
kill "$PID"

start_slowlab serve-async1 1 serve --model async --workers 1 --listen 127.0.0.1:0
trace serve-async1 "$PID" "$ADDR"
kill "$PID"
start_slowlab serve-sync2 1 serve --model sync --workers 2 --listen 127.0.0.1:0
trace serve-sync2 "$PID" "$ADDR"
kill "$PID"

# The origin stays on CPU 0 beside wrk, as in bench-proxy.sh.
start_slowlab origin 0 serve --model async --workers 1 --listen 127.0.0.1:0
ORIGIN=$ADDR
for mode in off on; do
    NGINX_KEEPALIVE_TIMEOUT=$PROXY_KEEPALIVE_TIMEOUT start_nginx "nginx-$mode" "$(proxy_location "$ORIGIN" "$mode")"
    trace "nginx-proxy-$mode" "$PID" "$ADDR"
    kill "$PID"
    mkdir -p "$work/tmp-$mode"
    start_slowlab "pingora-$mode" 1 proxy --listen 127.0.0.1:0 --upstream "$ORIGIN" \
        --buffering "$mode" --threads 1 --temp-path "$work/tmp-$mode"
    trace "pingora-$mode" "$PID" "$ADDR"
    kill "$PID"
done

echo "# system calls per request ($COUNTER under wrk -t1 -c$WRK_CONNS -d$WRK_DURATION $WRK_CONN_NOTE /fast)"
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
